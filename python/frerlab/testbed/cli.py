"""Command-line verbs of the testbed: `frerlab testbed up|down|status|impair|exec` and
`frerlab failover`."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from frerlab.cli_output import add_json, add_output, down_verb, emit
from frerlab.errors import EXIT_VERDICT, UsageError
from frerlab.names import output_dir
from frerlab.testbed import bed, failover, plan
from frerlab.units import frame_rate, option_value, size_bytes

TESTBED_EPILOG = """The seeds' 2-hop dual-path topology in network namespaces:
  talker (198.18.0.1) - sw1 - paths a and b - sw2 - listener (198.18.0.2)
Every link is shaped (token bucket, --rate), switch and path egress queues hold --queue-limit
bytes (tail drop). In frer mode sw1 and sw2 (or, by placement, the hosts) run frerlab's eBPF
FRER data plane in both directions; control mode is path a only, no FRER.

examples:
  frerlab testbed up                                   # name "frerlab", frer mode, 100 Mbit/s
  frerlab testbed up --mode control --rate 1Gbps --queue-limit 160KiB --name ctl
  frerlab testbed up --replicate-at talker --eliminate-at listener --name ends
  frerlab testbed up --algorithm match --reset-timeout 200 --name m
  frerlab testbed up --police 5Mbps --name pol         # each path's copies policed at sw2 (and sw1)
  frerlab testbed up --individual-recovery --take-no-sequence --name ir   # 802.1CB 7.5 and 10.4.1.6
  frerlab testbed exec talker -- iperf3 -c 198.18.0.2 -u -b 50M
  frerlab testbed impair a --down                      # cut path a; --up restores it
  frerlab testbed impair b --loss 0.05 --delay 5 --jitter 1 --duplicate 0.01
  frerlab testbed impair a --gilbert-elliott 0.01,0.3  # burst loss: p(good->bad), p(bad->good)
  frerlab testbed status --json
  frerlab testbed down                                 # idempotent; also clears a killed run
  frerlab testbed down --all --json
"""

FAILOVER_EPILOG = """A stream from talker to listener; path a cut at --cut-a START,END and path b at
--cut-b START,END (seconds from the first frame at the listener). FRER passes when nothing is
lost or duplicated; the control group loses what is sent into the cut. Uses the testbed --name
if it is up, otherwise brings a temporary one up (--mode) and takes it down afterwards.

exit status: 0 the verdict was met, 1 it was not, 2 bad input.

examples:
  frerlab failover
  frerlab failover --mode control --rate-fps 20000 --frame-size 64 --json
  frerlab failover --name tb1 --cut-a 1,2 --cut-b 3,4 --duration 5 -o results/failover
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `testbed up|down|status|impair|exec` and `failover`."""
    parser = subparsers.add_parser("testbed", help="the emulated 2-hop dual-path FRER testbed",
                                   epilog=TESTBED_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(title="verbs", metavar="VERB")
    parser.set_defaults(func=lambda args: parser.print_help() or 2)

    up = verbs.add_parser("up", help="build the testbed", epilog=TESTBED_EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(up)
    _build_options(up)
    add_json(up, "the testbed's settings")
    up.set_defaults(func=_up)

    down = verbs.add_parser("down", help="remove the testbed (idempotent)", epilog=TESTBED_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    which = down.add_mutually_exclusive_group()
    which.add_argument("--name", default=bed.DEFAULT_NAME, help=f"testbed name (default {bed.DEFAULT_NAME})")
    which.add_argument("--all", action="store_true", help="every testbed that is up")
    add_json(down, "each testbed and whether it was up")
    down.set_defaults(func=_down)

    status = verbs.add_parser("status", help="hosts, links, impairments and data plane counters",
                              epilog=TESTBED_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(status)
    add_json(status, "the status")
    status.set_defaults(func=_status)

    imp = verbs.add_parser("impair", help="impair path a or b at run time", epilog=TESTBED_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(imp)
    imp.add_argument("path", choices=bed.PATHS, help="the path")
    imp.add_argument("--direction", default="both", choices=["both", "forward", "reverse"],
                     help="forward: sw1 to sw2 (talker to listener); default both")
    updown = imp.add_mutually_exclusive_group()
    updown.add_argument("--down", action="store_true", help="cut the path (every frame dropped)")
    updown.add_argument("--up", action="store_true", help="restore a cut path")
    imp.add_argument("--loss", type=float, help="random loss probability (0..1)")
    imp.add_argument("--gilbert-elliott", metavar="P,R[,LG,LB]",
                     help="burst loss: p(good->bad), p(bad->good), loss in good (0), loss in bad (1)")
    imp.add_argument("--delay", type=float, help="delay in ms")
    imp.add_argument("--jitter", type=float, help="jitter in ms (uniform, at most the delay)")
    imp.add_argument("--reorder", type=float, help="probability that a frame skips the delay (needs --delay)")
    imp.add_argument("--duplicate", type=float, help="duplication probability (0..1)")
    imp.add_argument("--clear", action="store_true", help="remove every impairment first")
    add_json(imp, "the path's impairments after the change")
    imp.set_defaults(func=_impair)

    ex = verbs.add_parser("exec", help="run a command in a host's namespace (its exit status is passed on)",
                          epilog=TESTBED_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(ex)
    ex.add_argument("host", help=f"one of {', '.join((*bed.HOSTS, *bed.PATHS))}")
    ex.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    ex.set_defaults(func=_exec)

    fo = subparsers.add_parser("failover", help="the fail-operational test: cut each path under load",
                               epilog=FAILOVER_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(fo)
    _build_options(fo)
    fo.add_argument("--rate-fps", default=failover.Schedule.rate_fps, help="frames per second (e.g. 5000, 20k)")
    fo.add_argument("--frame-size", default=failover.Schedule.frame_size, help="bytes (64..1518)")
    fo.add_argument("--duration", type=float, default=failover.Schedule.duration_s, help="seconds")
    fo.add_argument("--cut-a", type=_span, default=failover.Schedule.cut_a, metavar="START,END")
    fo.add_argument("--cut-b", type=_span, default=failover.Schedule.cut_b, metavar="START,END")
    fo.add_argument("--interval", type=float, default=failover.Schedule.interval_s, help="seconds per interval")
    add_output(fo, "result directory (default: a new one under results/)")
    add_json(fo)
    fo.set_defaults(func=_failover)


def _name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default=bed.DEFAULT_NAME, help=f"testbed name (default {bed.DEFAULT_NAME})")


def _build_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", default="frer", choices=plan.MODES, help="frer (default) or control")
    parser.add_argument("--rate", default=bed.DEFAULT_RATE, help=f"link rate (default {bed.DEFAULT_RATE})")
    parser.add_argument("--path-rate", help="rate of the links into, through and out of the paths "
                        "(default: --rate; lower makes the paths a bottleneck of known capacity)")
    parser.add_argument("--queue-limit", default=bed.DEFAULT_QUEUE_LIMIT,
                        help=f"switch/path egress queue in bytes (default {bed.DEFAULT_QUEUE_LIMIT})")
    parser.add_argument("--replicate-at", default="sw1", choices=plan.REPLICATE_AT)
    parser.add_argument("--eliminate-at", default="sw2", choices=plan.ELIMINATE_AT)
    parser.add_argument("--history-length", type=int, default=32, help="vector recovery history (2..1024)")
    parser.add_argument("--algorithm", default="vector", choices=bed.ALGORITHMS,
                        help="sequence recovery algorithm of the eliminating nodes (default vector)")
    parser.add_argument("--reset-timeout", type=int, default=1000, metavar="MS",
                        help=f"their reset timeout in ms (1..{bed.MAX_RESET_TIMEOUT_MS}, default 1000)")
    parser.add_argument("--take-no-sequence", action="store_true",
                        help="their sequence recovery passes frames without an R-TAG (802.1CB 10.4.1.6)")
    parser.add_argument("--individual-recovery", action="store_true",
                        help="an individual recovery function per path port in front of it (802.1CB 7.5)")
    parser.add_argument("--police", metavar="RATE", help="police each path's copies at the eliminating switches "
                        "(802.1Qci flow meter per path port): SDU bit/s, e.g. 5Mbps (default: no policing)")
    parser.add_argument("--police-burst", default=bed.Settings.police_burst, metavar="SIZE",
                        help=f"the meters' burst (default {bed.Settings.police_burst})")


def _span(text: str) -> tuple[float, float]:
    try:
        start, end = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not START,END in seconds (like 1.5,3)") from None
    return start, end


def _settings(args: argparse.Namespace) -> bed.Settings:
    return bed.Settings(name=args.name, mode=args.mode, rate=args.rate, queue_limit=args.queue_limit,
                        replicate_at=args.replicate_at, eliminate_at=args.eliminate_at,
                        history_length=args.history_length, algorithm=args.algorithm,
                        reset_timeout_ms=args.reset_timeout, take_no_sequence=args.take_no_sequence,
                        individual_recovery=args.individual_recovery, path_rate=args.path_rate, police_rate=args.police,
                        police_burst=args.police_burst)


def _up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    state = bed.up(_settings(args))
    s = state["settings"]
    emit(args, state,
         f"testbed {args.name} up in {time.monotonic() - started:.1f} s: {s['mode']} mode, {s['rate']} links, "
         f"{s['queue_limit']} queues" + (f", replicate at {s['replicate_at']}, eliminate at {s['eliminate_at']}"
                                         if s["mode"] == "frer" else "")
         + f"\n  frerlab testbed exec --name {args.name} talker -- CMD   (talker {plan.TALKER_IP}, "
           f"listener {plan.LISTENER_IP})")
    return 0


def _down(args: argparse.Namespace) -> int:
    return down_verb(args, "testbed", bed.running, bed.down)


def _status(args: argparse.Namespace) -> int:
    st = bed.status(args.name)
    if args.json:
        emit(args, st)
        return 0
    s = st["settings"]
    print(f"testbed {st['name']}: {s['mode']} mode, links {s['rate']}, queues {s['queue_limit']}")
    for h in st["hosts"]:
        extra = f" {h['address']} {h['mac']}" if h["address"] else ""
        print(f"  {h['host']:<9}{h['netns']}{extra}" + (f"  data plane {h['dataplane']}" if h["dataplane"] else ""))
    for link in st["links"]:
        a, b = link["ends"]
        print(f"  link {a['host']}:{a['interface']} <-> {b['host']}:{b['interface']}  "
              f"tx {a['tx_packets']}/{b['tx_packets']}  dropped {a['tx_dropped']}/{b['tx_dropped']}")
    for p, info in st["paths"].items():
        for direction, imp in info["settings"].items():
            active = {k: v for k, v in imp.items() if v}
            c = info["counters"][direction]
            print(f"  path {p} {direction}: {active or 'clean'}; in {c['frames_in']}, forwarded {c['forwarded']}, "
                  f"dropped {c['dropped_down'] + c['dropped_loss'] + c['dropped_burst']}")
    for role, snap in st["dataplanes"].items():
        for r_st in snap["streams"]:
            for r in r_st["recovery"]:
                print(f"  {role} stream {r_st['handle']} {r['function']} recovery: passed {r['passed_packets']}, "
                      f"discarded {r['discarded_packets']}, lost {r['lost_packets']}, rogue {r['rogue_packets']}")
        for f in (snap["latent"] or {}).get("functions", []):
            if f["active"]:
                print(f"  {role} LATENT ERROR stream {f['stream']}: {f['last']['condition']}")
    return 0


def _impair(args: argparse.Namespace) -> int:
    changes: dict = {}
    if args.down or args.up:
        changes["down"] = bool(args.down)
    for option, key in (("loss", "loss"), ("delay", "delay_ms"), ("jitter", "jitter_ms"),
                        ("reorder", "reorder"), ("duplicate", "duplicate")):
        if getattr(args, option) is not None:
            changes[key] = getattr(args, option)
    if args.gilbert_elliott:
        changes["gilbert_elliott"] = _gilbert_elliott(args.gilbert_elliott)
    if not changes and not args.clear:
        raise UsageError("nothing to change: give --down, --up, --loss, --gilbert-elliott, --delay, --jitter, "
                         "--reorder, --duplicate or --clear")
    info = bed.impair(args.name, args.path, args.direction, args.clear, **changes)
    emit(args, {"testbed": args.name, "path": args.path, **info},
         "\n".join(f"path {args.path} {direction}: {({k: v for k, v in imp.items() if v}) or 'clean'}"
                   for direction, imp in info["settings"].items()))
    return 0


def _gilbert_elliott(text: str) -> dict:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) not in (2, 4):
        raise UsageError(f"--gilbert-elliott {text!r} is not P,R or P,R,LOSS_GOOD,LOSS_BAD (numbers 0..1)")
    names = ("p_good_to_bad", "p_bad_to_good", "loss_good", "loss_bad")
    return dict(zip(names, [*values, 0.0, 1.0][:4] if len(values) == 2 else values))


def _exec(args: argparse.Namespace) -> int:
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    return subprocess.run(bed.exec_argv(args.name, args.host, argv)).returncode


def _failover(args: argparse.Namespace) -> int:
    schedule = failover.Schedule(round(option_value(frame_rate, args.rate_fps, "--rate-fps")),
                                 option_value(size_bytes, args.frame_size, "--frame-size"), args.duration, args.cut_a,
                                 args.cut_b, args.interval)
    schedule.check()
    out = output_dir(args.output or Path("results") / time.strftime("failover-%Y%m%d-%H%M%S"), "-o/--output")
    temporary = args.name not in bed.running()
    if temporary:
        bed.up(_settings(args))
    try:
        result = failover.run(args.name, schedule, out)
    finally:
        if temporary:
            bed.down(args.name)
    emit(args, result, failover.summary(result))
    if not args.json:
        print(f"  results in {out}", file=sys.stderr)
    return 0 if result["verdict_met"] else EXIT_VERDICT
