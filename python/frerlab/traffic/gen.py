"""frerlab's own generator and receiver (Rust, `frerlab._native`) driven from Python.

`run_sender` / `run_receiver` take the JSON-able configuration of the Rust `SenderConfig` /
`ReceiverConfig`, run in short GIL-free slices (so Ctrl-C works) and return the raw report,
with the CPU time the process spent while it ran (`cpu`: user + system seconds, wall seconds
and their ratio, 1.0 for one core kept busy; on a veth testbed the sender's system time also
pays for the forwarding its frames cause on the way);
`sender_record` / `receiver_records` turn raw reports into `TrafficRecord`s, with the
timestamps their timings come from and the inter-frame gap distribution.

`timestamp_capability(interface)` says what an interface can timestamp (as `ethtool -T`) and
which stamps a sender and a receiver there use (docs/traffic.md, "Timestamps").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from frerlab import _native
from frerlab.errors import UsageError
from frerlab.traffic.record import Gaps, Interval, Latency, Timestamps, TrafficRecord

STEP_S = 0.2


def _run(
    cls: type, config: dict[str, Any], progress: Callable[[dict], None] | None, stop_on_interrupt: bool = False,
) -> dict:
    try:
        runner = cls(json.dumps(config))
    except ValueError as err:
        raise UsageError(str(err)) from None
    except OSError as err:  # setting up: no such interface, address in use, no permission
        raise UsageError(err.strerror or str(err)) from None
    cpu, wall = time.process_time(), time.monotonic()
    interrupted = False
    try:
        while not runner.step(STEP_S):
            if progress is not None:
                progress(json.loads(runner.report_json()))
    except KeyboardInterrupt:
        if not stop_on_interrupt:
            raise
        interrupted = True
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    report = json.loads(runner.report_json())
    # a sender spins to its frames' due times: that CPU time is pacing, not load
    spin = report.get("spin_s", 0.0)
    report["cpu"] = {"cpu_s": cpu, "spin_s": spin, "wall_s": wall,
                     "utilization": max(cpu - spin, 0.0) / wall if wall > 0 else 0.0}
    return {**report, "interrupted": True} if interrupted else report


def run_sender(config: dict[str, Any], progress: Callable[[dict], None] | None = None) -> dict:
    """Runs the generator to the end; returns its raw report (see `SenderReport` in Rust)."""
    return _run(_native.TrafficSender, config, progress)


def run_receiver(
    config: dict[str, Any], progress: Callable[[dict], None] | None = None, stop_on_interrupt: bool = False,
) -> dict:
    """Runs the receiver to the end (or Ctrl-C, if `stop_on_interrupt`: the report then has
    `"interrupted": true`); returns its raw report (see `ReceiverReport` in Rust)."""
    return _run(_native.TrafficReceiver, config, progress, stop_on_interrupt)


def timestamp_capability(interface: str) -> dict:
    """What `interface` can timestamp (ETHTOOL_GET_TS_INFO) and the stamps a sender (`tx`)
    and a receiver (`rx`) on it use, with their clocks (`frerlab_traffic::timestamping::Decision`)."""
    try:
        return json.loads(_native.timestamp_capability(interface))
    except OSError as err:
        raise UsageError(str(err)) from None


def timestamp_decision(capability: dict) -> dict:
    """The same decision for a capability given as its four fields (`so_timestamping`,
    `phc_index`, `tx_types`, `rx_filters`)."""
    return json.loads(_native.timestamp_decision(json.dumps(capability)))


def latency_from_ns(summary: dict | None, kind: str = "one_way", timestamps: dict | None = None) -> Latency | None:
    """A `Latency` from the Rust histogram summary (values in ns), with the timestamps
    object of the report it came from."""
    if not summary:
        return None
    return Latency(
        kind=kind,
        timestamps=Timestamps(**timestamps) if timestamps else None,
        samples=summary["count"],
        min_us=summary["min"] / 1e3,
        max_us=summary["max"] / 1e3,
        mean_us=summary["mean"] / 1e3,
        stddev_us=summary["stddev"] / 1e3,
        percentiles_us={f"{p:g}": v / 1e3 for p, v in summary["percentiles"]},
    )


def gaps_from_ns(gaps: dict | None) -> Gaps | None:
    """A `Gaps` from a report's gap distribution (values in ns)."""
    if not gaps:
        return None
    us = {f"{key[:-3]}_us": gaps[key] / 1e3 for key in ("nominal_ns", "mean_ns", "p1_ns", "p50_ns", "p99_ns",
                                                         "min_ns", "max_ns")}
    return Gaps(count=gaps["count"], nominal=gaps["nominal"], below_half_share=gaps["below_half_share"],
                shares=gaps["shares"], **us)


def xdp_warnings(report: dict) -> list[str]:
    """What an xdp-mode report should say about how AF_XDP ran where it was not at its best."""
    warnings = []
    if report.get("xsk_bind") == "copy":
        warnings.append("AF_XDP ran in copy mode (the interface's driver has no zero-copy AF_XDP): "
                        "the kernel copied every frame")
    if report.get("xdp_attach") == "generic":
        warnings.append("the receiver's XDP program ran in generic mode (the driver has no native XDP)")
    if report["mode"] == "xdp" and "streams" in report:
        warnings.append("latency timed in user space when the AF_XDP RX ring was read "
                        "(AF_XDP gives no kernel receive timestamp)")
    return warnings


def sender_record(report: dict, source: str | None = None) -> TrafficRecord:
    """The sender's view: what it sent and how fast, with a warning on shortfall."""
    warnings = xdp_warnings(report)
    if report["shortfall"]:
        warnings.append(f"generator shortfall: {report['shortfall_reason']}")
    if report["port_unreachable"]:
        warnings.append(
            f"{report['port_unreachable']} ICMP port-unreachable reports: nothing listened at the destination port at times"
        )
    if report["impaired"]:
        warnings.append("test-mode impairment: the sender dropped/duplicated/swapped chosen frames on purpose")
    return TrafficRecord(
        tool="frerlab-gen",
        test=f"{report['mode']}-send",
        source=source,
        stream_id=report["stream_id"],
        frame_size=report["frame_size"],
        payload_size=report["udp_payload"],
        duration_s=report["elapsed_s"],
        sent=report["frames_sent"],
        frames_per_s=report["achieved_fps"],
        l1_bps=report["achieved_l1_bps"],
        l2_bps=report["achieved_l2_bps"],
        gaps=gaps_from_ns(report.get("gaps")),
        timestamps=Timestamps(**report["timestamps"]) if report.get("timestamps") else None,
        warnings=warnings,
    ).with_rates()


def receiver_records(report: dict, interval_s: float, source: str | None = None) -> list[TrafficRecord]:
    """One record per stream the receiver saw."""
    records = []
    for s in report["streams"]:
        warnings = xdp_warnings(report)
        if not s["end_seen"]:
            warnings.append("no end-of-stream probe arrived: losses at the tail are not counted")
        if report.get("socket_drops"):
            warnings.append(f"the receive socket dropped {report['socket_drops']} datagrams (receiver overload, not the network)")
        if s["too_old"]:
            warnings.append(f"{s['too_old']} arrivals were too old to classify (beyond the duplicate window)")
        if s["frame_size_min"] != s["frame_size_max"]:
            warnings.append(f"frame sizes varied from {s['frame_size_min']} to {s['frame_size_max']} bytes")
        first, last = s["first_arrival_ns"], s["last_arrival_ns"]
        span_s = (last - first) / 1e9 if first is not None and last is not None else None
        fps = (s["unique"] - 1) / span_s if span_s and s["unique"] > 1 else None
        frame = s["frame_size_max"] or None
        records.append(
            TrafficRecord(
                tool="frerlab-gen",
                test=f"{report['mode']}-recv",
                source=source,
                stream_id=s["stream_id"],
                frame_size=frame,
                payload_size=frame - 46 if frame else None,
                duration_s=span_s,
                sent=s["expected"],
                received=s["unique"],
                lost=s["lost"],
                loss_percent=s["lost"] / s["expected"] * 100.0 if s["expected"] else None,
                duplicates=s["duplicates"],
                reordered=s["reordered"],
                frames_per_s=fps,
                latency=latency_from_ns(s["latency_ns"], timestamps=report.get("timestamps")),
                gaps=gaps_from_ns(s.get("gaps")),
                timestamps=Timestamps(**report["timestamps"]) if report.get("timestamps") else None,
                intervals=[
                    Interval(
                        start_s=i["start_ns"] / 1e9,
                        duration_s=interval_s,
                        frames=i["received"],
                        lost=i["lost"],
                        duplicates=i["duplicates"],
                        reordered=i["reordered"],
                        latency=latency_from_ns(i["latency_ns"]),
                    )
                    for i in s["intervals"]
                ],
                warnings=warnings,
            ).with_rates()
        )
    return records
