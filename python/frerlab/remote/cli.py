"""`frerlab hosts check HOSTS.yaml [--json]`: log into every host of a hosts file at once and
print its pre-flight (tools, interface, CPU governor, clock), and whether one-way latency can
be measured between talker and listener."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from frerlab.remote.hosts import read_hosts

EPILOG = """examples:
  frerlab hosts check lab-hosts.yaml          pre-flight of talker, listener (and switch)
  frerlab hosts check lab-hosts.yaml --json   the same as the record campaigns store
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `hosts check`."""
    hosts = subparsers.add_parser("hosts", help="real hosts over SSH: pre-flight checks")
    verbs = hosts.add_subparsers(title="verbs", metavar="VERB")
    hosts.set_defaults(func=lambda args: hosts.print_help() or 2)
    check = verbs.add_parser("check", help="log in to every host and print its pre-flight", epilog=EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("hosts", type=Path, help="the hosts file (YAML)")
    check.add_argument("--json", action="store_true", help="print the pre-flight record as JSON")
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    from frerlab.remote.preflight import one_way_latency_allowed, preflight  # asyncssh: only when used
    from frerlab.remote.ssh import Session

    with Session(read_hosts(args.hosts)) as session:
        report = preflight(session)
    ok, why = one_way_latency_allowed(report)
    if args.json:
        print(json.dumps({"hosts": report, "one_way_latency": {"allowed": ok, "why": why}}, indent=1))
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
