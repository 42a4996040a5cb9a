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

Run (root): `.venv/bin/python benches/traffic_pps.py [--window 3] [--rounds 5] [--json FILE]`
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
from frerlab.traffic.tools import mausezahn
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=3.0, help="seconds measured per trial")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--json", type=Path, help="write every trial and the medians here")
    args = parser.parse_args()
    bare = build_bare_loop()
    received: dict[str, list[float]] = {}
    dropped: dict[str, list[float]] = {}
    with NetPair() as pair:
        commands = senders(pair, bare, args.window + 30)
        names = [*commands, END_TO_END]
        for round_index in range(args.rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                if name == END_TO_END:
                    rate, lost = measure_end_to_end(pair, args.window)
                else:
                    rate, lost = measure_kernel_counted(pair, name, commands[name], args.window)
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
    result = {
        "benchmark": "traffic_pps", "frame_size": 64, "window_s": args.window, "rounds": args.rounds,
        "kernel": platform.release(), "cpus": os.cpu_count(), "received_per_s": received,
        "dropped_per_s": dropped, "median_received_per_s": medians, "ratios": ratios,
    }
    if args.json:
        write_atomic(args.json, json.dumps(result, indent=2))
    print(f"64-byte frames across a veth pair, datagrams received per second, median of {args.rounds} "
          f"interleaved {args.window:g} s trials:")
    for name, value in medians.items():
        print(f"  {name:16s} {value:12,.0f} /s   (dropped {statistics.median(dropped[name]):,.0f} /s)")
    for label, ratio in ratios.items():
        print(f"  {label:34s} {ratio:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
