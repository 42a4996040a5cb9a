"""The simulator against the namespace network, on a topology file (frerlab.net): the same
streams, link loss and faults run in both worlds, and both against the prediction
(frerlab.net.analyse, faults at their times).

The namespace side brings the topology up under a temporary name (frerlab.net.namespaces,
always taken down), starts every stream at once (frerlab's generator and receiver, one pair per
stream, each sending as many frames as the prediction expects in the run), and applies each
fault at its time on the link's impairment element, times counted from the first frame at a
listener. Raw results are written first (DIR/sim: the simulator's report; DIR/net/STREAM: both
ends' reports; DIR/net/dataplanes.json: every node's counters; DIR/prediction.json), then
DIR/comparison.json and DIR/comparison.txt, derived from them alone.

Compared, per stream: frames sent, delivered (distinct), lost, duplicates; per sequence
recovery function: frames passed, discarded and rogue. Each world's delivered fraction is also
held to the prediction: it must lie within the binomial interval a correct model misses once in
a million runs (frerlab.net.analyse's independence assumption), widened by the frames a late
fault edge can move.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from frerlab.errors import ToolFailed, UsageError
from frerlab.files import write_atomic
from frerlab.net.topology import Burst, Topology

#: How much later than its time a fault can take effect on the namespace network (the first
#: frame at a listener is polled every 2 ms, an element is changed by a process call): each edge
#: can move this many seconds of a stream's frames from one state of the link to the other.
EDGE_SLACK_S = 0.025
#: A random count may differ between the worlds by this many standard deviations of the
#: difference of the two counts.
SIGMAS = 4
#: z of a two-sided normal interval missed once in a million runs.
Z_ONE_IN_A_MILLION = 4.8916
#: The counters of each sequence recovery function compared.
COMPARED_RECOVERY = ("passed_packets", "discarded_packets", "rogue_packets")


def check(topo: Topology) -> None:
    """UsageError for what only one world could run: a loss burst of p < 1 (no simulator form)."""
    for fault in topo.faults:
        if isinstance(fault, Burst) and fault.p < 1:
            raise UsageError(f"burst on {fault.burst} with p {fault.p:g}: the simulator has no time-limited random "
                             "loss, so crosscheck takes bursts of p 1 only (net analyse takes any p)")


def run(topo: Topology, data: dict, source: str, out: Path) -> dict[str, Any]:
    """Runs the simulator, the prediction and the namespace network (raw results first), then
    writes and returns the comparison."""
    from frerlab.net import sim
    from frerlab.net.analyse import analyse

    check(topo)
    out.mkdir(parents=True, exist_ok=True)
    sim.write_inputs(source, data, topo, out)
    sim.run(topo).save(out / "sim")
    write_atomic(out / "prediction.json", json.dumps(analyse(topo, faults="schedule"), indent=1))
    run_network(topo, data, source, out / "net")
    comparison = compare(topo, out)
    write_atomic(out / "comparison.json", json.dumps(comparison, indent=1))
    write_atomic(out / "comparison.txt", table(comparison) + "\n")
    return comparison


def run_network(topo: Topology, data: dict, source: str, out: Path) -> None:
    """The namespace side on a temporary network (always taken down, also on Ctrl-C): every
    stream's reports in out/STREAM, every node's counters in out/dataplanes.json, the faults as
    applied in out/faults.json."""
    from frerlab.dataplane import control
    from frerlab.net import namespaces
    from frerlab.net.analyse import expected_frames

    name = f"xc{os.getpid() % 10**7}"
    state = namespaces.up(topo, data, source, name)
    try:
        out.mkdir(parents=True, exist_ok=True)
        errors: list[BaseException] = []
        threads = []
        for s in topo.streams:
            plan = topo.plans[s.name]
            frames = expected_frames(topo, s)
            argv = ["--rate-l2", str(s.rate), "--frame-size", str(s.frame_size), "--count", str(frames)]
            threads.append(threading.Thread(target=_stream, daemon=True, args=(
                state, plan.talker, plan.listener, state["ports"][s.name], argv, out / s.name,
                frames / s.frames_per_second + 30, errors)))
        for t in threads:
            t.start()
        applied = _apply_faults(topo, state, threads)
        for t in threads:
            t.join()
        write_atomic(out / "faults.json", json.dumps(applied, indent=1))
        if errors:
            raise errors[0]
        write_atomic(out / "dataplanes.json", json.dumps(
            {node: control.snapshot(dataplane) for node, dataplane in state["dataplanes"].items()}, indent=1))
    finally:
        namespaces.down(name)


def _stream(state: dict, talker: str, listener: str, port: int, send_args: list[str], out: Path,
            timeout_s: float, errors: list[BaseException]) -> None:
    """One stream from talker to listener (frerlab.traffic.across); its failure kept in `errors`."""
    from frerlab.traffic.across import stream_across

    prefix = {node: ["ip", "netns", "exec", state["namespaces"][node]] for node in (talker, listener)}
    try:
        stream_across(prefix[talker], prefix[listener], state["addresses"][listener], send_args, out, port=port,
                      timeout_s=timeout_s)
    except BaseException as err:  # noqa: BLE001 - handed to the main thread
        errors.append(err)


def _apply_faults(topo: Topology, state: dict, threads: list[threading.Thread]) -> list[dict]:
    """Each fault's edges at their times from the first frame at a listener (the run's time 0
    is the earliest stream start before it); the links are always restored. Returns what was
    done when."""
    from frerlab.net import namespaces
    from frerlab.netns import link_info

    edges = sorted([(f.start if isinstance(f, Burst) else f.down, f.link, True) for f in topo.faults]
                   + [(f.end if isinstance(f, Burst) else f.up, f.link, False) for f in topo.faults])
    if not edges:
        return []
    listeners = {topo.plans[s.name].listener for s in topo.streams}
    ports = [(state["namespaces"][node], link.name) for node in listeners for link in topo.links
             if node in (link.a, link.b)]

    def received() -> int:
        return sum(link_info(ns, ifname)["stats64"]["rx"]["packets"] for ns, ifname in ports)

    baseline, deadline = received(), time.monotonic() + 30
    while received() == baseline:
        if time.monotonic() > deadline or not any(t.is_alive() for t in threads):
            raise ToolFailed("no frame reached a listener within 30 s")
        time.sleep(0.002)
    t0 = time.monotonic() - min(s.start for s in topo.streams) / 1e12
    applied, down = [], set()
    try:
        for at, link, cut in edges:
            time.sleep(max(0.0, t0 + at / 1e12 - time.monotonic()))
            namespaces.impair(state["name"], link, down=cut)
            (down.add if cut else down.discard)(link)
            applied.append({"t_s": round(time.monotonic() - t0, 4), "due_s": at / 1e12, "link": link, "down": cut})
    finally:
        for link in down:
            namespaces.impair(state["name"], link, down=False)
    return applied


def _sim_streams(out: Path) -> dict[str, dict[str, int]]:
    report = json.loads((out / "report.json").read_text())
    return {s["stream"]: {"sent": s["sent"], "delivered": s["received"], "lost": s["lost"],
                          "duplicates": s["duplicates"]} for s in report["streams"]}


def _sim_recovery(out: Path) -> dict[tuple[str, str], dict[str, int]]:
    report = json.loads((out / "report.json").read_text())
    return {(r["stream"], r["node"]): {k: r[k] for k in COMPARED_RECOVERY} for r in report["frer"]
            if not r.get("individual")}


def _net_streams(topo: Topology, out: Path) -> dict[str, dict[str, int]]:
    found = {}
    for s in topo.streams:
        sender = json.loads((out / s.name / "send.json").read_text())
        (stream,) = json.loads((out / s.name / "recv.json").read_text())["streams"]
        found[s.name] = {"sent": sender["frames_sent"], "delivered": stream["unique"], "lost": stream["lost"],
                         "duplicates": stream["duplicates"], "end_probes": sender["end_probes_sent"]}
    return found


def _net_recovery(topo: Topology, out: Path) -> dict[tuple[str, str], dict[str, int]]:
    snapshots = json.loads((out / "dataplanes.json").read_text())
    found = {}
    for node, snap in snapshots.items():
        for record in snap["streams"]:  # a relay's further members (handles after the streams') recover nothing
            for r in record["recovery"]:
                if r["function"] == "sequence":
                    found[(topo.streams[record["handle"] - 1].name, node)] = {k: r[k] for k in COMPARED_RECOVERY}
    return found


def _edge_frames(topo: Topology, stream: str) -> int:
    """Frames of the stream that late fault edges on its links can move (every edge late by
    EDGE_SLACK_S)."""
    s = next(s for s in topo.streams if s.name == stream)
    links = {link for route in topo.plans[stream].routes for link in route}
    edges = 2 * sum(1 for f in topo.faults if f.link in links)
    return math.ceil(edges * EDGE_SLACK_S * s.frames_per_second)


def tolerances(topo: Topology, stream: str, frames: int, delivery: float, probes: int) -> dict[str, tuple[int, str]]:
    """Per compared count of a stream: how far the two worlds may differ and why. Both worlds
    draw their losses from the same model if they agree with it: a count's spread is bounded
    from that model, the delivered count's by its binomial (`delivery`: the predicted
    probability), a recovery function's copies' by every member copy missing independently with
    the largest probability a route of the stream has of losing a frame (summed over the members,
    as if they were correlated: an upper bound)."""
    plan = topo.plans[stream]
    members = max((len(stage) for stage in plan.stages[1:]), default=1)
    miss = max(1 - math.prod(1 - topo.link(link).p for link in route) for route in plan.routes)
    sd_delivered = math.sqrt(frames * delivery * (1 - delivery))
    sd_copies = members * math.sqrt(frames * miss * (1 - miss))
    timing = _edge_frames(topo, stream)
    edges = f"{timing} (fault edges up to {EDGE_SLACK_S * 1000:g} ms late)" if timing else "0 (no fault on its links)"
    delivered = math.ceil(SIGMAS * math.sqrt(2) * sd_delivered)
    copies = math.ceil(SIGMAS * math.sqrt(2) * (sd_delivered + sd_copies))
    why_delivered = f"{edges} + {delivered} ({SIGMAS} sigma of the difference of two binomial counts)"
    why_copies = (f"{members} x {edges} + {copies} ({SIGMAS} sigma of the difference of two counts of "
                  f"{members} copies)")
    return {
        "sent": (1, "1 (the pacing's rounding)"),
        "delivered": (timing + delivered, why_delivered),
        "lost": (timing + delivered, why_delivered),
        "duplicates": (0, "0 (neither world may pass a duplicate)"),
        "passed_packets": (timing + delivered + probes, why_delivered + f" + {probes} (the generator's end probes)"),
        "discarded_packets": (members * timing + copies + probes * members,
                              why_copies + f" + {probes * members} (copies of the end probes)"),
        "rogue_packets": (members * timing + copies, why_copies),
    }


def _prediction_bounds(delivery: float, frames: int, timing: int) -> tuple[float, float]:
    """The delivered count's range under the prediction: its binomial interval (missed once in a
    million runs) widened by `timing` frames."""
    half = Z_ONE_IN_A_MILLION * math.sqrt(frames * delivery * (1 - delivery))
    return frames * delivery - half - timing, frames * delivery + half + timing


def compare(topo: Topology, out: Path) -> dict[str, Any]:
    """The comparison of the raw results in `out`, per stream and recovery function."""
    sim_s, net_s = _sim_streams(out / "sim"), _net_streams(topo, out / "net")
    sim_r, net_r = _sim_recovery(out / "sim"), _net_recovery(topo, out / "net")
    prediction = json.loads((out / "prediction.json").read_text())["streams"]
    rows = []
    for s in topo.streams:
        plan = topo.plans[s.name]
        frames = net_s[s.name]["sent"]
        tol = tolerances(topo, s.name, frames, prediction[s.name]["delivery"], net_s[s.name]["end_probes"])
        for metric in ("sent", "delivered", "lost", "duplicates"):
            rows.append(_row(s.name, "", metric, sim_s[s.name][metric], net_s[s.name][metric], *tol[metric]))
        for node in plan.recovery:
            for metric in COMPARED_RECOVERY:
                rows.append(_row(s.name, node, metric, sim_r[(s.name, node)][metric],
                                 net_r[(s.name, node)][metric], *tol[metric]))
    predicted = []
    for s in topo.streams:
        delivery = prediction[s.name]["delivery"]
        for world, counts in (("sim", sim_s[s.name]), ("net", net_s[s.name])):
            low, high = _prediction_bounds(delivery, counts["sent"], _edge_frames(topo, s.name))
            predicted.append({"stream": s.name, "world": world, "sent": counts["sent"],
                              "delivered": counts["delivered"], "predicted_delivery": delivery,
                              "low": low, "high": high, "within": low <= counts["delivered"] <= high})
    return {"topology": topo.name, "rows": rows, "prediction": predicted,
            "agree": all(r["agrees"] for r in rows) and all(p["within"] for p in predicted)}


def _row(stream: str, node: str, metric: str, sim: int, net: int, tolerance: int, why: str) -> dict[str, Any]:
    return {"stream": stream, "node": node, "metric": metric, "sim": sim, "net": net, "tolerance": tolerance,
            "tolerance_why": why, "agrees": abs(sim - net) <= tolerance}


def table(comparison: dict[str, Any]) -> str:
    """The comparison as text."""
    lines = [f"crosscheck {comparison['topology']}: simulator vs namespace network",
             f"  {'stream':<10}{'node':<10}{'metric':<19}{'sim':>9}{'net':>9}{'tolerance':>11}  agrees"]
    for r in comparison["rows"]:
        lines.append(f"  {r['stream']:<10}{r['node'] or '-':<10}{r['metric']:<19}{r['sim']:>9}{r['net']:>9}"
                     f"{r['tolerance']:>11}  {'yes' if r['agrees'] else 'NO'}")
    lines.append("  against the prediction (delivered frames within its interval):")
    for p in comparison["prediction"]:
        lines.append(f"  {p['stream']:<10}{p['world']:<5} delivered {p['delivered']} of {p['sent']}, predicted "
                     f"{p['predicted_delivery'] * p['sent']:.1f} ({p['low']:.1f}..{p['high']:.1f})  "
                     f"{'yes' if p['within'] else 'NO'}")
    lines.append("  tolerances:")
    seen = set()
    for r in comparison["rows"]:
        if (r["stream"], r["metric"]) not in seen:
            seen.add((r["stream"], r["metric"]))
            lines.append(f"    {r['stream']} {r['metric']}: {r['tolerance_why']}")
    lines.append("  the worlds agree with each other and with the prediction" if comparison["agree"]
                 else "  they DO NOT agree")
    return "\n".join(lines)
