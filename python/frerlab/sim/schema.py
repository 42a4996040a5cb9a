"""The scenario file's schema: a YAML description of a TSN network (hosts, switches, links with
their egress queues and shapers, streams with their paths and FRER functions) as pydantic
models, and the functions that read and validate one. `frerlab.sim.compile` turns a validated
Scenario into the engine's spec; a Scenario is only valid if it compiles (its names resolve).

Names are used everywhere in the file (links are named, paths are lists of link names (a
stream without `paths` takes the shortest one), FRER functions sit on named nodes), quantities
are strings of frerlab.units' grammar ("1Gbps", "10ms", "160KiB"). FRER settings use the IEEE
802.1CB YANG names (sequence_generation, sequence_recovery, algorithm, history_length,
reset_timeout, individual_recovery, take_no_sequence), and frerlab's `keep_tag` for a sequence
recovery function that passes frames on with their R-TAG (a ladder recovering at every stage).

Congestion control: `pause` (IEEE 802.3x) on a link or a node; a congestion point as a link's
`egress.qcn` (IEEE 802.1Qau), `egress.bcn` or `egress.fecn`, and the matching regulator as a
stream's `qcn`, `bcn` or `fecn`; or the scenario's `congestion` section, which puts one
mechanism's congestion point on every switch egress and its regulator on every stream (their
own settings take precedence). A link's `rate_changes` make an egress's service rate drop (an
output-generated hotspot). Their defaults are set here and nowhere else (the Rust spec requires
every field), each with its source; docs/congestion.md discusses them.

Attacks (docs/security-sim.md): a link's `attacks`, each an attacker on the link that sends
frames towards one of its ends (`direction`) with a stream's identity: `inject` (a forged
sequence number, `offset` after the last one seen), `replay` (a frame seen `age` frames before
the last one), `babble` (the last frame, again and again), each at `rate` frames/s or `count`
frames over [start, end); or `strip_tag` (the stream's frames crossing towards `direction` lose
their R-TAG). An inject's `identity` names another stream whose identity its frames carry.
The defences: a stream's `frer.stream_filters` (802.1Qci per-stream filtering and policing at a
node, over one link or any) and a recovery function's `guard` (the rogue-rate guard).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, PlainSerializer, Tag,
                      model_validator)

from frerlab.frer import DEFAULT_HISTORY_LENGTH, default_reset_timeout_ns
from frerlab.units import (L1_OVERHEAD_BYTES, MAX_FRAME_BYTES, MAX_TIME_PS, MIN_FRAME_BYTES, at_most, count,
                           frame_rate, rate_bps, size_bytes, time_ps, time_text)
from frerlab.yamlfile import read_mapping, validate

Rate = Annotated[int, BeforeValidator(rate_bps)]
# Times are held in picoseconds and written back with their unit (a bare number means seconds).
Time = Annotated[int, BeforeValidator(time_ps), PlainSerializer(lambda ps: f"{ps}ps", when_used="json")]
Size = Annotated[int, BeforeValidator(size_bytes)]
Count = Annotated[int, BeforeValidator(count)]
FrameRate = Annotated[float, BeforeValidator(frame_rate)]

CLASSES = range(8)
# Link and processing delays: far above any TSN network's, and small enough that the engine's
# sums of times along a path stay far from 64-bit overflow.
MAX_DELAY_PS = 10**12
MAX_GATE_ENTRIES = 1024
# At most this many intervals in the series: duration / interval.
MAX_INTERVALS = 10**6
FrameBytes = Field(ge=MIN_FRAME_BYTES, le=MAX_FRAME_BYTES)

# IEEE 802.3 Annex 31B: the pause_time field is 16 bits of 512-bit-time quanta.
MAX_PAUSE_QUANTA = 65535
# 802.3 leaves the thresholds to implementations: frerlab's defaults, 20 and 10 frames of 1500 B.
PAUSE_XOFF_BYTES = 30_000
PAUSE_XON_BYTES = 15_000
# IEEE 802.1Qau / Alizadeh et al. 2008, as in ../shared/notes/simulation.md: Qeq 26,000 B, w 2.
QCN_QEQ_BYTES = 26_000
QCN_W = 2.0
# Randomisation of the CP's sampling interval (+-15 %), after the QCN pseudo-code's; frerlab's
# choice where the sources at hand do not fix it (docs/congestion.md).
QCN_SAMPLE_JITTER = 0.15
# Reaction point (notes/simulation.md: 802.1Qau and Alizadeh et al. 2008): Gd 1/128, byte
# counter 150 KB, timer 15 ms (sources disagree on the timer: docs/congestion.md), 5 cycles
# of fast recovery, R_AI 5 Mbit/s, R_HAI 50 Mbit/s, minimum rate 5 Mbit/s.
QCN_GD = 1 / 128
QCN_BYTE_COUNTER = 150_000
QCN_TIMER_PS = 15 * 10**9
QCN_FAST_RECOVERY = 5
QCN_ACTIVE_INCREASE = 5_000_000
QCN_HYPER_INCREASE = 50_000_000
QCN_MIN_RATE = 5_000_000
# Gd x 63 (the largest 6-bit feedback) must not exceed 1/2: a notification at most halves.
QCN_MAX_GD = 0.5 / 63
# BCN (Bergamasco 2005-2007; notes/simulation.md): w 2, sampling probability 0.01, Gi 4,
# Gd 1/128, Ru 1 Mbit/s (the notes give 1-8 Mbit/s). Qeq as QCN's (BCN's successor); the
# severe-congestion threshold Qsc at 4 Qeq and the minimum rate 5 Mbit/s are frerlab's choices
# (docs/congestion.md).
BCN_QEQ_BYTES = 26_000
BCN_W = 2.0
BCN_PM = 0.01
BCN_QSC_PER_QEQ = 4
BCN_GI = 4.0
BCN_GD = 1 / 128
BCN_RU = 1_000_000
BCN_MIN_RATE = 5_000_000
# Gd x 63 must stay below 1, or a notification would stop the talker.
BCN_MAX_GD = 1 / 63
# FECN (Jiang, Jain, So-In 2007; notes/simulation.md): T 1 ms, N0 200, Qeq 192,000 bits,
# a 1.1, b 1.002, c 0.1, alpha 0.5. The notes name a limit on the increase per interval without
# a value: at most doubling is frerlab's choice.
FECN_INTERVAL_PS = 10**9
FECN_QEQ_BYTES = 24_000
FECN_A = 1.1
FECN_B = 1.002
FECN_C = 0.1
FECN_ALPHA = 0.5
FECN_N0 = 200
FECN_MAX_INCREASE = 2.0
# R-TAG sequence numbers are 16 bits (802.1CB 7.8); a replay reaches back at most one whole wrap
# (the same limit as crates/sim's attack::MAX_REPLAY_AGE).
SEQ_SPACE = 1 << 16
# The rogue-rate guard's longest period, as the testbed's (frerlab.dataplane.control.guard).
MAX_GUARD_PERIOD_PS = 60 * 10**12
# A flow meter's limits, as the data plane's (docs/dataplane.md: CIR 0..10^12 bit/s, CBS
# 1..10^9 octets).
MAX_METER_RATE = 10**12
MAX_METER_BURST = 10**9


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Buffer(_Model):
    """A switch's shared packet buffer."""

    shared: Size | None = Field(None, description="bytes shared by all egress queues; none: unlimited")
    cell: Size = Field(1, ge=1, description="allocation unit: a frame takes whole cells")


class Pause(_Model):
    """IEEE 802.3x PAUSE: the receiving node counts the buffer bytes of the frames that came
    over the link and still wait in its egress queues; above `xoff` it sends PAUSE (`quanta`
    x 512 bit times) to the sender, at or below `xon` it sends XON (pause time 0)."""

    xoff: Size | None = Field(None, ge=1, description=f"bytes above which PAUSE is sent (default {PAUSE_XOFF_BYTES})")
    xon: Size | None = Field(None, ge=0, description=f"bytes at or below which XON is sent (default {PAUSE_XON_BYTES})")
    quanta: int = Field(MAX_PAUSE_QUANTA, ge=1, le=MAX_PAUSE_QUANTA, description="pause time, 512 bit times each")
    lossless: bool = Field(False, description="derive xoff and xon from the receiver's queues, the link's rate and "
                                              "delay and the largest frame, so that nothing is lost inside the "
                                              "fabric (frerlab.sim.lossless)")

    @model_validator(mode="after")
    def _xon_below_xoff(self) -> Pause:
        if self.lossless:
            if self.xoff is not None or self.xon is not None:
                raise ValueError("pause: lossless: true derives xoff and xon; give either lossless or the thresholds, "
                                 "not both")
            return self
        xoff, xon = self.thresholds()
        if xon >= xoff:
            raise ValueError(f"pause xon {xon} bytes is out of range (0..{xoff - 1}, below xoff)")
        return self

    def thresholds(self) -> tuple[int, int]:
        """xoff and xon in bytes, the defaults where not given (not for `lossless`, which derives
        them from the network: frerlab.sim.lossless)."""
        return (PAUSE_XOFF_BYTES if self.xoff is None else self.xoff,
                PAUSE_XON_BYTES if self.xon is None else self.xon)


class Node(_Model):
    """A host (talker/listener) or a switch. `pause`: the node sends PAUSE on every link into it
    (a link's own `pause` takes precedence for its direction into this node)."""

    kind: Literal["host", "switch"]
    processing_delay: Annotated[Time, at_most(MAX_DELAY_PS)] = 0
    buffer: Buffer = Buffer()
    pause: Pause | None = None


class GateEntry(_Model):
    """One entry of a gate control list: which classes' gates are open, and for how long."""

    open: list[Annotated[int, Field(ge=0, le=7)]]
    duration: Time = Field(gt=0)


class Gates(_Model):
    """A time-aware shaper gate control list (802.1Qbv), repeated every cycle."""

    base_time: Time = 0
    entries: list[GateEntry] = Field(min_length=1, max_length=MAX_GATE_ENTRIES)

    @model_validator(mode="after")
    def _cycle_bounded(self) -> Gates:
        cycle = sum(e.duration for e in self.entries)
        if cycle > MAX_TIME_PS:
            raise ValueError(f"gate cycle {time_text(cycle)} (the sum of the durations) is out of range (at most 1e6s)")
        return self


class QcnPoint(_Model):
    """A QCN congestion point (IEEE 802.1Qau) on each traffic-class queue of the port: samples
    frames of QCN streams, Fb = -(Qoff + w Qdelta), negative feedback to their talkers."""

    qeq: Size = Field(QCN_QEQ_BYTES, ge=1, description="equilibrium queue length Qeq, bytes")
    w: float = Field(QCN_W, ge=0, le=64, description="weight of the queue growth Qdelta")
    jitter: float = Field(QCN_SAMPLE_JITTER, ge=0, lt=1, description="sampling interval drawn within +-jitter")


class BcnPoint(_Model):
    """A BCN congestion point on each traffic-class queue of the port: samples frames of BCN
    streams with probability pm, signed feedback Fb = -(Qoff + w Qdelta) to their talkers, the
    largest negative feedback above Qsc."""

    qeq: Size = Field(BCN_QEQ_BYTES, ge=1, description="equilibrium queue length Qeq, bytes")
    w: float = Field(BCN_W, ge=0, le=64, description="weight of the queue growth Qdelta")
    pm: float = Field(BCN_PM, gt=0, le=1, description="probability that an arriving frame is sampled")
    qsc: Size | None = Field(None, ge=1, description=f"severe-congestion threshold, bytes (default {BCN_QSC_PER_QEQ} x qeq)")

    @model_validator(mode="after")
    def _qsc_above_qeq(self) -> BcnPoint:
        if self.qsc is None:
            self.qsc = BCN_QSC_PER_QEQ * self.qeq
        elif self.qsc < self.qeq:
            raise ValueError(f"qsc {self.qsc} bytes is below qeq {self.qeq} bytes (qsc >= qeq)")
        return self


class FecnPoint(_Model):
    """A FECN point: the port advertises a rate, renewed every interval from the load it
    measured and its queue, and writes it into the probes that pass."""

    interval: Annotated[Time, at_most(MAX_DELAY_PS)] = Field(FECN_INTERVAL_PS, gt=0, description="measurement interval T")
    qeq: Size = Field(FECN_QEQ_BYTES, ge=1, description="equilibrium queue length Qeq, bytes")
    a: float = Field(FECN_A, gt=1, le=100, description="queue control above an empty queue (f(0) = a)")
    b: float = Field(FECN_B, gt=1, le=100, description="queue control above Qeq")
    c: float = Field(FECN_C, gt=0, le=1, description="floor of the queue control")
    alpha: float = Field(FECN_ALPHA, gt=0, le=1, description="weight of the new rate in the average")
    n0: int = Field(FECN_N0, ge=1, le=10**6, description="the first advertised rate is the port rate / n0")
    max_increase: float = Field(FECN_MAX_INCREASE, ge=1, le=1000, description="largest growth factor per interval")


class Egress(_Model):
    """Egress queues of a port: limits in bytes, credit-based shapers, gate control list, a
    QCN, BCN or FECN congestion point."""

    queue_limit: Size | dict[int, Size] | None = None
    cbs: dict[int, Rate] = Field(default_factory=dict, description="idleSlope per traffic class")
    gates: Gates | None = None
    qcn: QcnPoint | None = None
    bcn: BcnPoint | None = None
    fecn: FecnPoint | None = None

    @model_validator(mode="after")
    def _classes_exist(self) -> Egress:
        for field, mapping in (("queue_limit", self.queue_limit), ("cbs", self.cbs)):
            for c in mapping if isinstance(mapping, dict) else ():
                if c not in CLASSES:
                    raise ValueError(f"{field}: traffic class {c} is out of range (0..7)")
        if self.cbs and self.gates:
            raise ValueError("cbs and gates on the same port are not modelled together; use one")
        return self

    def limits(self) -> list[int | None]:
        """The per-class limits, 8 entries."""
        if isinstance(self.queue_limit, dict):
            return [self.queue_limit.get(c) for c in CLASSES]
        return [self.queue_limit] * 8


class Failure(_Model):
    """The link is down from `down` until `up`."""

    down: Time
    up: Time

    @model_validator(mode="after")
    def _ordered(self) -> Failure:
        if self.up <= self.down:
            raise ValueError(f"failure up {time_text(self.up)} is not after down {time_text(self.down)}")
        return self


class RateChange(_Model):
    """From `at` on, the link sends at `rate` towards `toward` (one of its ends; default both
    directions): an egress whose service rate drops makes an output-generated hotspot."""

    at: Time
    rate: Rate = Field(gt=0)
    toward: str | None = None


class Bernoulli(_Model):
    """Each frame lost independently with probability p."""

    model: Literal["bernoulli"]
    p: float = Field(ge=0, le=1)


class GilbertElliott(_Model):
    """Two-state burst loss."""

    model: Literal["gilbert_elliott"]
    p_good_to_bad: float = Field(ge=0, le=1)
    p_bad_to_good: float = Field(ge=0, le=1)
    loss_good: float = Field(0.0, ge=0, le=1)
    loss_bad: float = Field(1.0, ge=0, le=1)


class _AttackBase(_Model):
    """What every attack names: the stream it attacks, which way it acts and when."""

    stream: str = Field(description="the stream whose frames it sees and whose identity it uses")
    direction: str = Field(description="the end of the link (a node name) its frames go towards")
    start: Time = 0
    end: Time | None = Field(None, description="the attack stops at this time; none: the scenario's duration")


class _Sending(_AttackBase):
    """An attack that sends frames: at `rate` frames/s, or `count` frames spread over
    [start, end)."""

    rate: FrameRate | None = Field(None, description="frames/s, e.g. 1000 or 10k")
    count: Count | None = Field(None, ge=1, description="frames, spread evenly over [start, end)")

    @model_validator(mode="after")
    def _rate_or_count(self) -> _Sending:
        if (self.rate is None) == (self.count is None):
            raise ValueError(f"{self.kind}: give rate (frames/s) or count (frames), one of the two")
        return self


class Inject(_Sending):
    """A forged frame numbered `offset` after the sequence number last seen on the link (mod 2^16)."""

    kind: Literal["inject"]
    offset: int = Field(ge=0, lt=SEQ_SPACE, description="added to the last sequence number seen")
    identity: str | None = Field(None, description="another stream whose identity the forged frames carry")


class Replay(_Sending):
    """The frame that crossed the link `age` frames before the last one, tag and all."""

    kind: Literal["replay"]
    age: int = Field(ge=1, le=SEQ_SPACE, description="frames between it and the last one seen")


class Babble(_Sending):
    """The last frame that crossed the link, again and again."""

    kind: Literal["babble"]


class StripTag(_AttackBase):
    """The stream's frames crossing the link lose their R-TAG."""

    kind: Literal["strip_tag"]


Attack = Annotated[Inject | Replay | Babble | StripTag, Field(discriminator="kind")]


class Link(_Model):
    """A full-duplex cable between two nodes; each direction is an egress port of its own."""

    name: str
    a: str
    b: str
    rate: Rate = Field(gt=0)
    delay: Annotated[Time, at_most(MAX_DELAY_PS)] = Field(0, description="propagation delay")
    overhead: Size = Field(L1_OVERHEAD_BYTES, le=MAX_FRAME_BYTES)
    egress: Egress = Egress()
    failures: list[Failure] = Field(default_factory=list)
    loss: Annotated[Bernoulli | GilbertElliott, Field(discriminator="model")] | None = None
    pause: Pause | None = Field(None, description="IEEE 802.3x PAUSE in both directions")
    rate_changes: list[RateChange] = Field(default_factory=list, max_length=MAX_GATE_ENTRIES)
    attacks: list[Attack] = Field(default_factory=list, description="attackers on the link (docs/security-sim.md)")

    @model_validator(mode="after")
    def _slopes_within_rate(self) -> Link:
        for c, slope in self.egress.cbs.items():
            if not 0 < slope <= self.rate:
                raise ValueError(f"egress.cbs: idleSlope {slope} bit/s of class {c} is out of range "
                                 f"(1..={self.rate} bit/s, the link rate)")
        return self


class Exponential(_Model):
    """Exponentially distributed frame sizes (for M/M/1 checks)."""

    dist: Literal["exponential"]
    mean: float = FrameBytes


class UniformSize(_Model):
    """Frame sizes uniform over min..max."""

    dist: Literal["uniform"]
    min: int = FrameBytes
    max: int = FrameBytes


class OnOff(_Model):
    """Bursts at the stream rate for `on`, silence for `off`."""

    on: Time = Field(gt=0)
    off: Time

    @model_validator(mode="before")
    @classmethod
    def _keys_yaml_read_as_booleans(cls, data: Any) -> Any:
        """YAML 1.1 reads an unquoted key `on` as true and `off` as false: take them back."""
        if isinstance(data, dict):
            return {({True: "on", False: "off"}[k] if isinstance(k, bool) else k): v for k, v in data.items()}
        return data


def _frame_size_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("dist")
    return getattr(value, "dist", "fixed")


FrameSize = Annotated[
    Annotated[Size, FrameBytes, Tag("fixed")] | Annotated[Exponential, Tag("exponential")]
    | Annotated[UniformSize, Tag("uniform")],
    Discriminator(_frame_size_kind, custom_error_type="frame_size",
                  custom_error_message="frame_size is a number of bytes (64..9216) or a mapping with dist: "
                                       "exponential (mean) or uniform (min, max)"),
]


class Guard(_Model):
    """The rogue-rate guard of a recovery function, the testbed's rule
    (frerlab.dataplane.control.guard): every `period` more than `threshold` new rogue frames is
    an alarm; if the function also passed nothing in that period (locked out) and `reset` is
    set, it gets a management reset (802.1CB 10.4.1.4)."""

    threshold: int = Field(ge=0, lt=2**63, description="more rogue frames than this in a period is an alarm")
    period: Annotated[Time, at_most(MAX_GUARD_PERIOD_PS)] = Field(gt=0, description="how often it looks")
    reset: bool = Field(False, description="reset a locked-out function")


class StreamFilter(_Model):
    """An 802.1Qci stream filter at `node` for the stream's frames received over `link` (a member
    path; none: over any link), before the node's FRER functions: a frame whose SDU (the frame
    less its MACs, FCS and R-TAG) is above `max_sdu` is dropped, and with `rate` and `burst` a
    colour-blind single-rate token bucket drops the red ones (docs/security-sim.md)."""

    node: str
    link: str | None = Field(None, description="link name: only frames received over it; none: any link")
    rate: Rate | None = Field(None, ge=0, le=MAX_METER_RATE, description="the meter's CIR, SDU bit/s")
    burst: Size | None = Field(None, ge=1, le=MAX_METER_BURST, description="the meter's CBS, SDU octets")
    max_sdu: Size | None = Field(None, ge=1, description="larger SDUs are dropped; none: any size")

    @model_validator(mode="after")
    def _rate_with_burst(self) -> StreamFilter:
        if (self.rate is None) != (self.burst is None):
            raise ValueError(f"stream filter at {self.node}: rate {self.rate} and burst {self.burst}: give both "
                             "(a flow meter) or neither")
        return self


class Recovery(_Model):
    """A sequence recovery function (or individual recovery of one member stream). Defaults
    are frerlab's, as for the data plane (docs/8021cb-decisions.md, "Defaults"): history 32,
    reset timeout 100 ms (1 ms under individual recovery); `never` asks for no timeout.
    A sequence recovery function takes the R-TAG off the frames it passes, unless `keep_tag`:
    then they go on with the same sequence number, as from a relay that recovers and replicates
    again, to be recovered again further on (802.1CB 7.6: its sequence encode function is
    active on the output ports); an individual recovery function always leaves it on."""

    node: str
    ingress: str | None = Field(None, description="link name: only frames arriving over it")
    algorithm: Literal["vector", "match"] = "vector"
    history_length: int = Field(DEFAULT_HISTORY_LENGTH, ge=2, le=1024)
    reset_timeout: Time | Literal["never"] | None = None
    individual_recovery: bool = False
    take_no_sequence: bool = False
    keep_tag: bool = Field(False, description="passed frames keep their R-TAG (a relay that recovers and "
                                              "replicates again)")
    guard: Guard | None = Field(None, description="the rogue-rate guard watching it")

    @model_validator(mode="after")
    def _keep_tag_of_a_sequence_recovery(self) -> Recovery:
        if self.keep_tag and self.individual_recovery:
            raise ValueError("keep_tag true with individual_recovery true: an individual recovery function always "
                             "leaves the R-TAG on; keep_tag is for a sequence recovery function")
        return self

    def reset_timeout_ps(self) -> int | None:
        """The reset timeout in picoseconds; None for no timeout."""
        if self.reset_timeout == "never":
            return None
        if self.reset_timeout is None:
            return default_reset_timeout_ns(self.individual_recovery) * 1000
        return self.reset_timeout


class Frer(_Model):
    """The FRER functions of a stream."""

    sequence_generation: str = Field(description="node that numbers frames (before replication)")
    rtag_bytes: int = Field(6, ge=0, le=64, description="bytes the R-TAG adds on the wire")
    sequence_recovery: list[Recovery] = Field(default_factory=list)
    stream_filters: list[StreamFilter] = Field(default_factory=list, description="802.1Qci filters and policing")


class QcnReaction(_Model):
    """A QCN reaction point (IEEE 802.1Qau): the talker's rate limiter follows the congestion
    points' notifications (decrease by Gd |Fb|, fast recovery, active and hyper-active
    increase by byte counter and timer)."""

    gd: float = Field(QCN_GD, gt=0, le=QCN_MAX_GD, description="decrease gain Gd (at most 1/126: at most halving)")
    byte_counter: Size = Field(QCN_BYTE_COUNTER, ge=1, description="bytes per byte-counter cycle")
    timer: Annotated[Time, at_most(MAX_DELAY_PS)] = Field(QCN_TIMER_PS, gt=0, description="length of a timer cycle")
    fast_recovery: int = Field(QCN_FAST_RECOVERY, ge=0, le=1000, description="cycles of fast recovery")
    active_increase: Rate = Field(QCN_ACTIVE_INCREASE, gt=0, description="R_AI")
    hyper_increase: Rate = Field(QCN_HYPER_INCREASE, gt=0, description="R_HAI")
    min_rate: Rate = Field(QCN_MIN_RATE, gt=0, description="lowest rate a notification sets")


class BcnReaction(_Model):
    """A BCN rate regulator: additive increase on positive feedback from the congestion point
    that slowed it, multiplicative decrease on negative feedback."""

    gi: float = Field(BCN_GI, gt=0, le=1000, description="increase gain Gi")
    gd: float = Field(BCN_GD, gt=0, lt=BCN_MAX_GD, description="decrease gain Gd (below 1/63)")
    ru: Rate = Field(BCN_RU, gt=0, description="rate unit Ru of an increase")
    min_rate: Rate = Field(BCN_MIN_RATE, gt=0, description="lowest rate a decrease sets")


class FecnSource(_Model):
    """FECN probing: a rate-discovery probe every interval; the talker sends at the rate the
    probes bring back (at most its configured rate)."""

    interval: Annotated[Time, at_most(MAX_DELAY_PS)] = Field(FECN_INTERVAL_PS, gt=0, description="probe period T")


class Stream(_Model):
    """Traffic from a talker to a listener over one or more paths."""

    name: str
    talker: str
    listener: str
    pcp: int = Field(0, ge=0, le=7, description="priority, mapped one to one to a traffic class")
    frame_size: FrameSize = Field(1518, description="Ethernet frame bytes, FCS included (64..9216)")
    pattern: Literal["constant", "poisson"] | OnOff = "constant"
    rate: Rate = Field(gt=0)
    rate_layer: Literal["l1", "l2"] = "l2"
    start: Time = 0
    count: Count | None = Field(None, ge=1)
    paths: list[list[str]] | None = Field(None, min_length=1, description="link names; none: the shortest path")
    frer: Frer | None = None
    qcn: QcnReaction | None = Field(None, description="QCN reaction point: the rate follows notifications")
    bcn: BcnReaction | None = Field(None, description="BCN regulator: the rate follows BCN feedback")
    fecn: FecnSource | None = Field(None, description="FECN probing: the rate follows returned probes")

    @model_validator(mode="after")
    def _one_regulator_within_rate(self) -> Stream:
        chosen = [name for name in ("qcn", "bcn", "fecn") if getattr(self, name) is not None]
        if len(chosen) > 1:
            raise ValueError(f"{' and '.join(chosen)} on one stream: choose one regulator")
        if self.fecn is not None and self.paths is not None and len(self.paths) > 1:
            raise ValueError(f"fecn on a stream of {len(self.paths)} paths is not modelled (one path: its probes "
                             "come back in the order they were sent)")
        for name in ("qcn", "bcn"):
            regulator = getattr(self, name)
            if regulator is not None and regulator.min_rate > self.rate:
                raise ValueError(f"{name}.min_rate {regulator.min_rate} bit/s is out of range "
                                 f"(1..={self.rate} bit/s, the stream rate)")
        return self


class QcnNetwork(_Model):
    """QCN on every switch egress and every stream."""

    mechanism: Literal["qcn"]
    point: QcnPoint = QcnPoint()
    regulator: QcnReaction = QcnReaction()


class BcnNetwork(_Model):
    """BCN on every switch egress and every stream."""

    mechanism: Literal["bcn"]
    point: BcnPoint = BcnPoint()
    regulator: BcnReaction = BcnReaction()


class FecnNetwork(_Model):
    """FECN on every switch egress and every stream; `interval` (T) sets the ports' and the
    talkers' intervals together."""

    mechanism: Literal["fecn"]
    interval: Annotated[Time, at_most(MAX_DELAY_PS)] | None = Field(None, gt=0, description="T of points and talkers")
    point: FecnPoint = FecnPoint()
    regulator: FecnSource = FecnSource()

    @model_validator(mode="after")
    def _one_interval(self) -> FecnNetwork:
        if self.interval is not None:
            self.point.interval = self.regulator.interval = self.interval
        return self


class Scenario(_Model):
    """A whole scenario file."""

    name: str
    description: str = ""
    seed: int = Field(1, ge=0, lt=2**64)
    duration: Time = Field(gt=0)
    warmup: Time = 0
    interval: Time = Field(100_000_000_000, gt=0)
    trace: bool = False
    nodes: dict[str, Node]
    links: list[Link]
    streams: list[Stream] = Field(min_length=1)
    congestion: Annotated[QcnNetwork | BcnNetwork | FecnNetwork, Field(discriminator="mechanism")] | None = None
    sweep: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _names_resolve(self) -> Scenario:
        if self.duration // self.interval > MAX_INTERVALS:
            raise ValueError(f"interval {time_text(self.interval)} makes {self.duration // self.interval:,} intervals "
                             f"of the duration {time_text(self.duration)} (at most {MAX_INTERVALS:,}: "
                             "interval >= duration / 10^6)")
        if self.warmup >= self.duration:
            raise ValueError(f"warmup {time_text(self.warmup)} is not before the end of the duration "
                             f"{time_text(self.duration)} (no frame would be measured)")
        for s in self.streams:
            if s.start >= self.duration:
                raise ValueError(f"stream {s.name}: start {time_text(s.start)} is not before the end of the duration "
                                 f"{time_text(self.duration)} (the stream would send nothing)")
        from frerlab.sim.compile import compile_spec  # compile imports this module: not at the top
        compile_spec(self)
        return self


SHAPE = "a scenario is a mapping with name, duration, nodes, links, streams"


def parse_scenario(data: dict[str, Any], source: str = "scenario") -> Scenario:
    """A validated Scenario from plain data; UsageError naming each bad field otherwise."""
    return validate(Scenario, data, source, SHAPE)


def read_data(path: str | Path) -> dict[str, Any]:
    """The plain data of a scenario YAML file; UsageError when it is missing or malformed."""
    return read_mapping(path, "scenario", SHAPE)


def load_scenario(path: str | Path) -> Scenario:
    """Reads and validates a scenario YAML file."""
    return parse_scenario(read_data(path), str(path))
