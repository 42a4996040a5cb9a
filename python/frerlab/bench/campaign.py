"""Benchmark campaigns as data: the campaign file, validated, and the plan it expands to.

A campaign names the system under test (a namespace testbed, run in `frer` and/or `control`
mode; real hosts over SSH; or a topology file's network in namespaces) and a list of steps, each a method with its parameters (seed 002 section 2;
RFC 2544 sections 26.1-26.5). `plan` expands the steps into *units*: one unit is one
repetition of one method at one point of its parameters in one mode (a whole throughput search,
a TCP run, a latency run, a loss-vs-load trial). A unit is what a results directory stores and
what `--resume` skips when it is done. Loads are percent of the line rate: the frame rate of
the testbed's `rate` at the frame size, with 20 bytes of preamble and gap per frame (RFC 2544
section 20's theoretical maximum). Every duration of the plan is an estimate that includes a
fixed cost per tool run (`TRIAL_OVERHEAD_S`); searches, whose trial count is only known at the
end, are estimated from their parameters.

Values are strict: a number must be a number of the field's kind (`true`, `"3"` or 64.0 where a
count belongs are refused, not coerced); a campaign file is at most `MAX_CAMPAIGN_BYTES` and
its plan at most `MAX_UNITS` units, counted from the file's lists before any unit is built. A relative `hosts:` or `topology:` path
(a hosts or network system) is relative to the campaign file's directory.

The module is longer than most (about 600 lines) because each step's model holds both its
fields and how they expand into points and time estimates (`points`, `estimate_s`): a method
is read in one place, and the file's schema and its plan stay one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, model_validator

from frerlab.bench.verdict import Verdict
from frerlab.errors import UsageError
from frerlab.impair.path import Impairment
from frerlab.names import check_name
from frerlab.units import rate_bps
from frerlab.testbed.bed import Settings
from frerlab.testbed.failover import Schedule
from frerlab.yamlfile import load, read_text, validate

#: Time a tool run costs beyond its traffic: processes starting, the receiver's linger.
TRIAL_OVERHEAD_S = 1.2
#: Time to bring a testbed up and take it down.
TESTBED_S = 4.0
#: Most units one plan may hold (both modes counted): about 3 h at the shortest unit, 4 days
#: at a typical one; the largest campaign of the project (campaigns/seed-hardware.yaml) has 131.
MAX_UNITS = 10_000
#: Largest campaign file (bytes), so that parsing any file accepted stays well under a second
#: (PyYAML); the largest campaign of the project is under 5 KB.
MAX_CAMPAIGN_BYTES = 32 << 10
FrameSize = Annotated[int, Field(ge=64, le=1518)]
Seconds = Annotated[float, Field(gt=0, le=3600)]
Load = Annotated[float, Field(gt=0, le=1000, description="percent of the line rate")]
Repetitions = Annotated[int, Field(ge=1, le=1000)]
Mode = Literal["frer", "control"]


def _named(kind: str):
    """A validator of a name of `kind` (frerlab.names.check_name) that pydantic reports."""
    def check(value: str) -> str:
        try:
            return check_name(value, kind)
        except UsageError as err:
            raise ValueError(str(err)) from None
    return AfterValidator(check)


class _Model(BaseModel):
    """Strict: a value of the wrong kind is refused, never coerced (YAML gives lists, so only
    the tuple and path fields below take the list or text they are given as `strict=False`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class System(_Model):
    """The system under test: a frerlab testbed (frerlab.testbed.bed.Settings), one per mode."""

    kind: Literal["testbed"] = "testbed"
    modes: list[Mode] = Field(["frer", "control"], min_length=1, max_length=2)
    rate: str = "100Mbps"
    path_rate: str | None = Field(None, description="default: rate; lower: the paths are the bottleneck")
    queue_limit: str = "64KiB"
    replicate_at: Literal["sw1", "talker"] = "sw1"
    eliminate_at: Literal["sw2", "listener"] = "sw2"
    history_length: int = 32
    generator: Literal["udp", "raw", "xdp"] = Field(
        "udp", description="how frerlab's generator and receiver move frames in every step's trials: UDP "
                           "sockets, AF_PACKET, or AF_XDP (frerlab gen --mode; docs/traffic.md)")
    impair: dict[Literal["a", "b"], dict[str, Any]] = Field(
        default_factory=dict, description="per path, impairments of its talker-to-listener direction for the "
                                          "whole campaign (frerlab.impair.Impairment's fields, e.g. loss: 1e-5)")

    @model_validator(mode="after")
    def _valid_testbed(self) -> System:
        if len(set(self.modes)) != len(self.modes):
            raise ValueError(f"modes {self.modes} names a mode twice (frer, control or both)")
        for path, changes in self.impair.items():
            known = [f.name for f in dataclasses.fields(Impairment)]
            unknown = sorted(set(changes) - set(known))
            if unknown:
                raise ValueError(f"impair.{path}: {unknown[0]!r} is not an impairment ({', '.join(known)})")
            try:
                Impairment.from_dict(changes)
            except (UsageError, TypeError) as err:  # TypeError: gilbert_elliott not a mapping of its fields
                raise ValueError(f"impair.{path}: {err}") from None
        for mode in self.modes:
            try:
                Settings(**self.testbed_args(mode, "campaign")).check()
            except UsageError as err:
                raise ValueError(str(err)) from None
        return self

    def testbed_args(self, mode: str, name: str) -> dict[str, Any]:
        """The testbed settings (frerlab.testbed.bed.Settings) of one mode."""
        return {"name": name, "mode": mode, "rate": self.rate, "queue_limit": self.queue_limit,
                "replicate_at": self.replicate_at, "eliminate_at": self.eliminate_at,
                "history_length": self.history_length, "path_rate": self.path_rate}

    @property
    def rate_bps(self) -> int:
        """The testbed's link rate in bit/s."""
        return rate_bps(self.rate)

    def describe(self) -> str:
        impaired = "".join(f", path {path}: {', '.join(f'{k} {v}' for k, v in changes.items())}"
                           for path, changes in self.impair.items())
        return f"a testbed at {self.rate} (queue limit {self.queue_limit}{impaired})"


def _address(value: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise ValueError(f"listener_address {value!r} is not an IPv4 address") from None


def _line_rate(value: str) -> str:
    if not 1e6 <= rate_bps(value) <= 4e11:
        raise ValueError(f"rate {value} is out of range (1Mbps..400Gbps)")
    return value


class HostsSystem(_Model):
    """Real hosts over SSH (frerlab.remote.hosts): the network between them is what it is, so
    one mode, naming what it does; `rate` is the line rate of the talker's link."""

    kind: Literal["hosts"]
    hosts: Path = Field(strict=False, description="the hosts file: talker and listener (docs/remote.md); "
                                                  "relative: to the campaign file's directory")
    mode: Mode
    rate: Annotated[str, AfterValidator(_line_rate)]
    listener_address: Annotated[str, AfterValidator(_address)]
    frerlab: list[str] = Field(["frerlab"], min_length=1, description="the command that runs frerlab on the hosts")
    eliminate_at: Literal["sw2", "listener"] | None = Field(
        None, description="mode frer, required: where the network under test eliminates duplicates (seed 001: "
                          "sw2; seed 002: the listener host). frerlab does not configure it (`frerlab hosts push` "
                          "does); the campaign records it, and with it the results")
    #: The directory a relative `hosts` is relative to: the campaign file's (read_campaign).
    _directory: Path = PrivateAttr(Path("."))

    @model_validator(mode="after")
    def _elimination_named(self) -> HostsSystem:
        if self.mode == "frer" and self.eliminate_at is None:
            raise ValueError("mode frer needs eliminate_at (sw2 or listener): where the network under test "
                             "eliminates duplicates, which the results must record (docs/remote.md)")
        if self.mode == "control" and self.eliminate_at is not None:
            raise ValueError(f"eliminate_at {self.eliminate_at} is given with mode control, which replicates and "
                             "eliminates nothing: remove eliminate_at, or set mode frer")
        return self

    @property
    def modes(self) -> list[str]:
        return [self.mode]

    @property
    def hosts_file(self) -> Path:
        """The hosts file's path: `hosts`, relative to the campaign file's directory."""
        return self._directory / self.hosts.expanduser()

    @property
    def rate_bps(self) -> int:
        return rate_bps(self.rate)

    def describe(self) -> str:
        where = f", eliminating at {self.eliminate_at}" if self.eliminate_at else ""
        return f"the hosts of {self.hosts} at {self.rate}{where}"


class NetworkSystem(_Model):
    """A topology file's network brought up in namespaces (frerlab.net.namespaces, docs/networks.md)
    with each node's data plane: the campaign's traffic is one of the file's streams, from its
    talker to its listener, identified there by the listener's address (every UDP frame to it).
    One mode, naming what the stream is: frer if it has FRER, else control. Loads are percent of
    the rate of the talker's first link."""

    kind: Literal["network"]
    topology: Path = Field(strict=False, description="the topology file; relative: to the campaign file's directory")
    set: list[str] = Field(default_factory=list, description="overrides FIELD=VALUE, as `frerlab net --set`")
    stream: str | None = Field(None, description="the stream the campaign drives (default: the file's first)")
    mode: Mode
    #: The directory a relative `topology` is relative to: the campaign file's (read_campaign).
    _directory: Path = PrivateAttr(Path("."))

    @property
    def modes(self) -> list[str]:
        return [self.mode]

    @property
    def topology_file(self) -> Path:
        return self._directory / self.topology.expanduser()

    def load(self):
        """The topology's data (overrides applied) and the validated topology, its stream
        checked; UsageError naming the bad value."""
        from frerlab.net.topology import read_with_overrides

        data, topo = read_with_overrides(self.topology_file, self.set)
        names = [s.name for s in topo.streams]
        if self.stream is not None and self.stream not in names:
            raise UsageError(f"system.stream {self.stream!r} is not a stream of {self.topology} ({', '.join(names)})")
        stream = self.stream_of(topo)
        if (stream.frer is not None) != (self.mode == "frer"):
            raise UsageError(f"system.mode {self.mode}: stream {stream.name} of {self.topology} "
                             f"{'has' if stream.frer else 'has no'} FRER (mode {'frer' if stream.frer else 'control'})")
        return data, topo

    def stream_of(self, topo):
        """The campaign's stream of `topo`."""
        return next(s for s in topo.streams if self.stream in (None, s.name))

    def describe(self) -> str:
        return f"the network of {self.topology}{' (' + ', '.join(self.set) + ')' if self.set else ''} in namespaces"


class _Step(_Model):
    name: Annotated[str, _named("step")] | None = None
    modes: list[Mode] | None = Field(None, min_length=1, max_length=2, description="default: the system's")
    repetitions: Repetitions = 1

    def points(self) -> list[dict[str, Any]]:
        """The parameter points of one repetition, each the parameters that vary."""
        raise NotImplementedError

    def point_count(self) -> int:
        """len(points()), counted without building them (overridden where points are a product)."""
        return len(self.points())

    def estimate_s(self, point: dict[str, Any]) -> float:
        """Estimated seconds of one unit at `point`."""
        raise NotImplementedError


class Tcp(_Step):
    """TCP baseline (seed 002 section 2.1): iperf3 for each duration."""

    kind: Literal["tcp"]
    durations_s: list[Seconds] = Field([10, 30, 60], min_length=1)

    def points(self) -> list[dict[str, Any]]:
        return [{"duration_s": d} for d in self.durations_s]

    def estimate_s(self, point: dict[str, Any]) -> float:
        return point["duration_s"] + TRIAL_OVERHEAD_S


class BinarySearch(_Model):
    """The seeds' binary search (seed 002 section 2.2)."""

    kind: Literal["binary"] = "binary"
    iterations: int = Field(10, ge=1, le=64)
    trial_s: Seconds = 30
    loss_threshold: float = Field(1e-5, ge=0, lt=1, description="a ratio: 1e-5 is 0.001 %")

    def estimate_s(self) -> float:
        return self.iterations * (self.trial_s + TRIAL_OVERHEAD_S)


class MlrGoal(_Model):
    """One goal of the RFC 9971 search (frerlab.bench.search.Goal)."""

    loss_ratio: float = Field(0.0, ge=0, lt=1)
    final_trial_s: Seconds = 30
    duration_sum_s: Seconds | None = Field(None, description="default: final_trial_s")
    exceed_ratio: float = Field(0.5, ge=0, lt=1)
    relative_width: float = Field(0.005, gt=0, lt=1)


class MlrSearch(_Model):
    """The RFC 9971-style search: NDR and PDR (or any goals) in one search."""

    kind: Literal["mlr"] = "mlr"
    goals: list[MlrGoal] = Field([MlrGoal(), MlrGoal(loss_ratio=0.005)], min_length=1, max_length=8)
    initial_trial_s: Seconds = 1.0
    phases: int = Field(2, ge=0, le=10)

    def estimate_s(self) -> float:
        # measured on the known-truth DUT (benches/throughput_search.py): about 4 final-length
        # trials per goal and 4 trials per short phase
        final = sum(4 * (g.duration_sum_s or g.final_trial_s) for g in self.goals)
        short = 4 * self.phases * len(self.goals) * self.initial_trial_s * 2
        trials = 4 * len(self.goals) * (1 + self.phases)
        return final + short + trials * TRIAL_OVERHEAD_S


class Throughput(_Step):
    """RFC 2544 26.1 throughput per frame size, with frerlab's generator."""

    kind: Literal["throughput"]
    frame_sizes: list[FrameSize] = Field([64, 128, 256, 512, 1024, 1280, 1518], min_length=1)
    search: BinarySearch | MlrSearch = Field(BinarySearch(), discriminator="kind")
    min_load: float = Field(0.0, ge=0, le=1000, description="percent of the line rate; the MLR search starts above 0")
    max_load: Load = 100.0
    send_tolerance: float = Field(0.001, ge=0, lt=1, description="shortfall beyond this makes a trial invalid")

    @model_validator(mode="after")
    def _order(self) -> Throughput:
        if self.min_load >= self.max_load:
            raise ValueError(f"min_load {self.min_load} must be below max_load {self.max_load}")
        return self

    def points(self) -> list[dict[str, Any]]:
        return [{"frame_size": f} for f in self.frame_sizes]

    def estimate_s(self, point: dict[str, Any]) -> float:
        return self.search.estimate_s()


class Latency(_Step):
    """Latency per frame size: sockperf ping-pong (RTT/2; or under-load with `sockperf_mps`)
    and/or frerlab's one-way timestamps, idle and under background load (percent of the line
    rate, 0 for idle)."""

    kind: Literal["latency"]
    tools: list[Literal["sockperf", "oneway"]] = Field(["sockperf", "oneway"], min_length=1)
    frame_sizes: list[FrameSize] = Field([64, 256, 512, 1024, 1518], min_length=1)
    duration_s: Seconds = 60
    loads: list[Annotated[float, Field(ge=0, le=100)]] = Field([0.0], min_length=1)
    probe_rate_fps: float = Field(10_000, gt=0, le=1e6, description="one-way probes per second")
    sockperf_mps: int | None = Field(
        None, ge=1, le=10_000_000, description="tool sockperf: `sockperf under-load` at this many messages per "
                                                "second (the server replies to one in 100; seed 004 section 5) "
                                                "instead of ping-pong")
    verdict: Verdict = Verdict()

    @model_validator(mode="after")
    def _mps_for_sockperf(self) -> Latency:
        if self.sockperf_mps is not None and "sockperf" not in self.tools:
            raise ValueError(f"sockperf_mps {self.sockperf_mps} needs tool sockperf (tools are {self.tools})")
        return self

    def points(self) -> list[dict[str, Any]]:
        return [{"tool": t, "frame_size": f, "load": load} for t in self.tools for f in self.frame_sizes
                for load in self.loads]

    def point_count(self) -> int:
        return len(self.tools) * len(self.frame_sizes) * len(self.loads)

    def estimate_s(self, point: dict[str, Any]) -> float:
        return self.duration_s + TRIAL_OVERHEAD_S * (2 if point["load"] else 1)


class LossVsLoad(_Step):
    """RFC 2544 26.3 frame loss rate at each load (seed 002 section 2.5's grid by default)."""

    kind: Literal["loss_vs_load"]
    frame_sizes: list[FrameSize] = Field([64, 512, 1518], min_length=1)
    loads: list[Load] = Field([50, 60, 70, 80, 90, 95, 98, 100, 102, 105, 110], min_length=1)
    trial_s: Seconds = 10

    def points(self) -> list[dict[str, Any]]:
        return [{"frame_size": f, "load": load} for f in self.frame_sizes for load in self.loads]

    def point_count(self) -> int:
        return len(self.frame_sizes) * len(self.loads)

    def estimate_s(self, point: dict[str, Any]) -> float:
        return self.trial_s + TRIAL_OVERHEAD_S


class BackToBack(_Step):
    """RFC 2544 26.4 back-to-back: the longest burst at line rate that passes without loss,
    searched over burst lengths (each a trial of `trials` bursts at the offered rate)."""

    kind: Literal["back_to_back"]
    frame_sizes: list[FrameSize] = Field([64, 512, 1518], min_length=1)
    load: Load = 100.0
    max_burst: int = Field(10_000, ge=2, le=10_000_000)
    iterations: int = Field(8, ge=1, le=40)
    trials: int = Field(3, ge=1, le=100, description="bursts per burst length (RFC 2544: 50)")

    def points(self) -> list[dict[str, Any]]:
        return [{"frame_size": f} for f in self.frame_sizes]

    def estimate_s(self, point: dict[str, Any]) -> float:
        return self.iterations * self.trials * (TRIAL_OVERHEAD_S + 0.5)


class Recovery(_Step):
    """RFC 2544 26.5 system recovery: `overload_s` at `overload` percent of the measured
    throughput, then the rate drops to `recovery` percent; the time from the drop to the last
    frame lost."""

    kind: Literal["recovery"]
    frame_size: FrameSize = 1518
    throughput_load: Load = Field(95, description="the throughput, percent of line rate")
    overload: Annotated[float, Field(gt=100, le=1000)] = 110
    recovery: Annotated[float, Field(gt=0, lt=100)] = 50
    overload_s: Seconds = 60
    recovery_s: Seconds = 10

    def points(self) -> list[dict[str, Any]]:
        return [{"frame_size": self.frame_size}]

    def estimate_s(self, point: dict[str, Any]) -> float:
        return self.overload_s + self.recovery_s + 2 * TRIAL_OVERHEAD_S


class Failover(_Step):
    """A path cut mid-stream (frerlab failover) at each load."""

    kind: Literal["failover"]
    frame_size: FrameSize = 512
    loads: list[Annotated[float, Field(gt=0, le=100)]] = Field([10.0], min_length=1)
    duration_s: Annotated[float, Field(ge=1, le=3600)] = 6.0
    cut_a: tuple[float, float] = Field((1.5, 3.0), strict=False)
    cut_b: tuple[float, float] = Field((4.0, 5.0), strict=False)

    @model_validator(mode="after")
    def _valid_schedule(self) -> Failover:
        try:
            Schedule(frame_size=self.frame_size, duration_s=self.duration_s, cut_a=self.cut_a, cut_b=self.cut_b).check()
        except UsageError as err:
            raise ValueError(str(err)) from None
        return self

    def points(self) -> list[dict[str, Any]]:
        return [{"load": load} for load in self.loads]

    def estimate_s(self, point: dict[str, Any]) -> float:
        return self.duration_s + 2 * TRIAL_OVERHEAD_S


class SweepPhase(_Model):
    """One phase of the threshold sweep: loads `step` apart (percent of line rate), each one
    trial of `trial_s`."""

    step: Load
    trial_s: Seconds
    points: int = Field(6, ge=1, le=100)


class ThresholdSweep(_Step):
    """Seed 002 section 2.3 as one adaptive sweep: a coarse grid from `start` up to the first
    load that loses, then finer grids just below that load, a verification at full length of
    the loads around the boundary, and an ultra-fine grid across it."""

    kind: Literal["threshold_sweep"]
    frame_size: FrameSize = 1518
    start: Load = 40
    stop: Load = 110
    coarse: SweepPhase = SweepPhase(step=5, trial_s=5, points=15)
    fine: SweepPhase = SweepPhase(step=0.2, trial_s=10, points=6)
    verify: SweepPhase = SweepPhase(step=0.2, trial_s=30, points=4)
    ultra_fine: SweepPhase = SweepPhase(step=0.1, trial_s=10, points=7)

    def points(self) -> list[dict[str, Any]]:
        return [{"frame_size": self.frame_size}]

    def estimate_s(self, point: dict[str, Any]) -> float:
        phases = (self.coarse, self.fine, self.verify, self.ultra_fine)
        return sum(p.points * (p.trial_s + TRIAL_OVERHEAD_S) for p in phases)


Step = Annotated[Tcp | Throughput | Latency | LossVsLoad | BackToBack | Recovery | Failover | ThresholdSweep,
                 Field(discriminator="kind")]
KINDS = ("tcp", "throughput", "latency", "loss_vs_load", "back_to_back", "recovery", "failover", "threshold_sweep")


def _testbed_by_default(value: Any) -> Any:
    """A system without `kind` is a testbed."""
    return {"kind": "testbed", **value} if isinstance(value, dict) and "kind" not in value else value


class Campaign(_Model):
    """A campaign file."""

    name: Annotated[str, _named("campaign")]
    description: str = ""
    system: Annotated[System | HostsSystem | NetworkSystem, Field(discriminator="kind"),
                      BeforeValidator(_testbed_by_default)] = System()
    steps: list[Step] = Field(min_length=1, max_length=100)

    @model_validator(mode="after")
    def _unique_names(self) -> Campaign:
        if isinstance(self.system, (HostsSystem, NetworkSystem)):
            for i, step in enumerate(self.steps):
                if step.kind == "failover":
                    raise ValueError(f"step {i} (failover) needs a testbed: it cuts the testbed's paths a and b")
                one_way = isinstance(self.system, NetworkSystem)
                if one_way and (step.kind == "tcp" or (step.kind == "latency" and "sockperf" in step.tools)):
                    raise ValueError(f"step {i} ({step.kind}{' with sockperf' if step.kind == 'latency' else ''}) "
                                     "needs a return path: a network system carries its stream one way; use "
                                     "frerlab's generator (latency tools: [oneway])")
                if step.modes and step.modes != [self.system.mode]:
                    raise ValueError(f"step {i} runs in modes {step.modes}, the hosts are {self.system.mode!r}")
        seen = set()
        for i in range(len(self.steps)):
            name = step_name(self, i)
            if name in seen:
                raise ValueError(f"step name {name!r} is given twice (give each step its own name)")
            seen.add(name)
        units = unit_count(self)
        if units > MAX_UNITS:
            raise ValueError(f"the plan holds {units} units (modes x steps' points x repetitions), more than "
                             f"{MAX_UNITS}: split the campaign, or give fewer points or repetitions")
        return self


def step_name(campaign: Campaign, index: int) -> str:
    """The step's name: its own, or its kind (numbered when the kind repeats)."""
    step = campaign.steps[index]
    if step.name:
        return step.name
    same = [i for i, s in enumerate(campaign.steps) if s.kind == step.kind and not s.name]
    return step.kind if len(same) == 1 else f"{step.kind}-{same.index(index) + 1}"


@dataclass(frozen=True)
class Unit:
    """One repetition of one step at one parameter point in one mode."""

    step_index: int
    step: str
    kind: str
    mode: str
    point: tuple[tuple[str, Any], ...]
    repetition: int
    estimate_s: float

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.point)

    @property
    def group(self) -> str:
        """What its repetitions share: step, mode and point."""
        return "/".join([self.step, self.mode, point_label(self.params)])

    @property
    def id(self) -> str:
        """Unique in the campaign; also its directory below the results' `units/`."""
        return f"{self.group}/r{self.repetition}"


def point_label(point: dict[str, Any]) -> str:
    """`frame_size=512,load=50` as a path component."""
    return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.items()) or "all"


def _runs_in(campaign: Campaign, step: _Step, mode: str) -> bool:
    return mode in (step.modes or campaign.system.modes)


def unit_count(campaign: Campaign) -> int:
    """len(plan(campaign)), counted without building a unit."""
    return sum(step.point_count() * step.repetitions for mode in campaign.system.modes
               for step in campaign.steps if _runs_in(campaign, step, mode))


def plan(campaign: Campaign) -> list[Unit]:
    """Every unit in the order they run: mode by mode (one testbed each), steps in file order,
    repetitions innermost (so a step's repetitions are done back to back)."""
    units = []
    names = [step_name(campaign, i) for i in range(len(campaign.steps))]
    for mode in campaign.system.modes:
        for i, step in enumerate(campaign.steps):
            if not _runs_in(campaign, step, mode):
                continue
            for point in step.points():
                for r in range(1, step.repetitions + 1):
                    units.append(Unit(i, names[i], step.kind, mode, tuple(point.items()), r, step.estimate_s(point)))
    return units


def select_steps(campaign: Campaign, units: list[Unit], kinds: list[str] | None) -> list[Unit]:
    """The units of the steps of the given kinds (all for None), in plan order; UsageError
    naming a kind the campaign has no step of, and the kinds it has."""
    if kinds is None:
        return units
    present = list(dict.fromkeys(step.kind for step in campaign.steps))
    unknown = [kind for kind in kinds if kind not in present]
    if unknown:
        raise UsageError(f"--steps {','.join(unknown)}: campaign {campaign.name!r} has no step of that kind "
                         f"(its steps: {', '.join(present)})")
    return [u for u in units if u.kind in kinds]


def total_estimate_s(campaign: Campaign, units: list[Unit]) -> float:
    """Estimated wall time of `units`, testbed set-up included."""
    modes = {u.mode for u in units}
    return sum(u.estimate_s for u in units) + TESTBED_S * len(modes)


SHAPE = "a campaign is a mapping with name, system and steps (see campaigns/quick.yaml)"


def parse_campaign(data: Any, source: str = "campaign") -> Campaign:
    """A validated Campaign; UsageError naming each bad field otherwise."""
    return validate(Campaign, data, source, SHAPE)


def read_campaign(path: str | Path) -> tuple[Campaign, str]:
    """The campaign in file `path` and the file's text; a relative `hosts:` or `topology:` is
    relative to the file's directory, and a topology is read and checked here."""
    text = read_text(path, "campaign")
    size = len(text.encode())
    if size > MAX_CAMPAIGN_BYTES:
        raise UsageError(f"campaign file {str(path)!r} is {size} bytes, above the limit of {MAX_CAMPAIGN_BYTES} "
                         "bytes for a campaign: split it into campaigns of their own")
    campaign = parse_campaign(load(text, str(path)), str(path))
    if isinstance(campaign.system, (HostsSystem, NetworkSystem)):
        campaign.system._directory = Path(path).parent
    if isinstance(campaign.system, NetworkSystem):
        campaign.system.load()  # its errors before anything runs
    return campaign, text


def fingerprint(campaign: Campaign) -> str:
    """A hash of what the campaign means (not how its file is written): the values that differ
    from their defaults, so a field added to the schema later, with a default, leaves the
    fingerprint of an older campaign as it was and its results can still be resumed."""
    meaning = campaign.model_dump(mode="json", exclude_defaults=True)
    return hashlib.sha256(json.dumps(meaning, sort_keys=True).encode()).hexdigest()[:16]


def duration_text(seconds: float) -> str:
    """`1 h 02 min`, `3 min 05 s`, `42 s`."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def plan_text(campaign: Campaign, units: list[Unit]) -> str:
    """The plan as `--dry-run` prints it: per step and mode, the points, repetitions and
    estimated time, then the total."""
    lines = [f"campaign {campaign.name}: {len(units)} units on {campaign.system.describe()}, "
             f"modes {', '.join(campaign.system.modes)}"]
    groups: dict[tuple[str, str], list[Unit]] = {}
    for u in units:
        groups.setdefault((u.mode, u.step), []).append(u)
    for (mode, step), members in groups.items():
        points = list(dict.fromkeys(point_label(u.params) for u in members))
        reps = max(u.repetition for u in members)
        seconds = sum(u.estimate_s for u in members)
        shown = "; ".join(points[:3]) + (f"; ... ({len(points)} points)" if len(points) > 3 else "")
        lines.append(f"  {mode:7} {step:18} {len(points):3} points x {reps} rep.  {duration_text(seconds):>12}   {shown}")
    lines.append(f"total (estimate, {TESTBED_S:g} s per testbed included): {duration_text(total_estimate_s(campaign, units))}")
    return "\n".join(lines)
