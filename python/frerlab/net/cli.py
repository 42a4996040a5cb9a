"""`frerlab net`: a FRER network described once in a topology file (networks/*.yaml,
docs/networks.md): its reliability predicted, its scenario compiled and run in the simulator,
both swept over link loss, each node's FRER functions shown and exported (frerlab's data
plane, the IEEE YANG, LAN966x).

The simulator's Python side (pandas) and numpy are imported by the commands, not when the
parser is built (every `frerlab` command builds it)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from frerlab.cli_output import add_json, add_output, down_verb, emit
from frerlab.files import write_atomic
from frerlab.names import output_dir, output_file

EPILOG = """examples:
  frerlab net analyse networks/ladder_per_stage.yaml           delivery probability, copies per link
  frerlab net analyse networks/ladder_per_stage.yaml --exact   the same by enumerating link states
  frerlab net sim networks/ring.yaml -o results/ring           run it in the simulator
  frerlab net sim networks/ladder_end_to_end.yaml --set links.a1-sw1.loss=0.05
  frerlab net scenario networks/seed_two_path.yaml             the compiled scenario YAML
  frerlab net nodes networks/ladder_per_stage.yaml             each node's FRER functions
  frerlab net export networks/ladder_per_stage.yaml --format dataplane -o out   each node's data plane file
  frerlab net sweep networks/ladder_per_stage.yaml networks/ladder_end_to_end.yaml --loss 0.01,0.1 -o results/ladder
  frerlab net up networks/ring.yaml --name ring                 bring it up in network namespaces
  frerlab net exec --name ring talker -- ip -br addr           run a command in a node's namespace
  frerlab net impair --name ring r1-r2 --down                  cut a link (--up restores it)
  frerlab net status --name ring                               data plane and link counters
  frerlab net down --name ring                                 take it down (idempotent)

The topology file's fields, the prediction's formula and its limits: docs/networks.md.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `frerlab net analyse|sim|scenario|sweep|nodes|export|up|down|exec|impair|status`."""
    parser = subparsers.add_parser(
        "net", help="a FRER network from one topology file: predict, simulate", description=__doc__,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(title="verbs", metavar="VERB")

    def verb(name: str, help: str, func) -> argparse.ArgumentParser:
        p = verbs.add_parser(name, help=help, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("topology", type=Path, help="topology YAML file")
        p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                       help="override a field by dotted path, e.g. links.A.loss=0.01 (repeatable)")
        p.set_defaults(func=func)
        return p

    analyse = verb("analyse", "predicted delivery probability per stream and copies per link", cmd_analyse)
    analyse.add_argument("--exact", action="store_true", help="enumerate every state of the links (at most 20 "
                                                               "links) instead of series-parallel reduction")
    analyse.add_argument("--faults", choices=["independent", "schedule"], default="independent",
                         help="a cut as unavailability over the run, independent of other links (default), or "
                              "the faults at their times")
    add_json(analyse, "the prediction")
    run = verb("sim", "compile the topology into a simulator scenario and run it", cmd_sim)
    add_output(run, "results directory (topology.yaml, scenario.yaml, the simulator's report and CSVs)")
    run.add_argument("--allow-long", action="store_true", help="run even when the estimated cost exceeds the "
                                                               "limits of `frerlab sim run`")
    add_json(run, "each stream's and each recovery function's counts")
    scenario = verb("scenario", "print (or write) the compiled simulator scenario", cmd_scenario)
    add_output(scenario, "write the scenario YAML to this file instead of printing it")
    add_json(scenario, "the scenario (and where it was written)")
    sweep = verbs.add_parser("sweep", help="simulate and predict over link loss; a table and a figure",
                             epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_argument("topology", type=Path, nargs="+", help="topology YAML files")
    sweep.add_argument("--loss", required=True, metavar="P,P,...", help="loss probabilities of the swept links")
    sweep.add_argument("--links", metavar="LINK,LINK,...", help="the links that get the loss (default: every link)")
    sweep.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                       help="override a field of every file first, e.g. duration=10s (repeatable)")
    add_output(sweep, "results directory: sweep.csv, loss.svg, loss.png", required=True)
    sweep.add_argument("--allow-long", action="store_true", help="run even when a run's estimated cost exceeds the "
                                                                 "limits of `frerlab sim run`")
    add_json(sweep, "the table (one record per file, loss and stream)")
    sweep.set_defaults(func=cmd_sweep)
    nodes = verb("nodes", "print each node's FRER functions (YAML)", cmd_nodes)
    add_json(nodes, "the same as JSON")
    export = verb("export", "each node's configuration: frerlab's data plane, the IEEE YANG, or LAN966x", cmd_export)
    export.add_argument("--format", required=True, choices=EXPORT_FORMATS,
                        help="dataplane: `frerlab dataplane up` files; yang-json: RFC 7951 JSON after "
                             "ieee802-dot1cb-frer and -stream-identification; lan966x: the BSP's command script")
    add_output(export, "directory for one file per node", required=True)
    add_json(export, "what was written and what was not")
    up = verb("up", "bring the topology up in network namespaces, each node's data plane loaded", cmd_up)
    _name(up)
    up.add_argument("--hook", default="tc", choices=("tc", "xdp", "auto"), help="what runs the data planes' received "
                                                                          "frames (docs/dataplane.md; default tc)")
    add_json(up, "the network's state")
    def running(name: str, help: str, func) -> argparse.ArgumentParser:
        """A verb on a network that is up (--name)."""
        p = verbs.add_parser(name, help=help, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(func=func)
        if name != "down":  # down: --name or --all
            _name(p)
        return p

    down = running("down", "take a network down (idempotent)", cmd_down)
    which = down.add_mutually_exclusive_group()
    _name(which)
    which.add_argument("--all", action="store_true", help="every network that is up")
    add_json(down, "each network and whether it was up")
    ex = running("exec", "run a command in a node's namespace (its exit status is passed on)", cmd_exec)
    ex.add_argument("node", help="a node of the topology")
    ex.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    imp = running("impair", "cut, restore or make lossy a link at run time (both directions)", cmd_impair)
    imp.add_argument("link", help="a link of the topology")
    updown = imp.add_mutually_exclusive_group()
    updown.add_argument("--down", action="store_true", help="cut the link")
    updown.add_argument("--up", action="store_true", help="restore a cut link")
    imp.add_argument("--loss", help="Bernoulli loss probability (0..1)")
    imp.add_argument("--clear", action="store_true", help="remove every impairment first")
    add_json(imp, "the link's impairments after the change")
    add_json(running("status", "each node's data plane counters and each link's element", cmd_status), "the status")
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


DEFAULT_NAME = "net"


def _name(parser) -> None:
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"the network's name (default {DEFAULT_NAME}): its "
                                                             "namespaces are n-NAME-NODE")


#: `net export --format`: the file suffix of each.
EXPORT_FORMATS = {"dataplane": ".yaml", "yang-json": ".json", "lan966x": ".lan966x.sh"}


def load(args: argparse.Namespace):
    """The validated topology of the command, its --set overrides applied."""
    return load_data(args)[1]


def load_data(args: argparse.Namespace):
    """The plain data of the command's topology file with its --set overrides, and the
    validated topology."""
    from frerlab.net.topology import read_with_overrides

    return read_with_overrides(args.topology, args.set)


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value:.6f}"


def cmd_analyse(args: argparse.Namespace) -> int:
    """Prints each stream's predicted delivery and each link direction's copies."""
    from frerlab.net.analyse import analyse

    topo = load(args)
    result = analyse(topo, "exact" if args.exact else "reduction", args.faults)
    lines = [f"{topo.name}: {result['method']}, faults {result['faults']}",
             f"{'stream':<12} {'routes':>6} {'delivery':>10} {'loss':>11} {'frames':>9} {'exp. lost':>10}  recovery"]
    for name, s in result["streams"].items():
        lines.append(f"{name:<12} {s['routes']:>6} {s['delivery']:>10.6f} {s['loss']:>11.3e} {s['frames']:>9} "
                     f"{s['expected_lost']:>10.1f}  {', '.join(s['recovery']) or '-'}")
    lines += ["", f"{'stream':<12} {'link':<16} {'from -> to':<22} {'copies/frame':>12} {'/delivered':>10} "
                  f"{'Mbit/s':>9}"]
    for row in result["links"]:
        lines.append(f"{row['stream']:<12} {row['link']:<16} {row['from'] + ' -> ' + row['to']:<22} "
                     f"{row['copies_per_frame']:>12.6f} {_fraction(row['copies_per_delivered']):>10} "
                     f"{row['load_bps'] / 1e6:>9.3f}")
    lines += ["", f"{'link':<16} {'from -> to':<22} {'Mbit/s':>9} {'of rate':>8}"]
    for port in result["ports"]:
        lines.append(f"{port['link']:<16} {port['from'] + ' -> ' + port['to']:<22} {port['load_bps'] / 1e6:>9.3f} "
                     f"{port['utilisation']:>8.1%}")
    emit(args, result, "\n".join(lines))
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    """Runs the topology in the simulator and prints each stream's and recovery function's counts."""
    if args.output:
        output_dir(args.output, "-o/--output")
    import pandas as pd

    from frerlab.net import sim
    from frerlab.net.analyse import analyse

    data, topo = load_data(args)
    result = sim.run(topo, allow_long=args.allow_long)
    prediction = analyse(topo, faults="schedule")
    streams = sim.summary(topo, result, prediction)
    frer = result.frer
    columns = [c for c in ("stream", "node", "ingress", "individual", "keep_tag", "passed_packets",
                           "discarded_packets", "lost_packets", "out_of_order_packets", "rogue_packets",
                           "tagless_packets", "resets") if c in frer]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        text = pd.DataFrame(streams).to_string(index=False)
        if not frer.empty:
            text += "\n\n" + frer[columns].fillna({"ingress": "-"}).to_string(index=False)
    if args.output:
        result.save(args.output)
        sim.write_inputs(f"{args.topology}" + "".join(f" --set {item}" for item in args.set), data, topo,
                         args.output)
        write_atomic(args.output / "prediction.json", json.dumps(prediction, indent=1))
    emit(args, {"topology": str(args.topology), "output": args.output, "streams": streams,
                "frer": json.loads(frer.to_json(orient="records")) if not frer.empty else [],
                "run_info": result.run_info}, text)
    if args.output:
        print(f"results written to {args.output}", file=sys.stderr)
    return 0


def cmd_scenario(args: argparse.Namespace) -> int:
    """Prints or writes the compiled scenario, checked as `frerlab sim check` checks a file."""
    from frerlab.net.sim import dump_yaml, scenario_data
    from frerlab.sim.schema import parse_scenario

    topo = load(args)
    data = scenario_data(topo)
    parse_scenario(data, f"the scenario compiled from {args.topology}")
    text = f"# Compiled from {args.topology} by frerlab net scenario.\n" + dump_yaml(data)
    if args.output:
        write_atomic(output_file(args.output, "-o/--output"), text)
        print(f"scenario written to {args.output}", file=sys.stderr)
    emit(args, {"topology": str(args.topology), "output": args.output, "scenario": data},
         None if args.output else text.rstrip("\n"))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """Runs the loss sweep, writes its table and figure and prints the table."""
    out = output_dir(args.output, "-o/--output")
    import pandas as pd
    import vl_convert

    from frerlab.net.sweep import figure, loss_sweep
    from frerlab.net.topology import read_data
    from frerlab.units import option_value
    from frerlab.yamlfile import parse_overrides, set_field

    losses = [option_value(_probability, text, "--loss") for text in args.loss.split(",")]
    links = [name.strip() for name in args.links.split(",")] if args.links else None
    overrides = parse_overrides(args.set)
    topologies = []
    for path in args.topology:
        data = read_data(path)
        for name, value in overrides.items():
            set_field(data, name, value)
        topologies.append((str(path), data))
    rows = loss_sweep(topologies, losses, links, args.allow_long,
                      lambda done, total: print(f"run {done}/{total}", file=sys.stderr))
    table = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "sweep.csv", table.to_csv(index=False))
    spec = figure(rows, "Loss against link loss: simulator (points, 95 %) and prediction (lines)")
    write_atomic(out / "loss.svg", vl_convert.vegalite_to_svg(spec))
    write_atomic(out / "loss.png", vl_convert.vegalite_to_png(spec, scale=2))
    with pd.option_context("display.width", 200):
        text = table[["topology", "stream", "p", "sent", "loss_ratio", "predicted_loss", "within_prediction"]].to_string(
            index=False)
    emit(args, {"output": out, "rows": rows}, text)
    print(f"results written to {out} (sweep.csv, loss.svg, loss.png)", file=sys.stderr)
    return 0


def _probability(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not a probability (a number 0..1)") from None
    if not 0 <= value <= 1:
        raise ValueError(f"{what} {value:g} is out of range (0..1)")
    return value


def cmd_nodes(args: argparse.Namespace) -> int:
    """Prints each node's FRER functions."""
    from frerlab.net.nodes import node_functions
    from frerlab.net.sim import dump_yaml

    topo = load(args)
    data = [n.to_data() for n in node_functions(topo).values()]
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print(dump_yaml(data), end="")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Writes each node's configuration (frerlab.net.dataplane) in the chosen format, one file
    per node; a node the format cannot express (LAN966x: no R-TAG kept after recovery) is named
    with the reason, and the command then ends with status 1."""
    from frerlab.errors import UsageError
    from frerlab.net.dataplane import node_documents

    out = output_dir(args.output, "-o/--output")
    topo = load(args)
    documents = node_documents(topo)
    written, refused = {}, {}
    out.mkdir(parents=True, exist_ok=True)
    for name, document in documents.items():
        path = out / f"{name}{EXPORT_FORMATS[args.format]}"
        try:
            text = _export_text(document, name, args.format, str(args.topology))
        except UsageError as err:
            refused[name] = str(err)
            continue
        write_atomic(path, text)
        written[name] = str(path)
    lines = [f"{name}: {path}" for name, path in written.items()]
    lines += [f"{name}: not exported: {reason}" for name, reason in refused.items()]
    emit(args, {"topology": str(args.topology), "format": args.format, "written": written, "refused": refused},
         "\n".join(lines))
    return 1 if refused else 0


def _export_text(document: dict, name: str, fmt: str, source: str) -> str:
    """One node's document in format `fmt`."""
    from frerlab.dataplane.config import parse_config
    from frerlab.net.sim import dump_yaml

    if fmt == "dataplane":
        return dump_yaml(document)
    cfg = parse_config(document, f"node {name} of {source}")
    if fmt == "lan966x":
        from frerlab.config.lan966x import export_lan966x
        from frerlab.errors import UsageError

        if "sequence-identification" in document:
            raise UsageError("a stream recovered here and passed on with its R-TAG (recovery at every stage) "
                             "has no LAN966x form: the switch removes the tag where it recovers")

        return export_lan966x(cfg, source=f"{source}, node {name}")
    from frerlab.config.yang import dumps, export_yang

    return dumps(export_yang(cfg, []))


def cmd_up(args: argparse.Namespace) -> int:
    """Brings the topology up in namespaces and says how to reach it."""
    import time

    from frerlab.net import namespaces

    started = time.monotonic()
    data, topo = load_data(args)
    state = namespaces.up(topo, data, str(args.topology), args.name, args.hook)
    lines = [f"network {args.name} ({topo.name}) up in {time.monotonic() - started:.1f} s: {len(topo.nodes)} nodes, "
             f"{len(topo.links)} links, data planes on {', '.join(state['dataplanes']) or 'none'}"]
    lines += [f"  {node}: {address}" for node, address in state["addresses"].items()]
    lines += [f"  stream {stream}: UDP port {port}" for stream, port in state["ports"].items()]
    lines.append(f"  frerlab net exec --name {args.name} NODE -- CMD")
    emit(args, state, "\n".join(lines))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    """Takes one network (or every one) down."""
    from frerlab.net import namespaces

    return down_verb(args, "network", namespaces.running, namespaces.down)


def cmd_exec(args: argparse.Namespace) -> int:
    """Runs a command in a node's namespace; its exit status."""
    import subprocess

    from frerlab.net import namespaces

    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    return subprocess.run(namespaces.exec_argv(args.name, args.node, argv)).returncode


def cmd_impair(args: argparse.Namespace) -> int:
    """Changes a link's impairments."""
    from frerlab.errors import UsageError
    from frerlab.net import namespaces
    from frerlab.units import option_value

    changes: dict = {}
    if args.down or args.up:
        changes["down"] = bool(args.down)
    if args.loss is not None:
        changes["loss"] = option_value(_probability, args.loss, "--loss")
    if not changes and not args.clear:
        raise UsageError("nothing to change: give --down, --up, --loss or --clear")
    info = namespaces.impair(args.name, args.link, args.clear, **changes)
    emit(args, {"network": args.name, "link": args.link, **info},
         "\n".join(f"link {args.link} {direction}: {({k: v for k, v in imp.items() if v}) or 'clean'}"
                   for direction, imp in info["settings"].items()))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Prints each node's recovery counters and each link's element counters."""
    from frerlab.net import namespaces

    st = namespaces.status(args.name)
    lines = [f"network {st['name']} ({st['topology']})"]
    for node, info in st["nodes"].items():
        lines.append(f"  {node:<12}{info['netns']}" + (f"  {info['address']}" if info["address"] else ""))
        for stream in (info["dataplane"] or {"streams": []})["streams"]:
            for r in stream["recovery"]:
                lines.append(f"    stream {stream['handle']} {r['function']} recovery: passed {r['passed_packets']}, "
                             f"discarded {r['discarded_packets']}, lost {r['lost_packets']}, "
                             f"rogue {r['rogue_packets']}")
    for link, info in st["links"].items():
        for direction, c in info["counters"].items():
            active = {k: v for k, v in info["settings"][direction].items() if v}
            lines.append(f"  link {link} {direction}: {active or 'clean'}; in {c['frames_in']}, "
                         f"forwarded {c['forwarded']}, dropped {c['dropped_down'] + c['dropped_loss']}")
    emit(args, st, "\n".join(lines))
    return 0
