"""`frerlab sim`: run a scenario file (or its sweep grid), or a grid file over a scenario on a
local process pool or a Dask cluster, and print or save the results.

The simulator's Python side (pandas, the API, sweeps) is imported by the commands, not when
the parser is built: every `frerlab` command builds it, and would pay their start-up time."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path


from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import UsageError
from frerlab.files import write_atomic
from frerlab.names import output_dir, shown
from frerlab.sim.cost import MAX_EVENTS, MAX_SERIES_ROWS, MAX_TRACE_ROWS
from frerlab.yamlfile import parse_overrides, read_mapping, set_field

EPILOG = f"""examples:
  frerlab sim run scenarios/seed000_frer_2hop.yaml
  frerlab sim run scenarios/seed000_frer_2hop.yaml -o results/frer --set streams.udp.rate=600Mbps
  frerlab sim run scenarios/loss_vs_load.yaml -o results/loss --jobs 2     (a file with a sweep)
  frerlab sim check scenarios/link_failure.yaml
  frerlab sim sweep scenarios/grids/hotspot.yaml -o results/grid              (a grid file, local processes)
  frerlab sim sweep GRID.yaml -o results/grid --scheduler tcp://127.0.0.1:8786  (a Dask cluster)
  frerlab sim zero-loss scenarios/paradox/control.yaml --stream udp --low 10Mbps --high 1Gbps
  frerlab sim check scenarios/link_failure.yaml --json                     (any verb: the result as JSON)

A run is estimated before it starts (events = frames x (hops + 1) per stream, series rows =
streams x intervals, trace rows = events with trace on) and refused past {MAX_EVENTS:,} events,
{MAX_SERIES_ROWS:,} series rows or {MAX_TRACE_ROWS:,} trace rows unless --allow-long is given; `sim check` prints
the estimate. Bounds of every field: docs/errors.md.
"""
ALLOW_LONG_HELP = "run even when the estimated cost exceeds the limits (see below)"
GRID_EPILOG = """A grid file names a scenario (relative to the grid file) and the fields to vary:

  scenario: ../loss_vs_load.yaml
  grid:
    streams.udp.rate: [100Mbps, 500Mbps, 900Mbps]
    links.sw1-l.queue_limit: [64KiB, 256KiB]
  summary: streams      (default; `hotspot`: one row of frerlab.sim.hotspot metrics per run)

Every combination is one run. The results directory gets one table, sweep.parquet and
sweep.csv (the grid's fields as the first columns, one row per run and stream (or per run,
for `summary: hotspot`), and the worker that ran it), a copy of the grid file, and each run's
raw report and tables in point-NNN/.
With --scheduler the runs go to the workers of a Dask cluster (`dask scheduler`, then
`dask worker ADDRESS` on each machine, with frerlab installed); this process writes every file.

examples:
  frerlab sim sweep scenarios/grids/hotspot.yaml -o results/grid
  frerlab sim sweep GRID.yaml -o results/grid --scheduler tcp://127.0.0.1:8786 --json
"""

SUMMARY_COLUMNS = ["stream", "sent", "received", "lost", "loss_ratio", "duplicates", "forged_delivered", "reordered",
                   "latency_p50_ns", "latency_p99_ns", "latency_max_ns"]
HOTSPOT_COLUMNS = ["drain_time_s", "settle_time_s", "fair_time_s", "utilisation", "jain", "victim_ratio", "hotspot_loss_ratio",
                   "control_bps"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `frerlab sim run` and `frerlab sim check`."""
    parser = subparsers.add_parser(
        "sim", help="packet-level TSN/FRER simulator", description=__doc__, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(title="verbs", metavar="VERB")
    run_parser = verbs.add_parser("run", help="run a scenario (or every point of its sweep)", epilog=EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    run_parser.add_argument("scenario", type=Path, help="scenario YAML file")
    add_output(run_parser, "results directory (raw report, meta.json, CSVs)")
    run_parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                            help="override a field by dotted path, e.g. streams.udp.rate=600Mbps (repeatable)")
    run_parser.add_argument("--jobs", type=int, default=None, help="parallel processes for a sweep (default: CPUs)")
    run_parser.add_argument("--no-sweep", action="store_true", help="run the scenario once, ignoring its sweep")
    run_parser.add_argument("--allow-long", action="store_true", help=ALLOW_LONG_HELP)
    add_json(run_parser, "each stream's summary (each run's, for a sweep)")
    run_parser.set_defaults(func=cmd_run)
    grid_parser = verbs.add_parser(
        "sweep", help="run a grid file (a scenario and fields to vary) on local processes or a Dask cluster",
        epilog=GRID_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    grid_parser.add_argument("grid", type=Path, help="grid YAML file: `scenario: PATH` and `grid: {FIELD: [VALUES]}`")
    add_output(grid_parser, "results directory: sweep.parquet, sweep.csv, the grid file, point-NNN/ per run",
               required=True)
    grid_parser.add_argument("--jobs", type=int, default=None, help="local processes (default: CPUs)")
    grid_parser.add_argument("--scheduler", help="address of a Dask scheduler (e.g. tcp://127.0.0.1:8786): run on "
                                                 "its workers instead of local processes")
    grid_parser.add_argument("--allow-long", action="store_true", help=ALLOW_LONG_HELP)
    add_json(grid_parser, "the summary table (one record per row)")
    grid_parser.set_defaults(func=cmd_sweep)
    check_parser = verbs.add_parser("check", help="validate a scenario file and estimate its cost without running it",
                                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    check_parser.add_argument("scenario", type=Path)
    check_parser.add_argument("--allow-long", action="store_true", help="accept a cost past the limits, as run --allow-long")
    add_json(check_parser, "the scenario's size and estimated cost")
    check_parser.set_defaults(func=cmd_check)
    search_parser = verbs.add_parser(
        "zero-loss", help="binary search for a stream's highest rate without loss (RFC 2544 throughput)",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    search_parser.add_argument("scenario", type=Path)
    search_parser.add_argument("--stream", required=True, help="name of the stream whose rate is searched")
    search_parser.add_argument("--low", default="1Mbps", help="a rate known to be lossless (default 1Mbps)")
    search_parser.add_argument("--high", default="1Gbps", help="upper end of the search (default 1Gbps)")
    search_parser.add_argument("--resolution", default="1Mbps", help="stop when the interval is this narrow")
    search_parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    search_parser.add_argument("--allow-long", action="store_true", help=ALLOW_LONG_HELP)
    add_json(search_parser, "the rate found")
    search_parser.set_defaults(func=cmd_zero_loss)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def cmd_check(args: argparse.Namespace) -> int:
    """Validates the scenario and every point of its sweep, and estimates what running costs:
    whatever passes here, `sim run` (with the same --allow-long) starts."""
    from frerlab.sim import lossless
    from frerlab.sim.api import check, prepare, scenario_data
    from frerlab.sim.compile import compile_spec
    from frerlab.sim.sweeps import check_points, grid_points

    data = scenario_data(args.scenario)
    source = str(args.scenario)
    grid = data.get("sweep")
    if grid:
        sc = prepare(data, source=source)
        base = {k: v for k, v in data.items() if k != "sweep"}
        points = grid_points(grid, base)
        costs = check_points(base, points, args.allow_long, source)
        cost = max(costs, key=lambda c: c.events)
        runs = len(points)
        cost_text = f"sweep of {len(grid)} fields, {runs} runs, the largest {cost.describe()}"
    else:
        sc, cost = check(data, None, args.allow_long, source)
        runs = 1
        cost_text = cost.describe()
    warnings = lossless.warnings(compile_spec(sc))
    result = {"scenario": source, "name": sc.name, "valid": True, "nodes": len(sc.nodes), "links": len(sc.links),
              "streams": len(sc.streams), "runs": runs,
              "largest_run": {"events": cost.events, "series_rows": cost.series_rows, "trace_rows": cost.trace_rows},
              "warnings": warnings}
    emit(args, result, f"{args.scenario}: scenario {sc.name!r} is valid: {len(sc.nodes)} nodes, {len(sc.links)} "
                       f"links, {len(sc.streams)} streams; {cost_text}")
    print_warnings(warnings)
    return 0


def print_warnings(warnings: list[str]) -> None:
    """Each warning on its own line of stderr."""
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def table_records(table) -> list[dict]:
    """A DataFrame's rows as JSON records (NaN as null)."""
    return json.loads(table.to_json(orient="records"))


def cmd_run(args: argparse.Namespace) -> int:
    """Runs one scenario or its sweep, prints a summary and saves results when -o is given."""
    if args.output:
        output_dir(args.output, "-o/--output")
    import pandas as pd

    from frerlab.sim.api import prepare, run, scenario_data
    from frerlab.sim.sweeps import sweep

    if args.jobs is not None and not 1 <= args.jobs <= 1024:
        raise UsageError(f"--jobs {args.jobs} is out of range (1..1024 processes)")
    overrides = parse_overrides(args.set)
    data = scenario_data(args.scenario)
    for name, value in overrides.items():
        set_field(data, name, value)
    if data.get("sweep") and not args.no_sweep:
        prepare(data, source=str(args.scenario))  # the sweep section as `check` validates it
        table = sweep(data, processes=args.jobs, output=args.output, allow_long=args.allow_long)
        if args.output:
            args.output.mkdir(parents=True, exist_ok=True)
            write_atomic(args.output / "sweep.csv", table.to_csv(index=False))
        shown_table = table[list(data["sweep"]) + [c for c in SUMMARY_COLUMNS if c in table]]
        emit(args, {"scenario": str(args.scenario), "output": args.output, "runs": table_records(shown_table)},
             shown_table.to_string(index=False))
    else:
        result = run(args.scenario, overrides, allow_long=args.allow_long)
        if args.output:
            result.save(args.output)
        streams = result.streams[SUMMARY_COLUMNS]
        with pd.option_context("display.width", 200):
            text = streams.to_string(index=False)
        info = result.run_info
        emit(args, {"scenario": str(args.scenario), "output": args.output, "streams": table_records(streams),
                    "run_info": info, "warnings": result.warnings}, text)
        print_warnings(result.warnings)
        print(f"{info['events']} events in {info['wall_seconds']:.3f} s "
              f"({info['events_per_second'] / 1e6:.1f} M events/s), {info['simulated_seconds']:.3f} s simulated",
              file=sys.stderr)
    if args.output:
        print(f"results written to {args.output}", file=sys.stderr)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """Runs a grid file's every point with a progress bar and writes the one table."""
    out = output_dir(args.output, "-o/--output")
    import pandas as pd
    from rich.console import Console

    from frerlab.sim.hotspot import summary_row as hotspot_summary
    from frerlab.sim.sweeps import summary_table, sweep
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    if args.jobs is not None and not 1 <= args.jobs <= 1024:
        raise UsageError(f"--jobs {args.jobs} is out of range (1..1024 processes)")
    spec = read_mapping(args.grid, "grid file", "a grid file is a mapping with `scenario: PATH` and "
                                                "`grid: {FIELD: [VALUES]}`")
    unknown = sorted(set(spec) - {"scenario", "grid", "summary"})
    if unknown or not isinstance(spec.get("scenario"), str) or "grid" not in spec:
        raise UsageError(f"{args.grid}: a grid file holds `scenario: PATH`, `grid: {{FIELD: [VALUES]}}` and "
                         "optionally `summary: streams | hotspot`" + (f"; unknown key {shown(unknown[0])}" if unknown else ""))
    summary = spec.get("summary", "streams")
    if summary not in ("streams", "hotspot"):
        raise UsageError(f"{args.grid}: summary {shown(summary)} is not valid (streams or hotspot)")
    scenario = args.grid.parent / spec["scenario"]
    columns = [TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task("sweep", total=None)
        table = sweep(scenario, spec["grid"], processes=args.jobs, output=out, allow_long=args.allow_long,
                      scheduler=args.scheduler, summarize=hotspot_summary if summary == "hotspot" else summary_table,
                      progress=lambda done, total, point: bar.update(task, completed=done, total=total))
    write_atomic(out / args.grid.name, args.grid.read_text())
    parquet = io.BytesIO()
    table.to_parquet(parquet, index=False)
    write_atomic(out / "sweep.parquet", parquet.getvalue())
    write_atomic(out / "sweep.csv", table.to_csv(index=False))
    shown_columns = HOTSPOT_COLUMNS if summary == "hotspot" else SUMMARY_COLUMNS
    shown_table = table[list(spec["grid"]) + [c for c in shown_columns if c in table]]
    with pd.option_context("display.width", 250, "display.max_colwidth", 40):
        text = shown_table.to_string(index=False)
    emit(args, {"grid": str(args.grid), "output": out, "summary": summary, "runs": table_records(shown_table)}, text)
    print(f"results written to {out} (sweep.parquet, sweep.csv, point-NNN/)", file=sys.stderr)
    return 0


def cmd_zero_loss(args: argparse.Namespace) -> int:
    """Prints the highest lossless rate of one stream, in Mbit/s of its rate_layer."""
    from frerlab.sim.api import prepare, scenario_data
    from frerlab.sim.compile import talker_line_rate
    from frerlab.sim.sweeps import rate_arg, zero_loss_rate

    overrides = {**parse_overrides(args.set), "sweep": {}}
    low, high, resolution = (rate_arg(f"--{name}", getattr(args, name)) for name in ("low", "high", "resolution"))
    rate = zero_loss_rate(args.scenario, args.stream, low, high, resolution, overrides, args.allow_long)
    sc = prepare(scenario_data(args.scenario), overrides)
    layer = next(s.rate_layer for s in sc.streams if s.name == args.stream)
    line = int(talker_line_rate(sc, args.stream))
    capped = ", the line rate of its first link: nothing in the network limits it below" if rate == line else ""
    emit(args, {"scenario": str(args.scenario), "stream": args.stream, "zero_loss_rate_bps": rate, "rate_layer": layer,
                "line_rate_bps": line, "at_line_rate": rate == line},
         f"{args.scenario}: stream {args.stream} zero-loss rate {rate / 1e6:.1f} Mbit/s ({layer.upper()}{capped})")
    return 0
