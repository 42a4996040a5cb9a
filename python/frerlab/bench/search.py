"""RFC 2544 26.1 throughput searches over a trial callback, with no I/O of their own.

A trial is `trial(rate, duration_s) -> TrialResult`: offer `rate` (any unit the caller likes,
bit/s or frames/s, as long as it is one) for `duration_s` and count frames offered, actually
sent and received. The loss ratio is (sent - received) / sent. A trial whose generator sent
fewer than `offered * (1 - send_tolerance)` frames, or that the caller marks `invalid`, is
INVALID: it is retried (at most `invalid_retries` times) and never counted as loss of the
device under test; when every retry is invalid the search stops with GeneratorShortfall naming
the rate.

`binary_search` is the seeds' search (seed 002, section 2.2): `iterations` halvings of
[min_rate, max_rate], each one trial of `trial_duration_s`, a trial passing when its loss
ratio is at most `loss_threshold`; it reports the last passing midpoint.

`mlr_search` follows RFC 9971 (MLRsearch) as the project's benchmarking notes describe it:
every `Goal` (loss ratio, final trial duration, duration sum, exceed ratio, relative width)
shares one database of trials, so NDR and PDR come out of one search. A load is a lower bound
of a goal when, counting the trial time still missing to the duration sum as exceeding, at
most `exceed_ratio` of the duration sum exceeded the goal's loss ratio; an upper bound when,
counting the missing time as not exceeding, more than that exceeded. Only full-length trials
count as not exceeding; a short trial that exceeded counts as a full-length one that exceeded
unless a trial at least as long at the same load did not exceed (loss builds up over a trial,
so a load that loses in 1 s loses in 30 s; the exception keeps a noisy short trial from
deciding against a longer one). The search runs in phases whose trial durations grow geometrically from
`initial_trial_duration_s` to the final one while the width shrinks to the goal's: short
trials place the interval, full-length trials only decide loads next to the boundary. The
first trial is at `max_rate`. The next load is guessed from the longest trial at the upper
bound: the rate it received divided by (1 - goal loss ratio), the load at which a device that
forwards no more than that would just meet the goal (for a phase longer than that trial, the
receive rate is first extrapolated as capacity + buffer / duration from failed trials of two
durations). The search tries the guess when it lies more than half the phase's width above
the lower bound and below every load the phase has not decided yet (a load that passed only
shorter trials, which a buffer may have flattered); else the highest undecided load, at most
one widening step above the lower bound; else it widens downwards or halves the interval.
Guesses only choose loads: what is reported is decided by trials alone. Short phases decide a
load by one trial. Every reported rate is a lower bound decided by full-length trials at that
rate (its confirmation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from frerlab.errors import UsageError


class GeneratorShortfall(RuntimeError):
    """Every attempt of a trial sent less than it offered: the rate cannot be measured.
    `records` are the trials the search had run, that rate's attempts included."""

    def __init__(self, message: str, records: list[TrialRecord]) -> None:
        super().__init__(message)
        self.records = records


@dataclass(frozen=True)
class TrialResult:
    """What one trial counted: frames offered, sent by the generator and received."""

    offered: int
    sent: int
    received: int
    duration_s: float
    #: Why the trial cannot count however many frames it lost (a flag of frerlab.bench.trial:
    #: lost at the sending or receiving host, say); None when nothing is known against it.
    invalid: str | None = None

    @property
    def loss_ratio(self) -> float:
        """(sent - received) / sent; 0 when nothing was sent."""
        return (self.sent - self.received) / self.sent if self.sent else 0.0

    @property
    def shortfall(self) -> float:
        """The fraction of the offered frames the generator did not send."""
        return (self.offered - self.sent) / self.offered if self.offered else 0.0


Trial = Callable[[float, float], TrialResult]


@dataclass(frozen=True)
class TrialRecord:
    """One trial done by a search: the load asked for, its result and whether it counts."""

    rate: float
    duration_s: float
    result: TrialResult
    valid: bool

    def exceeds(self, loss_ratio: float) -> bool:
        """The trial lost more than `loss_ratio` (only meaningful when valid)."""
        return self.result.loss_ratio > loss_ratio


@dataclass(frozen=True)
class GoalResult:
    """The outcome for one loss-ratio goal: the reported rate and the interval around it."""

    loss_ratio: float
    #: The reported throughput: the highest rate decided as passing (None: even min_rate fails).
    rate: float | None
    #: Highest load that passed below `upper` (None: none passed).
    lower: float | None
    #: Lowest load that failed (None: max_rate passed).
    upper: float | None
    #: The interval is at most the requested relative width (or the rate is max_rate).
    resolved: bool
    relative_width: float


@dataclass
class SearchResult:
    """Every goal's result and every trial done, in order, with their total trial time."""

    goals: list[GoalResult]
    trials: list[TrialRecord] = field(default_factory=list)

    @property
    def total_trial_s(self) -> float:
        """The sum of all trial durations asked for, invalid attempts included."""
        return sum(t.duration_s for t in self.trials)


def _check(name: str, value: float, low: float, high: float, low_open: bool = False, high_open: bool = False) -> None:
    bad = (not isinstance(value, (int, float)) or math.isnan(value) or value < low or value > high
           or (low_open and value == low) or (high_open and value == high))
    if bad:
        valid = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise UsageError(f"{name} {value!r} is out of range {valid}")


def _check_rates(min_rate: float, max_rate: float, zero_ok: bool = False) -> None:
    _check("min_rate", min_rate, 0, math.inf, low_open=not zero_ok, high_open=True)
    if not max_rate > min_rate or math.isinf(max_rate):
        raise UsageError(f"max_rate {max_rate!r} is out of range (above min_rate {min_rate!r}, finite)")


class _Runner:
    """Runs trials through the callback, retrying invalid ones, and keeps every record."""

    def __init__(self, trial: Trial, send_tolerance: float, invalid_retries: int) -> None:
        _check("send_tolerance", send_tolerance, 0, 1, high_open=True)
        if not isinstance(invalid_retries, int) or invalid_retries < 0:
            raise UsageError(f"invalid_retries {invalid_retries!r} is out of range (an integer >= 0)")
        self.trial, self.tolerance, self.retries = trial, send_tolerance, invalid_retries
        self.records: list[TrialRecord] = []

    def run(self, rate: float, duration_s: float) -> TrialRecord:
        """A valid trial at `rate`; GeneratorShortfall when every attempt fell short."""
        for _ in range(self.retries + 1):
            result = self.trial(rate, duration_s)
            record = TrialRecord(rate, duration_s, result, result.shortfall <= self.tolerance and not result.invalid)
            self.records.append(record)
            if record.valid:
                return record
        if result.invalid:
            raise GeneratorShortfall(f"every one of {self.retries + 1} trials at rate {rate:g} was invalid, "
                                     f"the last because {result.invalid}: lower max_rate to what the hosts can do",
                                     self.records)
        raise GeneratorShortfall(
            f"the generator sent {result.sent} of {result.offered} frames at rate {rate:g} "
            f"({result.shortfall:.3%} short, tolerance {self.tolerance:.3%}) in {self.retries + 1} attempts: "
            "lower max_rate to what the generator can send", self.records)


def binary_search(
    trial: Trial, min_rate: float, max_rate: float, iterations: int = 10, trial_duration_s: float = 30.0,
    loss_threshold: float = 1e-5, relative_width: float = 0.005, send_tolerance: float = 0.001,
    invalid_retries: int = 2,
) -> SearchResult:
    """The seeds' binary search (0.001 % = 1e-5 loss, 30 s trials, 10 iterations, min_rate 0):
    each iteration tries the middle of [low, high] (low starting at min_rate untested) and moves low
    up when the loss ratio is at most `loss_threshold`, high down otherwise. The reported rate
    is the final low; `resolved` says whether high - low ended within `relative_width` of high."""
    _check_rates(min_rate, max_rate, zero_ok=True)
    if not isinstance(iterations, int) or not 1 <= iterations <= 64:
        raise UsageError(f"iterations {iterations!r} is out of range (an integer in 1..=64)")
    _check("trial_duration_s", trial_duration_s, 0, math.inf, low_open=True, high_open=True)
    _check("loss_threshold", loss_threshold, 0, 1, high_open=True)
    _check("relative_width", relative_width, 0, 1, low_open=True, high_open=True)
    runner = _Runner(trial, send_tolerance, invalid_retries)
    low, high = min_rate, max_rate
    passed: list[float] = []
    failed: list[float] = []
    for _ in range(iterations):
        mid = (low + high) / 2
        if runner.run(mid, trial_duration_s).exceeds(loss_threshold):
            high = mid
            failed.append(mid)
        else:
            low = mid
            passed.append(mid)
    upper = min(failed) if failed else None
    lower = max((r for r in passed if upper is None or r < upper), default=None)
    goal = GoalResult(loss_threshold, low if passed else None, lower, upper,
                      high - low <= relative_width * high, relative_width)
    return SearchResult([goal], runner.records)


@dataclass(frozen=True)
class Goal:
    """One search goal of RFC 9971: the loss ratio a load may show, how long trials last at the
    end, how much trial time at one load decides it, which fraction of that time may exceed
    the loss ratio and the relative width of the final interval."""

    loss_ratio: float = 0.0
    final_trial_duration_s: float = 30.0
    duration_sum_s: float = 30.0
    exceed_ratio: float = 0.5
    relative_width: float = 0.005

    def __post_init__(self) -> None:
        _check("loss_ratio", self.loss_ratio, 0, 1, high_open=True)
        _check("final_trial_duration_s", self.final_trial_duration_s, 0, math.inf, low_open=True, high_open=True)
        if not self.final_trial_duration_s <= self.duration_sum_s < math.inf:
            raise UsageError(f"duration_sum_s {self.duration_sum_s!r} is out of range "
                             f"([final_trial_duration_s {self.final_trial_duration_s:g}, inf))")
        _check("exceed_ratio", self.exceed_ratio, 0, 1, high_open=True)
        _check("relative_width", self.relative_width, 0, 1, low_open=True, high_open=True)


NDR = Goal(loss_ratio=0.0)
PDR = Goal(loss_ratio=0.005)


@dataclass(frozen=True)
class _Phase:
    """One phase of the search for one goal: the trial duration, the duration sum that
    decides a load and the relative width to reach."""

    duration_s: float
    duration_sum_s: float
    width: float


def _phases(goal: Goal, initial_s: float, count: int) -> list[_Phase]:
    """`count` phases of short trials, durations geometric from initial_s, each width half the
    previous, ending with the goal's own final phase."""
    ratio = (goal.final_trial_duration_s / initial_s) ** (1 / count) if count else 1.0
    short = [_Phase(initial_s * ratio**k, initial_s * ratio**k, goal.relative_width * 2 ** (count - k))
             for k in range(count)]
    return short + [_Phase(goal.final_trial_duration_s, goal.duration_sum_s, goal.relative_width)]


def _classify(records: list[TrialRecord], goal: Goal, phase: _Phase) -> str:
    """'lower', 'upper' or 'undecided' for the valid trials at one load (see the module doc)."""
    full = [t for t in records if t.duration_s >= phase.duration_s]
    passed = [t.duration_s for t in records if not t.exceeds(goal.loss_ratio)]
    good = sum(t.duration_s for t in full if not t.exceeds(goal.loss_ratio))
    bad = sum(t.duration_s for t in full if t.exceeds(goal.loss_ratio))
    bad += phase.duration_s * sum(t.duration_s < phase.duration_s and t.exceeds(goal.loss_ratio)
                                  and not any(d >= t.duration_s for d in passed) for t in records)
    allowed = goal.exceed_ratio * phase.duration_sum_s
    missing = max(0.0, phase.duration_sum_s - good - bad)
    if bad > allowed:
        return "upper"
    if bad + missing <= allowed:
        return "lower"
    return "undecided"


def _guess(upper: list[TrialRecord], failed: list[TrialRecord], goal: Goal, phase: _Phase) -> float:
    """The load that would just meet the goal if the device forwards at most what it received
    in the longest trial at the upper bound, a quarter width below so that it passes. When
    that trial is shorter than the phase's, the receive rate is extrapolated to the phase's
    duration from the `failed` trials of the two longest durations, as a device with a buffer
    behaves: received rate = capacity + buffer / duration."""
    longest = max(upper, key=lambda t: t.duration_s)
    received = longest.rate * (1 - longest.result.loss_ratio)
    durations = sorted({t.duration_s for t in failed})[-2:]
    if longest.duration_s < phase.duration_s and len(durations) == 2:
        d1, d2 = durations
        r1, r2 = (max(t.rate * (1 - t.result.loss_ratio) for t in failed if t.duration_s == d) for d in durations)
        buffer = (r1 - r2) / (1 / d1 - 1 / d2)
        if buffer > 0:
            received = min(received, r2 - buffer / d2 + buffer / phase.duration_s)
    return received / (1 - goal.loss_ratio) * (1 - phase.width / 4)


def mlr_search(
    trial: Trial, min_rate: float, max_rate: float, goals: list[Goal] | None = None,
    initial_trial_duration_s: float = 1.0, phases: int = 2, send_tolerance: float = 0.001,
    invalid_retries: int = 2,
) -> SearchResult:
    """One search for every goal (default NDR and PDR 0.5 %) after RFC 9971; see the module
    doc. `phases` short phases precede each goal's final one. GoalResult.rate is the lower bound
    of the final phase, None when min_rate is an upper bound."""
    _check_rates(min_rate, max_rate)
    goals = [NDR, PDR] if goals is None else list(goals)
    if not goals:
        raise UsageError("goals [] is empty (give at least one Goal)")
    if not isinstance(phases, int) or not 0 <= phases <= 10:
        raise UsageError(f"phases {phases!r} is out of range (an integer in 0..=10)")
    shortest = min(g.final_trial_duration_s for g in goals)
    _check("initial_trial_duration_s", initial_trial_duration_s, 0, shortest, low_open=True)
    runner = _Runner(trial, send_tolerance, invalid_retries)
    at: dict[float, list[TrialRecord]] = {}

    def measure(rate: float, duration_s: float) -> None:
        at.setdefault(rate, []).append(runner.run(rate, duration_s))

    def bounds(goal: Goal, phase: _Phase) -> tuple[float | None, float | None, list[float]]:
        kinds = {rate: _classify(records, goal, phase) for rate, records in at.items()}
        upper = min((r for r, k in kinds.items() if k == "upper"), default=None)
        lower = max((r for r, k in kinds.items() if k == "lower" and (upper is None or r < upper)), default=None)
        undecided = [r for r, k in kinds.items() if k == "undecided"
                     and (lower is None or r > lower) and (upper is None or r < upper)]
        return lower, upper, undecided

    measure(max_rate, initial_trial_duration_s)
    plans = [_phases(goal, initial_trial_duration_s, phases) for goal in goals]
    for k in range(phases + 1):
        for goal, plan in zip(goals, plans):
            phase = plan[k]
            step = phase.width * 0.9
            while True:
                lower, upper, undecided = bounds(goal, phase)
                if upper is not None and lower is not None and upper - lower <= phase.width * upper:
                    break
                guess = None
                if upper is not None:
                    failed = [t for records in at.values() for t in records if t.exceeds(goal.loss_ratio)]
                    guess = _guess(at[upper], failed, goal, phase)
                floor = min_rate if lower is None else lower * (1 + phase.width / 2)
                if guess is not None and floor < guess < min(undecided, default=upper):
                    rate = guess
                elif undecided:
                    rate = max(undecided) if lower is None else min(max(undecided), lower * (1 + step))
                elif upper is None:
                    if lower == max_rate:
                        break
                    rate = max_rate
                elif lower is None and upper <= min_rate:
                    break
                elif lower is None:
                    rate, step = max(min_rate, upper * (1 - step)), step * 2
                else:
                    rate, step = min((lower + upper) / 2, lower * (1 + step)), step * 2
                measure(rate, phase.duration_s)
    results = []
    for goal, plan in zip(goals, plans):
        lower, upper, _ = bounds(goal, plan[-1])
        resolved = upper is None or (lower is not None and upper - lower <= goal.relative_width * upper)
        results.append(GoalResult(goal.loss_ratio, lower, lower, upper, resolved, goal.relative_width))
    return SearchResult(results, runner.records)
