"""The `frerlab crosscheck` verb. Building the parser imports nothing heavy: the simulator, the
testbed and pydantic are loaded when the verb runs."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import EXIT_VERDICT
from frerlab.names import output_dir

EPILOG = """Runs SCENARIO (a small YAML file: stream, a cut of each path, loss per path, link rate,
sw2's history length) in the simulator and on a temporary namespace testbed (taken down at the
end, also on failure, Ctrl-C, SIGTERM or SIGHUP), writes the raw results of both (DIR/sim, DIR/testbed), then the
comparison (DIR/comparison.json, DIR/comparison.txt), and prints per metric both results, the
tolerance and whether they agree. docs/crosscheck.md describes the file and the tolerances.

exit status: 0 the counts agree, 1 they do not, 2 bad input, 4 a tool or the system failed.

examples:
  frerlab crosscheck scenarios/crosscheck/path_cut.yaml
  frerlab crosscheck scenarios/crosscheck/path_cut.yaml -o results/xc --json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `crosscheck`."""
    parser = subparsers.add_parser("crosscheck", help="run one scenario in the simulator and on the testbed, "
                                   "compare", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", type=Path, metavar="SCENARIO", help="crosscheck scenario (YAML)")
    add_output(parser, "results directory (default results/crosscheck-TIME)", old="--out", metavar="DIR")
    add_json(parser, "the comparison")
    parser.set_defaults(func=_crosscheck)


def _crosscheck(args: argparse.Namespace) -> int:
    from frerlab.crosscheck import run

    sc = run.load_scenario(args.scenario)
    out = output_dir(args.output or Path("results") / time.strftime("crosscheck-%Y%m%d-%H%M%S"), "-o/--output")
    print(f"crosscheck {sc.name}: simulator, then testbed ({sc.stream.duration + run.TAIL_S:g} s of stream) ...",
          file=sys.stderr)
    stops = (signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, _interrupt) for s in stops}  # the testbed goes, as on Ctrl-C
    try:
        comparison = run.run(sc, out)
    finally:
        for s in stops:
            signal.signal(s, previous[s])
    emit(args, comparison, run.table(comparison))
    print(f"  results in {out}", file=sys.stderr)
    return 0 if comparison["agree"] else EXIT_VERDICT


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP: handled as Ctrl-C, so the temporary testbed is taken down."""
    raise KeyboardInterrupt
