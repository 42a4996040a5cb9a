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
