"""eBPF data plane throughput and added latency, against a plain tc redirect, side by side.

Topology (frerlab.dataplane.twopath): talker - sw1 - paths - sw2 - listener in namespaces.
"frer": sw1 numbers and replicates onto two paths, sw2 eliminates (frerlab's data plane).
"plain": path a only, each switch a plain BPF redirect, no FRER (bpf/redirect.c).

Throughput: `frerlab gen send --max-rate` for a few seconds with 64- and 1518-byte frames;
the figure is unique frames received per second at the listener (frerlab gen recv). Added
latency: one-way latency median at a moderate rate (5 k frames/s), frer minus plain. Rounds
are interleaved so machine noise hits both modes alike; the best round of each is reported.

    .venv/bin/python benches/dataplane_pps.py [--rounds 3] [--seconds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from frerlab.dataplane.twopath import TwoPath

SIZES = (64, 1518)


def throughput(stream: dict) -> float:
    span = (stream["last_arrival_ns"] - stream["first_arrival_ns"]) / 1e9
    return stream["unique"] / span if span > 0 else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args()
    best: dict[str, float] = {}
    raw = []
    for round_no in range(args.rounds):
        for mode in ("plain", "frer") if round_no % 2 == 0 else ("frer", "plain"):
            with TwoPath(mode) as net:
                for size in SIZES:
                    stream = net.stream(["--frame-size", str(size), "--max-rate", "--duration", str(args.seconds)])
                    pps = throughput(stream)
                    raw.append({"round": round_no, "mode": mode, "size": size, "pps": pps, "stream": stream})
                    best[f"{mode}/{size}"] = max(best.get(f"{mode}/{size}", 0.0), pps)
                stream = net.stream(["--rate-fps", "5k", "--duration", "2"])
                p50 = dict(stream["latency_ns"]["percentiles"])[50.0]
                raw.append({"round": round_no, "mode": mode, "size": 64, "latency_p50_ns": p50})
                best[f"{mode}/p50"] = min(best.get(f"{mode}/p50", float("inf")), p50)
            print(f"round {round_no + 1}/{args.rounds} {mode}: done", file=sys.stderr)
    if args.json:
        tmp = args.json.with_suffix(".tmp")
        tmp.write_text(json.dumps(raw, indent=1))
        tmp.replace(args.json)
    print(f"{'frame':>6} {'plain redirect':>16} {'frer':>16} {'ratio':>7}")
    for size in SIZES:
        plain, frer = best[f"plain/{size}"], best[f"frer/{size}"]
        print(f"{size:>5}B {plain:>12,.0f} f/s {frer:>12,.0f} f/s {frer / plain:>6.2f}x")
    added = (best["frer/p50"] - best["plain/p50"]) / 1000
    print(f"one-way latency p50 at 5 k frames/s: plain {best['plain/p50'] / 1000:.1f} us, "
          f"frer {best['frer/p50'] / 1000:.1f} us, added {added:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
