"""The topology file: one YAML description of a FRER network, the input of every `frerlab net`
verb. Nodes (end stations and bridges), links (rate, delay, egress queue, Bernoulli loss),
streams (talker, listener, frame size, rate, member paths given as lists of link names or
found as "all disjoint paths") with where FRER acts (the sequence generation node; sequence
recovery end to end, at every stage, or at named nodes; individual recovery; latent error
detection parameters), and faults over time (link cuts, loss bursts).

The schema is pydantic, read and reported through frerlab.yamlfile like a scenario file
(docs/networks.md describes every field). A file is valid only if it resolves: every name
is defined, every path is connected, FRER's nodes lie on every member path (frerlab.net.plan
does that, and keeps each stream's StreamPlan on the validated Topology).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, Tag, model_validator

from frerlab.frer import DEFAULT_HISTORY_LENGTH
from frerlab.names import MAX_IFNAME, pydantic_name, shown
from frerlab.sim.schema import MAX_DELAY_PS, Count, Rate, Size, Time
from frerlab.units import MAX_FRAME_BYTES, MIN_FRAME_BYTES, TIME_UNITS_PS, at_most, time_text
from frerlab.yamlfile import parse_overrides, read_mapping, set_field, validate

NodeName = pydantic_name("node")
#: A link's name becomes an interface name on each of its ends in a namespace network.
LinkName = pydantic_name("link", MAX_IFNAME)
StreamName = pydantic_name("stream")
#: Most routes (member paths after every replication) one stream may have: a ladder of k
#: stages of m paths has m^k, and each is a branch of the simulator's route tree.
MAX_ROUTES = 4096
#: Most links the exact enumeration of `net analyse --exact` takes (2^n link states).
MAX_ENUMERATED_LINKS = 20


def exact_time(ps: int) -> str:
    """A time in picoseconds with the largest unit that keeps it whole ("25ns", "1s")."""
    for unit in ("s", "ms", "us", "ns"):
        if ps % TIME_UNITS_PS[unit] == 0:
            return f"{ps // TIME_UNITS_PS[unit]}{unit}"
    return f"{ps}ps"


def exact_rate(bps: int) -> str:
    """A rate in bit/s with the largest unit that keeps it whole ("1Gbps")."""
    for unit, factor in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if bps % factor == 0:
            return f"{bps // factor}{unit}bps"
    return f"{bps}bps"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Node(_Model):
    """An end station (talker, listener) or a bridge."""

    kind: Literal["end_station", "bridge"]
    processing_delay: Annotated[Time, at_most(MAX_DELAY_PS)] = Field(0, description="forwarding delay")


class BernoulliLoss(_Model):
    """Each frame lost independently with probability p, in either direction."""

    model: Literal["bernoulli"]
    p: float = Field(ge=0, le=1)


def _loss_kind(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "number"
    return "model" if isinstance(value, (dict, BernoulliLoss)) else None


Loss = Annotated[
    Annotated[float, Field(ge=0, le=1), Tag("number")] | Annotated[BernoulliLoss, Tag("model")],
    Discriminator(_loss_kind, custom_error_type="loss",
                  custom_error_message="loss is a probability 0..1 (Bernoulli) or {model: bernoulli, p: P}"),
]


class Link(_Model):
    """A full-duplex link between two nodes; each direction has its own egress queue."""

    name: LinkName
    a: str
    b: str
    rate: Rate = Field(gt=0)
    delay: Annotated[Time, at_most(MAX_DELAY_PS)] = Field(0, description="propagation delay")
    queue: Size | None = Field(None, description="egress queue limit of each direction, bytes; none: unlimited")
    loss: Loss = Field(0.0, description="Bernoulli loss probability of a frame crossing it")

    @property
    def p(self) -> float:
        """The link's Bernoulli loss probability."""
        return self.loss if isinstance(self.loss, float) else self.loss.p


class Cut(_Model):
    """Link `cut` is down (both directions) from `down` until `up`."""

    cut: str
    down: Time
    up: Time

    @model_validator(mode="after")
    def _ordered(self) -> Cut:
        if self.up <= self.down:
            raise ValueError(f"cut of {self.cut}: up {time_text(self.up)} is not after down {time_text(self.down)}")
        return self

    @property
    def link(self) -> str:
        """The link it acts on."""
        return self.cut


class Burst(_Model):
    """Link `burst` loses each frame with probability `p` (both directions) from `start`
    until `end`, on top of its own loss."""

    burst: str
    start: Time
    end: Time
    p: float = Field(1.0, gt=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Burst:
        if self.end <= self.start:
            raise ValueError(f"burst on {self.burst}: end {time_text(self.end)} is not after start "
                             f"{time_text(self.start)}")
        return self

    @property
    def link(self) -> str:
        """The link it acts on."""
        return self.burst


def _fault_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        kinds = [k for k in ("cut", "burst") if k in value]
        return kinds[0] if len(kinds) == 1 else None
    return "cut" if isinstance(value, Cut) else "burst" if isinstance(value, Burst) else None


Fault = Annotated[
    Annotated[Cut, Tag("cut")] | Annotated[Burst, Tag("burst")],
    Discriminator(_fault_kind, custom_error_type="fault",
                  custom_error_message="a fault is {cut: LINK, down: TIME, up: TIME} or "
                                       "{burst: LINK, start: TIME, end: TIME, p: P}"),
]


class LatentErrorDetection(_Model):
    """Latent error detection parameters (802.1CB 7.4.4, 10.4.1.12) for every sequence
    recovery function of the stream; `paths` defaults to the member streams that merge there.
    Carried to the per-node functions (for the data plane and the switch exports); the
    simulator does not run latent error detection."""

    difference: int = Field(ge=0, lt=2**31)
    period: Time = Field(2 * 10**12, gt=0, description="test period (802.1CB default 2000 ms)")
    reset_period: Time = Field(30 * 10**12, gt=0, description="re-basing period (default 30000 ms)")
    paths: int | None = Field(None, ge=2, le=8)


class Frer(_Model):
    """Where FRER acts on a stream."""

    generation: str | None = Field(None, description="node that numbers and replicates (default: the talker)")
    recovery: Literal["end_to_end", "per_stage"] | list[str] = Field(
        "end_to_end", description="end_to_end: one sequence recovery where the member paths finally merge; "
                                  "per_stage: one at every node after the generation that every member path "
                                  "crosses, each but the last passing frames on with their R-TAG to be "
                                  "replicated again; or a list of such nodes")
    algorithm: Literal["vector", "match"] = "vector"
    history_length: int = Field(DEFAULT_HISTORY_LENGTH, ge=2, le=1024)
    reset_timeout: Time | Literal["never"] | None = Field(None, description="default frerlab's (100 ms)")
    individual_recovery: bool = Field(False, description="an individual recovery function per member stream "
                                                         "ahead of each sequence recovery function")
    latent_error_detection: LatentErrorDetection | None = None

    @model_validator(mode="before")
    @classmethod
    def _recovery_named(cls, data: Any) -> Any:
        recovery = data.get("recovery") if isinstance(data, dict) else None
        if isinstance(recovery, str) and recovery not in ("end_to_end", "per_stage"):
            raise ValueError(f"recovery {shown(recovery)} is not valid (end_to_end, per_stage, or a list of nodes)")
        return data

    @model_validator(mode="after")
    def _timeout_not_zero(self) -> Frer:
        if self.reset_timeout == 0:
            raise ValueError("reset_timeout 0 is not valid: give a time (e.g. 100ms), or never for no timeout")
        return self


class Stream(_Model):
    """Frames from a talker to its listener over one or more member paths."""

    name: StreamName
    talker: str
    listeners: list[str] = Field(min_length=1)
    frame_size: int = Field(1518, ge=MIN_FRAME_BYTES, le=MAX_FRAME_BYTES, description="bytes, FCS included")
    rate: Rate = Field(gt=0, description="L2 rate (frame bytes)")
    pcp: int = Field(0, ge=0, le=7)
    start: Time = 0
    count: Count | None = Field(None, ge=1)
    paths: Literal["disjoint", "shortest"] | list[Annotated[list[str], Field(min_length=1)]] | None = Field(
        None, description="lists of link names from talker to listener, or disjoint (every link-disjoint path "
                          "between generation and merge), or shortest; default disjoint with frer, else shortest")
    frer: Frer | None = None

    @model_validator(mode="after")
    def _one_listener(self) -> Stream:
        if len(self.listeners) > 1:
            raise ValueError(f"listeners: {len(self.listeners)} listeners given ({', '.join(map(str, self.listeners))}): "
                             "a stream has one listener for now (the simulator delivers a stream at one node); "
                             "write one stream per listener")
        if self.paths is not None and not isinstance(self.paths, str) and len(self.paths) > 1 and self.frer is None:
            raise ValueError(f"paths: {len(self.paths)} paths without frer would deliver every frame "
                             f"{len(self.paths)} times; add frer (at least frer: {{}}) or give one path")
        return self

    @property
    def listener(self) -> str:
        """The stream's one listener."""
        return self.listeners[0]

    @property
    def frames_per_second(self) -> float:
        """Frames sent per second at the stream's L2 rate."""
        return self.rate / (self.frame_size * 8)


class Topology(_Model):
    """A whole topology file."""

    name: str
    description: str = ""
    seed: int = Field(1, ge=0, lt=2**64)
    duration: Time = Field(gt=0, description="length of a simulated run, and the time base of the faults")
    nodes: dict[NodeName, Node] = Field(min_length=2)
    links: list[Link] = Field(min_length=1)
    streams: list[Stream] = Field(min_length=1)
    faults: list[Fault] = Field(default_factory=list)

    _plans: dict = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _resolves(self) -> Topology:
        from frerlab.net.plan import plan_streams  # plan imports this module: not at the top

        for s in self.streams:
            if s.start >= self.duration:
                raise ValueError(f"stream {s.name}: start {time_text(s.start)} is not before the end of the duration "
                                 f"{time_text(self.duration)} (the stream would send nothing)")
        self._plans = plan_streams(self)
        return self

    @property
    def plans(self) -> dict:
        """Each stream's StreamPlan (frerlab.net.plan), by stream name."""
        return self._plans

    def link(self, name: str) -> Link:
        """The link called `name` (it exists: the topology resolved)."""
        return next(link for link in self.links if link.name == name)


SHAPE = "a topology file is a mapping with name, duration, nodes, links, streams (and faults)"


def parse_topology(data: dict[str, Any], source: str = "topology") -> Topology:
    """A validated Topology from plain data; UsageError naming each bad field otherwise."""
    return validate(Topology, data, source, SHAPE)


def read_data(path: str | Path) -> dict[str, Any]:
    """The plain data of a topology YAML file; UsageError when it is missing or malformed."""
    return read_mapping(path, "topology", SHAPE)


def load_topology(path: str | Path) -> Topology:
    """Reads and validates a topology YAML file."""
    return parse_topology(read_data(path), str(path))


def read_with_overrides(path: str | Path, overrides: list[str]) -> tuple[dict[str, Any], Topology]:
    """The plain data of topology file `path` with `overrides` (`--set` FIELD=VALUE) applied,
    and the validated topology."""
    data = read_data(path)
    for name, value in parse_overrides(overrides).items():
        set_field(data, name, value)
    return data, parse_topology(copy.deepcopy(data), str(path))
