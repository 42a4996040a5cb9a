"""Command-line verbs of the data plane: `frerlab dataplane up|down|status|stats|monitor|reset|guard`."""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time

from frerlab.cli_output import add_json, down_verb, emit
from frerlab.dataplane import control, stats
from frerlab.dataplane.config import DEFAULT_NAME, load_config
from frerlab.errors import EXIT_VERDICT, UsageError

EPILOG = """A configuration file describes one FRER node (talker end-station, relay or listener) in
the vocabulary of the IEEE YANG modules (stream-identity, sequence-generation,
sequence-recovery, sequence-identification) plus frerlab's ports and stream-forwarding;
see docs/dataplane.md and the examples in configs/dataplane/.

examples:
  frerlab dataplane up --config configs/dataplane/sw1-replicate.yaml --netns sw1
  frerlab dataplane status                      # the hook of each port: tc, xdp native/generic
  frerlab dataplane stats --name sw1
  frerlab dataplane stats --name sw2 --prometheus > /var/lib/node_exporter/frer.prom
  frerlab dataplane monitor --name sw2          # latent error detection in the foreground
  frerlab dataplane down --name sw1             # also clears what a crashed run left
  frerlab dataplane down --all --json
  frerlab dataplane reset --name listener --stream 1 --port l0b
  frerlab dataplane guard --name sw2 --rogue-threshold 20 --period 0.05 --reset   # rogue-rate alarm
"""

#: Longest poll interval of `monitor`, in seconds.
MAX_INTERVAL_S = 3600


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `dataplane up|down|stats|monitor|reset|guard`."""
    parser = subparsers.add_parser("dataplane", help="the eBPF FRER data plane: up, down, stats",
                                   epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(title="verbs", metavar="VERB")
    parser.set_defaults(func=lambda args: parser.print_help() or 2)

    up = verbs.add_parser("up", help="load, configure and attach a data plane", epilog=EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    up.add_argument("--config", required=True, help="the node's YAML configuration file")
    up.add_argument("--netns", help="network namespace of its ports (default: the file's netns, "
                                    "else the current one)")
    up.add_argument("--no-monitor", action="store_true",
                    help="do not start the latent error monitor in the background")
    add_json(up, "what was set up")
    up.set_defaults(func=_up)

    down = verbs.add_parser("down", help="detach and remove a data plane (idempotent)", epilog=EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    which = down.add_mutually_exclusive_group()
    _name(which)
    which.add_argument("--all", action="store_true", help="every data plane `up` started")
    add_json(down, "each data plane and whether it was up")
    down.set_defaults(func=_down)

    status = verbs.add_parser("status", help="running data planes and the hook (tc, XDP native or "
                                             "generic) of each port", epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    status.add_argument("--name", help="only this data plane (default: every one `up` started)")
    add_json(status, "the records")
    status.set_defaults(func=_status)

    st = verbs.add_parser("stats", help="counters: a table, --json or --prometheus", epilog=EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(st)
    fmt = st.add_mutually_exclusive_group()
    add_json(fmt, "the snapshot")
    fmt.add_argument("--prometheus", action="store_true", help="Prometheus text exposition format")
    st.set_defaults(func=_stats)

    mon = verbs.add_parser("monitor", help="latent error detection over the counters (foreground)", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(mon)
    mon.add_argument("--interval", type=float, help="seconds between polls (default: a quarter "
                                                    "of the shortest latent error period)")
    mon.add_argument("--duration", type=float, help="stop after this many seconds (default: until "
                                                    "the data plane goes down or Ctrl-C)")
    mon.add_argument("--quiet", action="store_true", help="print alarms only")
    mon.set_defaults(func=_monitor)

    rst = verbs.add_parser("reset", help="management reset of recovery functions (frerSeqRcvyReset)",
                           epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(rst)
    rst.add_argument("--stream", type=int, help="only the functions of this stream handle")
    rst.add_argument("--port", help="only the function placed on (or fed by) this port")
    add_json(rst, "the functions reset")
    rst.set_defaults(func=_reset)

    grd = verbs.add_parser("guard", help="rogue-rate alarm over every recovery function (foreground); "
                           "--reset gives an alarmed function a management reset", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    _name(grd)
    grd.add_argument("--rogue-threshold", type=int, required=True,
                     help="rogue frames a function may count in a period without an alarm")
    grd.add_argument("--period", type=float, default=1.0, help="seconds per period (default 1)")
    grd.add_argument("--reset", action="store_true", help="reset an alarmed function that passed nothing in the "
                                                          "period (locked out; frerSeqRcvyReset): its next frame sets "
                                                          "its window again")
    grd.add_argument("--duration", type=float, help="stop after this many seconds (default: until the data plane "
                                                    "goes down or Ctrl-C)")
    add_json(grd, "each function's findings at the end")
    grd.set_defaults(func=_guard)


def _guard(args: argparse.Namespace) -> int:
    if args.duration is not None and not 0 < args.duration < math.inf:
        raise UsageError(f"--duration {args.duration} is out of range (> 0 seconds, finite)")
    control.read_state(args.name)  # before the banner: a name that is not up is an error
    deadline = None if args.duration is None else time.monotonic() + args.duration

    def on_alarm(finding: dict) -> None:
        port = f" on {finding['port']}" if finding["port"] else ""
        print(f"ROGUE data plane {args.name} stream {finding['stream']} {finding['function']} recovery{port}: "
              f"{finding['rogue']} rogue frames and {finding['passed']} passed in {finding['period_s']:g} s "
              f"(threshold {finding['threshold']})" + (": locked out" if finding["passed"] == 0 else "")
              + (", reset" if args.reset and finding["passed"] == 0 else ""), file=sys.stderr, flush=True)

    stopped = []  # SIGTERM ends the guard after its period, its findings printed
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    if not args.json:
        print(f"guarding data plane {args.name}: more than {args.rogue_threshold} rogue frames in {args.period:g} s "
              f"raise an alarm{' and reset the function' if args.reset else ''}", flush=True)
    findings = control.guard(args.name, args.rogue_threshold, on_alarm, args.period, args.reset,
                             stop=lambda: bool(stopped) or (deadline is not None and time.monotonic() >= deadline))
    emit(args, findings, "\n".join(
        f"stream {f['stream']} {f['function']} recovery{' on ' + f['port'] if f['port'] else ''}: {f['alarms']} alarms "
        f"({f['locked_out']} locked out), at most {f['most_rogue']} rogue frames in a period, {f['resets']} resets"
        for f in findings))
    return EXIT_VERDICT if any(f["alarms"] for f in findings) else 0


def _name(parser) -> None:
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"data plane name (default {DEFAULT_NAME})")


def _up(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    for note in cfg.blackout_notes():
        print(note, file=sys.stderr)
    state = control.up(cfg, args.netns, monitor=not args.no_monitor)
    where = f" in netns {state['netns']}" if state["netns"] else ""
    lines = [f"data plane {state['name']} up{where} on {', '.join(state['attached'])}"
             + (f"; latent error monitor pid {state['monitor_pid']}" if state["monitor_pid"] else "")]
    lines += [f"  {port}: frames received run on {hook}" for port, hook in state["hooks"].items() if hook != "tc"]
    if state["hook_note"]:
        lines.append(f"  hook {cfg.hook}: {state['hook_note']}")
    lines += [f"  {change}" for change in state["changes"]]
    emit(args, state, "\n".join(lines))
    return 0


def _down(args: argparse.Namespace) -> int:
    return down_verb(args, "data plane", control.running_names, control.down)


def _status(args: argparse.Namespace) -> int:
    records = [control.status(name) for name in ([args.name] if args.name else control.running_names())]
    if args.json:
        emit(args, records)
        return 0
    if not records:
        print("no data plane is up")
    for r in records:
        where = f" in netns {r['netns']}" if r["netns"] else ""
        print(f"{r['name']}{where}: hook {r['hook']}" + (f" ({r['note']})" if r["note"] else ""))
        for p in r["ports"]:
            hooks = [f"{what} {hook}" for what, hook in (("received", p["received"]), ("sent", p["sent"])) if hook]
            print(f"  {p['port']}: {', '.join(hooks)}")
        if r["stream_maps"]:
            print(f"  per-stream state: {r['stream_maps']['kind']} maps, room for "
                  f"{r['stream_maps']['capacity']} streams")
    return 0


def _stats(args: argparse.Namespace) -> int:
    snap = control.snapshot(args.name)
    if args.prometheus:
        sys.stdout.write(stats.prometheus(snap))
    else:
        emit(args, snap, stats.table(snap))
    return 0


def _reset(args: argparse.Namespace) -> int:
    done = control.reset(args.name, args.stream, args.port)
    emit(args, done, "\n".join(f"data plane {args.name}: {r['function']} recovery of stream {r['stream']}"
                               + (f" on {r['port']}" if r["port"] else "") + " resets at its next packet"
                               for r in done) or None)
    return 0


def _monitor(args: argparse.Namespace) -> int:
    if args.interval is not None and not 0 < args.interval <= MAX_INTERVAL_S:
        raise UsageError(f"--interval {args.interval} is out of range (0 < seconds <= {MAX_INTERVAL_S})")
    if args.duration is not None and not 0 < args.duration < math.inf:
        raise UsageError(f"--duration {args.duration} is out of range (> 0 seconds, finite)")
    control.read_state(args.name)  # before the banner: a name that is not up is an error
    deadline = None if args.duration is None else time.monotonic() + args.duration
    alarms = []

    def on_alarm(finding: dict) -> None:
        alarms.append(finding)
        last = finding["last"]
        print(f"LATENT ERROR data plane {args.name} stream {finding['stream']}: {last['condition']} "
              f"(difference {last['difference']}, threshold {finding['difference_threshold']})",
              file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if not args.quiet:
        print(f"watching data plane {args.name} for latent errors", flush=True)
    control.monitor(args.name, on_alarm, args.interval,
                    stop=lambda: deadline is not None and time.monotonic() >= deadline)
    return EXIT_VERDICT if alarms else 0
