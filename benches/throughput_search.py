"""Benchmark of the throughput searches: the seeds' binary search against the RFC 9971-style
search, side by side on the same simulated devices under test (frerlab.bench.dut.LinkDut).

For every case (bottleneck rate, queue, background loss) both searches run on their own copy
of the same DUT and are compared with the truth measured on the noise-free simulator
(`measure_truth`: the highest L2 rate that loses at most the goal's ratio over a 30 s trial).
The binary search is the seeds' (seed 002 section 2.2): [0, max_rate], 10 iterations of 30 s,
loss 0.001 %. The fast search finds NDR (the same 0.001 %) and PDR (0.5 %) in one run with
30 s final trials. The figure is total *trial time* (simulated seconds the searches ask for),
not wall time.

Run: .venv/bin/python benches/throughput_search.py [--json out.json]
Target (issue 12): fast search within +-0.5 % of the truth, the truth inside its reported
interval, in at most half the trial time of the binary search.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from frerlab import __version__
from frerlab.bench.dut import LinkDut, measure_truth, model_truth
from frerlab.bench.search import Goal, GoalResult, SearchResult, binary_search, mlr_search

MAX_RATE = 20e6  # the tester's "line rate" for every case: 2x to 6.5x the bottleneck
FINAL_S = 30.0
NDR_LOSS, PDR_LOSS = 1e-5, 0.005
LINKS = (10e6, 7.3e6, 3.1e6)
QUEUES = (4096, 16384, 65536)
NOISE = (0.0, 1e-6, 1e-5)


def goal_figures(goal: GoalResult, truth: float) -> dict:
    """The reported rate against the truth."""
    inside = goal.lower is not None and goal.lower <= truth and (goal.upper is None or truth < goal.upper)
    error = None if goal.rate is None else goal.rate / truth - 1
    return {"loss_ratio": goal.loss_ratio, "truth_bps": truth, "rate_bps": goal.rate, "relative_error": error,
            "lower_bps": goal.lower, "upper_bps": goal.upper, "truth_inside": inside, "resolved": goal.resolved,
            "within_half_percent": error is not None and abs(error) <= 0.005}


def trials(result: SearchResult) -> list[dict]:
    """Every trial of a search as plain data."""
    return [{"rate_bps": t.rate, "duration_s": t.duration_s, "offered": t.result.offered, "sent": t.result.sent,
             "received": t.result.received, "loss_ratio": t.result.loss_ratio, "valid": t.valid} for t in result.trials]


def run_case(link_bps: float, queue_bytes: int, loss_p: float) -> dict:
    """Both searches on one DUT configuration."""
    dut = dict(link_bps=link_bps, queue_bytes=queue_bytes, loss_p=loss_p)
    truth = {g: measure_truth(LinkDut(**dut), g, FINAL_S) for g in (NDR_LOSS, PDR_LOSS)}
    binary = binary_search(LinkDut(**dut).trial, 0.0, MAX_RATE, iterations=10, trial_duration_s=FINAL_S,
                           loss_threshold=NDR_LOSS)
    goals = [Goal(NDR_LOSS, FINAL_S, FINAL_S), Goal(PDR_LOSS, FINAL_S, FINAL_S)]
    fast = mlr_search(LinkDut(**dut).trial, MAX_RATE / 1000, MAX_RATE, goals)
    fast_ndr = mlr_search(LinkDut(**dut).trial, MAX_RATE / 1000, MAX_RATE, goals[:1])
    return {
        "dut": {**dut, "capacity_l2_bps": LinkDut(**dut).capacity_bps,
                "model_truth_bps": {str(g): model_truth(LinkDut(**dut), g, FINAL_S) for g in truth}},
        "binary": {"total_trial_s": binary.total_trial_s, "ndr": goal_figures(binary.goals[0], truth[NDR_LOSS]),
                   "trials": trials(binary)},
        "mlr": {"total_trial_s": fast.total_trial_s, "ndr": goal_figures(fast.goals[0], truth[NDR_LOSS]),
                "pdr": goal_figures(fast.goals[1], truth[PDR_LOSS]), "trials": trials(fast)},
        "mlr_ndr_only": {"total_trial_s": fast_ndr.total_trial_s, "ndr": goal_figures(fast_ndr.goals[0], truth[NDR_LOSS]),
                         "trials": trials(fast_ndr)},
        "ratio_mlr_over_binary": fast.total_trial_s / binary.total_trial_s,
        "ratio_mlr_ndr_only_over_binary": fast_ndr.total_trial_s / binary.total_trial_s,
    }


def pct(value: float | None) -> str:
    return "  none " if value is None else f"{value * 100:+.2f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write every figure and trial to this file")
    args = parser.parse_args()
    start = time.perf_counter()
    cases = [run_case(link, queue, noise) for noise in NOISE for link in LINKS for queue in QUEUES]
    print("link Mb/s queue KiB  loss p | binary NDR err in  time | MLR NDR err in   PDR err in  time | ratio  NDR-only ratio")
    for c in cases:
        d, b, m, n = c["dut"], c["binary"], c["mlr"], c["mlr_ndr_only"]
        yes = {True: "y", False: "N"}
        print(f"{d['link_bps'] / 1e6:9.1f} {d['queue_bytes'] // 1024:9d} {d['loss_p']:7.0e} | "
              f"{pct(b['ndr']['relative_error']):>11} {yes[b['ndr']['truth_inside']]} {b['total_trial_s']:5.0f} | "
              f"{pct(m['ndr']['relative_error']):>11} {yes[m['ndr']['truth_inside']]} "
              f"{pct(m['pdr']['relative_error']):>8} {yes[m['pdr']['truth_inside']]} {m['total_trial_s']:5.0f} | "
              f"{c['ratio_mlr_over_binary']:5.2f}  {pct(n['ndr']['relative_error'])} {yes[n['ndr']['truth_inside']]} "
              f"{c['ratio_mlr_ndr_only_over_binary']:5.2f}")
    met = [all(c["mlr"][g]["within_half_percent"] and c["mlr"][g]["truth_inside"] for g in ("ndr", "pdr"))
           and c["ratio_mlr_over_binary"] <= 0.5 for c in cases]
    binary_ok = sum(c["binary"]["ndr"]["within_half_percent"] and c["binary"]["ndr"]["truth_inside"] for c in cases)
    ratios = [c["ratio_mlr_over_binary"] for c in cases]
    print(f"binary search within +-0.5 % with the truth inside its interval: {binary_ok}/{len(cases)} cases")
    print(f"MLR (NDR+PDR) / binary trial time: min {min(ratios):.2f}, max {max(ratios):.2f}, "
          f"mean {sum(ratios) / len(ratios):.2f}")
    print(f"target (MLR NDR and PDR within +-0.5 %, truth inside, <= 0.5x the binary's trial time): "
          f"met in {sum(met)}/{len(cases)} cases")
    if args.json:
        meta = {"tool": "benches/throughput_search.py", "frerlab_version": __version__, "host": platform.node(),
                "python": platform.python_version(), "wall_seconds": time.perf_counter() - start,
                "max_rate_bps": MAX_RATE, "final_trial_s": FINAL_S, "goals": [NDR_LOSS, PDR_LOSS]}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "cases": cases}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
