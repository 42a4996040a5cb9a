"""`frerlab bench run CAMPAIGN.yaml [-o DIR] [--resume] [--steps KIND,...] [--dry-run]`: a benchmark campaign
(docs/benchmarks.md) run unattended on a testbed or real hosts, into a results directory;
`frerlab bench show DIR`: its summary printed again."""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path

from frerlab.bench.campaign import HostsSystem, plan, plan_text, read_campaign, select_steps, total_estimate_s
from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import EXIT_INTERRUPTED, UsageError
from frerlab.files import read_json, shape_error
from frerlab.names import output_dir

EPILOG = """examples:
  frerlab bench run campaigns/quick.yaml                  every method, short (under 3 minutes)
  frerlab bench run campaigns/seed-methodology.yaml --dry-run
                                                          the seeds' methodology: plan and duration
  frerlab bench run campaigns/quick.yaml -o r1           ... into r1/
  frerlab bench run campaigns/quick.yaml -o r1 --resume
                                                          complete an interrupted run
  frerlab bench run campaigns/seed-methodology.yaml -o r2 --steps tcp,latency
                                                          only those steps (both modes, one machine);
                                                          the rest later with --resume
  frerlab bench show r1                                   its summary again: statistics, flags, FRER vs control
  frerlab bench show r1 --json                            summary.json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `bench run` and `bench show`."""
    bench = subparsers.add_parser("bench", help="benchmark campaigns: RFC 2544, iperf3, sockperf, fail-over")
    verbs = bench.add_subparsers(title="verbs", metavar="VERB")
    bench.set_defaults(func=lambda args: bench.print_help() or 2)
    run = verbs.add_parser("run", help="run a campaign file into a results directory", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("campaign", type=Path, help="the campaign file (YAML)")
    add_output(run, "results directory (default results/NAME-DATE-TIME)", old="--out", metavar="DIR")
    run.add_argument("--resume", action="store_true", help="complete the results in -o, skipping finished units")
    run.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration; run nothing")
    run.add_argument("--steps", type=lambda text: text.split(","), metavar="KIND,...",
                     help="only the campaign's steps of these kinds (e.g. tcp,latency), every mode of "
                          "each; the others stay for a later --resume")
    add_json(run, "the summary (with --dry-run: the plan)")
    run.set_defaults(func=_run)
    show = verbs.add_parser("show", help="print a results directory's summary: statistics, flags, FRER vs control",
                            epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("results", type=Path, help="a results directory (bench run, or import --results)")
    add_json(show, "summary.json")
    show.set_defaults(func=_show)


def _run(args: argparse.Namespace) -> int:
    campaign, text = read_campaign(args.campaign)
    units = select_steps(campaign, plan(campaign), args.steps)
    out = output_dir(args.output or Path("results") / f"{campaign.name}-{time.strftime('%Y%m%d-%H%M%S')}",
                     "-o/--output")
    if args.dry_run:
        note = hosts_note(campaign.system) if isinstance(campaign.system, HostsSystem) else None
        emit(args, {"campaign": campaign.name, "system": campaign.system.describe(), "modes": campaign.system.modes,
                    "estimate_s": total_estimate_s(campaign, units), "hosts_note": note,
                    "units": [{"step": u.step, "kind": u.kind, "mode": u.mode, "params": u.params,
                               "repetition": u.repetition, "estimate_s": u.estimate_s} for u in units]},
             plan_text(campaign, units) + (f"\n{note}" if note else ""))
        return 0
    if args.resume and args.output is None:
        raise UsageError("--resume needs -o/--output: the results directory to complete")
    from frerlab.bench.run import run_campaign, summary_lines  # the testbed's; a dry run needs none
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        summary = run_campaign(campaign, text, out, resume=args.resume, steps=args.steps)
    except KeyboardInterrupt:
        resume = resume_command(args.campaign, out, args.steps)
        emit(args, {"output": out, "interrupted": True, "resume": resume},
             f"frerlab: interrupted; finished units are in {out}: `{resume}` completes them")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    emit(args, {"output": out, "interrupted": False, "summary": summary},
         "\n".join(summary_lines(summary)) + f"\nresults in {out} (summary.json, summary.csv)")
    return 0


def resume_command(campaign: Path, out: Path, steps: list[str] | None) -> str:
    """The command that completes an interrupted run: the same campaign, results and steps."""
    only = f" --steps {','.join(steps)}" if steps else ""
    return f"frerlab bench run {campaign} -o {out} --resume{only}"


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
        text = None if args.json else "\n".join(summary_lines(summary))
    except (KeyError, TypeError, AttributeError, ValueError):  # a field missing or of another kind
        raise shape_error(path, "results summary", "its groups and comparisons are not those frerlab writes") from None
    emit(args, summary, text)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
