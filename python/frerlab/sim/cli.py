"""`frerlab sim`: run a scenario file (or its sweep grid) and print or save the results."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from frerlab.errors import UsageError
from frerlab.sim.api import prepare, run, scenario_data, set_field, write_atomic
from frerlab.sim.sweep import sweep, zero_loss_rate

EPILOG = """examples:
  frerlab sim run scenarios/seed000_frer_2hop.yaml
  frerlab sim run scenarios/seed000_frer_2hop.yaml -o results/frer --set streams.udp.rate=600Mbps
  frerlab sim run scenarios/loss_vs_load.yaml -o results/loss --jobs 2     (a file with a sweep)
  frerlab sim check scenarios/link_failure.yaml
  frerlab sim zero-loss scenarios/paradox/control.yaml --stream udp --low 10Mbps --high 1Gbps
"""

SUMMARY_COLUMNS = ["stream", "sent", "received", "lost", "loss_ratio", "duplicates", "reordered",
                   "latency_p50_ns", "latency_p99_ns", "latency_max_ns"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `frerlab sim run` and `frerlab sim check`."""
    parser = subparsers.add_parser(
        "sim", help="packet-level TSN/FRER simulator", description=__doc__, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(title="verbs", metavar="VERB")
    run_parser = verbs.add_parser("run", help="run a scenario (or every point of its sweep)", epilog=EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    run_parser.add_argument("scenario", type=Path, help="scenario YAML file")
    run_parser.add_argument("-o", "--output", type=Path, help="results directory (raw report, meta.json, CSVs)")
    run_parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                            help="override a field by dotted path, e.g. streams.udp.rate=600Mbps (repeatable)")
    run_parser.add_argument("--jobs", type=int, default=None, help="parallel processes for a sweep (default: CPUs)")
    run_parser.add_argument("--no-sweep", action="store_true", help="run the scenario once, ignoring its sweep")
    run_parser.set_defaults(func=cmd_run)
    check_parser = verbs.add_parser("check", help="validate a scenario file without running it")
    check_parser.add_argument("scenario", type=Path)
    check_parser.set_defaults(func=cmd_check)
    search_parser = verbs.add_parser(
        "zero-loss", help="binary search for a stream's highest rate without loss (RFC 2544 throughput)")
    search_parser.add_argument("scenario", type=Path)
    search_parser.add_argument("--stream", required=True, help="name of the stream whose rate is searched")
    search_parser.add_argument("--low", default="1Mbps", help="a rate known to be lossless (default 1Mbps)")
    search_parser.add_argument("--high", default="1Gbps", help="upper end of the search (default 1Gbps)")
    search_parser.add_argument("--resolution", default="1Mbps", help="stop when the interval is this narrow")
    search_parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    search_parser.set_defaults(func=cmd_zero_loss)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def parse_overrides(items: list[str]) -> dict[str, object]:
    """FIELD=VALUE strings into a mapping; values are read as YAML scalars (numbers, lists)."""
    overrides: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--set {item!r} is not FIELD=VALUE (e.g. streams.udp.rate=600Mbps)")
        overrides[name] = yaml.safe_load(value)
    return overrides


def cmd_check(args: argparse.Namespace) -> int:
    """Validates the scenario and every point of its sweep."""
    data = scenario_data(args.scenario)
    sc = prepare(data)
    grid = data.get("sweep") or {}
    print(f"{args.scenario}: scenario {sc.name!r} is valid: {len(sc.nodes)} nodes, {len(sc.links)} links, "
          f"{len(sc.streams)} streams" + (f", sweep of {len(grid)} fields" if grid else ""))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Runs one scenario or its sweep, prints a summary and saves results when -o is given."""
    overrides = parse_overrides(args.set)
    data = scenario_data(args.scenario)
    for name, value in overrides.items():
        set_field(data, name, value)
    if data.get("sweep") and not args.no_sweep:
        table = sweep(data, processes=args.jobs, output=args.output)
        if args.output:
            args.output.mkdir(parents=True, exist_ok=True)
            write_atomic(args.output / "sweep.csv", table.to_csv(index=False))
        grid_columns = list(data["sweep"])
        print(table[grid_columns + [c for c in SUMMARY_COLUMNS if c in table]].to_string(index=False), flush=True)
    else:
        result = run(args.scenario, overrides)
        if args.output:
            result.save(args.output)
        with pd.option_context("display.width", 200):
            print(result.streams[SUMMARY_COLUMNS].to_string(index=False), flush=True)
        info = result.run_info
        print(f"{info['events']} events in {info['wall_seconds']:.3f} s "
              f"({info['events_per_second'] / 1e6:.1f} M events/s), {info['simulated_seconds']:.3f} s simulated",
              file=sys.stderr)
    if args.output:
        print(f"results written to {args.output}", file=sys.stderr)
    return 0


def cmd_zero_loss(args: argparse.Namespace) -> int:
    """Prints the highest lossless rate of one stream, in Mbit/s of its rate_layer."""
    overrides = {**parse_overrides(args.set), "sweep": {}}
    rate = zero_loss_rate(args.scenario, args.stream, args.low, args.high, args.resolution, overrides)
    layer = prepare(scenario_data(args.scenario), overrides).streams
    layer = next((s.rate_layer for s in layer if s.name == args.stream), "l2")
    print(f"{args.scenario}: stream {args.stream} zero-loss rate {rate / 1e6:.1f} Mbit/s ({layer.upper()})")
    return 0
