"""`frerlab bench run CAMPAIGN.yaml [--out DIR] [--resume] [--steps KIND,...] [--dry-run]`: a benchmark campaign
(docs/benchmarks.md) run unattended on a testbed or real hosts, into a results directory;
`frerlab bench show DIR`: its summary printed again."""

from __future__ import annotations

import argparse
import json
import signal
import time
from pathlib import Path

from frerlab.bench.campaign import HostsSystem, plan, plan_text, read_campaign, select_steps
from frerlab.errors import EXIT_INTERRUPTED, UsageError
from frerlab.files import read_json, shape_error
from frerlab.names import output_dir

EPILOG = """examples:
  frerlab bench run campaigns/quick.yaml                  every method, short (under 3 minutes)
  frerlab bench run campaigns/seed-methodology.yaml --dry-run
                                                          the seeds' methodology: plan and duration
  frerlab bench run campaigns/quick.yaml --out r1         ... into r1/
  frerlab bench run campaigns/quick.yaml --out r1 --resume
                                                          complete an interrupted run
  frerlab bench run campaigns/seed-methodology.yaml --out r2 --steps tcp,latency
                                                          only those steps (both modes, one machine);
                                                          the rest later with --resume
  frerlab bench show r1                                   its summary again: statistics, flags, FRER vs control
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `bench run` and `bench show`."""
    bench = subparsers.add_parser("bench", help="benchmark campaigns: RFC 2544, iperf3, sockperf, fail-over")
    verbs = bench.add_subparsers(title="verbs", metavar="VERB")
    bench.set_defaults(func=lambda args: bench.print_help() or 2)
    run = verbs.add_parser("run", help="run a campaign file into a results directory", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("campaign", type=Path, help="the campaign file (YAML)")
    run.add_argument("--out", type=Path, help="results directory (default results/NAME-DATE-TIME)")
    run.add_argument("--resume", action="store_true", help="complete the results in --out, skipping finished units")
    run.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration; run nothing")
    run.add_argument("--steps", type=lambda text: text.split(","), metavar="KIND,...",
                     help="only the campaign's steps of these kinds (e.g. tcp,latency), every mode of "
                          "each; the others stay for a later --resume")
    run.set_defaults(func=_run)
    show = verbs.add_parser("show", help="print a results directory's summary: statistics, flags, FRER vs control")
    show.add_argument("results", type=Path, help="a results directory (bench run, or import --results)")
    show.add_argument("--json", action="store_true", help="print summary.json")
    show.set_defaults(func=_show)


def _run(args: argparse.Namespace) -> int:
    campaign, text = read_campaign(args.campaign)
    units = select_steps(campaign, plan(campaign), args.steps)
    out = output_dir(args.out or Path("results") / f"{campaign.name}-{time.strftime('%Y%m%d-%H%M%S')}", "--out")
    if args.dry_run:
        print(plan_text(campaign, units))
        if isinstance(campaign.system, HostsSystem):
            print(hosts_note(campaign.system))
        return 0
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out: the results directory to complete")
    from frerlab.bench.run import run_campaign, summary_lines  # the testbed's; a dry run needs none
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        summary = run_campaign(campaign, text, out, resume=args.resume, steps=args.steps)
    except KeyboardInterrupt:
        print(f"frerlab: interrupted; finished units are in {out}: `{resume_command(args.campaign, out, args.steps)}` "
              "completes them")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("\n".join(summary_lines(summary)))
    print(f"results in {out} (summary.json, summary.csv)")
    return 0


def resume_command(campaign: Path, out: Path, steps: list[str] | None) -> str:
    """The command that completes an interrupted run: the same campaign, results and steps."""
    only = f" --steps {','.join(steps)}" if steps else ""
    return f"frerlab bench run {campaign} --out {out} --resume{only}"


def hosts_note(system: HostsSystem) -> str:
    """What a dry run of a hosts campaign did not check: the hosts file, and whether it is there."""
    where = ("is there" if system.hosts_file.is_file() else
             "is not there: write it as docs/remote.md ('Two PCs and a switch') shows")
    return (f"hosts: a dry run reads no hosts file and logs into nothing; the run needs {system.hosts_file} "
            f"(`hosts:` is relative to the campaign file), which {where}; `frerlab hosts check {system.hosts_file}` "
            "checks the hosts")


def _show(args: argparse.Namespace) -> int:
    path = args.results / "summary.json"
    if not path.exists():
        raise UsageError(f"{args.results} holds no summary.json: not a results directory "
                         "(`frerlab bench run` or `frerlab import --results` make one)")
    summary = read_json(path, "results summary", root=args.results)
    from frerlab.bench.run import summary_lines

    try:
        text = json.dumps(summary, indent=1) if args.json else "\n".join(summary_lines(summary))
    except (KeyError, TypeError, AttributeError, ValueError):  # a field missing or of another kind
        raise shape_error(path, "results summary", "its groups and comparisons are not those frerlab writes") from None
    print(text)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
