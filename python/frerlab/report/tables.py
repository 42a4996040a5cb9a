"""The report's tables, from stored results only: every figure with its statistics and the
validity flags that kept units out; FRER vs control within a results directory (from its
summary); and the comparison of two or more directories, each against the first, per step,
mode, point and metric, with Welch's t-test and Hedges' g over the valid repetitions. A
comparison that the data cannot support (fewer than two valid values on a side, no spread)
says why instead of showing a number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from frerlab.bench import stats
from frerlab.report.sources import Source


@dataclass
class Table:
    """A titled table: column names and rows of cells (numbers stay numbers, for sorting)."""

    id: str
    title: str
    caption: str
    columns: list[str]
    rows: list[list[Any]]


def build(sources: list[Source]) -> list[Table]:
    """Every table the stored results support."""
    found = [statistics(sources), frer_vs_control(sources)]
    if sum(1 for s in sources if s.units) > 1:
        found.append(directories(sources))
    found.append(failovers(sources))
    return [t for t in found if t.rows]


def _params(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def statistics(sources: list[Source]) -> Table:
    rows = []
    for s in sources:
        for g in s.summary.get("groups", []):
            flags = ", ".join(f"{k} ({v})" for k, v in g["flags"].items())
            for name, m in g["metrics"].items():
                rows.append([s.label, g["step"], g["mode"], _params(g["params"]), name,
                             *([m["n"], m["mean"], m["ci_low"], m["ci_high"], m["cv"]] if m else [0, None, None, None, None]),
                             f"{g['valid_units']}/{g['units']}", flags])
    return Table("statistics", "Every figure with its statistics",
                 "Per results directory, step, mode and point: each metric over the valid repetitions (n, mean, 95 % "
                 "interval, coefficient of variation). 'valid' counts the units no flag invalidated; only those are "
                 "in the statistics. Flags give the number of units that raised them.",
                 ["results", "step", "mode", "point", "metric", "n", "mean", "95 % low", "95 % high", "CV", "valid",
                  "flags"], rows)


def frer_vs_control(sources: list[Source]) -> Table:
    rows = []
    for s in sources:
        for c in s.summary.get("comparisons", []):
            if "refused" in c:
                rows.append([s.label, c["step"], _params(c["params"]), c["metric"], None, None, None, None, None,
                             "", c["refused"]])
            else:
                rows.append([s.label, c["step"], _params(c["params"]), c["metric"], c["difference"], c["ci_low"],
                             c["ci_high"], c["p"], c["hedges_g"], "yes" if c["significant"] else "no", c["effect"]])
    return Table("frer-vs-control", "FRER vs control",
                 "Within each results directory: FRER − control per step, point and metric, over the valid "
                 "repetitions of each mode, with the 95 % interval of the difference, Welch's t-test (p) and Hedges' g.",
                 ["results", "step", "point", "metric", "FRER − control", "95 % low", "95 % high", "p", "Hedges' g",
                  "significant at 5 %", "effect / why not"], rows)


def _values(source: Source) -> dict[tuple[str, str, str, str], tuple[list[float], int, set[str]]]:
    """(step, mode, point, metric) -> (the valid units' values, how many units, their flag names)."""
    values: dict[tuple, list[float]] = {}
    units: dict[tuple, int] = {}
    flags: dict[tuple, set[str]] = {}
    for u in source.units:
        unit = u["unit"]
        for name, value in u["metrics"].items():
            key = (unit["step"], unit["mode"], _params(unit["params"]), name)
            units[key] = units.get(key, 0) + 1
            flags.setdefault(key, set()).update(f["name"] for f in u["flags"])
            if u["valid"] and value is not None:
                values.setdefault(key, []).append(value)
    return {key: (values.get(key, []), n, flags[key]) for key, n in units.items()}


def directories(sources: list[Source]) -> Table:
    """Each directory after the first against the first."""
    with_units = [s for s in sources if s.units]
    base, rows = with_units[0], []
    base_values = _values(base)
    for other in with_units[1:]:
        for key, (values, units, flags) in _values(other).items():
            if key not in base_values:
                continue
            b_values, b_units, b_flags = base_values[key]
            cells = [other.label, base.label, *key, f"{len(values)}/{units}", f"{len(b_values)}/{b_units}"]
            try:
                c = stats.welch(values, b_values)
                cells += [c.difference, c.low, c.high, c.p, c.hedges_g, "yes" if c.significant else "no", c.size]
            except ValueError as err:
                cells += [None, None, None, None, None, "", str(err)]
            rows.append(cells + [", ".join(sorted(flags | b_flags))])
    return Table("directories", f"Results compared with {base.label}",
                 f"Each other results directory minus {base.label}, per step, mode, point and metric present in both, "
                 "over the valid units of each (valid/all), with the 95 % interval of the difference, Welch's "
                 "t-test and Hedges' g. Flags raised on either side are listed; flagged units that were invalid are "
                 "in neither mean.",
                 ["results", "baseline", "step", "mode", "point", "metric", "valid", "baseline valid", "difference",
                  "95 % low", "95 % high", "p", "Hedges' g", "significant at 5 %", "effect / why not", "flags"], rows)


def failovers(sources: list[Source]) -> Table:
    rows = []
    for s in sources:
        for mode, result, _ in s.failovers:
            for p in result.get("phases", []):
                rows.append([s.label, mode, p["phase"], p["from_s"], p["to_s"], p["sent"], p["received"], p["lost"],
                             p["duplicates"]])
    return Table("failover-phases", "Fail-over phases",
                 "Each fail-over run's frames per phase, counted by the phase they were due to be sent in.",
                 ["results", "mode", "phase", "from s", "to s", "sent", "received", "lost", "duplicated"], rows)
