"""Command-line verbs of the attacks on a testbed: `frerlab attack run|suite|list`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from frerlab.attack import run, spec
from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import UsageError
from frerlab.names import output_dir
from frerlab.testbed import bed
from frerlab.units import frame_rate, option_value, size_bytes

EPILOG = """An attacker on one member path of a testbed (`frerlab testbed up`) runs a named
attack while a measured stream flows talker -> listener; the result says what it cost the
stream (genuine frames lost, duplicates and forged frames delivered, time to recover) and what
the eliminating node's counters and latent error detection showed of it (docs/security.md).
`--set KEY=VALUE` changes one of the attack's values (`frerlab attack list` shows them; count
and duration are alternatives). Raw results are written first (meta.json, send.json,
recv.json, inject.json, counters.json), then result.json.

exit status: 0 the attack ran and its harm was measured (harm or none), 2 bad input, 4 a
tool or the testbed failed, 130 interrupted (the injector stopped, every path restored).

examples:
  frerlab attack list
  frerlab testbed up --name atk --reset-timeout 200
  frerlab attack run inject-ahead --testbed atk --path a -o results/inject-ahead
  frerlab attack run inject-after-reset --testbed atk --set outage=0.3s --set rate=20 -o results/reset --json
  frerlab attack run replay --testbed atk --path b --set age=40 --duration 3 -o results/replay-rogue
  frerlab attack suite --guard 20,0.05 --police 5Mbps --reset-timeout 200 -o results/attack-suite
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `attack run`, `attack suite` and `attack list`."""
    parser = subparsers.add_parser("attack", help="attacks on a member path of a testbed, with the harm measured",
                                   epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(title="verbs", metavar="VERB")
    parser.set_defaults(func=lambda args: parser.print_help() or 2)

    r = verbs.add_parser("run", help="run a named attack while a stream flows and measure its harm",
                         epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("name", help="the attack (frerlab attack list)")
    r.add_argument("--testbed", default=bed.DEFAULT_NAME, help=f"testbed name (default {bed.DEFAULT_NAME})")
    r.add_argument("--path", default="a", help="the attacked path: a or b (default a)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change one of the attack's values")
    _stream_options(r)
    add_output(r, "result directory (default: a new one under results/)")
    add_json(r)
    r.set_defaults(func=_run)

    su = verbs.add_parser("suite", help="every attack on a temporary testbed per algorithm, without and with the "
                          "rogue-rate guard: one table of the harm", epilog=EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    su.add_argument("--attacks", help="comma-separated (default: every attack of `frerlab attack list`)")
    su.add_argument("--algorithms", default="vector,match", help="comma-separated (default vector,match)")
    su.add_argument("--reset-timeout", type=int, default=bed.Settings.reset_timeout_ms,
                    help=f"the eliminating node's, ms (default {bed.Settings.reset_timeout_ms})")
    su.add_argument("--repetitions", type=int, default=1, help="runs of each (1..100, default 1)")
    su.add_argument("--guard", metavar="THRESHOLD,PERIOD", help="also run each under the rogue-rate guard with reset "
                    "(`frerlab dataplane guard`): rogue frames per period, seconds (e.g. 20,0.05)")
    su.add_argument("--police", metavar="RATE", help="also run each on a testbed policing each path's copies at this "
                    "SDU rate (testbed --police; e.g. 5Mbps)")
    _stream_options(su)
    add_output(su, "suite directory: a run directory per algorithm, attack, defence and repetition; suite.json, "
                   "suite.csv, suite.md", required=True)
    add_json(su, "the table")
    su.set_defaults(func=_suite)

    ls = verbs.add_parser("list", help="the named attacks and their values", epilog=EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    add_json(ls, "the attacks")
    ls.set_defaults(func=_list)


def _stream_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate-fps", default=run.Stream.rate_fps, help="the stream's frames per second (10..100000)")
    parser.add_argument("--frame-size", default=run.Stream.frame_size, help="its frame size in bytes (64..1518)")
    parser.add_argument("--duration", type=float, default=run.Stream.duration_s, help="its length in seconds")
    parser.add_argument("--interval", type=float, default=run.Stream.interval_s,
                        help="seconds of the send schedule per accounting bin (the recovery time's resolution)")


def _stream(args: argparse.Namespace) -> run.Stream:
    stream = run.Stream(round(option_value(frame_rate, args.rate_fps, "--rate-fps")),
                        option_value(size_bytes, args.frame_size, "--frame-size"), args.duration, args.interval)
    stream.check()
    return stream


def _suite(args: argparse.Namespace) -> int:
    from frerlab.attack.suite import Guard, markdown, run_suite

    guard = None
    if args.guard:
        try:
            threshold, period = args.guard.split(",")
            guard = Guard(int(threshold), float(period))
        except ValueError:
            raise UsageError(f"--guard {args.guard!r} is not THRESHOLD,PERIOD (rogue frames, seconds: like 20,0.05)") \
                from None
    stream = _stream(args)
    out = output_dir(args.output, "-o/--output")
    attacks = args.attacks.split(",") if args.attacks else list(spec.catalog())
    table = run_suite(out, attacks, args.algorithms.split(","), stream, args.reset_timeout, args.repetitions, guard,
                      args.police, say=(lambda line: None) if args.json else (lambda line: print(line, file=sys.stderr)))
    emit(args, table, markdown(table))
    return 0


def _run(args: argparse.Namespace) -> int:
    attack = spec.attack(args.name, spec.parse_sets(args.set))
    stream = _stream(args)
    out = output_dir(args.output or Path("results") / time.strftime(f"attack-{args.name}-%Y%m%d-%H%M%S"),
                     "-o/--output")
    result = run.run(args.testbed, attack, args.path, stream, out)
    emit(args, result, run.summary(result))
    if not args.json:
        print(f"  results in {out}", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    attacks = {name: spec.attack(name) for name in spec.catalog()}
    emit(args, {name: a.model_dump() for name, a in attacks.items()},
         "\n".join(f"{name:<20}{a.description}\n{'':<20}{spec.describe(a)}" for name, a in attacks.items()))
    return 0
