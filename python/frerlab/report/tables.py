"""The report's tables, from stored results only: every measure with its statistics; FRER
against control within a results directory; each directory against the first; FRER's own
counters per unit next to its loss; every invalid or flagged unit with its flags; the fail-over
phases.

Comparisons match units by what they measured (report.measures.Key), compare only outcomes (not
set-points or sample tallies), compare rates in percent of each directory's line rate when the
rates differ, and call a difference significant only when Welch's test says so at 5 % AND it
exceeds the set-point resolution of the searches or sweeps behind it. A comparison the data
cannot support (n = 1, a censored value, no valid unit, no spread) says why instead."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from frerlab.bench import stats
from frerlab.report.chart import mode_name
from frerlab.bench.metrics import RATE
from frerlab.report.measures import Measure, line_rate_bps, measures, system_text
from frerlab.report.sources import Source


@dataclass(frozen=True)
class Cell:
    """A cell whose text is not just its number: `value` sorts it (and is the number a test
    compares), `text` is shown, `title` explains it on hover."""

    value: float | None
    text: str
    title: str = ""


@dataclass
class Table:
    """A titled table: column names and rows of cells (numbers stay numbers, for sorting)."""

    id: str
    title: str
    caption: str
    columns: list[str]
    rows: list[list[Any]]


@dataclass(frozen=True)
class Difference:
    """a − b of two measures, or why there is none."""

    difference: float | None = None
    low: float | None = None
    high: float | None = None
    p: float | None = None
    hedges_g: float | None = None
    significant: str = ""
    why: str = ""


def compare(a: Measure, b: Measure, scale_a: float = 1.0, scale_b: float = 1.0) -> Difference:
    """a − b over their valid repetitions (values times their scale), with Welch's test;
    significant only beyond the larger set-point resolution of the two."""
    for m in (a, b):
        if not m.n:
            return Difference(why=f"{mode_name(m.mode)} ({m.source.label}): {m.why_none()}")
        if m.censored():
            return Difference(why=f"{mode_name(m.mode)} ({m.source.label}) is censored: found at the top of its search "
                                  "(≥)")
    xa, xb = [v * scale_a for v in a.values], [v * scale_b for v in b.values]
    difference = sum(xa) / len(xa) - sum(xb) / len(xb)
    if a.n < 2 or b.n < 2:
        return Difference(difference, why=f"n = {a.n} and {b.n}: no interval (one run{'s' if a.n > 1 or b.n > 1 else ''} "
                                          "a side)")
    if len(set(xa) | set(xb)) == 1:
        return Difference(0.0, why=f"both {xa[0]:g} in every repetition")
    try:
        c = stats.welch(xa, xb)
    except ValueError as err:
        return Difference(difference, why=str(err))
    resolutions = [r * s for r, s in ((a.resolution(), scale_a), (b.resolution(), scale_b)) if r is not None]
    resolution = max(resolutions) if resolutions else 0.0
    above = abs(c.difference) > resolution
    why = c.size + ("" if above else f"; within the set-point resolution {resolution:.3g}")
    return Difference(c.difference, c.low, c.high, c.p, c.hedges_g, "yes" if c.significant and above else "no", why)


def build(sources: list[Source], line_rate: float | None = None) -> list[Table]:
    """Every table the stored results support."""
    found = [statistics(sources), frer_vs_control(sources)]
    if sum(1 for s in sources if s.units) > 1:
        found.append(directories(sources, line_rate))
    found += [evidence(sources), flagged(sources), failovers(sources)]
    return [t for t in found if t.rows]


def _interval_cells(m: Measure) -> list[Any]:
    i = m.interval()
    if i is None:
        return [0, None, None, None, "no valid value"]
    return [i.n, i.estimate, i.low, i.high, i.method if i.low is not None else f"n = {i.n}: no interval"]


def _valid(m: Measure) -> str:
    return f"{sum(1 for u, _ in m.units if u['valid'])}/{len(m.units)}"


def _flag_counts(m: Measure) -> str:
    counts: dict[str, int] = {}
    for u, _ in m.units:
        for name in {f["name"] for f in u["flags"]}:
            counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{k} ({v})" for k, v in sorted(counts.items()))


def statistics(sources: list[Source]) -> Table:
    rows = []
    for s in sources:
        for (_, key, name), m in sorted(measures(s).items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
            rows.append([s.label, key.kind, mode_name(m.mode), key.text(), name, m.metric.unit, *_interval_cells(m),
                         _valid(m), _flag_counts(m)])
    return Table("statistics", "Every measure with its statistics",
                 "Per results directory, mode and point (what was measured, whatever the step was called): each metric "
                 "over the valid repetitions, with its 95 % interval where n ≥ 2: loss ratios pool the repetitions' "
                 "frames (quasi-binomial Clopper-Pearson), other non-negative quantities use Student's t, or t on "
                 "log(1 + x) where that would go below 0. 'valid' counts the units no flag invalidated; flags give "
                 "the number of units that raised them.",
                 ["results", "kind", "mode", "point", "metric", "unit", "n", "estimate", "95 % low", "95 % high",
                  "interval", "valid", "flags"], rows)


def _difference_cells(d: Difference) -> list[Any]:
    return [d.difference, d.low, d.high, d.p, d.hedges_g, d.significant, d.why]


DIFFERENCE_COLUMNS = ["difference", "95 % low", "95 % high", "p", "Hedges' g", "significant", "effect / why not"]


def frer_vs_control(sources: list[Source]) -> Table:
    rows = []
    for s in sources:
        found = measures(s)
        for (mode, key, name), frer in sorted(found.items(), key=lambda kv: (kv[0][1], kv[0][2])):
            control = found.get(("control", key, name))
            if mode != "frer" or control is None or not frer.metric.outcome:
                continue
            rows.append([s.label, key.kind, key.text(), frer.metric.label, frer.metric.unit,
                         *_difference_cells(compare(frer, control))])
    return Table("frer-vs-control", "FRER vs control",
                 "Within each results directory: FRER − control per point and outcome, over the valid repetitions of "
                 "each mode, with the 95 % interval of the difference, Welch's t-test (p) and Hedges' g. 'significant' "
                 "needs p < 0.05 and a difference larger than the set-point resolution of the searches or sweeps "
                 "behind it.",
                 ["results", "kind", "point", "measure", "unit", *DIFFERENCE_COLUMNS], rows)


def _normalised(m: Measure, rate: float | None, differ: bool) -> tuple[float, str] | None:
    """The scale and unit a measure is compared in across directories: rates in percent of the
    directory's line rate when the line rates differ; None when that is not known."""
    if not differ or m.metric.quantity != RATE:
        return 1.0, m.metric.unit
    if not rate or not m.metric.unit.startswith("Mbit/s"):
        return None
    return 1e6 / rate * 100, "% of line rate"


def directories(sources: list[Source], line_rate: float | None = None) -> Table:
    """Each directory after the first against the first, point by point (what was measured)."""
    with_units = [s for s in sources if s.units]
    base = with_units[0]
    base_found = measures(base)
    rows = []
    for other in with_units[1:]:
        rates = (line_rate_bps(base, line_rate), line_rate_bps(other, line_rate))
        differ = rates[0] != rates[1]
        for (mode, key, name), m in sorted(measures(other).items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
            b = base_found.get((mode, key, name))
            if b is None or not m.metric.outcome:
                continue
            scales = _normalised(m, rates[1], differ), _normalised(b, rates[0], differ)
            if None in scales:
                rows.append([other.label, base.label, key.kind, mode_name(mode), key.text(), m.metric.label,
                             m.metric.unit, _valid(m), _valid(b), *_difference_cells(Difference(
                                 why="line rates differ and one is unknown: not comparable"))])
                continue
            (sa, unit), (sb, _) = scales
            rows.append([other.label, base.label, key.kind, mode_name(mode), key.text(), m.metric.label, unit,
                         _valid(m), _valid(b), *_difference_cells(compare(m, b, sa, sb))])
    systems = {s.label: system_text(s) for s in with_units}
    same = len(set(systems.values())) == 1
    return Table("directories", f"Results compared with {base.label}",
                 ("" if same else "These results were measured on different systems: "
                  + "; ".join(f"{k}: {v}" for k, v in systems.items()) + ". ")
                 + f"Each other directory minus {base.label}, per mode and point measured in both (matched by kind, "
                 "frame size, load in % of the line rate, tool and duration, not by step name), over the valid units of "
                 "each (valid/all). Rates are compared in % of each directory's own line rate when the rates differ; "
                 "loads are always in % of the line rate. 'significant' needs p < 0.05 and a difference beyond the "
                 "set-point resolution.",
                 ["results", "baseline", "kind", "mode", "point", "measure", "unit", "valid", "baseline valid",
                  *DIFFERENCE_COLUMNS], rows)


#: Counters of a recovery function shown per unit (802.1CB clause 10.8), in this order.
RECOVERY_COUNTERS = ("passed_packets", "discarded_packets", "out_of_order_packets", "rogue_packets", "lost_packets",
                     "tagless_packets", "resets")


def evidence(sources: list[Source]) -> Table:
    """Per unit that recorded them (frerlab.bench.trial: detail "frer", node -> stream handle ->
    recovery function -> its config and counter differences over the trial): what the listener
    saw and what each recovery function counted."""
    rows = []
    for s in sources:
        for u in s.units:
            d, unit = u["detail"], u["unit"]
            for node, streams in (d.get("frer") or {}).items():
                for handle, functions in streams.items():
                    for function, recorded in functions.items():
                        counters, config = recorded.get("counters", {}), recorded.get("config", {})
                        if not any(counters.values()):  # a function the stream does not pass (the other direction)
                            continue
                        rows.append([s.label, unit["id"], "yes" if u["valid"] else "no", u["metrics"].get("loss_percent"),
                                     d.get("lost"), d.get("duplicates"), d.get("reordered"),
                                     f"{node} stream {handle} {function}", *(counters.get(c) for c in RECOVERY_COUNTERS),
                                     config.get("algorithm"), config.get("history_length")])
    return Table("frer-evidence", "FRER's own evidence",
                 "Per unit whose data plane reported them (campaigns on a frerlab testbed in FRER mode): the loss and "
                 "what the listener saw (lost, duplicate and out-of-order frames after elimination) next to each "
                 "recovery function's IEEE 802.1CB clause-10 counters over the trial and its history window. The "
                 "counters see every frame of the stream, end-of-stream probes too; a recovery function idle for longer "
                 "than its reset timeout between trials resets once at the trial's first frame.",
                 ["results", "unit", "valid", "loss %", "listener: lost", "listener: duplicates",
                  "listener: out of order", "recovery function", "passed", "discarded", "out of order", "rogue", "lost",
                  "tagless", "resets", "algorithm", "window"], rows)


def flagged(sources: list[Source]) -> Table:
    rows = [[s.label, u["unit"]["id"], "invalid" if not u["valid"] else "counted", f["name"],
             "yes" if f.get("invalidates") else "no", f.get("detail", "")]
            for s in sources for u in s.units for f in u["flags"]]
    return Table("flagged-units", "Invalid and flagged units",
                 "Every unit a validity flag was raised on, with the flag's evidence. An invalid unit is in no mean "
                 "and no comparison; the figures draw it as ▼ at its place.",
                 ["results", "unit", "unit is", "flag", "invalidates", "evidence"], rows)


def failovers(sources: list[Source]) -> Table:
    rows = []
    for s in sources:
        for mode, result, _ in s.failovers:
            for p in result.get("phases", []):
                rows.append([s.label, mode_name(mode), p["phase"], p["from_s"], p["to_s"], p["sent"], p["received"],
                             p["lost"], p["duplicates"]])
    return Table("failover-phases", "Fail-over phases",
                 "Each fail-over run's frames per phase, counted by the phase they were due to be sent in.",
                 ["results", "mode", "phase", "from s", "to s", "sent", "received", "lost", "duplicated"], rows)
