"""eBPF data plane: throughput, per-frame program cost and added latency of FRER against plain
redirects, for tc and for XDP, side by side in one run.

Topology (frerlab.dataplane.twopath): talker - sw1 - paths a, b - sw2 - listener. "frer": sw1
numbers and replicates, sw2 eliminates and removes the R-TAG. Baselines with no FRER
(bpf/redirect.c): "plain" = path a only (the issue's baseline; every frame crosses one veth
fewer than with FRER); "plain-dual" = sw1 copies every frame onto both paths, sw2 forwards
path a's and drops path b's (as many frames and veth hops as FRER: what FRER itself costs).
"xdp-frer", "xdp-plain" and "xdp-plain-dual": "frer", "plain" and "plain-dual" in native XDP
(bpf/frer_xdp.c; xdp_plain_redirect; xdp_plain_copy, one broadcast redirect onto both paths as
frer_xdp sends a stream's copies, and xdp_plain_drop).
"frer-hashmaps" and "xdp-frer-hashmaps": one stream, but the nodes loaded with room for 65,536
streams, so their per-stream state is in hash maps instead of arrays (what the maps cost).
"frer-rewrite-b" and "xdp-frer-rewrite-b": sw1 also writes path b's copies' destination MAC (the
listener's own), so the copies differ per port, as with active stream identification on one
path; XDP then rewrites each copy as it leaves (frer_xdp_copy, run by the device map).
"frer-h1024" and "xdp-frer-h1024": "frer" and "xdp-frer" with a history of 1024 instead of 32
(the vector recovery's window: how its cost scales with the history length).
Scaling with the number of streams: "frer-1k", "frer-64k", "xdp-frer-1k", "xdp-frer-64k" carry
1,024 or 65,536 streams, each identified by its UDP ports (hashed identities); the talker's flow
is spread over all of them in turn (bpf/redirect.c spread_ports on the talker's egress, frame k
to stream k mod N, and unspread_ports on the listener's ingress; frerlab.dataplane.twopath), so
every stream's state is touched. Their baselines "plain-spread" and "xdp-plain-spread" are
"plain" and "xdp-plain" with the same spreading, so both sides pay for it.
--busy runs a CPU hog (a busy loop at nice 0) pinned on each core for the whole measurement:
"both cores busy", the forwarding competing with other work for every core.
--sender xdp sends the throughput streams with the AF_XDP generator (`gen send --mode xdp` on
the talker's port, to the listener's MAC) instead of a UDP socket: the talker's frames then
skip its IP stack, qdisc and tc egress, and reach sw1 as skbs with the headroom AF_XDP's copy
mode gives them (a socket's 64 B frame leaves with 2 bytes, so tc's R-TAG push at sw1 must
reallocate its head). Not with the spread topologies, whose spreading runs at the talker's tc
egress.

The three topologies stay up for the whole run; each round measures every size and mode, in
an order rotating from round to round, so machine noise hits all modes alike.
- throughput: `frerlab gen send --max-rate` for --seconds; unique frames/s at the listener.
- program cost: run_time_ns / run_cnt of the programs each switch runs, read through
  bpf(2) around each throughput stream (BPF_ENABLE_STATS, on only while this runs).
- latency: one-way p50 and p99 at --latency-rate for --latency-seconds, every topology's
  stream at the same time (light load, so each sees the machine as the others do); per round,
  frer minus each baseline. Reported: median over rounds, with the smallest and largest.

    .venv/bin/python benches/dataplane_pps.py [--rounds 5] [--seconds 3] [--json FILE]
        [--cases LABEL,...] [--sizes 64,1518] [--no-latency] [--busy] [--sender udp|xdp]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from frerlab import bpfsys
from frerlab.dataplane.twopath import MODES, TwoPath
from frerlab.netns import link_info
from frerlab.testbed.plan import HOST_PORT

SIZES = (64, 512, 1518)
#: The topologies measured: label -> TwoPath's (mode, history length, streams[, room, rewrite_b]).
TOPOLOGIES = ({mode: (mode, 32, 1) for mode in MODES}
              | {"frer-hashmaps": ("frer", 32, 1, 65536), "xdp-frer-hashmaps": ("xdp-frer", 32, 1, 65536),
                 "frer-rewrite-b": ("frer", 32, 1, 1, True), "xdp-frer-rewrite-b": ("xdp-frer", 32, 1, 1, True),
                 "frer-h1024": ("frer", 1024, 1), "xdp-frer-h1024": ("xdp-frer", 1024, 1),
                 "plain-spread": ("plain", 32, 65536), "xdp-plain-spread": ("xdp-plain", 32, 65536),
                 "frer-1k": ("frer", 32, 1024), "frer-64k": ("frer", 32, 65536),
                 "xdp-frer-1k": ("xdp-frer", 32, 1024), "xdp-frer-64k": ("xdp-frer", 32, 65536)})
#: (FRER topology, its baseline): the ratios reported (those whose two topologies were measured)
COMPARISONS = (("frer", "plain"), ("frer", "plain-dual"), ("xdp-frer", "xdp-plain"), ("xdp-frer", "frer"),
               ("xdp-frer", "xdp-plain-dual"), ("xdp-plain-dual", "xdp-plain"),
               ("frer-hashmaps", "frer"), ("xdp-frer-hashmaps", "xdp-frer"),
               ("frer-rewrite-b", "frer"), ("xdp-frer-rewrite-b", "xdp-frer"),
               ("frer-h1024", "frer"), ("xdp-frer-h1024", "xdp-frer"),
               ("plain-spread", "plain"), ("xdp-plain-spread", "xdp-plain"),
               ("frer-1k", "plain-spread"), ("frer-64k", "plain-spread"), ("frer-64k", "frer-1k"),
               ("xdp-frer-1k", "xdp-plain-spread"), ("xdp-frer-64k", "xdp-plain-spread"),
               ("xdp-frer-64k", "xdp-frer-1k"))
ROLES = ("sw1", "sw2")


def throughput(stream: dict) -> float:
    span = (stream["last_arrival_ns"] - stream["first_arrival_ns"]) / 1e9
    return stream["unique"] / span if span > 0 else 0.0


def run_stats(programs: dict[str, list[bpfsys.Program]]) -> dict[str, tuple[int, int, int]]:
    """(run_time_ns, run_cnt) summed over the programs of each switch, and the run_cnt of its
    first program (the one every frame entering it meets)."""
    out = {}
    for role, progs in programs.items():
        pairs = [p.run_stats() for p in progs]
        out[role] = (sum(ns for ns, _ in pairs), sum(cnt for _, cnt in pairs), pairs[0][1])
    return out


def spread(values: list[float], fmt: str) -> str:
    """The median of `values` and their range."""
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}} .. {max(values):{fmt}})"


class Hogs:
    """A busy loop at nice 0 pinned on each CPU this process may use, while the `with` lasts."""

    def __enter__(self) -> Hogs:
        self.procs = [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"])
                      for cpu in sorted(os.sched_getaffinity(0))]
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def sender_args(net: TwoPath, sender: str) -> list[str]:
    """`gen send` options of the throughput streams' sender."""
    if sender == "udp":
        return []
    mac = link_info(net.ns["listener"], HOST_PORT)["address"]
    return ["--mode", "xdp", "--interface", HOST_PORT, "--dst-mac", mac]


def measure(args: argparse.Namespace) -> list[dict]:
    raw: list[dict] = []
    labels = args.cases
    with ExitStack() as stack:
        stack.enter_context(bpfsys.RunTimeStats())
        # the most streams first: a 64k-stream node configured after a 1k-stream node on arrays
        # was refused per-CPU memory (ENOMEM for 10 s) on kernel 6.18; the other order works
        nets = {label: stack.enter_context(TwoPath(*TOPOLOGIES[label]))
                for label in sorted(labels, key=lambda label: -TOPOLOGIES[label][2])}
        programs = {mode: {role: [stack.enter_context(bpfsys.Program(path)) for path in net.programs[role]]
                           for role in ROLES} for mode, net in nets.items()}
        if args.busy:
            stack.enter_context(Hogs())
        for round_no in range(args.rounds):
            order = labels[round_no % len(labels):] + labels[:round_no % len(labels)]
            load = os.getloadavg()[0]
            for size in args.sizes:
                for mode in order:
                    before = run_stats(programs[mode])
                    stream = nets[mode].stream(["--frame-size", str(size), "--max-rate", "--duration",
                                                str(args.seconds), *sender_args(nets[mode], args.sender)])
                    after = run_stats(programs[mode])
                    raw.append({"round": round_no, "load1": load, "kind": "throughput", "mode": mode,
                                "size": size, "pps": throughput(stream), "stream": stream,
                                "frames_in": after["sw1"][2] - before["sw1"][2],
                                "bpf": {role: {"run_time_ns": after[role][0] - before[role][0],
                                               "run_cnt": after[role][1] - before[role][1]} for role in ROLES}})
            for size in args.sizes if args.latency else ():
                send = ["--frame-size", str(size), "--rate-fps", args.latency_rate,
                        "--duration", str(args.latency_seconds)]
                with ThreadPoolExecutor(len(labels)) as pool:
                    streams = dict(zip(labels, pool.map(lambda label, send=send: nets[label].stream(send), labels)))
                for mode, stream in streams.items():
                    percentiles = dict(stream["latency_ns"]["percentiles"])
                    raw.append({"round": round_no, "load1": load, "kind": "latency", "mode": mode, "size": size,
                                "p50_ns": percentiles[50.0], "p99_ns": percentiles[99.0], "stream": stream})
            print(f"round {round_no + 1}/{args.rounds} done (order {', '.join(order)}, load {load:.2f})",
                  file=sys.stderr)
    return raw


def report(raw: list[dict], rounds: int, labels: list[str], sizes: list[int]) -> None:
    comparisons = [(mode, base) for mode, base in COMPARISONS if mode in labels and base in labels]

    def pick(kind: str, mode: str, size: int) -> list[dict]:
        return sorted((r for r in raw if r["kind"] == kind and r["mode"] == mode and r["size"] == size),
                      key=lambda r: r["round"])

    print("throughput, unique frames/s at the listener: median (min .. max) over rounds")
    for size in sizes:
        for mode in labels:
            print(f"  {size:>4} B {mode:<14} {spread([r['pps'] for r in pick('throughput', mode, size)], ',.0f')}")
        for mode, base in comparisons:
            ratios = [f["pps"] / b["pps"] for f, b in zip(pick("throughput", mode, size), pick("throughput", base, size))]
            print(f"  {size:>4} B {mode} / {base:<10} {spread(ratios, '.2f')}  (per-round ratios)")
    print("BPF program cost during the throughput streams: ns per run, runs per frame entering sw1")
    for size in sizes:
        for mode in labels:
            rows = pick("throughput", mode, size)
            cells = []
            for role in ROLES:
                per_run = [r["bpf"][role]["run_time_ns"] / r["bpf"][role]["run_cnt"] for r in rows]
                runs = statistics.median(r["bpf"][role]["run_cnt"] / r["frames_in"] for r in rows)
                cells.append(f"{role} {spread(per_run, '.0f')} ns x {runs:.2f}")
            total = [sum(r["bpf"][role]["run_time_ns"] for role in ROLES) / r["frames_in"] for r in rows]
            print(f"  {size:>4} B {mode:<14} {'; '.join(cells)}; both switches {spread(total, '.0f')} ns/frame")
    for key in ("p50", "p99") if any(r["kind"] == "latency" for r in raw) else ():
        print(f"one-way latency {key} (us) and FRER's added {key}, median (min .. max) over rounds")
        for size in sizes:
            value = {mode: [r[f"{key}_ns"] / 1000 for r in pick("latency", mode, size)] for mode in labels}
            print(f"  {size:>4} B " + "; ".join(f"{mode} {spread(value[mode], '.1f')}" for mode in labels))
            for mode, base in comparisons:
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
    parser.add_argument("--cases", type=lambda text: text.split(","), default=list(TOPOLOGIES),
                        help=f"comma-separated topologies to measure (default all: {','.join(TOPOLOGIES)})")
    parser.add_argument("--sizes", type=lambda text: [int(v) for v in text.split(",")], default=list(SIZES),
                        help="comma-separated frame sizes (default 64,512,1518)")
    parser.add_argument("--no-latency", dest="latency", action="store_false", help="throughput and program cost only")
    parser.add_argument("--busy", action="store_true", help="a CPU hog pinned on each core for the whole run")
    parser.add_argument("--sender", choices=("udp", "xdp"), default="udp",
                        help="the throughput streams' sender: a UDP socket or AF_XDP (default udp)")
    args = parser.parse_args()
    unknown = [label for label in args.cases if label not in TOPOLOGIES]
    if unknown:
        parser.error(f"--cases {','.join(unknown)} is not valid (valid: {', '.join(TOPOLOGIES)})")
    spread = [label for label in args.cases if TOPOLOGIES[label][2] > 1]
    if args.sender == "xdp" and spread:
        parser.error(f"--sender xdp does not spread streams (the talker's tc egress does): drop {','.join(spread)}")
    # a plain kill cleans up too (namespaces, pins, statistics), like Ctrl-C
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    raw = measure(args)
    if args.json:
        tmp = args.json.with_suffix(".tmp")
        tmp.write_text(json.dumps(raw, indent=1))
        tmp.replace(args.json)
    report(raw, args.rounds, args.cases, args.sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
