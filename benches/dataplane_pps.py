"""eBPF data plane: throughput, per-frame program cost and added latency of FRER against plain
redirects, for tc and for XDP, side by side in one run.

Topology (frerlab.dataplane.twopath): talker - sw1 - paths a, b - sw2 - listener. "frer": sw1
numbers and replicates, sw2 eliminates and removes the R-TAG. Baselines with no FRER
(bpf/redirect.c): "plain" = path a only (the issue's baseline; every frame crosses one veth
fewer than with FRER); "plain-dual" = sw1 copies every frame onto both paths, sw2 forwards
path a's and drops path b's (as many frames and veth hops as FRER: what FRER itself costs).
"xdp-frer" and "xdp-plain": "frer" and "plain" in native XDP (bpf/frer_xdp.c, xdp_plain_redirect).
"frer-h1024" and "xdp-frer-h1024": "frer" and "xdp-frer" with a history of 1024 instead of 32
(the vector recovery's window: how its cost scales with the history length).

The three topologies stay up for the whole run; each round measures every size and mode, in
an order rotating from round to round, so machine noise hits all modes alike.
- throughput: `frerlab gen send --max-rate` for --seconds; unique frames/s at the listener.
- program cost: run_time_ns / run_cnt of the programs each switch runs, read through
  bpf(2) around each throughput stream (BPF_ENABLE_STATS, on only while this runs).
- latency: one-way p50 and p99 at --latency-rate for --latency-seconds, every topology's
  stream at the same time (light load, so each sees the machine as the others do); per round,
  frer minus each baseline. Reported: median over rounds, with the smallest and largest.

    .venv/bin/python benches/dataplane_pps.py [--rounds 5] [--seconds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from frerlab.dataplane import bpfsys
from frerlab.dataplane.twopath import MODES, TwoPath

SIZES = (64, 512, 1518)
#: The topologies measured: label -> (TwoPath mode, history length).
TOPOLOGIES = {mode: (mode, 32) for mode in MODES} | {"frer-h1024": ("frer", 1024), "xdp-frer-h1024": ("xdp-frer", 1024)}
LABELS = tuple(TOPOLOGIES)
#: (FRER topology, its baseline): the ratios reported
COMPARISONS = (("frer", "plain"), ("frer", "plain-dual"), ("xdp-frer", "xdp-plain"), ("xdp-frer", "frer"),
               ("frer-h1024", "frer"), ("xdp-frer-h1024", "xdp-frer"))
ROLES = ("sw1", "sw2")


def throughput(stream: dict) -> float:
    span = (stream["last_arrival_ns"] - stream["first_arrival_ns"]) / 1e9
    return stream["unique"] / span if span > 0 else 0.0


def run_stats(programs: dict[str, list[bpfsys.Program]]) -> dict[str, tuple[int, int]]:
    """(run_time_ns, run_cnt) summed over the programs of each switch."""
    out = {}
    for role, progs in programs.items():
        pairs = [p.run_stats() for p in progs]
        out[role] = (sum(ns for ns, _ in pairs), sum(cnt for _, cnt in pairs))
    return out


def spread(values: list[float], fmt: str) -> str:
    """The median of `values` and their range."""
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}} .. {max(values):{fmt}})"


def measure(args: argparse.Namespace) -> list[dict]:
    raw: list[dict] = []
    with ExitStack() as stack:
        stack.enter_context(bpfsys.RunTimeStats())
        nets = {label: stack.enter_context(TwoPath(mode, history)) for label, (mode, history) in TOPOLOGIES.items()}
        programs = {mode: {role: [stack.enter_context(bpfsys.Program(path)) for path in net.programs[role]]
                           for role in ROLES} for mode, net in nets.items()}
        for round_no in range(args.rounds):
            order = LABELS[round_no % len(LABELS):] + LABELS[:round_no % len(LABELS)]
            load = os.getloadavg()[0]
            for size in SIZES:
                for mode in order:
                    before = run_stats(programs[mode])
                    stream = nets[mode].stream(["--frame-size", str(size), "--max-rate",
                                                "--duration", str(args.seconds)])
                    after = run_stats(programs[mode])
                    raw.append({"round": round_no, "load1": load, "kind": "throughput", "mode": mode,
                                "size": size, "pps": throughput(stream), "stream": stream,
                                "bpf": {role: {"run_time_ns": after[role][0] - before[role][0],
                                               "run_cnt": after[role][1] - before[role][1]} for role in ROLES}})
            for size in SIZES:
                send = ["--frame-size", str(size), "--rate-fps", args.latency_rate,
                        "--duration", str(args.latency_seconds)]
                with ThreadPoolExecutor(len(LABELS)) as pool:
                    streams = dict(zip(LABELS, pool.map(lambda label: nets[label].stream(send), LABELS)))
                for mode, stream in streams.items():
                    percentiles = dict(stream["latency_ns"]["percentiles"])
                    raw.append({"round": round_no, "load1": load, "kind": "latency", "mode": mode, "size": size,
                                "p50_ns": percentiles[50.0], "p99_ns": percentiles[99.0], "stream": stream})
            print(f"round {round_no + 1}/{args.rounds} done (order {', '.join(order)}, load {load:.2f})",
                  file=sys.stderr)
    return raw


def report(raw: list[dict], rounds: int) -> None:
    def pick(kind: str, mode: str, size: int) -> list[dict]:
        return sorted((r for r in raw if r["kind"] == kind and r["mode"] == mode and r["size"] == size),
                      key=lambda r: r["round"])

    print("throughput, unique frames/s at the listener: median (min .. max) over rounds")
    for size in SIZES:
        for mode in LABELS:
            print(f"  {size:>4} B {mode:<14} {spread([r['pps'] for r in pick('throughput', mode, size)], ',.0f')}")
        for mode, base in COMPARISONS:
            ratios = [f["pps"] / b["pps"] for f, b in zip(pick("throughput", mode, size), pick("throughput", base, size))]
            print(f"  {size:>4} B {mode} / {base:<10} {spread(ratios, '.2f')}  (per-round ratios)")
    print("BPF program cost during the throughput streams: ns per run, runs per frame entering sw1")
    for size in SIZES:
        for mode in LABELS:
            rows = pick("throughput", mode, size)
            cells = []
            for role in ROLES:
                per_run = [r["bpf"][role]["run_time_ns"] / r["bpf"][role]["run_cnt"] for r in rows]
                runs = statistics.median(r["bpf"][role]["run_cnt"] / r["bpf"]["sw1"]["run_cnt"] for r in rows)
                cells.append(f"{role} {spread(per_run, '.0f')} ns x {runs:.2f}")
            total = [sum(r["bpf"][role]["run_time_ns"] for role in ROLES) / r["bpf"]["sw1"]["run_cnt"] for r in rows]
            print(f"  {size:>4} B {mode:<14} {'; '.join(cells)}; both switches {spread(total, '.0f')} ns/frame")
    for key in ("p50", "p99"):
        print(f"one-way latency {key} (us) and FRER's added {key}, median (min .. max) over rounds")
        for size in SIZES:
            value = {mode: [r[f"{key}_ns"] / 1000 for r in pick("latency", mode, size)] for mode in LABELS}
            print(f"  {size:>4} B " + "; ".join(f"{mode} {spread(value[mode], '.1f')}" for mode in LABELS))
            for mode, base in COMPARISONS:
                added = [f - b for f, b in zip(value[mode], value[base])]
                print(f"  {size:>4} B {mode} added vs {base:<10} {spread(added, '.2f')} us")
    loads = [r["load1"] for r in raw]
    print(f"load average (1 min) at the start of the rounds: {min(loads):.2f} .. {max(loads):.2f}; "
          f"{rounds} rounds")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds of each throughput stream")
    parser.add_argument("--latency-rate", default="5k", help="frames/s of the latency streams")
    parser.add_argument("--latency-seconds", type=float, default=2.0, help="seconds of each latency stream")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args()
    # a plain kill cleans up too (namespaces, pins, statistics), like Ctrl-C
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    raw = measure(args)
    if args.json:
        tmp = args.json.with_suffix(".tmp")
        tmp.write_text(json.dumps(raw, indent=1))
        tmp.replace(args.json)
    report(raw, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
