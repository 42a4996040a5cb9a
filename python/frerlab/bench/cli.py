"""`frerlab bench run CAMPAIGN.yaml [--out DIR] [--resume] [--dry-run]`: a benchmark campaign
(docs/benchmarks.md) run unattended on a testbed, into a results directory."""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path

from frerlab.bench.campaign import plan, plan_text, read_campaign
from frerlab.errors import EXIT_INTERRUPTED, UsageError

EPILOG = """examples:
  frerlab bench run campaigns/quick.yaml                  every method, short (under 3 minutes)
  frerlab bench run campaigns/seed-methodology.yaml --dry-run
                                                          the seeds' methodology: plan and duration
  frerlab bench run campaigns/quick.yaml --out r1         ... into r1/
  frerlab bench run campaigns/quick.yaml --out r1 --resume
                                                          complete an interrupted run
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `bench run`."""
    bench = subparsers.add_parser("bench", help="benchmark campaigns: RFC 2544, iperf3, sockperf, fail-over")
    verbs = bench.add_subparsers(title="verbs", metavar="VERB")
    bench.set_defaults(func=lambda args: bench.print_help() or 2)
    run = verbs.add_parser("run", help="run a campaign file into a results directory", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("campaign", type=Path, help="the campaign file (YAML)")
    run.add_argument("--out", type=Path, help="results directory (default results/NAME-DATE-TIME)")
    run.add_argument("--resume", action="store_true", help="complete the results in --out, skipping finished units")
    run.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration; run nothing")
    run.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    campaign, text = read_campaign(args.campaign)
    if args.dry_run:
        print(plan_text(campaign, plan(campaign)))
        return 0
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out: the results directory to complete")
    out = args.out or Path("results") / f"{campaign.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    from frerlab.bench.run import run_campaign, summary_lines  # the testbed's; a dry run needs none
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        summary = run_campaign(campaign, text, out, resume=args.resume)
    except KeyboardInterrupt:
        print(f"frerlab: interrupted; finished units are in {out}: `frerlab bench run {args.campaign} "
              f"--out {out} --resume` completes them")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("\n".join(summary_lines(summary)))
    print(f"results in {out} (summary.json, summary.csv)")
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
