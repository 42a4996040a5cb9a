"""Command-line verbs of the attacks on a testbed: `frerlab attack run|suite|list`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from frerlab.attack import recommended, run, spec
from frerlab.attack.suite import DEFENCES, Guard, markdown, run_suite
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

exit status: 0 the attack ran and its harm was measured (harm or none; suite --recommended:
and every run held to the harm stated for it, else 1), 2 bad input, 4 a tool or the testbed
failed, 130 interrupted (the injector stopped, every path restored).

examples:
  frerlab attack list
  frerlab testbed up --name atk --reset-timeout 200
  frerlab attack run inject-ahead --testbed atk --path a -o results/inject-ahead
  frerlab attack run inject-after-reset --testbed atk --set outage=0.3s --set rate=20 -o results/reset --json
  frerlab attack run replay --testbed atk --path b --set age=40 --duration 3 -o results/replay-rogue
  frerlab attack suite --guard 20,0.05 --police 5Mbps --reset-timeout 200 -o results/attack-suite
  frerlab attack suite --algorithms match --individual-recovery --take-no-sequence -o results/match-ir
  frerlab attack suite --recommended -o results/recommended
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

    su = verbs.add_parser("suite", help="every attack on a temporary testbed per algorithm, under each defence: "
                          "one table of the harm", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    su.add_argument("--attacks", help="comma-separated (default: every attack of `frerlab attack list`)")
    su.add_argument("--algorithms", help="comma-separated (default vector,match)")
    su.add_argument("--history-length", type=int, help="the eliminating node's (2..1024, default 32)")
    su.add_argument("--reset-timeout", type=int,
                    help=f"the eliminating node's, ms (default {bed.Settings.reset_timeout_ms})")
    su.add_argument("--take-no-sequence", action="store_true", default=None,
                    help="its sequence recovery passes frames without an R-TAG (802.1CB 10.4.1.6)")
    su.add_argument("--individual-recovery", action="store_true", default=None,
                    help="an individual recovery function per path port in front of it (802.1CB 7.5)")
    su.add_argument("--repetitions", type=int, default=1, help="runs of each (1..100, default 1)")
    su.add_argument("--guard", metavar="THRESHOLD,PERIOD", help="the rogue-rate guard with reset "
                    "(`frerlab dataplane guard`): rogue frames per period, seconds (e.g. 20,0.05)")
    su.add_argument("--police", metavar="RATE", help="a testbed policing each path's copies at this SDU rate "
                    "(testbed --police; e.g. 5Mbps)")
    su.add_argument("--police-burst", metavar="SIZE",
                    help=f"the meters' burst (default {bed.Settings.police_burst})")
    su.add_argument("--defences", help=f"comma-separated, of {', '.join(DEFENCES)} (default: none, and each "
                    "defence given alone and together)")
    su.add_argument("--recommended", action="store_true",
                    help="frerlab's recommended configuration (docs/security.md) under both defences, each row "
                         "checked against the harm stated for it (exit status 1 if one exceeds it); sets the "
                         "algorithm, the recovery settings and the defences itself")
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


#: What --recommended sets itself (the suite's options it refuses beside it).
RECOMMENDED_SETS = ("algorithms", "history_length", "reset_timeout", "take_no_sequence", "individual_recovery",
                    "guard", "police", "police_burst", "defences")


def _suite(args: argparse.Namespace) -> int:
    stream = _stream(args)
    out = output_dir(args.output, "-o/--output")
    attacks = args.attacks.split(",") if args.attacks else list(spec.catalog())
    say = (lambda line: None) if args.json else (lambda line: print(line, file=sys.stderr))
    if args.recommended:
        given = [name for name in RECOMMENDED_SETS if getattr(args, name) is not None]
        if given:
            raise UsageError(f"--recommended sets --{given[0].replace('_', '-')} itself; leave it out")
        table = run_suite(out, attacks, [recommended.ALGORITHM], stream, recommended.testbed(stream), args.repetitions,
                          recommended.GUARD, recommended.police_rate(stream), [recommended.DEFENCE],
                          recommended.bound, say)
        emit(args, table, markdown(table))
        return 0 if all(g["holds"] for g in table["groups"]) else 1
    guard = None
    if args.guard:
        try:
            threshold, period = args.guard.split(",")
            guard = Guard(int(threshold), float(period))
        except ValueError:
            raise UsageError(f"--guard {args.guard!r} is not THRESHOLD,PERIOD (rogue frames, seconds: like 20,0.05)") \
                from None
    testbed = {name: value for name, value in (
        ("history_length", args.history_length), ("reset_timeout_ms", args.reset_timeout),
        ("take_no_sequence", args.take_no_sequence), ("individual_recovery", args.individual_recovery),
        ("police_burst", args.police_burst))
        if value is not None}
    table = run_suite(out, attacks, (args.algorithms or "vector,match").split(","), stream, testbed, args.repetitions,
                      guard, args.police, args.defences.split(",") if args.defences else None, say=say)
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
