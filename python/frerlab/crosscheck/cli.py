"""The `frerlab crosscheck` verb. Building the parser imports nothing heavy: the simulator, the
testbed and pydantic are loaded when the verb runs."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import EXIT_VERDICT, UsageError
from frerlab.names import output_dir

EPILOG = """Runs SCENARIO (a small YAML file: stream, a cut of each path, loss per path, link rate,
sw2's history length) in the simulator and on a temporary namespace testbed (taken down at the
end, also on failure, Ctrl-C, SIGTERM or SIGHUP), writes the raw results of both (DIR/sim, DIR/testbed), then the
comparison (DIR/comparison.json, DIR/comparison.txt), and prints per metric both results, the
tolerance and whether they agree. docs/crosscheck.md describes the file and the tolerances.

Given a topology file (networks/*.yaml, docs/networks.md) instead, runs its streams and faults
in the simulator and on the topology brought up in namespaces (DIR/sim, DIR/net), and holds
both to each other and to the prediction of `frerlab net analyse`.

exit status: 0 the counts agree, 1 they do not, 2 bad input, 4 a tool or the system failed.

examples:
  frerlab crosscheck scenarios/crosscheck/path_cut.yaml
  frerlab crosscheck scenarios/crosscheck/path_cut.yaml -o results/xc --json
  frerlab crosscheck networks/ring.yaml --set streams.video.rate=20Mbps -o results/xc-ring
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `crosscheck`."""
    parser = subparsers.add_parser("crosscheck", help="run one scenario in the simulator and on the testbed, "
                                   "compare", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", type=Path, metavar="SCENARIO", help="crosscheck scenario or topology (YAML)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="a topology file only: override a field by dotted path (as `frerlab net`; repeatable)")
    add_output(parser, "results directory (default results/crosscheck-TIME)", old="--out", metavar="DIR")
    add_json(parser, "the comparison")
    parser.set_defaults(func=_crosscheck)


def _crosscheck(args: argparse.Namespace) -> int:
    from frerlab.crosscheck import run
    from frerlab.yamlfile import read_mapping

    data = read_mapping(args.scenario, "crosscheck scenario or topology", run.SHAPE + ", or a topology file")
    out = output_dir(args.output or Path("results") / time.strftime("crosscheck-%Y%m%d-%H%M%S"), "-o/--output")
    if "nodes" in data:
        from frerlab.crosscheck import network
        from frerlab.net.topology import read_with_overrides

        data, topo = read_with_overrides(args.scenario, args.set)
        network.check(topo)
        print(f"crosscheck {topo.name}: simulator, then the network in namespaces ...", file=sys.stderr)
        work, table = (lambda: network.run(topo, data, str(args.scenario), out)), network.table
    else:
        if args.set:
            raise UsageError("--set takes a topology file; a crosscheck scenario has no fields to override")
        sc = run.parse_scenario(data, str(args.scenario))
        print(f"crosscheck {sc.name}: simulator, then testbed ({sc.stream.duration + run.TAIL_S:g} s of stream) ...",
              file=sys.stderr)
        work, table = (lambda: run.run(sc, out)), run.table
    stops = (signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, _interrupt) for s in stops}  # the testbed goes, as on Ctrl-C
    try:
        comparison = work()
    finally:
        for s in stops:
            signal.signal(s, previous[s])
    emit(args, comparison, table(comparison))
    print(f"  results in {out}", file=sys.stderr)
    return 0 if comparison["agree"] else EXIT_VERDICT


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP: handled as Ctrl-C, so the temporary testbed is taken down."""
    raise KeyboardInterrupt
