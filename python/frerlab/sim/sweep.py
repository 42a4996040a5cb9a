"""Grids over any scenario field, run in parallel processes with progress on stderr, and the
RFC 2544 binary search for the highest zero-loss rate.

A grid is a mapping from dotted field paths to lists of values; every combination is one run.
The result is one DataFrame row per run and stream: the grid values as columns, then the
stream metrics.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from frerlab.errors import UsageError
from frerlab.sim.api import SimResult, prepare, run, scenario_data
from frerlab.sim.scenario import Scenario
from frerlab.sim.units import rate_bps


def summary_table(result: SimResult) -> pd.DataFrame:
    """The stream table with run speed columns, the unit of a sweep's results."""
    table = result.streams.copy()
    table["events"] = result.run_info["events"]
    table["wall_seconds"] = result.run_info["wall_seconds"]
    return table


def elapsed_since(start: float) -> str:
    """Seconds since `start` as a short string, for progress lines."""
    return f"{time.monotonic() - start:.1f}s"


def grid_points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in order (the last field varies fastest)."""
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise UsageError(f"sweep field {name!r} needs a non-empty list of values, got {values!r}")
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def _run_point(data: dict[str, Any], point: dict[str, Any], output: Path | None) -> pd.DataFrame:
    result = run(data, point)
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
) -> pd.DataFrame:
    """Runs every point of `grid` (default: the scenario's own `sweep` section) in parallel
    processes; `progress` receives one line per finished run (default: print to stderr).
    With `output`, each run's raw report and tables go to `output/point-NNN/` as it ends."""
    data = scenario_data(scenario)
    grid = grid if grid is not None else data.get("sweep") or {}
    data.pop("sweep", None)
    if not grid:
        raise UsageError("sweep needs a grid: a mapping of field paths to lists of values")
    points = grid_points(grid)
    for point in points:
        prepare(data, point)  # validate every point before running any
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


def zero_loss_rate(
    scenario: str | Path | dict[str, Any] | Scenario,
    stream: str,
    low: str | int,
    high: str | int,
    resolution: str | int = "1Mbps",
    overrides: dict[str, Any] | None = None,
) -> int:
    """The highest rate of `stream` (bit/s, in the stream's rate_layer) at which it loses no
    frame, by binary search between `low` and `high` (RFC 2544 26.1). Raises UsageError when
    even `low` loses frames."""
    lo, hi, step = rate_bps(low), rate_bps(high), rate_bps(resolution)
    if not 0 < lo < hi or step <= 0:
        raise UsageError(f"zero_loss_rate needs 0 < low < high and resolution > 0, got {lo}, {hi}, {step}")
    base = dict(overrides or {})

    def lossless(rate: int) -> bool:
        result = run(scenario, {**base, f"streams.{stream}.rate": rate})
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
