"""Calibration of the software timestamp path on a veth pair: how far the userspace stamps
frerlab's latency could rest on are from the kernel's own stamps, per frame, at a low and a
moderate load.

`frerlab gen send` (paced, UDP or AF_PACKET) takes the kernel's software TX stamp of every
frame (SO_TIMESTAMPING, read back from the error queue) beside the send time it writes into
the probe just before the send call, and reports per frame `tx_stamp_after_payload_ns` = TX
stamp - probe time. `frerlab gen recv` takes the kernel's software RX stamp and reports per
frame `read_after_rx_stamp_ns` = the receiver's clock when it handled the frame - RX stamp.
Both on CLOCK_REALTIME of one host. So:

- the one-way latency frerlab reports (probe time -> kernel RX stamp) exceeds the kernel-stamp
  latency (TX stamp -> RX stamp) by exactly tx_stamp_after_payload, frame by frame;
- a latency timed in user space at both ends (probe time -> read time, as xdp mode's receiver
  does) exceeds it by tx_stamp_after_payload + read_after_rx_stamp.

Prints p50 / p99 of each per (mode, load), and the latency the receiver reported.

Run (root): `.venv/bin/python benches/timestamp_calibration.py [--modes udp raw] [--low 1000:10]
[--moderate 100000:3] [--json FILE]` (RATE:SECONDS per load).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

from frerlab.files import write_atomic
from frerlab.traffic.netpair import NetPair
from frerlab.traffic.across import stream_across

PORT = 5555


def percentile(summary: dict | None, p: float) -> float | None:
    """Percentile `p` of a report's histogram summary, in microseconds."""
    if not summary:
        return None
    return dict((q, v) for q, v in summary["percentiles"])[p] / 1e3


def measure(pair: NetPair, mode: str, rate: float, seconds: float) -> dict:
    """One paced run of `mode` at `rate` frames/s for `seconds`: the per-frame stamp errors."""
    where = {"a": [], "b": []}
    if mode == "raw":
        where = {"a": ["--interface", pair.a_if, "--dst-mac", pair.mac("b")], "b": ["--interface", pair.b_if]}
    with tempfile.TemporaryDirectory(prefix="frl-calib-") as tmp:
        reports = stream_across(pair.cmd("a", []), pair.cmd("b", []), pair.b_ip,
                                ["--mode", mode, "--rate-fps", f"{rate:g}", "--duration", f"{seconds:g}", *where["a"]],
                                Path(tmp), recv_args=["--mode", mode, "--no-gro", *where["b"]], port=PORT,
                                timeout_s=seconds + 30)
    send, recv = reports.sender, reports.receiver
    tx, rx_read = send["tx_stamp_after_payload_ns"], recv["read_after_rx_stamp_ns"]
    (stream,) = recv["streams"]
    if send["timestamps"]["tx"] != "software" or recv["timestamps"]["rx"] != "software":
        raise RuntimeError(f"expected software stamps at both ends, got {send['timestamps']} / {recv['timestamps']}")
    return {
        "mode": mode, "rate_fps": rate, "seconds": seconds, "achieved_fps": send["achieved_fps"],
        "frames": send["frames_sent"], "tx_stamps": send["tx_stamps"], "lost": stream["lost"],
        "tx_after_payload_us": {"p50": percentile(tx, 50.0), "p99": percentile(tx, 99.0), "count": tx["count"]},
        "read_after_rx_us": {"p50": percentile(rx_read, 50.0), "p99": percentile(rx_read, 99.0),
                             "count": rx_read["count"]},
        "latency_us": {"p50": percentile(stream["latency_ns"], 50.0), "p99": percentile(stream["latency_ns"], 99.0)},
        "timestamps": {"send": send["timestamps"], "recv": recv["timestamps"]},
    }


def load(text: str) -> tuple[float, float]:
    """RATE:SECONDS."""
    rate, _, seconds = text.partition(":")
    try:
        return float(rate), float(seconds)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not RATE:SECONDS (e.g. 1000:10)") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", nargs="+", choices=["udp", "raw"], default=["udp", "raw"])
    parser.add_argument("--low", type=load, default=(1000.0, 10.0), help="RATE:SECONDS of the low load")
    parser.add_argument("--moderate", type=load, default=(100_000.0, 3.0), help="RATE:SECONDS of the moderate load")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args()
    runs = []
    with NetPair() as pair:
        for mode in args.modes:
            for name, (rate, seconds) in (("low", args.low), ("moderate", args.moderate)):
                run = {"load": name, **measure(pair, mode, rate, seconds)}
                runs.append(run)
                tx, rx = run["tx_after_payload_us"], run["read_after_rx_us"]
                both = tx["p50"] + rx["p50"]
                print(f"{mode:4s} {name:8s} {rate:9,.0f} fps  {run['frames']:9,} frames  "
                      f"TX stamp - probe time p50 {tx['p50']:7.2f} p99 {tx['p99']:8.2f} us   "
                      f"read - RX stamp p50 {rx['p50']:7.2f} p99 {rx['p99']:8.2f} us   "
                      f"(sum of p50s {both:6.2f} us; latency p50 {run['latency_us']['p50']:.2f} us)")
    if args.json:
        write_atomic(args.json, json.dumps({"benchmark": "timestamp_calibration", "kernel": platform.release(),
                                            "cpus": os.cpu_count(), "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
