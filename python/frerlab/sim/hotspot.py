"""The seed's multi-stage output-generated hotspot (seed 003: Jiang, Jain, So-In, "FECN
Performance for Multistage Output Generated Hotspot Configuration", IEEE 802.1au, July 2007,
after Bergamasco's "multihop output-generated" set-up) as a scenario, and the metrics that
compare congestion-control mechanisms on it.

What the slides give: 10 Gbit/s links, 8 us loop latency, UDP-like traffic, destinations
uniform over all other nodes, 1500-byte frames, nodes 1-6 offering 25 % and nodes 7-10 40 % of
the link rate, T = 1 ms and 0.25 ms. Bergamasco's drawing of the set-up they cite is not public
(docs/congestion.md, "The seed's scenario"); what they leave open is chosen here: ten end nodes on
`edges` edge switches under one core switch (one switch and no core for `edges=1`), placed
`interleaved` (node i on edge i mod edges: n1, n3, ... n9 on e1 and n2, n4, ... n10 on e2, so
each uplink carries 8.6 Gbit/s, 86 %, before the hotspot) or in `blocks` (n1-n5 on e1, n6-n10 on
e2: e2's uplink and the core's link to e1 then carry 10.28 Gbit/s, a second bottleneck that is
there before the hotspot, the first pass's fabric); the loop latency split evenly over the links
of the longest round trip; each node's load as one stream per destination (load / 9 each) at a
constant rate (`pattern="poisson"` for random arrivals); the hotspot is the egress towards
`hotspot` (n10), whose service rate falls to `service_rate` (1 Gbit/s) at `onset` (50 ms) and
stays there; egress queues of `queue_limit` (150 KB); PAUSE (`pause=True`: every switch pauses
its neighbours, thresholds derived to be lossless, frerlab.sim.lossless) on or off independently
of the mechanism. `link_loads` gives what each link direction is offered before the hotspot.

`python -m frerlab.sim.hotspot DIR` writes the shipped variants (scenarios/hotspot/); a test
checks that they equal what `scenario` builds.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from frerlab.errors import UsageError
from frerlab.sim.api import SimResult
from frerlab.sim.compile import port_name, shortest_path
from frerlab.sim.schema import RateChange, Scenario
from frerlab.units import rate_bps, time_ps, time_text

NODES = [f"n{i}" for i in range(1, 11)]
LINK_RATE = "10Gbps"
LOOP_LATENCY_PS = 8 * 10**6
FRAME_BYTES = 1500


def _load(node: str) -> float:
    """The share of the link rate a node offers: 25 % for n1-n6, 40 % for n7-n10."""
    return 0.25 if int(node[1:]) <= 6 else 0.40


PLACEMENTS = ("interleaved", "blocks")


def scenario(mechanism: str, *, interval: str = "1ms", pm: float | None = None, pause: bool = False,
             duration: str = "250ms", onset: str = "50ms", service_rate: str = "1Gbps", hotspot: str = "n10",
             edges: int = 2, placement: str = "interleaved", queue_limit: str = "150KB", pattern: str = "constant",
             seed: int = 1) -> dict[str, Any]:
    """The hotspot scenario with `mechanism` ("none", "qcn", "bcn" or "fecn") on every switch
    egress and every stream; `interval` is FECN's T, `pm` BCN's sampling probability, `pattern`
    the streams' ("constant" or "poisson"), `placement` how the nodes spread over the edges."""
    if mechanism not in ("none", "qcn", "bcn", "fecn"):
        raise ValueError(f"mechanism {mechanism!r} is not one of none, qcn, bcn, fecn")
    if not 1 <= edges <= len(NODES):
        raise ValueError(f"edges {edges} is out of range (1..{len(NODES)})")
    if hotspot not in NODES:
        raise ValueError(f"hotspot {hotspot!r} is not one of {', '.join(NODES)}")
    if placement not in PLACEMENTS:
        raise ValueError(f"placement {placement!r} is not one of {', '.join(PLACEMENTS)}")
    per_edge = -(-len(NODES) // edges)
    edge_of = {node: f"e{(i % edges if placement == 'interleaved' else i // per_edge) + 1}"
               for i, node in enumerate(NODES)}
    switches = sorted(set(edge_of.values()), key=lambda e: int(e[1:]))
    core = len(switches) > 1
    # The longest round trip crosses every link of a node-edge-core-edge-node path twice.
    links_one_way = 4 if core else 2
    delay_ps = LOOP_LATENCY_PS // (2 * links_one_way)
    nodes: dict[str, Any] = {node: {"kind": "host"} for node in NODES}
    for switch in switches + (["core"] if core else []):
        nodes[switch] = {"kind": "switch", **({"pause": {"lossless": True}} if pause else {})}
    def link(a: str, b: str) -> dict[str, Any]:
        return {"name": a, "a": a, "b": b, "rate": LINK_RATE, "delay": f"{delay_ps}ps",
                "egress": {"queue_limit": queue_limit}}

    links = [link(node, edge_of[node]) for node in NODES] + [link(switch, "core") for switch in switches if core]
    links[NODES.index(hotspot)]["rate_changes"] = [{"at": onset, "rate": service_rate, "toward": hotspot}]
    streams = [{"name": f"{src}-{dst}", "talker": src, "listener": dst, "frame_size": FRAME_BYTES,
                "pattern": pattern, "rate": f"{_load(src) * rate_bps(LINK_RATE) / (len(NODES) - 1):.0f}bps",
                "rate_layer": "l1"}
               for src in NODES for dst in NODES if dst != src]
    data: dict[str, Any] = {
        "name": "-".join(["hotspot", mechanism] + ([f"T{interval}"] if mechanism == "fecn" else [])
                         + ([f"pm{pm:g}"] if mechanism == "bcn" and pm is not None else []) + (["pause"] if pause else [])
                         + ([placement] if placement != "interleaved" else [])),
        "description": f"seed 003's multi-stage output-generated hotspot: {hotspot}'s egress falls to "
                       f"{service_rate} at {onset}; nodes placed {placement} (frerlab.sim.hotspot)",
        "seed": seed, "duration": duration, "interval": "500us", "nodes": nodes, "links": links, "streams": streams,
    }
    if mechanism == "fecn":
        data["congestion"] = {"mechanism": "fecn", "interval": interval}
    elif mechanism != "none":
        data["congestion"] = {"mechanism": mechanism}
        if mechanism == "bcn" and pm is not None:
            data["congestion"]["point"] = {"pm": pm}
    return data


#: The shipped variants: file stem -> arguments of `scenario`.
VARIANTS: dict[str, dict[str, Any]] = {
    "none": {"mechanism": "none"},
    "pause": {"mechanism": "none", "pause": True},
    "qcn": {"mechanism": "qcn"},
    "bcn": {"mechanism": "bcn"},
    "bcn_pm10": {"mechanism": "bcn", "pm": 0.1},
    "fecn_T1ms": {"mechanism": "fecn", "interval": "1ms"},
    "fecn_T250us": {"mechanism": "fecn", "interval": "250us"},
    # The seed's "fast start with Pause": FECN's talkers start at their offered rate, and the
    # switches pause their neighbours (lossless thresholds).
    "fecn_T1ms_pause": {"mechanism": "fecn", "interval": "1ms", "pause": True},
    # The first pass's fabric, with its oversubscribed uplinks, for the comparison of fabrics.
    "none_blocks": {"mechanism": "none", "placement": "blocks"},
}


def link_loads(data: dict[str, Any]) -> dict[str, float]:
    """What each link direction of a hotspot scenario (as `scenario` returns it) is offered before
    the onset, in bit/s at L1: every stream's rate on every link of its route (the fewest links,
    as the simulator routes a stream without paths)."""
    sc = Scenario.model_validate(data)
    links = {link.name: link for link in sc.links}
    loads: dict[str, float] = {}
    for stream in sc.streams:
        at = stream.talker
        for name in shortest_path(stream, links):
            link = links[name]
            after = link.b if at == link.a else link.a
            port = port_name(name, at, after)
            loads[port] = loads.get(port, 0.0) + stream.rate
            at = after
    return loads


def write_variants(directory: Path) -> list[Path]:
    """Writes every variant as DIR/<stem>.yaml; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, args in VARIANTS.items():
        path = directory / f"{stem}.yaml"
        header = (f"# Generated by `python -m frerlab.sim.hotspot {directory}` from frerlab.sim.hotspot.VARIANTS"
                  f"[{stem!r}]; edit the builder, not this file.\n")
        path.write_text(header + yaml.safe_dump(scenario(**args), sort_keys=False, width=120, default_flow_style=None))
        written.append(path)
    return written


@dataclass
class HotspotMetrics:
    """What the comparison of mechanisms reads, from one run of the hotspot scenario."""

    #: One row: drain_time_s, settle_time_s, fair_time_s, utilisation, jain, victim_ratio, hotspot_loss_ratio,
    #: loss_ratio,
    #: control_bps (the busiest link's control traffic), control_share (control bytes over the
    #: data bytes the talkers sent), pause_bps (the busiest link direction's PAUSE frames).
    summary: pd.DataFrame
    #: Per interval: the hotspot queue (queue_mean_bytes, queue_max_bytes), the egress's
    #: throughput (tx_bps) and the total sending rate of the hotspot's flows (rate_bps).
    hotspot: pd.DataFrame
    #: Per interval and talker: its sending rate (rate_bps).
    sources: pd.DataFrame
    #: Per port: control frames and bytes per second on its link.
    overhead: pd.DataFrame


def hotspot_of(sc: Scenario) -> tuple[str, RateChange] | None:
    """The output-generated hotspot of a scenario: the egress port of the first link with a rate
    change towards a node, and that change; None when there is none."""
    for link in sc.links:
        for change in link.rate_changes:
            if change.toward is not None:
                source = link.a if change.toward == link.b else link.b
                return port_name(link.name, source, change.toward), change
    return None


def metrics(result: SimResult, *, queue_threshold: int = 50_000, tolerance: float = 0.10,
            window: str = "5ms") -> HotspotMetrics:
    """The comparison metrics of a run of a scenario with one output-generated hotspot: the
    first link with `rate_changes` names the hotspot node (`toward`), the onset (`at`) and the
    service rate.

    Definitions (docs/congestion.md): a flow's sending rate is its regulator's rate (the
    `rate_series`) or, without one, its configured rate; rates and the hotspot queue are
    averaged over a sliding `window`. The transient response time `drain_time_s` is the time
    from the onset until the hotspot queue's mean, past its peak, first falls below
    `queue_threshold` bytes; `settle_time_s` until it stays below to the end of the run; `fair_time_s` adds that every
    hotspot flow's rate stays within `tolerance` of the fair share (service rate / flows).
    Either is NaN when it never happens. `utilisation` is the hotspot egress's throughput
    after the onset over its service rate (L2 bytes counted: 1500-byte frames give at most
    1500/1520). Jain's index is taken over the hotspot flows' mean rates in the second half of
    the time after the onset. Victims are the flows not going to the hotspot: `victim_ratio` is
    what they delivered over what they sent after the onset (NaN without victims).
    """
    sc = result.scenario
    found = hotspot_of(sc)
    if found is None:
        raise UsageError(f"scenario {sc.name}: no link with rate_changes toward a node: no output-generated hotspot")
    port, change = found
    hotspot, onset_s, service = change.toward, change.at / 1e12, change.rate
    interval_s = sc.interval / 1e12
    smooth = max(1, round(time_ps(window) / sc.interval))
    end_s = sc.duration / 1e12
    if onset_s >= end_s:
        raise UsageError(f"scenario {sc.name}: the hotspot's onset {time_text(change.at)} is not before the end of "
                         f"the duration {time_text(sc.duration)}: nothing to measure")
    times = np.arange(0, end_s, interval_s).round(12)
    configured = {s.name: s.rate for s in sc.streams}
    to_hotspot = [s.name for s in sc.streams if s.listener == hotspot]
    rates = pd.DataFrame({name: float(rate) for name, rate in configured.items()}, index=times)
    if not result.rate_series.empty:
        regulated = result.rate_series.pivot(index="time_s", columns="stream", values="rate_mean_bps")
        regulated.index = regulated.index.round(12)
        rates.update(regulated)
    talker = {s.name: s.talker for s in sc.streams}
    sources = (rates.T.groupby(talker).sum().T.rename_axis("time_s").reset_index()
               .melt(id_vars="time_s", var_name="talker", value_name="rate_bps"))

    queue = result.port_series[result.port_series["port"] == port].set_index("time_s")
    queue.index = queue.index.round(12)
    hot = pd.DataFrame({"queue_mean_bytes": queue["queue_mean_bytes"], "queue_max_bytes": queue["queue_max_bytes"],
                        "tx_bps": queue["tx_bps"], "rate_bps": rates[to_hotspot].sum(axis=1)}
                       ).loc[lambda d: d.index < end_s]
    smoothed = hot.rolling(smooth, min_periods=1).mean()
    flows = rates[to_hotspot].rolling(smooth, min_periods=1).mean()
    after = smoothed[smoothed.index >= onset_s]
    calm = after["queue_mean_bytes"] < queue_threshold
    fair = calm & ((flows.loc[after.index] / (service / len(to_hotspot)) - 1).abs() <= tolerance).all(axis=1)
    late = rates.loc[(rates.index >= (onset_s + end_s) / 2) & (rates.index < end_s), to_hotspot].mean()

    series = result.series.copy()
    series = series[series["time_s"] >= onset_s]
    victims = series[~series["stream"].isin(to_hotspot)]
    hot_streams = result.streams[result.streams["stream"].isin(to_hotspot)]
    sizes = {s.name: s.frame_size if isinstance(s.frame_size, int) else float("nan") for s in sc.streams}
    data_bytes = (result.streams["sent"] * result.streams["stream"].map(sizes)).sum()
    control = result.control.reindex(columns=["port", "node", "peer", "forward_frames", "back_frames",
                                              "control_bytes"])
    control["frames_per_s"] = (control["forward_frames"] + control["back_frames"]) / end_s
    control["bytes_per_s"] = control["control_bytes"] / end_s
    pause_bps = (result.pause["pause_bytes"].max() * 8 / end_s) if not result.pause.empty else 0.0
    summary = pd.DataFrame([{
        "drain_time_s": _drained_after(after["queue_mean_bytes"], queue_threshold) - onset_s,
        "settle_time_s": _settled_after(calm) - onset_s,
        "fair_time_s": _settled_after(fair) - onset_s,
        "utilisation": float(hot.loc[hot.index >= onset_s, "tx_bps"].mean() / service),
        "jain": float(late.sum() ** 2 / (len(late) * (late ** 2).sum())),
        "victim_ratio": _ratio(victims["received"].sum(), victims["sent"].sum()),
        "hotspot_loss_ratio": float(hot_streams["lost"].sum() / hot_streams["sent"].sum()),
        "loss_ratio": float(result.streams["lost"].sum() / result.streams["sent"].sum()),
        "control_bps": float(control["bytes_per_s"].max() * 8) if len(control) else 0.0,
        "control_share": float(control["control_bytes"].sum() / data_bytes),
        "pause_bps": float(pause_bps),
    }])
    return HotspotMetrics(summary=summary, hotspot=hot.rename_axis("time_s").reset_index(), sources=sources,
                          overhead=control)


def summary_row(result: SimResult) -> pd.DataFrame:
    """The metrics' summary row with the run's speed: a sweep's unit for `summary: hotspot`."""
    table = metrics(result).summary
    table["events"] = result.run_info["events"]
    table["wall_seconds"] = result.run_info["wall_seconds"]
    return table


def _ratio(part: float, whole: float) -> float:
    """part / whole; NaN when there is no whole (e.g. a scenario whose every flow goes to the
    hotspot has no victims), without numpy's warning."""
    return float(part / whole) if whole else float("nan")


def _drained_after(queue: pd.Series, threshold: int) -> float:
    """The start of the first interval after the queue's peak with the queue below
    `threshold` (the first interval when it never reached it); NaN if none."""
    if queue.max() < threshold:
        return float(queue.index[0])
    past_peak = queue[queue.index >= queue.idxmax()]
    below = past_peak[past_peak < threshold]
    return float(below.index[0]) if len(below) else float("nan")


def _settled_after(ok: pd.Series) -> float:
    """The start of the first interval from which on `ok` holds to the end; NaN if none."""
    if ok.empty or not ok.iloc[-1]:
        return float("nan")
    failing = ok[~ok]
    if failing.empty:
        return float(ok.index[0])
    return float(ok.index[ok.index.get_loc(failing.index[-1]) + 1])


if __name__ == "__main__":
    for written in write_variants(Path(sys.argv[1] if len(sys.argv) > 1 else "scenarios/hotspot")):
        print(written)
