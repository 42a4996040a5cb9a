"""Grids over any scenario field, run in parallel processes with progress on stderr, and the
RFC 2544 binary search for the highest zero-loss rate.

A grid is a mapping from dotted field paths to lists of values; every combination is one run.
The result is one DataFrame row per run and stream: the grid values as columns, then the
stream metrics.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from frerlab.errors import UsageError
from frerlab.sim.api import SimResult, check, run, scenario_data
from frerlab.sim.cost import Cost
from frerlab.sim.scenario import Scenario
from frerlab.names import shown
from frerlab.sim.units import rate_bps

MAX_SWEEP_POINTS = 10_000


def summary_table(result: SimResult) -> pd.DataFrame:
    """The stream table with run speed columns, the unit of a sweep's results."""
    table = result.streams.copy()
    table["events"] = result.run_info["events"]
    table["wall_seconds"] = result.run_info["wall_seconds"]
    return table


def elapsed_since(start: float) -> str:
    """Seconds since `start` as a short string, for progress lines."""
    return f"{time.monotonic() - start:.1f}s"


def grid_points(grid: object) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in order (the last field varies fastest)."""
    if not isinstance(grid, dict):
        raise UsageError(f"sweep {shown(grid)} is not valid (a mapping of field paths to lists of values)")
    for name, values in grid.items():
        if not isinstance(name, str):
            raise UsageError(f"sweep field {shown(name)} is not a field path (e.g. streams.udp.rate)")
        if not isinstance(values, list) or not values:
            raise UsageError(f"sweep field {name!r} needs a non-empty list of values, got {shown(values)}")
    points = math.prod(len(values) for values in grid.values())
    if points > MAX_SWEEP_POINTS:
        raise UsageError(f"sweep of {points:,} points is out of range (at most {MAX_SWEEP_POINTS:,} runs)")
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def check_points(data: dict[str, Any], points: list[dict[str, Any]], allow_long: bool = False,
                 source: str = "scenario") -> list[Cost]:
    """The estimated cost of every point; UsageError naming the first point that is invalid or,
    unless `allow_long`, too costly."""
    costs = []
    for point in points:
        try:
            costs.append(check(data, point, allow_long, source)[1])
        except UsageError as err:
            raise UsageError(f"sweep point {shown(point)}: {err}") from None
    return costs


def _run_point(data: dict[str, Any], point: dict[str, Any], output: Path | None) -> pd.DataFrame:
    result = run(data, point, allow_long=True)  # checked by `sweep` before any run
    if output is not None:
        result.save(output)
    table = summary_table(result)
    for i, (name, value) in enumerate(point.items()):
        table.insert(i, name, value if isinstance(value, (int, float, str, bool)) else str(value))
    return table


def sweep(
    scenario: str | Path | dict[str, Any] | Scenario,
    grid: dict[str, list[Any]] | None = None,
    processes: int | None = None,
    progress: Callable[[str], None] | None = None,
    output: str | Path | None = None,
    allow_long: bool = False,
) -> pd.DataFrame:
    """Runs every point of `grid` (default: the scenario's own `sweep` section) in parallel
    processes; `progress` receives one line per finished run (default: print to stderr).
    With `output`, each run's raw report and tables go to `output/point-NNN/` as it ends.
    Every point is validated and its cost checked (see `run`) before any runs."""
    data = scenario_data(scenario)
    grid = grid if grid is not None else data.get("sweep") or {}
    data.pop("sweep", None)
    if not grid:
        raise UsageError("sweep needs a grid: a mapping of field paths to lists of values")
    points = grid_points(grid)
    check_points(data, points, allow_long)
    report = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    workers = max(1, min(processes or os.cpu_count() or 1, len(points)))
    start = time.monotonic()
    tables: dict[int, pd.DataFrame] = {}

    def point_dir(i: int) -> Path | None:
        return None if output is None else Path(output) / f"point-{i:03d}"

    if workers == 1:
        for i, point in enumerate(points):
            tables[i] = _run_point(data, point, point_dir(i))
            report(f"[{len(tables)}/{len(points)}] {point} ({elapsed_since(start)})")
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_run_point, data, point, point_dir(i)): i for i, point in enumerate(points)}
            for future in as_completed(futures):
                i = futures[future]
                tables[i] = future.result()
                report(f"[{len(tables)}/{len(points)}] {points[i]} ({elapsed_since(start)})")
    return pd.concat([tables[i] for i in range(len(points))], ignore_index=True)


def rate_arg(name: str, value: str | int) -> int:
    """A rate argument in bit/s; UsageError naming the argument when it is not a rate."""
    try:
        return rate_bps(value)
    except ValueError as err:
        raise UsageError(f"{name}: {err}") from None


def zero_loss_rate(
    scenario: str | Path | dict[str, Any] | Scenario,
    stream: str,
    low: str | int,
    high: str | int,
    resolution: str | int = "1Mbps",
    overrides: dict[str, Any] | None = None,
    allow_long: bool = False,
) -> int:
    """The highest rate of `stream` (bit/s, in the stream's rate_layer) at which it loses no
    frame, by binary search between `low` and `high` (RFC 2544 26.1). Raises UsageError when
    even `low` loses frames, or when a run at `high` would exceed the cost limits of `run`
    (unless `allow_long`)."""
    lo, hi, step = (rate_arg(name, value) for name, value in (("low", low), ("high", high), ("resolution", resolution)))
    if not 0 < lo < hi or step <= 0:
        raise UsageError(f"zero-loss search needs 0 < low < high and resolution > 0, got low {lo} bit/s, "
                         f"high {hi} bit/s, resolution {step} bit/s")
    base = dict(overrides or {})
    check(scenario, {**base, f"streams.{stream}.rate": hi}, allow_long)  # the costliest run of the search

    def lossless(rate: int) -> bool:
        result = run(scenario, {**base, f"streams.{stream}.rate": rate}, allow_long=True)
        row = result.streams.set_index("stream").loc[stream]
        return int(row["lost"]) == 0

    if not lossless(lo):
        raise UsageError(f"stream {stream} already loses frames at the low end {lo} bit/s")
    if lossless(hi):
        return hi
    while hi - lo > step:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if lossless(mid) else (lo, mid)
    return lo
