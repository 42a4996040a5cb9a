"""Command-line verbs `frerlab capture` (record a testbed's ports while a run goes on) and
`frerlab verify` (check pcap/pcapng captures per stream and point). The work is done in
frerlab.capture.record and frerlab.capture.verify, imported when a verb runs, so registering the
verbs costs every other command nothing."""

from __future__ import annotations

import argparse
import sys

from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import EXIT_VERDICT, UsageError
from frerlab.names import output_dir

CAPTURE_EPILOG = """Captures with tcpdump inside the testbed's namespaces, at the points the fail-over
timeline uses: the talker's eth0 (outgoing), each path's link toward sw2 (outgoing) and the
listener's eth0 (incoming), into talker.pcap, path_a.pcap, path_b.pcap and listener.pcap, plus
capture.json for `frerlab verify`. Runs until --duration has passed or Ctrl-C; every tcpdump is
stopped and waited for however it ends.

examples:
  frerlab capture --testbed frerlab -o caps              # until Ctrl-C; run anything meanwhile
  frerlab capture --testbed tb1 -o caps --duration 10 &  frerlab failover --name tb1
  frerlab capture --testbed tb1 -o caps --duration 10 --json   # the manifest (capture.json) on stdout
  frerlab verify caps
"""

VERIFY_EPILOG = """Checks per stream and capture point: R-TAG present where expected, sequence continuity,
gaps, same-point duplicates, exactly one copy of each sequence number after elimination, the
replication skew between the two paths (a histogram) and the latency between capture points.
A stream is a flow (--key fields) that carried an R-TAG somewhere or frerlab's probe payload.
A capture directory of `frerlab capture` (capture.json) names its points and their roles; a file
is a point named by its stem (path_a, path_b: the replicas; after_elimination or listener:
after elimination), or give --paths and --after. docs/verify.md.

exit status: 0 nothing wrong, 1 a problem found (listed), 2 bad input.

examples:
  frerlab verify caps                                    # a directory written by frerlab capture
  frerlab verify results/failover-20260101-120000        # a fail-over run's captures
  frerlab verify a.pcapng b.pcapng out.pcap --paths a,b --after out --json
  frerlab verify caps --key dst_mac,dst_ip               # one stream per destination (coarser)
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `capture` and `verify`."""
    cap = subparsers.add_parser("capture", help="record a testbed's ports while a run goes on",
                                epilog=CAPTURE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    cap.add_argument("--testbed", default="frerlab", metavar="NAME", help="testbed name (default frerlab)")
    add_output(cap, "where the captures go", required=True, metavar="DIR")
    cap.add_argument("--duration", type=float, metavar="S", help="seconds (default: until Ctrl-C)")
    add_json(cap, "the manifest (as capture.json)")
    cap.set_defaults(func=_capture)

    ver = subparsers.add_parser("verify", help="check pcap/pcapng captures per stream and path",
                                epilog=VERIFY_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ver.add_argument("captures", nargs="+", metavar="CAPTURE", help="pcap/pcapng files or capture directories")
    add_json(ver, "the full report")
    ver.add_argument("--key", metavar="FIELDS", help="stream key fields, comma-separated (default "
                     "dst_mac,src_mac,src_ip,dst_ip,proto,src_port,dst_port; also vlan, ethertype)")
    ver.add_argument("--paths", metavar="P,Q", help="the two points that carry the replicas")
    ver.add_argument("--after", metavar="POINT", help="the point after elimination")
    ver.add_argument("--window", type=int, metavar="N", help="sequence numbers kept per stream and point "
                     "(default 16384)")
    ver.set_defaults(func=_verify)


def _capture(args: argparse.Namespace) -> int:
    from frerlab.capture.record import MAX_DURATION_S, record

    if args.duration is not None and not 0.1 <= args.duration <= MAX_DURATION_S:
        raise UsageError(f"--duration {args.duration} s is out of range (0.1..{MAX_DURATION_S} s)")
    out = output_dir(args.output, "-o/--output")
    manifest = record(args.testbed, out, args.duration,
                      started=lambda: print(f"capturing testbed {args.testbed} into {out}"
                                            + ("" if args.duration else "; Ctrl-C stops"), file=sys.stderr))
    lines = [f"  {name:<18}{p['file']:<15}{p['tcpdump']['captured']} frames  ({p['host']} {p['interface']} "
             f"{p['direction']})" for name, p in manifest["points"].items()]
    seconds = (manifest["stopped_ns"] - manifest["started_ns"]) / 1e9
    lines.append(f"stopped by {manifest['stopped_by']} after {seconds:.1f} s; "
                 + ("complete" if manifest["complete"] else "INCOMPLETE: a tcpdump dropped frames")
                 + f"; check with: frerlab verify {out}")
    emit(args, manifest, "\n".join(lines))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from frerlab.capture import verify

    points, roles = verify.points_from(args.captures)
    key = verify.KEY if args.key is None else [f.strip() for f in args.key.split(",") if f.strip()]
    names = [p.name for p in points]
    if args.paths is not None:
        paths = [p.strip() for p in args.paths.split(",")]
        if len(paths) != 2:
            raise UsageError(f"--paths {args.paths!r} is not two points P,Q")
    else:  # a manifest's, where its points are all given; else by name
        paths = roles.get("paths")
        paths = paths if paths and all(p in names for p in paths) else None
    after = args.after
    if after is None and "after_elimination" in roles:
        after = roles["after_elimination"] or ""  # None in a manifest: no point after elimination
    report = verify.verify(points, key, paths, after, window=verify.WINDOW if args.window is None else args.window)
    emit(args, report, None if args.json else verify.summary(report))
    return 0 if report["ok"] else EXIT_VERDICT
