"""Traffic generator benchmark: packets/s of 64-byte frames across a veth pair, frerlab's
generator (every frame numbered and timestamped, `frerlab gen recv` doing per-packet
loss/duplicate/reorder/latency accounting on the far side) against iperf3 (UDP, 18-byte
payload, unlimited rate, its own server receiving), mausezahn (raw frames, no delay) and a bare
sendmmsg loop (Rust, fixed payload, no per-packet work), all in one run, rounds interleaved so
machine noise hits every contender alike. frerlab sends three ways: by default (UDP sendmmsg,
the bare loop's own system call, so that ratio is the cost of frerlab's per-frame work), raw
(`--mode raw`, AF_PACKET sendmmsg) and `--gso` (one UDP GSO send per batch).

The figure is UDP datagrams received by the sockets of the receiving namespace per second
(`/proc/net/snmp` InDatagrams; the datagrams a receiving socket had to drop, InErrors, are
printed beside it). So that the kernel counts every datagram, frerlab's receiver runs with
`--no-gro` for these rows. One more row, "frerlab --gso+gro", is frerlab's fastest end to end
(GSO sends, the receiver taking GRO-coalesced messages and still accounting every datagram),
counted by frerlab's receiver itself (unique sequence numbers over first-to-last arrival),
because the kernel counts a coalesced message once. On a veth a GSO batch crosses as one
packet (see docs/traffic.md). Prints medians and ratios.

A second part (`--part modes`) compares frerlab's own send/receive modes end to end with full
accounting, at 64 and 1518 bytes: `--mode udp` (sendmmsg -> recvmmsg, no GRO), `--mode raw`
(AF_PACKET sendmmsg -> AF_PACKET) and `--mode xdp` (AF_XDP TX ring -> XDP program -> AF_XDP RX
ring), each unpaced for the window, beside the bare sendmmsg loop of the same frame size
(`bare`: no probes, so the UDP receiver reads and counts its datagrams without accounting
them). Figures per mode: frames/s the sender handed over, the same per core (divided by the
sender process's CPU utilisation: user + system time over wall time, which includes the kernel
work its sends cause on a veth), and frames/s the receiver accounted (unique sequence numbers
over first-to-last arrival; bare: datagrams read over the sender's time), with the loss it
counted. Ratios: xdp / udp, xdp / raw and xdp / bare, udp / bare.

A third part (`--part queues`) runs xdp mode with 64-byte frames, unpaced, across a veth pair
with two TX and two RX queues per end: `--queues 1` against `--queues 2` at both ends (two
sender threads, one per TX queue, pinned to CPUs 0 and 1; one receiver thread reading both RX
queues), rounds interleaved; ratio 2 queues / 1 queue of the same three figures.

A fourth part (`--part pacing`) repeats the seeds' mausezahn test (001 l.352-356, 002 l.307-310):
mausezahn paced with `-d`, the gap between frames in whole microseconds, set for a target of
50 to 100 % of the 1 GbE line rate of 1518- and 64-byte frames (target frames/s = load x 1e9 /
((size + 20) x 8), the seeds' `calculate_pps`; delay = 1e6 / target, rounded, as the driver
writes it). The figure is the frames/s that arrive in the receiving namespace (received plus
dropped by a full socket, kernel-counted as in the first part) over the window, against the
target: achieved / target and achieved as a share of the line rate (the seeds' "efficiency").

Run (root): `.venv/bin/python benches/traffic_pps.py [--part kernel|modes|queues|pacing|all] [--window 3]
[--rounds 5] [--json FILE]`
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from frerlab.traffic.netpair import NetPair
from frerlab.files import write_atomic
from frerlab.traffic.across import stream_across
from frerlab.traffic.tools import mausezahn
from frerlab.units import L1_OVERHEAD_BYTES
from frerlab.traffic.tools.base import Background, wait_for_udp_port

ROOT = Path(__file__).resolve().parent.parent
PORT = 5555
CLI = [sys.executable, "-m", "frerlab.cli"]
END_TO_END = "frerlab --gso+gro"


def build_bare_loop() -> Path:
    """Builds the baseline (crates/traffic/examples/bare_sendmmsg.rs) and returns its path."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "frerlab-traffic", "--example", "bare_sendmmsg"],
                   cwd=ROOT, check=True)
    return target / "release" / "examples" / "bare_sendmmsg"


def senders(pair: NetPair, bare: Path, seconds: float) -> dict[str, list[str]]:
    """Each kernel-counted contender's sender command, sending 64-byte frames for `seconds`."""
    gen = [*CLI, "gen", "send", "--dst", pair.b_ip, "--port", str(PORT), "--frame-size", "64", "--max-rate",
           "--duration", f"{seconds:g}"]
    return {
        "frerlab gen": gen,
        "frerlab raw": [*gen, "--mode", "raw", "--interface", pair.a_if, "--dst-mac", pair.mac("b")],
        "frerlab --gso": [*gen, "--gso"],
        "iperf3": ["iperf3", "-c", pair.b_ip, "-p", "5201", "-u", "-b", "0", "-l", "18", "-t", f"{seconds:g}"],
        "mausezahn": mausezahn.command(pair.a_if, count=0, frame_size=64, src_ip=pair.a_ip, dst_ip=pair.b_ip,
                                       dst_mac=pair.mac("b"), port=PORT),
        "bare sendmmsg": [str(bare), pair.b_ip, str(PORT), f"{seconds:g}"],
    }


def udp_counters(pair: NetPair) -> tuple[int, int]:
    """(datagrams received by sockets, datagrams dropped for a full socket or no socket) so
    far in namespace b."""
    out = subprocess.run(pair.cmd("b", ["cat", "/proc/net/snmp"]), capture_output=True, text=True, check=True).stdout
    names, values = (line.split()[1:] for line in out.splitlines() if line.startswith("Udp:"))
    udp = dict(zip(names, map(int, values)))
    return udp["InDatagrams"], udp["InErrors"] + udp["NoPorts"]


def measure_kernel_counted(pair: NetPair, name: str, argv: list[str], window: float) -> tuple[float, float]:
    """(received, dropped) UDP datagrams/s in the receiving namespace while `argv` sends,
    over `window` seconds once the traffic is flowing."""
    if name == "iperf3":
        receiver = pair.cmd("b", ["iperf3", "-s", "-1", "-p", "5201"])
    else:
        receiver = pair.cmd("b", [*CLI, "gen", "recv", "--port", str(PORT), "--no-gro", "--duration", f"{window + 30:g}"])
    with Background(receiver) as rx:
        if name == "iperf3":
            time.sleep(0.5)
        else:
            wait_for_udp_port(pair.cmd("b", []), PORT)
        sender = subprocess.Popen(pair.cmd("a", argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            before = udp_counters(pair)[0]
            while udp_counters(pair)[0] - before < 1000:
                if sender.poll() is not None:
                    raise RuntimeError(f"{name} exited before sending: {' '.join(argv)}")
                time.sleep(0.05)
            time.sleep(0.3)
            (received0, dropped0), start = udp_counters(pair), time.monotonic()
            time.sleep(window)
            (received1, dropped1), end = udp_counters(pair), time.monotonic()
        finally:
            sender.send_signal(signal.SIGINT)
            try:
                sender.wait(timeout=5)
            except subprocess.TimeoutExpired:
                sender.kill()
                sender.wait()
        rx.process.send_signal(signal.SIGINT)
    return (received1 - received0) / (end - start), (dropped1 - dropped0) / (end - start)


def measure_end_to_end(pair: NetPair, window: float) -> tuple[float, float]:
    """(accounted, lost) datagrams/s of frerlab gen send -> gen recv as shipped, from the
    receiver's own report."""
    with tempfile.TemporaryDirectory(prefix="frl-bench-") as tmp:
        report_path = Path(tmp) / "recv.json"
        with Background(pair.cmd("b", [*CLI, "gen", "recv", "--port", str(PORT), "--duration", f"{window + 30:g}",
                                       "--output", str(report_path)])) as rx:
            wait_for_udp_port(pair.cmd("b", []), PORT)
            subprocess.run(pair.cmd("a", senders(pair, Path("-"), window)["frerlab --gso"]), check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rx.process.wait(timeout=window + 40)
        (stream,) = json.loads(report_path.read_text())["streams"]
    span = (stream["last_arrival_ns"] - stream["first_arrival_ns"]) / 1e9
    return stream["unique"] / span, stream["lost"] / span


MODES = ("bare", "udp", "raw", "xdp")
MODE_FRAMES = (64, 1518)


def measure_bare(pair: NetPair, bare: Path, frame: int, window: float) -> dict[str, float]:
    """The bare sendmmsg loop for `window` seconds with `frame`-byte frames into frerlab's UDP
    receiver (no GRO), which reads and counts every datagram (`ignored`: not probes)."""
    with tempfile.TemporaryDirectory(prefix="frl-bench-") as tmp:
        recv_path = Path(tmp) / "recv.json"
        with Background(pair.cmd("b", [*CLI, "gen", "recv", "--port", str(PORT), "--no-gro", "--duration",
                                       f"{window + 3:g}", "--output", str(recv_path)])) as rx:
            wait_for_udp_port(pair.cmd("b", []), PORT)
            done = subprocess.run(pair.cmd("a", [str(bare), pair.b_ip, str(PORT), f"{window:g}", "32", str(frame)]),
                                  check=True, capture_output=True, text=True)
            rx.process.wait(timeout=window + 40)
        received = json.loads(recv_path.read_text())["ignored"]
    sent = json.loads(done.stdout)
    elapsed = sent["elapsed_s"]
    return {"sent_per_s": sent["frames_sent"] / elapsed, "sent_per_s_per_core": sent["frames_sent"] / sent["cpu_s"],
            "sender_cpu": sent["cpu_s"] / elapsed, "accounted_per_s": received / elapsed,
            "lost_per_s": max(0, sent["frames_sent"] - received) / elapsed,
            "lost_fraction": max(0, sent["frames_sent"] - received) / sent["frames_sent"]}


def measure_mode(pair: NetPair, mode: str, frame: int, window: float, queues: int = 1) -> dict[str, float]:
    """frerlab gen send -> gen recv in `mode`, unpaced for `window` seconds with `frame`-byte
    frames (xdp mode: on `queues` queues at both ends): sent/s, sent/s per core of the sender,
    accounted/s and lost/s at the receiver."""
    where = {"a": [], "b": []}
    if mode != "udp":
        where = {"a": ["--interface", pair.a_if, "--dst-mac", pair.mac("b")], "b": ["--interface", pair.b_if]}
    if queues != 1:
        where = {side: [*options, "--queues", str(queues)] for side, options in where.items()}
    with tempfile.TemporaryDirectory(prefix="frl-bench-") as tmp:
        reports = stream_across(pair.cmd("a", []), pair.cmd("b", []), pair.b_ip,
                                ["--mode", mode, "--frame-size", str(frame), "--max-rate", "--duration", f"{window:g}",
                                 *where["a"]], Path(tmp), recv_args=["--mode", mode, "--no-gro", "--idle", "2", *where["b"]],
                                port=PORT, timeout_s=window + 30)
    send = reports.sender
    (stream,) = reports.receiver["streams"]
    span = (stream["last_arrival_ns"] - stream["first_arrival_ns"]) / 1e9
    return {"sent_per_s": send["achieved_fps"], "sent_per_s_per_core": send["achieved_fps"] / send["cpu"]["utilization"],
            "sender_cpu": send["cpu"]["utilization"], "accounted_per_s": stream["unique"] / span,
            "lost_per_s": stream["lost"] / span, "lost_fraction": stream["lost"] / stream["expected"]}


def run_modes(window: float, rounds: int) -> dict:
    """The modes part: every (frame size, mode) once per round, rounds interleaved; medians
    and xdp's ratios to the socket modes."""
    trials: dict[str, list[dict[str, float]]] = {}
    names = [(frame, mode) for frame in MODE_FRAMES for mode in MODES]
    bare = build_bare_loop()
    with NetPair() as pair:
        for round_index in range(rounds):
            shift = round_index % len(names)
            for frame, mode in names[shift:] + names[:shift]:
                if mode == "bare":
                    trial = measure_bare(pair, bare, frame, window)
                else:
                    trial = measure_mode(pair, mode, frame, window)
                trials.setdefault(f"{mode} {frame}B", []).append(trial)
                print(f"round {round_index + 1} {mode:4s} {frame:5d} B {trial['sent_per_s']:12,.0f} sent/s "
                      f"{trial['sent_per_s_per_core']:12,.0f} sent/s/core {trial['accounted_per_s']:12,.0f} accounted/s "
                      f"{trial['lost_fraction']:8.3%} lost", file=sys.stderr)
    pairs = {f"{ours} / {other} {frame}B": (f"{ours} {frame}B", f"{other} {frame}B") for frame in MODE_FRAMES
             for ours, other in (("xdp", "udp"), ("xdp", "raw"), ("xdp", "bare"), ("udp", "bare"))}
    return summarize(trials, pairs, f"frerlab gen send -> recv per mode across a veth pair, median of {rounds} "
                                    f"interleaved {window:g} s trials:")


def run_queues(window: float, rounds: int) -> dict:
    """The queues part: xdp mode, 64 B, unpaced, 1 and 2 queues per round, interleaved; medians
    and the ratio 2 / 1."""
    trials: dict[str, list[dict[str, float]]] = {}
    with NetPair(queues=2) as pair:
        for round_index in range(rounds):
            for queues in (1, 2) if round_index % 2 == 0 else (2, 1):
                trial = measure_mode(pair, "xdp", 64, window, queues)
                trials.setdefault(f"xdp 64B {queues}q", []).append(trial)
                print(f"round {round_index + 1} xdp 64 B {queues} queue(s) {trial['sent_per_s']:12,.0f} sent/s "
                      f"{trial['sent_per_s_per_core']:12,.0f} sent/s/core {trial['accounted_per_s']:12,.0f} accounted/s "
                      f"{trial['lost_fraction']:8.3%} lost", file=sys.stderr)
    return summarize(trials, {"2 queues / 1 queue": ("xdp 64B 2q", "xdp 64B 1q")},
                     f"xdp mode, 64 B, 1 vs 2 queues across a 2-queue veth pair, median of {rounds} interleaved "
                     f"{window:g} s trials:")


PACING_FRAMES = (1518, 64)
PACING_LOADS = (50, 70, 80, 90, 95, 98, 100)


def line_rate_fps(frame: int) -> float:
    """Frames/s of `frame`-byte frames that fill 1 GbE (20 bytes of preamble and gap each)."""
    return 1e9 / ((frame + L1_OVERHEAD_BYTES) * 8)


def run_pacing(window: float, rounds: int) -> dict:
    """The pacing part: mausezahn with the seeds' `-d` delay for each (frame size, load), once
    per round, rounds interleaved; medians of the arriving frames/s against the target."""
    arrived: dict[str, list[float]] = {}
    delays: dict[str, str] = {}
    cases = [(frame, load) for frame in PACING_FRAMES for load in PACING_LOADS]
    with NetPair() as pair:
        for round_index in range(rounds):
            shift = round_index % len(cases)
            for frame, load in cases[shift:] + cases[:shift]:
                target = load / 100 * line_rate_fps(frame)
                argv = mausezahn.command(pair.a_if, count=round(target * (window + 30)), frame_size=frame,
                                         src_ip=pair.a_ip, dst_ip=pair.b_ip, dst_mac=pair.mac("b"), port=PORT,
                                         frames_per_s=target)
                received, dropped = measure_kernel_counted(pair, "mausezahn", argv, window)
                case = f"{frame}B {load}%"
                arrived.setdefault(case, []).append(received + dropped)
                delays[case] = argv[argv.index("-d") + 1]
                print(f"round {round_index + 1} mausezahn {frame:5d} B {load:3d} % target {target:12,.0f}/s "
                      f"-d {delays[case]:>3s}  arrived {received + dropped:12,.0f}/s", file=sys.stderr)
    rows = []
    print(f"mausezahn paced with -d (whole microseconds) across a veth pair, frames/s arriving, median of {rounds} "
          f"interleaved {window:g} s trials:")
    for frame, load in cases:
        target = load / 100 * line_rate_fps(frame)
        case = f"{frame}B {load}%"
        delay, achieved = float(delays[case]), statistics.median(arrived[case])
        row = {"frame_size": frame, "load_percent": load, "target_fps": target, "delay_us": delay,
               "achieved_fps": achieved, "achieved_over_target": achieved / target,
               "share_of_line_rate": achieved / line_rate_fps(frame), "achieved_l2_mbps": achieved * frame * 8 / 1e6,
               "gap_us": 1e6 / achieved if achieved else None}
        rows.append(row)
        print(f"  {frame:5d} B {load:3d} %  target {target:11,.0f}/s  -d {delay:3.0f}  achieved {achieved:11,.0f}/s  "
              f"{row['achieved_over_target']:6.1%} of target  {row['share_of_line_rate']:6.1%} of line rate  "
              f"gap {row['gap_us']:7.1f} us")
    return {"arrived_per_s": arrived, "rows": rows}


def summarize(trials: dict[str, list[dict[str, float]]], pairs: dict[str, tuple[str, str]], title: str) -> dict:
    """Medians per name of `trials` and, for each label of `pairs` (ours, baseline), the ratios
    of their medians; printed under `title` and returned with the trials."""
    medians = {name: {key: statistics.median(t[key] for t in runs) for key in runs[0]} for name, runs in trials.items()}
    ratios = {f"{label} {key}": medians[ours][key] / medians[other][key] for label, (ours, other) in pairs.items()
              for key in ("sent_per_s", "sent_per_s_per_core", "accounted_per_s")}
    print(title)
    for name, m in medians.items():
        print(f"  {name:12s} sent {m['sent_per_s']:12,.0f}/s  per core {m['sent_per_s_per_core']:12,.0f}/s  "
              f"accounted {m['accounted_per_s']:12,.0f}/s  lost {m['lost_fraction']:7.3%}")
    for label, ratio in ratios.items():
        print(f"  {label:40s} {ratio:5.2f}x")
    return {"trials": trials, "medians": medians, "ratios": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["kernel", "modes", "queues", "pacing", "all"], default="all",
                        help="kernel-counted contenders at 64 B, frerlab's modes with full accounting, xdp mode "
                             "on 1 vs 2 queues, mausezahn paced with the seeds' -d, or all four")
    parser.add_argument("--window", type=float, default=3.0, help="seconds measured per trial")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--json", type=Path, help="write every trial and the medians here")
    args = parser.parse_args()
    result: dict = {"benchmark": "traffic_pps", "window_s": args.window, "rounds": args.rounds,
                    "kernel": platform.release(), "cpus": os.cpu_count()}
    if args.part in ("kernel", "all"):
        result["kernel_counted"] = run_kernel_counted(args.window, args.rounds)
    if args.part in ("modes", "all"):
        result["modes"] = run_modes(args.window, args.rounds)
    if args.part in ("queues", "all"):
        result["queues"] = run_queues(args.window, args.rounds)
    if args.part in ("pacing", "all"):
        result["pacing"] = run_pacing(args.window, args.rounds)
    if args.json:
        write_atomic(args.json, json.dumps(result, indent=2))
    return 0


def run_kernel_counted(window: float, rounds: int) -> dict:
    """The kernel-counted part: 64-byte frames, every contender once per round; medians and
    ratios."""
    bare = build_bare_loop()
    received: dict[str, list[float]] = {}
    dropped: dict[str, list[float]] = {}
    with NetPair() as pair:
        commands = senders(pair, bare, window + 30)
        names = [*commands, END_TO_END]
        for round_index in range(rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                if name == END_TO_END:
                    rate, lost = measure_end_to_end(pair, window)
                else:
                    rate, lost = measure_kernel_counted(pair, name, commands[name], window)
                received.setdefault(name, []).append(rate)
                dropped.setdefault(name, []).append(lost)
                print(f"round {round_index + 1} {name:16s} {rate:12,.0f} received/s {lost:12,.0f} dropped/s",
                      file=sys.stderr)
    medians = {name: statistics.median(received[name]) for name in names}
    ratios = {
        f"{ours} / {theirs}": medians[ours] / medians[theirs]
        for ours in ("frerlab gen", "frerlab raw", "frerlab --gso", END_TO_END)
        for theirs in ("iperf3", "mausezahn", "bare sendmmsg")
    }
    print(f"64-byte frames across a veth pair, datagrams received per second, median of {rounds} "
          f"interleaved {window:g} s trials:")
    for name, value in medians.items():
        print(f"  {name:16s} {value:12,.0f} /s   (dropped {statistics.median(dropped[name]):,.0f} /s)")
    for label, ratio in ratios.items():
        print(f"  {label:34s} {ratio:5.2f}x")
    return {"frame_size": 64, "received_per_s": received, "dropped_per_s": dropped,
            "median_received_per_s": medians, "ratios": ratios}


if __name__ == "__main__":
    sys.exit(main())
