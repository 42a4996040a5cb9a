"""Grids over any scenario field, run in parallel with progress, and the RFC 2544 binary
search for the highest zero-loss rate.

A grid is a mapping from dotted field paths to lists of values; every combination is one run.
The result is one DataFrame row per run and stream: the grid values as columns, then the
stream metrics, the run's speed and the worker that ran it (host:pid).

Runs go to a local process pool, or with `scheduler` to a Dask distributed cluster, through
one code path: both are concurrent.futures executors (dask.distributed's Client.get_executor),
each run returns its whole result, and this process writes every file, so workers on other
machines need no shared file system.
"""

from __future__ import annotations

import itertools
import math
import os
import socket
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pandas as pd

from frerlab.errors import UsageError
from frerlab.sim.api import SimResult, check, run, scenario_data
from frerlab.sim.cost import Cost
from frerlab.sim.compile import talker_line_rate
from frerlab.sim.schema import Scenario
from frerlab.names import shown
from frerlab.units import rate_bps

MAX_SWEEP_POINTS = 10_000
#: Most values a sweep's check may validate: points x (values of the scenario + of the largest
#: value of each grid field).
#: Each point is validated and its cost estimated before anything runs, about 10 us per value
#: (up to 15 measured), so checking any accepted sweep takes well under a second.
MAX_SWEEP_VALUES = 50_000


def summary_table(result: SimResult) -> pd.DataFrame:
    """The stream table with run speed columns, the unit of a sweep's results."""
    table = result.streams.copy()
    table["events"] = result.run_info["events"]
    table["wall_seconds"] = result.run_info["wall_seconds"]
    return table


def elapsed_since(start: float) -> str:
    """Seconds since `start` as a short string, for progress lines."""
    return f"{time.monotonic() - start:.1f}s"


def _count_values(data: Any) -> int:
    """Mappings, lists and scalars in `data`, each counted once."""
    count, stack = 0, [data]
    while stack:
        item = stack.pop()
        count += 1
        stack.extend(item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())
    return count


def grid_points(grid: object, scenario: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in order (the last field varies fastest);
    UsageError, before any is made, for more than MAX_SWEEP_POINTS or, with the `scenario`
    data the points apply to, more than MAX_SWEEP_VALUES values to check."""
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
    if scenario is not None:
        values = points * (_count_values(scenario) + sum(max(map(_count_values, v)) for v in grid.values()))
        if values > MAX_SWEEP_VALUES:
            raise UsageError(f"sweep of {points:,} points over a scenario and grid of {values // points:,} values "
                             f"is {values:,} values to check, out of range (at most {MAX_SWEEP_VALUES:,}: "
                             "fewer points, or a smaller scenario)")
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


def _run_point(data: dict[str, Any], point: dict[str, Any]) -> tuple[SimResult, str]:
    """One run, wherever it runs, and which worker ran it (host:pid)."""
    return run(data, point, allow_long=True), f"{socket.gethostname()}:{os.getpid()}"  # checked before any run


def _point_table(result: SimResult, point: dict[str, Any], worker: str,
                 summarize: Callable[[SimResult], pd.DataFrame]) -> pd.DataFrame:
    table = summarize(result)
    for i, (name, value) in enumerate(point.items()):
        table.insert(i, name, value if isinstance(value, (int, float, str, bool)) else str(value))
    table["worker"] = worker
    return table


@contextmanager
def _executor(workers: int, scheduler: str | None) -> Iterator[Executor]:
    """A local process pool of `workers`, or the Dask cluster whose scheduler is at `scheduler`."""
    if scheduler is None:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield pool
        return
    from dask.distributed import Client  # only sweeps on a cluster need Dask

    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as err:
        raise UsageError(f"scheduler {shown(scheduler)}: no Dask scheduler answered ({err}); give the address "
                         "`dask scheduler` printed, e.g. tcp://127.0.0.1:8786") from None
    with client, client.get_executor(pure=False) as pool:
        yield pool


def sweep(
    scenario: str | Path | dict[str, Any] | Scenario,
    grid: dict[str, list[Any]] | None = None,
    processes: int | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    output: str | Path | None = None,
    allow_long: bool = False,
    scheduler: str | None = None,
    summarize: Callable[[SimResult], pd.DataFrame] = summary_table,
) -> pd.DataFrame:
    """Runs every point of `grid` (default: the scenario's own `sweep` section) in parallel:
    local processes (`processes`, default one per CPU) or, with `scheduler`, the workers of a
    Dask cluster. `progress(done, total, point)` is called as each run ends (default: a line on
    stderr). With `output`, each run's raw report and tables go to `output/point-NNN/` as it
    ends. Every point is validated and its cost checked (see `run`) before any runs. Each run's
    rows come from `summarize` (default: its stream table), here, as the run ends."""
    data = scenario_data(scenario)
    grid = grid if grid is not None else data.get("sweep") or {}
    data.pop("sweep", None)
    if not grid:
        raise UsageError("sweep needs a grid: a mapping of field paths to lists of values")
    points = grid_points(grid, data)
    check_points(data, points, allow_long)
    start = time.monotonic()
    report = progress or (lambda done, total, point: print(f"[{done}/{total}] {point} ({elapsed_since(start)})",
                                                           file=sys.stderr, flush=True))
    workers = max(1, min(processes or os.cpu_count() or 1, len(points)))
    tables: dict[int, pd.DataFrame] = {}

    def finish(i: int, result: SimResult, worker: str) -> None:
        if output is not None:
            result.save(Path(output) / f"point-{i:03d}")
        tables[i] = _point_table(result, points[i], worker, summarize)
        report(len(tables), len(points), points[i])

    if workers == 1 and scheduler is None:
        for i, point in enumerate(points):
            finish(i, *_run_point(data, point))
    else:
        with _executor(workers, scheduler) as pool:
            futures = {pool.submit(_run_point, data, point): i for i, point in enumerate(points)}
            for future in as_completed(futures):
                finish(futures[future], *future.result())
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
    frame, by binary search between `low` and `high` (RFC 2544 26.1). The search offers at most
    the line rate of the stream's first link (`talker_line_rate`; RFC 2544 offers no more than
    the medium's maximum frame rate): above it, frames would wait in the talker's own queue
    and reach the network after the trial, so a short trial would report a throughput above
    line rate. Raises UsageError when even `low` loses frames or is above that line rate, or
    when a run at `high` would exceed the cost limits of `run` (unless `allow_long`)."""
    lo, hi, step = (rate_arg(name, value) for name, value in (("low", low), ("high", high), ("resolution", resolution)))
    if not 0 < lo < hi or step <= 0:
        raise UsageError(f"zero-loss search needs 0 < low < high and resolution > 0, got low {lo} bit/s, "
                         f"high {hi} bit/s, resolution {step} bit/s")
    base = dict(overrides or {})
    sc, _ = check(scenario, {**base, f"streams.{stream}.rate": hi}, allow_long)  # the costliest run of the search
    try:
        line = int(talker_line_rate(sc, stream))
    except ValueError as err:
        raise UsageError(f"zero-loss search: {err}") from None
    if lo >= line:
        raise UsageError(f"zero-loss search: low {lo} bit/s is at or above {line} bit/s, the most stream {stream}'s "
                         "talker can put on its first link: choose a lower low")
    hi = min(hi, line)

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
