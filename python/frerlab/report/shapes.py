"""The shape of every stored JSON file `frerlab report` reads, as far as the report uses it:
small pydantic models, strict (a string or `true` where a number belongs is refused, not
coerced; no NaN or infinity), extra fields allowed (a result holds more than the report
draws). files.check_shape validates the data read from a file against them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator


Number = float  # strict: an int or a float, never a bool or a string; finite (allow_inf_nan=False)
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]


class _Shape(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="allow")


class Params(_Shape):
    """A point of a step (a group's or a unit's params): the fields the figures put on an axis
    or in a name are numbers (or the tool's name), the others numbers or texts."""

    __pydantic_extra__: dict[str, Number | str | bool | None]
    frame_size: Number | None = None
    load: Number | None = None
    duration_s: Number | None = None
    tool: str | None = None


#: Params every group or unit of a kind must hold (the figures put them on an axis).
REQUIRED_PARAMS = {"loss_vs_load": ("frame_size", "load"), "tcp": ("duration_s",), "throughput": ("frame_size",)}


class _Point(_Shape):
    """A point of a step of some kind (a summary group, a unit): its params hold what that
    kind's figures put on an axis (REQUIRED_PARAMS)."""

    kind: str
    params: Params

    @model_validator(mode="after")
    def _required_params(self) -> _Point:
        missing = [p for p in REQUIRED_PARAMS.get(self.kind, ()) if getattr(self.params, p) is None]
        if missing:
            raise ValueError(f"a {self.kind} point must give {', '.join(missing)}")
        return self


class Metadata(_Shape):
    """metadata.json of a campaign or an import; meta.json of a simulator or fail-over run."""

    kind: str | None = None
    test: str | None = None
    created: Number | str | None = None


class Stat(_Shape):
    n: Count
    mean: Number
    ci_low: Number | None = None
    ci_high: Number | None = None
    cv: Number | None = None


class Group(_Point):
    step: str
    mode: str
    units: Count
    valid_units: Count
    flags: dict[str, Count]
    metrics: dict[str, Stat | None]


class Comparison(_Shape):
    step: str
    params: Params
    metric: str
    refused: str | None = None
    difference: Number | None = None
    ci_low: Number | None = None
    ci_high: Number | None = None
    p: Number | None = None
    hedges_g: Number | None = None
    significant: bool | None = None
    effect: str | None = None

    @model_validator(mode="after")
    def _compared(self) -> Comparison:
        if self.refused is None and None in (self.difference, self.ci_low, self.ci_high, self.p, self.hedges_g,
                                             self.significant, self.effect):
            raise ValueError("a comparison that was not refused must give difference, ci_low, ci_high, p, "
                             "hedges_g, significant and effect")
        return self


class Summary(_Shape):
    """summary.json."""

    groups: list[Group] = []
    comparisons: list[Comparison] = []


class UnitId(_Point):
    id: str
    step: str
    mode: str


class Flag(_Shape):
    name: str


class Unit(_Shape):
    """A campaign's or an import's units/.../result.json; its detail is checked by its kind (DETAILS)."""

    unit: UnitId
    metrics: dict[str, Number | None]
    flags: list[Flag]
    valid: bool
    detail: dict[str, Any]


class SearchTrial(_Shape):
    rate_fps: Number
    duration_s: Number
    loss_ratio: Number
    valid: bool
    counted: bool | None = None


class Goal(_Shape):
    loss_ratio: Number
    rate: Number | None = None


class Search(_Shape):
    """A throughput unit's detail, when it kept its trials."""

    line_rate_fps: Positive
    trials: list[SearchTrial]
    goals: list[Goal]
    search: str
    total_trial_s: Number


class SweepTrial(_Shape):
    phase: str
    valid: bool
    lost: Count
    load: Number
    loss_ratio: Number
    duration_s: Number


class Sweep(_Shape):
    """A threshold-sweep unit's detail, when it kept its trials."""

    trials: list[SweepTrial]


class Phase(_Shape):
    phase: str
    from_s: Number
    to_s: Number
    sent: Count
    received: Count
    lost: Count
    duplicates: Count


class Interval(_Shape):
    t_s: Number
    received: Count


class Event(_Shape):
    t_s: Number
    path: str
    up: bool


class Failover(_Shape):
    """A fail-over run's result.json, or a campaign's fail-over unit's detail."""

    mode: str | None = None
    verdict: str = ""
    phases: list[Phase] = []
    intervals: list[Interval] = []
    events: list[Event] = []
    meta: dict[str, Any] = {}

    @model_validator(mode="after")
    def _increasing(self) -> Failover:
        starts = [i.t_s for i in self.intervals]
        if any(b <= a for a, b in zip(starts, starts[1:])):
            raise ValueError("the intervals' t_s must increase")
        return self


class FailoverRun(Failover):
    """A fail-over run's own result.json (`frerlab failover`, `frerlab demo --output`)."""

    mode: str


class Recovery(_Shape):
    """What one recovery function counted over a trial, and how it was configured."""

    config: dict[str, Number | str | bool | None] = {}
    counters: dict[str, Count]


class Evidence(RootModel[dict[str, dict[str, dict[str, Recovery]]]]):
    """A trial record's `frer` (frerlab.bench.trial): node -> stream handle -> recovery function."""

    model_config = ConfigDict(strict=True)


#: A unit's detail by the unit's kind; throughput and threshold-sweep details only when they
#: kept their trials (a unit whose tool failed first has none).
DETAILS: dict[str, type[_Shape]] = {"throughput": Search, "threshold_sweep": Sweep, "failover": Failover}


class TimelineEvent(_Shape):
    what: str
    t_ms: Number


class Timeline(_Shape):
    """timeline.json of a fail-over run."""

    bin_ms: Positive
    series: dict[str, list[Count]]
    events: list[TimelineEvent] = []
    complete: bool | None = None


class AttackListener(_Shape):
    """What the listener counted of an attack run's genuine stream and of the forged frames."""

    expected: Count
    received: Count
    lost: Count
    lost_to_outage: Count
    lost_to_attack: Count
    duplicates: Count
    forged: Count


class AttackInterval(_Shape):
    """One sequence bin of an attack run: the genuine frames sent, received, lost and duplicated
    in it and the forged frames delivered in their place."""

    t_s: Number
    sent: Count
    received: Count
    lost: Count
    duplicates: Count
    forged: Count


class AttackStep(_Shape):
    what: str
    t_s: Number


def _span(values: list[float] | None, name: str) -> None:
    if values is not None and (len(values) != 2 or values[0] > values[1]):
        raise ValueError(f"{name} must be [from, to] with from <= to")


class AttackRun(_Shape):
    """result.json of an attack run (`frerlab attack run`, each run of `frerlab attack suite`)."""

    attack: str
    values: str
    path: str
    node: str
    algorithm: str
    history_length: Count
    reset_timeout_s: Number
    listener: AttackListener
    recovery: dict[str, Count]
    individual: dict[str, Count] | None = None
    port: dict[str, Count] = {}
    latent: dict[str, Number | bool | None] = {}
    injected: dict[str, Number | str | None] = {}
    intervals: list[AttackInterval]
    attack_s: list[Number] | None = None
    recovered_s: Number | None = None
    detected_by: list[str]
    verdict: str
    run: list[AttackStep] = []

    @model_validator(mode="after")
    def _ordered(self) -> AttackRun:
        starts = [i.t_s for i in self.intervals]
        if any(b <= a for a, b in zip(starts, starts[1:])):
            raise ValueError("the intervals' t_s must increase")
        _span(self.attack_s, "attack_s")
        return self


class _Range(RootModel[list[Number]]):
    """[low, high] over a group's runs."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False)

    @model_validator(mode="after")
    def _ordered(self) -> _Range:
        _span(self.root, "a range")
        return self


class _CountRange(_Range):
    @model_validator(mode="after")
    def _counts(self) -> _CountRange:
        if min(self.root) < 0:
            raise ValueError("a range of counts must not go below 0")
        return self


class SuiteStream(_Shape):
    rate_fps: Positive
    frame_size: Positive
    duration_s: Positive
    interval_s: Positive


class SuiteRow(_Shape):
    """One run of an attack suite."""

    algorithm: str
    attack: str
    defence: str
    repetition: Count
    lost_to_attack: Count
    duplicates: Count
    forged: Count
    recovered_s: Number | None = None
    detected_by: str = ""
    verdict: str = ""


class SuiteGroup(_Shape):
    """Per algorithm, attack and defence of an attack suite: n and each count's range over the runs."""

    algorithm: str
    attack: str
    defence: str
    n: Annotated[int, Field(ge=1)]
    lost_to_attack: _CountRange
    duplicates: _CountRange
    forged: _CountRange
    lost_to_outage: _CountRange | None = None
    rogue: _CountRange | None = None
    guard_alarms: _CountRange | None = None
    recovered_s: _Range | None = None
    detected_by: list[str] = []


class Suite(_Shape):
    """suite.json of `frerlab attack suite`: the settings it was measured on (the stream, and
    any other key beside runs and groups), a row per run and a group per algorithm, attack and
    defence."""

    stream: SuiteStream
    runs: list[SuiteRow]
    groups: list[SuiteGroup]
    testbed: dict[str, Number | str | bool | None] | None = None
    guard: dict[str, Number | str | bool | None] | None = None
    police: Number | str | None = None
