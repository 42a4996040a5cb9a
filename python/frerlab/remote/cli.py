"""`frerlab hosts check HOSTS.yaml [--json]`: log into every host of a hosts file at once and
print its pre-flight (tools, interface, CPU governor, clock), and whether one-way latency can
be measured between talker and listener. `frerlab hosts push HOSTS.yaml SCRIPT [--dry-run]`:
run a switch configuration script on the switch's management, line by line."""

from __future__ import annotations

import argparse
from pathlib import Path

from frerlab.cli_output import add_json, emit
from frerlab.errors import UsageError
from frerlab.remote.hosts import read_hosts
from frerlab.yamlfile import read_text

EPILOG = """examples:
  frerlab hosts check lab-hosts.yaml          pre-flight of talker, listener (and switch)
  frerlab hosts check lab-hosts.yaml --json   the same as the record campaigns store
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `hosts check` and `hosts push`."""
    hosts = subparsers.add_parser("hosts", help="real hosts over SSH: pre-flight checks, switch configuration")
    verbs = hosts.add_subparsers(title="verbs", metavar="VERB")
    hosts.set_defaults(func=lambda args: hosts.print_help() or 2)
    check = verbs.add_parser("check", help="log in to every host and print its pre-flight", epilog=EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("hosts", type=Path, help="the hosts file (YAML)")
    add_json(check, "the pre-flight record")
    check.set_defaults(func=_check)
    push = verbs.add_parser("push", help="run a switch configuration script on the switch's management, line by line",
                            epilog=PUSH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    push.add_argument("hosts", type=Path, help="the hosts file (YAML), with a `switch` entry")
    push.add_argument("script", type=Path, help="the configuration script: one shell command per line")
    push.add_argument("--dry-run", action="store_true", help="print what would run on which host; log in to nothing")
    add_json(push, "the commands and whether they ran")
    push.set_defaults(func=_push)


PUSH_EPILOG = """The script is a text file of shell commands, one per line ('#' starts a comment), such as the
LAN966x BSP tool calls that configure FRER on a switch; they run in order on the hosts file's
`switch`, and the first that fails stops the push (exit 4), naming its line.

examples:
  frerlab hosts push lab-hosts.yaml sw1.sh --dry-run     what would run, and where
  frerlab hosts push lab-hosts.yaml sw1.sh
  frerlab hosts push lab-hosts.yaml sw1.sh --json        the commands run, as JSON
"""


def script_commands(path: Path) -> list[tuple[int, str]]:
    """(line number, command) of every command line of a configuration script."""
    text = read_text(path, "configuration script")
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.strip().startswith("#")]


def _push(args: argparse.Namespace) -> int:
    hosts = read_hosts(args.hosts)
    if hosts.switch is None:
        raise UsageError(f"{args.hosts} has no `switch` entry: name the switch's management (host, user, key)")
    commands = script_commands(args.script)
    if not commands:
        raise UsageError(f"{args.script} holds no command (one shell command per line)")
    result = {"switch": hosts.switch.address, "script": args.script, "dry_run": args.dry_run,
              "commands": [{"line": n, "command": command} for n, command in commands]}
    if args.dry_run:
        emit(args, result, "\n".join([f"would run on switch {hosts.switch.address}, in order, stopping at the first "
                                      "failure:", *(f"  {args.script}:{n}: {command}" for n, command in commands)]))
        return 0
    from frerlab.remote.ssh import RemoteError, Session

    with Session(hosts, roles=["switch"]) as session:
        for n, command in commands:
            done = session.run("switch", ["sh", "-c", command], check=False)
            if done.returncode != 0:
                raise RemoteError(f"{args.script}:{n}: `{command}` failed on the switch with status "
                                  f"{done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}")
            if not args.json:
                print(f"{args.script}:{n}: ok  {command}")
    emit(args, result, f"{len(commands)} commands run on switch {hosts.switch.address}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from frerlab.remote.preflight import one_way_latency_allowed, preflight  # asyncssh: only when used
    from frerlab.remote.ssh import Session

    with Session(read_hosts(args.hosts)) as session:
        report = preflight(session)
    ok, why = one_way_latency_allowed(report)
    if args.json:
        emit(args, {"hosts": report, "one_way_latency": {"allowed": ok, "why": why}})
        return 0
    for role, host in report.items():
        tools = ", ".join(f"{name} {'missing' if v is None else v}" for name, v in host["tools"].items())
        print(f"{role} {host['target']}: {tools}")
        print(f"  CPU governor {', '.join(host['cpu_governor'] or ['unknown'])}; clock: {host['clock']['why']}")
        if "interface" in host:
            i = host["interface"]
            if not i["present"]:
                print(f"  interface {i['name']}: not present ({i['why']})")
            else:
                offloads = ", ".join(f"{k} {'on' if v else 'off'}" for k, v in i["offloads"].items())
                print(f"  interface {i['name']}: {'up' if i['up'] else 'DOWN'}, MTU {i['mtu']}, "
                      f"{i['speed_mbps'] or '?'} Mb/s {i['duplex'] or '?'} duplex; {offloads}")
    print(f"one-way latency: {'yes' if ok else 'no, RTT/2 instead'} ({why})")
    return 0
