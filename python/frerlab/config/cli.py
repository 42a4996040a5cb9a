"""`frerlab config export CONFIG.yaml --format yang-json|--target lan966x [-o FILE]`,
`frerlab config import FILE [--forward STREAM=PORT[,PORT]] [-o CONFIG.yaml]` and
`frerlab config validate FILE.json --yang-dir DIR`: one node's data plane configuration as IEEE
YANG instance data or as a LAN966x switch script, and back; notes on what the other side reads
differently go to stderr. Registering the verbs imports nothing heavy: the converters (and
yangson, only for `validate`) are imported when a verb runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import UsageError
from frerlab.names import output_file

EPILOG = """examples:
  frerlab config export configs/dataplane/sw2-eliminate.yaml --format yang-json -o sw2.json
  frerlab config import sw2.json -o sw2.yaml              back into the YAML vocabulary
  frerlab config import switch.json --forward 1=down      a plain IEEE document: forward stream 1 to down
  frerlab config validate sw2.json --yang-dir ~/yang      against the IEEE modules you have
  frerlab config validate sw2.json --yang-dir ~/yang --json   (any verb: the result as JSON)
  frerlab config export configs/dataplane/lan966x-sw1.yaml --target lan966x -o sw1.sh
  frerlab hosts push lab-hosts.yaml sw1.sh                 run it on the switch

docs/config.md maps every node and says what is refused and why.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `config export`, `config import` and `config validate`."""
    config = subparsers.add_parser("config", help="a data plane configuration as IEEE YANG data or a LAN966x "
                                                  "switch script, and back", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = config.add_subparsers(title="verbs", metavar="VERB")
    config.set_defaults(func=lambda args: config.print_help() or 2)
    export = verbs.add_parser("export", help="write a configuration as YANG instance data or a LAN966x script",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument("config", type=Path, help="the data plane configuration (YAML)")
    what = export.add_mutually_exclusive_group(required=True)
    what.add_argument("--format", choices=["yang-json"], help="RFC 7951 JSON after ieee802-dot1cb-frer and "
                                                              "ieee802-dot1cb-stream-identification")
    what.add_argument("--target", choices=["lan966x"], help="the command script of the Microchip LAN966x BSP")
    export.add_argument("--chip-port", action="append", default=[], metavar="PORT=N",
                        help="lan966x: the switch's chip port number of a port (default: its position in "
                             "`ports`, from 0); repeatable")
    add_output(export, "the file to write (default: standard output)")
    add_json(export, "the written text and where it went")
    export.set_defaults(func=_export)
    imp = verbs.add_parser("import", help="read YANG instance data (.json) or a LAN966x script (.sh) back "
                                          "into a configuration", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    imp.add_argument("file", type=Path, help="YANG instance data (JSON) or a script `export --target lan966x` wrote")
    imp.add_argument("--from", dest="source", choices=["yang-json", "lan966x"],
                     help="what the file is (default: by its suffix, .json or .sh)")
    imp.add_argument("--forward", action="append", default=[], metavar="STREAM=PORT[,PORT...]",
                     help="yang-json: the ports a stream's frames leave by (local: this host) where the data does "
                          "not say (802.1CB leaves forwarding to the bridge: a plain IEEE document has none); "
                          "repeatable")
    add_output(imp, "the YAML file to write (default: standard output)")
    add_json(imp, "the written text and where it went")
    imp.set_defaults(func=_import)
    validate = verbs.add_parser("validate", help="validate YANG instance data against YANG modules you have",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    validate.add_argument("file", type=Path, help="the instance data (JSON)")
    validate.add_argument("--yang-dir", type=Path, action="append", required=True,
                          help="a directory of YANG modules (NAME.yang or NAME@REVISION.yang); repeatable")
    add_json(validate, "the verdict")
    validate.set_defaults(func=_validate)


def _write(args: argparse.Namespace, text: str, facts: dict, notes: list[str]) -> None:
    """Writes `text` into -o's file, else prints it; with --json prints `facts`, the text and
    where it went; prints each of `notes` to stderr."""
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.output is not None:
        from frerlab.files import write_atomic

        write_atomic(args.output, text)
    if args.json:
        emit(args, {**facts, "output": args.output, "text": text, "notes": notes})
    elif args.output is None:
        print(text, end="")
    else:
        print(f"wrote {args.output}")


def _chip_ports(values: list[str]) -> dict[str, int]:
    ports = {}
    for value in values:
        name, _, number = value.partition("=")
        if not name or not number.isdigit():
            raise UsageError(f"--chip-port {value!r} is not PORT=N (a port of the configuration and its chip "
                             "port number, e.g. pa=1)")
        ports[name] = int(number)
    return ports


def _forward(values: list[str]) -> dict[int, list[str]]:
    """The --forward values as stream handle -> output ports."""
    forwarding = {}
    for value in values:
        stream, _, ports = value.partition("=")
        if not (stream.isascii() and stream.isdigit()) or not ports or "" in ports.split(","):
            raise UsageError(f"--forward {value!r} is not STREAM=PORT[,PORT...] (a stream handle and the ports its "
                             "frames leave by, local for this host, e.g. 1=pa,pb)")
        if int(stream) in forwarding:
            raise UsageError(f"--forward: stream {stream} is given twice (list all its ports in one: {stream}=PORT,PORT)")
        forwarding[int(stream)] = ports.split(",")
    return forwarding


def _export(args: argparse.Namespace) -> int:
    if args.output is not None:
        output_file(args.output, "-o/--output")
    from frerlab.dataplane.config import load_config

    cfg = load_config(args.config)
    notes: list[str] = []
    if args.target == "lan966x":
        from frerlab.config.lan966x import export_lan966x

        text = export_lan966x(cfg, _chip_ports(args.chip_port), str(args.config))
    else:
        if args.chip_port:
            raise UsageError("--chip-port is for --target lan966x only")
        from frerlab.config.yang import dumps, export_yang

        text = dumps(export_yang(cfg, notes))
    _write(args, text, {"config": args.config, "format": args.target or args.format}, notes)
    return 0


def _import(args: argparse.Namespace) -> int:
    if args.output is not None:
        output_file(args.output, "-o/--output")
    import yaml

    source = args.source or {".json": "yang-json", ".sh": "lan966x"}.get(args.file.suffix)
    if source is None:
        raise UsageError(f"{args.file}: say what it is with --from yang-json or --from lan966x (the suffix "
                         "is neither .json nor .sh)")
    notes: list[str] = []
    if source == "lan966x":
        if args.forward:
            raise UsageError("--forward is for yang-json only (a LAN966x script says where each stream goes)")
        from frerlab.config.lan966x import parse_lan966x_file

        data, _ = parse_lan966x_file(args.file)
    else:
        from frerlab.config.yang import import_yang, read_instance

        data, _, notes = import_yang(read_instance(args.file), str(args.file), _forward(args.forward))
    text = (f"# imported by `frerlab config import` from {args.file.name}\n"
            + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100))
    _write(args, text, {"file": args.file, "format": source}, notes)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from frerlab.config.yang import validate_file

    members = validate_file(args.file, args.yang_dir)
    emit(args, {"file": args.file, "valid": True, "top_level_members": members, "yang_dirs": args.yang_dir},
         f"{args.file}: valid configuration data ({members} top-level members) against the modules in "
         f"{', '.join(map(str, args.yang_dir))}")
    return 0
