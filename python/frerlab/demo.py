"""`frerlab demo`: the main job on the embedded default, in two parts.

1. The 802.1CB core: a talker numbers a stream with the sequence generation function, tags each
   frame with an R-TAG and replicates it onto two paths that lose, delay and reorder frames
   independently (seeded, so a run is repeatable). At the listener each copy's R-TAG is popped
   and the sequence recovery function (vector algorithm) passes the first copy of every number.
   Printed: what passed, what was eliminated, the clause-10 counters, and the check of the FRER
   promise: every frame that arrived on at least one path is delivered exactly once.
2. The kernel (needs root, clang, tc and ip; skipped with the reason otherwise): the
   fail-operational test (`frerlab failover`) on the emulated testbed (talker - sw1 - paths a
   and b - sw2 - listener in namespaces), once with frerlab's eBPF FRER data plane and once as
   the control group on path a alone: a stream, path a cut and restored, then path b. Printed
   side by side per phase: sent, received, lost, duplicated at the listener (frerlab's
   receiver, by sequence number: exact), then per path what sw1 sent into it, what it
   delivered and what it dropped, what sw2's recovery passed against what the talker sent,
   sw2's recovery counters, and both verdicts.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import UsageError
from frerlab.names import output_dir, shown
from frerlab.frer import SequenceGenerator, SequenceRecovery, pop_rtag, push_rtag
from frerlab.units import frame_rate, option_value

TALKER_MAC = bytes.fromhex("020000000001")
LISTENER_MAC = bytes.fromhex("020000000002")


@dataclass(frozen=True)
class PathModel:
    """One path: independent random loss, a base delay and uniform jitter (which reorders)."""

    name: str
    loss: float
    delay_us: float
    jitter_us: float


def udp_frame(index: int) -> bytes:
    """A minimal Ethernet/IPv4/UDP frame from 198.18.0.1 to 198.18.0.2 (60 bytes, no FCS)."""
    payload = index.to_bytes(4, "big") + bytes(14)
    udp = (5001).to_bytes(2, "big") + (5001).to_bytes(2, "big") + (8 + len(payload)).to_bytes(2, "big") + bytes(2)
    ip_total = 20 + len(udp) + len(payload)
    ip = (bytes([0x45, 0]) + ip_total.to_bytes(2, "big") + bytes(4) + bytes([64, 17]) + bytes(2)
          + bytes([198, 18, 0, 1]) + bytes([198, 18, 0, 2]))
    return LISTENER_MAC + TALKER_MAC + b"\x08\x00" + ip + udp + payload


def run(frames: int, period_us: float, paths: list[PathModel], history_length: int,
        seed: int) -> dict:
    """Runs the two-path stream and returns what happened, as a plain record."""
    rng = random.Random(seed)
    generator = SequenceGenerator()
    arrivals = []  # (arrival time in ns, path index, tagged frame)
    arrived_on = [0] * frames
    for i in range(frames):
        tagged = push_rtag(udp_frame(i), generator.next())
        for p, path in enumerate(paths):
            if rng.random() < path.loss:
                continue
            t_us = i * period_us + path.delay_us + rng.uniform(0, path.jitter_us)
            arrivals.append((int(t_us * 1000), p, tagged))
            arrived_on[i] += 1
    arrivals.sort(key=lambda a: (a[0], a[1]))

    recovery = SequenceRecovery(algorithm="vector", history_length=history_length,
                                reset_timeout_ns=100_000_000)
    delivered = [0] * frames
    per_path = [{"received": 0, "passed": 0, "eliminated": 0} for _ in paths]
    for t_ns, p, tagged in arrivals:
        seq, frame = pop_rtag(tagged)
        per_path[p]["received"] += 1
        if recovery.receive(seq, t_ns):
            per_path[p]["passed"] += 1
            delivered[int.from_bytes(frame[42:46], "big")] += 1
        else:
            per_path[p]["eliminated"] += 1

    reached = sum(1 for n in arrived_on if n)
    exactly_once = all(d == (1 if n else 0) for d, n in zip(delivered, arrived_on))
    return {
        "frames_sent": frames,
        "history_length": history_length,
        "paths": [{"name": path.name, "loss": path.loss, "delay_us": path.delay_us,
                   "jitter_us": path.jitter_us, **stats} for path, stats in zip(paths, per_path)],
        "lost_on_every_path": frames - reached,
        "delivered": sum(delivered),
        "duplicates_delivered": sum(max(d - 1, 0) for d in delivered),
        "counters": dict(recovery.counters),
        "exactly_once": exactly_once,
    }


def print_summary(result: dict) -> None:
    """A readable account of one run."""
    print(f"FRER demo: {result['frames_sent']} frames replicated onto "
          f"{len(result['paths'])} paths, vector recovery with history "
          f"{result['history_length']}\n")
    print(f"{'path':<6}{'loss':>7}{'delay':>10}{'jitter':>10}{'received':>10}{'passed':>9}"
          f"{'eliminated':>12}")
    for p in result["paths"]:
        print(f"{p['name']:<6}{p['loss']:>7.0%}{p['delay_us']:>8.0f}us{p['jitter_us']:>8.0f}us"
              f"{p['received']:>10}{p['passed']:>9}{p['eliminated']:>12}")
    print(f"\ndelivered to the listener: {result['delivered']} "
          f"(lost on every path: {result['lost_on_every_path']}, "
          f"duplicates delivered: {result['duplicates_delivered']})")
    print("\nsequence recovery counters (802.1CB clause 10):")
    for name, value in result["counters"].items():
        print(f"  {name:<22}{value:>8}")
    verdict = "PASS" if result["exactly_once"] else "FAIL"
    print(f"\n{verdict}: every frame that arrived on at least one path was delivered exactly once"
          if result["exactly_once"] else
          f"\n{verdict}: some frame was delivered twice or not at all")


def kernel_unavailable() -> str | None:
    """Why the kernel part cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, BPF)"
    missing = [tool for tool in ("clang", "tc", "ip") if shutil.which(tool) is None]
    return f"not installed: {', '.join(missing)}" if missing else None


def run_failover(schedule, out_dir: Path) -> dict:
    """The fail-over test on the emulated testbed, once with FRER and once as the control group;
    each mode's result (frerlab.testbed.failover)."""
    from frerlab.testbed import bed, failover  # the kernel part only

    result = {}
    for mode in ("frer", "control"):
        name = f"demo{os.getpid() % 100000}{mode[0]}"
        with bed.Testbed(name=name, mode=mode):
            result[mode] = failover.run(name, schedule, out_dir / mode)
    return result


def print_failover(result: dict) -> None:
    """The two modes' phase tables side by side, each mode's per path and elimination
    accounting, and both verdicts."""
    from frerlab.testbed import failover  # the kernel part only

    frer, control = result["frer"], result["control"]
    print("\nKernel: the seeds' testbed in namespaces (talker - sw1 - paths a, b - sw2 - listener, "
          "100 Mbit/s links),\none stream, path a cut and restored, then path b; frerlab's eBPF FRER "
          "vs the control group (path a only)\n")
    columns = ("sent", "received", "lost", "duplicates")
    print(f"{'':<13}{'FRER':^32}{'control group':^32}")
    print(f"{'phase':<13}" + f"{'sent':>8}{'received':>10}{'lost':>7}{'dup':>7}" * 2)
    rows = [(p["phase"], p, q) for p, q in zip(frer["phases"], control["phases"])]
    for label, p, q in [*rows, ("total", {**frer, "sent": frer["expected"]}, {**control, "sent": control["expected"]})]:
        print(f"{label:<13}" + "".join(f"{r[c]:>{w}}" for r in (p, q) for c, w in zip(columns, (8, 10, 7, 7))))
    print(f"(sent: data frames, and each mode {frer['end_probes_sent']} end-of-stream probes after them;\n"
          f" losses are counted {frer['losses_counted']})")
    for label, r in (("FRER", frer), ("control", control)):
        print(f"\n{label}:\n" + "\n".join(f"  {line}" for line in failover.accounting_lines(r)))
    rc = frer["dataplane_recovery"]["sw2"]["1"]
    print(f"\nsw2 sequence recovery: passed {rc['passed_packets']}, discarded {rc['discarded_packets']}, "
          f"lost {rc['lost_packets']}, rogue {rc['rogue_packets']}")
    print(f"FRER: {frer['verdict']}\ncontrol: {control['verdict']}")


def handle(args: argparse.Namespace) -> int:
    if args.frames < 1:
        raise UsageError(f"--frames {args.frames} is out of range (1 or more)")
    kernel_rate_fps = round(option_value(frame_rate, args.kernel_rate_fps, "--kernel-rate-fps"))
    if kernel_rate_fps < 1:
        raise UsageError(f"--kernel-rate-fps {shown(args.kernel_rate_fps)} is out of range (1 frame/s or more)")
    for name in ("loss_a", "loss_b"):
        value = getattr(args, name)
        if not 0.0 <= value <= 1.0:
            raise UsageError(f"--{name.replace('_', '-')} {value} is out of range (0.0..1.0)")
    out_dir = output_dir(args.output or Path("results") / time.strftime("demo-%Y%m%d-%H%M%S"), "-o/--output")
    paths = [PathModel("a", args.loss_a, 50.0, 40.0), PathModel("b", args.loss_b, 80.0, 40.0)]
    try:
        result = run(args.frames, 10.0, paths, args.history_length, args.seed)
    except ValueError as err:
        raise UsageError(str(err)) from err
    ok = result["exactly_once"]
    unavailable = None if args.no_kernel else kernel_unavailable()
    if not args.no_kernel and unavailable is None:
        from frerlab.testbed.failover import Schedule

        schedule = Schedule(rate_fps=kernel_rate_fps, duration_s=args.kernel_duration,
                            cut_a=(0.25 * args.kernel_duration, 0.5 * args.kernel_duration),
                            cut_b=(0.625 * args.kernel_duration, 0.875 * args.kernel_duration))
        schedule.check()
        result["kernel_failover"] = run_failover(schedule, out_dir)
        ok = ok and all(r["verdict_met"] for r in result["kernel_failover"].values())
        from frerlab.report import write_report

        write_report([out_dir], out_dir / "report.html", out_dir / "report-images")
        result["report"] = str(out_dir / "report.html")
    emit(args, result)
    if not args.json:
        print_summary(result)
        if "kernel_failover" in result:
            print_failover(result["kernel_failover"])
            print(f"\nreport of the kernel part (HTML, works offline; PNG and SVG beside it): {result['report']}")
        elif not args.no_kernel:
            print(f"\nKernel part skipped: {unavailable}")
    return 0 if ok else 1


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the main job: a two-path FRER stream with losses and reordering",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  frerlab demo\n  frerlab demo --frames 100000 --loss-a 0.2 --json\n"
               "  frerlab demo --no-kernel\n")
    parser.add_argument("--frames", type=int, default=20_000, help="frames sent (default 20000)")
    parser.add_argument("--loss-a", type=float, default=0.05, help="loss ratio on path a (default 0.05)")
    parser.add_argument("--loss-b", type=float, default=0.05, help="loss ratio on path b (default 0.05)")
    parser.add_argument("--history-length", type=int, default=32,
                        help="frerSeqRcvyHistoryLength at the listener (2..1024, default 32)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--kernel-rate-fps", default="5000",
                        help="frames/s of the kernel fail-over stream, 512-byte frames (e.g. 5000, 20k; default 5000)")
    parser.add_argument("--kernel-duration", type=float, default=6.0,
                        help="seconds of the kernel fail-over stream (default 6)")
    add_output(parser, "where the kernel part's results go (default: a new directory under results/)")
    parser.add_argument("--no-kernel", action="store_true", help="skip the kernel part")
    add_json(parser)
    parser.set_defaults(func=handle)
