"""The one result record every traffic source produces: frerlab's own receiver, the iperf3,
sockperf and mausezahn drivers, and `frerlab import` of old result files.

Units are in the field names. A field a tool cannot measure is None, never a guess: iperf3
has no latency, mausezahn no receive side, sockperf's jitter is not iperf3's jitter. Latency
says which kind it is (`one_way`, `rtt`, or `rtt_half` as sockperf reports by default) and
which timestamps and clock produced it (`timestamps`); frerlab's generator also reports how
evenly frames went and came (`gaps`).
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from frerlab.units import L1_OVERHEAD_BYTES

LatencyKind = Literal["one_way", "rtt", "rtt_half"]
# Counts and sizes are whole numbers of 0..2^64-1, and every number is finite: records built
# from files (`frerlab import`) refuse anything else, naming the field.
Count = Annotated[int, Field(ge=0, lt=2**64)]
Amount = Annotated[float, Field(ge=0)]


class _Record(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)


UDP_OVERHEAD = 46


StampSource = Literal["hardware", "software", "payload", "userspace"]


class Timestamps(_Record):
    """Which stamps and which clock a figure comes from (docs/traffic.md, "Timestamps")."""

    tx: StampSource = Field(description="how send times were taken: hardware (the NIC), software (the kernel), "
                                        "payload (the sender's clock before the send call, carried in the frame), "
                                        "userspace (a tool's own clock reading)")
    rx: StampSource | None = Field(None, description="how receive times were taken (None: a sender's report)")
    clock: str = Field(description="the clock of both stamps of the pair: CLOCK_REALTIME, PHC n, ...")
    interface: str | None = None
    gaps: StampSource | None = Field(None, description="the stamps the inter-frame gaps come from")
    gaps_clock: str | None = None
    hardware: str | None = Field(None, description="what the interface offers (ethtool -T) and whether it was used")


class Gaps(_Record):
    """The distribution of the gaps between consecutive frames (as sent, or as received),
    against a nominal gap (1 / requested rate, or the mean gap)."""

    count: Count
    nominal_us: Amount
    nominal: Literal["requested_rate", "mean_gap"]
    mean_us: Amount
    p1_us: Amount
    p50_us: Amount
    p99_us: Amount
    min_us: Amount
    max_us: Amount
    below_half_share: Amount = Field(description="share of gaps below half the nominal gap (bursting)")
    shares: list[Amount] = Field(description="shares of gaps per multiple of the nominal gap: <0.5, 0.5..0.9, "
                                             "0.9..1.1, 1.1..2, >=2")


class Latency(_Record):
    """Latency statistics in microseconds (one-way latency may be negative between hosts
    whose clocks disagree)."""

    kind: LatencyKind = Field(description="one_way, rtt (full round trip) or rtt_half (RTT/2)")
    timestamps: Timestamps | None = Field(None, description="which stamps and clock produced the figures")
    samples: Count | None = None
    min_us: float | None = None
    max_us: float | None = None
    mean_us: float | None = None
    stddev_us: Amount | None = None
    percentiles_us: dict[str, float] = Field(default_factory=dict, description='e.g. {"99.9": 12.5}')


class Interval(_Record):
    """One row of a per-interval series."""

    start_s: Amount
    duration_s: Amount
    frames: Count | None = None
    payload_bps: Amount | None = None
    lost: Count | None = None
    duplicates: Count | None = None
    reordered: Count | None = None
    retransmits: Count | None = None
    latency: Latency | None = None


class TrafficRecord(_Record):
    """One measured stream or test, from any tool."""

    tool: str = Field(description="frerlab-gen, iperf3, sockperf or mausezahn")
    test: str = Field(description="e.g. udp, tcp, ping-pong, under-load, throughput, send-only")
    source: str | None = Field(None, description="the file or command the record came from")
    stream_id: Count | None = None
    frame_size: Count | None = Field(None, description="Ethernet frame bytes, FCS included")
    payload_size: Count | None = Field(None, description="UDP/TCP payload bytes per message")
    duration_s: Amount | None = None
    sent: Count | None = None
    received: Count | None = None
    lost: Count | None = None
    loss_percent: Amount | None = None
    duplicates: Count | None = None
    reordered: Count | None = None
    retransmits: Count | None = Field(None, description="TCP segments the sender retransmitted (iperf3)")
    frames_per_s: Amount | None = None
    payload_bps: Amount | None = Field(None, description="payload bits per second (goodput)")
    l2_bps: Amount | None = Field(None, description="frame bits per second, FCS included")
    l1_bps: Amount | None = Field(None, description="with 20 bytes preamble and gap per frame")
    jitter_ms: Amount | None = Field(None, description="RFC 3550 smoothed jitter (iperf3), not latency")
    latency: Latency | None = None
    gaps: Gaps | None = Field(None, description="inter-frame gaps as sent (a sender) or received (a receiver)")
    timestamps: Timestamps | None = Field(None, description="which stamps the record's timings come from")
    intervals: list[Interval] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def with_rates(self) -> TrafficRecord:
        """A copy with l1/l2/payload rates filled from frames_per_s and sizes where missing."""
        update: dict[str, float] = {}
        fps, frame = self.frames_per_s, self.frame_size
        if fps is not None and frame is not None:
            update.setdefault("l2_bps", fps * frame * 8)
            update.setdefault("l1_bps", fps * (frame + L1_OVERHEAD_BYTES) * 8)
        if fps is not None and self.payload_size is not None:
            update.setdefault("payload_bps", fps * self.payload_size * 8)
        return self.model_copy(update={k: v for k, v in update.items() if getattr(self, k) is None})


def loss_percent(sent: int | None, lost: int | None) -> float | None:
    """Loss in percent of sent (RFC 2544 26.3), None when unknown."""
    if sent is None or lost is None or sent <= 0:
        return None
    return lost / sent * 100.0


def records_data(records: list[TrafficRecord]) -> list[dict]:
    """Records as JSON-ready data (what --json prints)."""
    return [r.model_dump(mode="json") for r in records]


def dump_records(records: list[TrafficRecord]) -> str:
    """Records as a JSON array."""
    return json.dumps(records_data(records), indent=2)
