"""RFC 2544 section 26.1 throughput at one frame size: the seeds' binary search or the RFC
9971-style search (frerlab.bench.search) over frerlab generator trials across the testbed.
Rates are frames/s; loads are percent of the line rate. Every trial keeps its raw reports in
`trials/NNN/`, and a trial that a flag invalidates (generator shortfall, loss at either host)
is retried instead of being counted as the DUT's loss."""

from __future__ import annotations

from collections import Counter

from frerlab.bench.campaign import BinarySearch, Throughput
from frerlab.bench.search import (GeneratorShortfall, Goal, SearchResult, TrialResult, binary_search,
                                  mlr_search)
from frerlab.bench.steps import Context, result
from frerlab.bench.trial import Flag, TrialOutcome, generator_trial


def run(ctx: Context, step: Throughput, params: dict) -> dict:
    frame = params["frame_size"]
    line = ctx.target.line_rate_fps(frame)
    outcomes: list[TrialOutcome] = []

    def trial(rate_fps: float, duration_s: float) -> TrialResult:
        ctx.note(f"{frame} B at {rate_fps / line:.2%} of line rate for {duration_s:g} s")
        t = generator_trial(ctx.target, frame, rate_fps, duration_s, ctx.out / "trials" / f"{len(outcomes):03d}",
                            send_tolerance=step.send_tolerance, attempts=1)  # the search retries
        outcomes.append(t)
        reasons = [f.detail for f in t.flags if f.invalidates and f.name != "generator_shortfall"]
        return TrialResult(t.offered, t.sent, t.received, duration_s, "; ".join(reasons) or None)

    low, high = line * step.min_load / 100, line * step.max_load / 100
    search = step.search
    try:
        if isinstance(search, BinarySearch):
            found = binary_search(trial, low, high, iterations=search.iterations, trial_duration_s=search.trial_s,
                                  loss_threshold=search.loss_threshold, send_tolerance=step.send_tolerance)
        else:
            goals = [Goal(g.loss_ratio, g.final_trial_s, g.duration_sum_s or g.final_trial_s, g.exceed_ratio,
                          g.relative_width) for g in search.goals]
            found = mlr_search(trial, max(low, high / 1000), high, goals,
                               initial_trial_duration_s=search.initial_trial_s, phases=search.phases,
                               send_tolerance=step.send_tolerance)
    except GeneratorShortfall as err:
        # the search stopped at a rate the generator could not offer: what it ran so far is kept
        # (a report draws it), with no rate found for any goal
        ratios = [search.loss_threshold] if isinstance(search, BinarySearch) else [g.loss_ratio for g in search.goals]
        return result({}, [*_flags(outcomes), Flag("failed", str(err), True)],
                      _detail(line, search.kind, outcomes, SearchResult([], err.records),
                              [{"loss_ratio": r, "rate": None} for r in ratios]))
    return result(_metrics(found, frame, line), _flags(outcomes),
                  _detail(line, search.kind, outcomes, found, [vars(g) for g in found.goals]))


def _detail(line: float, kind: str, outcomes: list[TrialOutcome], ran: SearchResult, goals: list[dict]) -> dict:
    """The search as run: every trial's record, and whether the search counted it."""
    return {"line_rate_fps": line, "search": kind, "total_trial_s": ran.total_trial_s, "goals": goals,
            "trials": [{**t.record(), "counted": r.valid} for t, r in zip(outcomes, ran.trials)]}


def _metrics(found: SearchResult, frame: int, line: float) -> dict:
    metrics: dict[str, float | None] = {}
    for g in found.goals:
        key = f"loss_{g.loss_ratio:g}"
        metrics[f"throughput_fps_{key}"] = g.rate
        metrics[f"throughput_mbps_{key}"] = None if g.rate is None else g.rate * frame * 8 / 1e6
        metrics[f"throughput_load_{key}"] = None if g.rate is None else g.rate / line * 100
    metrics["trials"] = len(found.trials)
    metrics["trial_seconds"] = found.total_trial_s
    return metrics


def _flags(outcomes: list[TrialOutcome]) -> list[Flag]:
    """What the search saw, one warning per flag name with its count: invalid trials were
    retried, and the search stopped when no attempt at a rate was valid."""
    counts = Counter(f.name for t in outcomes for f in {g.name: g for g in t.flags}.values())
    first = {f.name: f for t in reversed(outcomes) for f in t.flags}
    return [Flag(name, f"{n} of {len(outcomes)} trials, e.g. {first[name].detail}", False) for name, n in counts.items()]
