"""What a run will cost, estimated from the compiled spec before anything runs, and the limits
past which `sim run` refuses unless the user opts in (`--allow-long`, `allow_long=True`).

The engine handles about one event per frame per hop plus one per departure, so a stream costs
frames x (hops + 1) events, frames = offered frames/s x sending time (or its `count`, if
fewer); an attacker's frames cost the same, at most hops + 1 events each. Memory grows with the per-interval series (one row per stream and interval, one per
egress port and interval for the queue series, one per rate-controlled stream and interval
for its rate) and, when `trace` is on, with one trace row per event; queues are bounded by
the same frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from frerlab.errors import UsageError
from frerlab.units import L1_OVERHEAD_BYTES

# About 30 s of engine time at the ~33 M events/s measured on a 2-core machine.
MAX_EVENTS = 10**9
# A series row costs about 0.5 KB in the report and its DataFrame: 10^6 rows about 0.5 GB.
MAX_SERIES_ROWS = 10**6
# A trace row costs about 0.55 KB (measured): 2 x 10^6 rows about 1.1 GB.
MAX_TRACE_ROWS = 2 * 10**6
PS_PER_S = 10**12


@dataclass(frozen=True)
class Cost:
    """The estimated size of one run."""

    events: int
    series_rows: int
    trace_rows: int

    def excess(self) -> list[str]:
        """One phrase per limit the run would exceed (empty when it is within all of them)."""
        checks = [("events", self.events, MAX_EVENTS),
                  ("series rows ((streams + ports + rate-controlled streams) x intervals)", self.series_rows, MAX_SERIES_ROWS),
                  ("trace rows", self.trace_rows, MAX_TRACE_ROWS)]
        return [f"{value:,} {what} (limit {limit:,})" for what, value, limit in checks if value > limit]

    def describe(self) -> str:
        """The estimate in one line."""
        text = f"about {self.events:,} events, {self.series_rows:,} series rows"
        return text + (f", {self.trace_rows:,} trace rows" if self.trace_rows else "")


def _mean_frame_bytes(frame_size: dict[str, Any]) -> float:
    if frame_size["dist"] == "fixed":
        return frame_size["bytes"]
    if frame_size["dist"] == "uniform":
        return (frame_size["min"] + frame_size["max"]) / 2
    return frame_size["mean"]


def stream_frames(stream: dict[str, Any], duration_ps: int) -> int:
    """Frames a compiled stream sends before the scenario's duration ends."""
    bits = (_mean_frame_bytes(stream["frame_size"]) + (L1_OVERHEAD_BYTES if stream["rate_counts_l1"] else 0)) * 8
    sending_s = max(0, duration_ps - stream["start"]) / PS_PER_S
    pattern = stream["pattern"]
    if pattern["kind"] == "on_off":
        sending_s *= pattern["on"] / (pattern["on"] + pattern["off"])
    frames = int(stream["rate"] / bits * sending_s) + 1
    return frames if stream["count"] is None else min(frames, stream["count"])


def attack_frames(attack: dict[str, Any]) -> int:
    """Frames a compiled attack sends (none for one that strips tags)."""
    if attack["every"] is None:
        return 0
    frames = (attack["end"] - attack["start"] - 1) // attack["every"] + 1
    return frames if attack["count"] is None else min(frames, attack["count"])


def estimate(spec: dict[str, Any]) -> Cost:
    """The cost of running a compiled spec (see `compile.compile_spec`)."""
    events = sum(stream_frames(s, spec["duration"]) * (len(s["hops"]) + 1) for s in spec["streams"])
    events += sum(attack_frames(a) * (len(spec["streams"][a["stream"]]["hops"]) + 1)
                  for port in spec["ports"] for a in port.get("attacks", []))
    controlled = sum(1 for s in spec["streams"] if s.get("qcn") or s.get("bcn") or s.get("fecn"))
    series = (len(spec["streams"]) + len(spec["ports"]) + controlled) * (spec["duration"] // spec["interval"] + 1)
    return Cost(events=events, series_rows=series, trace_rows=events if spec["trace"] else 0)


def require_affordable(cost: Cost, name: str, allow_long: bool) -> None:
    """Raises UsageError naming the numbers when `cost` exceeds a limit and the user did not
    opt in with `allow_long`."""
    excess = cost.excess()
    if excess and not allow_long:
        raise UsageError(
            f"{name}: the run would take {', '.join(excess)}; shorten duration, lower rates, widen "
            "interval or turn trace off, or opt in with --allow-long (allow_long=True in Python)")
