"""The Python face of the simulator: run a scenario and get pandas DataFrames back.

    from frerlab import sim
    result = sim.run("scenarios/seed000_frer_2hop.yaml")
    result.streams        # one row per stream: sent, received, lost, loss_ratio, duplicates,
                          # reordered, forged_delivered (frames an attacker made),
                          # latency_{min,mean,stddev,max,p50,p90,p99,p99_9,...}_ns
    result.series         # per stream and interval: sent, received, lost, throughput_bps, ...
    result.port_series    # per port and interval: queue_max_bytes, queue_mean_bytes, tx_bps
    result.ports, result.nodes, result.frer, result.trace
    result.pause, result.qcn_ports, result.bcn_ports, result.fecn_ports    # congestion control
    result.cn_streams, result.rate_series, result.control
    result.attacks        # per attacker: port, stream, identity, kind, frames sent or stripped
    result.filters        # per 802.1Qci stream filter: matching, passing, too large, red frames
    sim.sweep(scenario, {"streams.video.rate": ["100Mbps", "200Mbps"]})

A scenario may be given as a path, a dict or a `Scenario`; `overrides` set fields by dotted
path (list items by name or index) before validation, which is also how sweeps vary a field.
"""

from __future__ import annotations

import copy
import json
import platform
from dataclasses import dataclass, field
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

import pandas as pd

from frerlab import __version__
from frerlab.errors import UsageError
from frerlab.files import write_atomic
from frerlab.sim.cost import Cost, estimate, require_affordable
from frerlab.sim import lossless
from frerlab.sim.compile import compile_spec
from frerlab.sim.schema import Scenario, parse_scenario, read_data
from frerlab.yamlfile import set_field

TABLES = ("streams", "series", "ports", "port_series", "nodes", "frer", "filters", "pause", "qcn_ports", "bcn_ports",
          "fecn_ports", "cn_streams", "rate_series", "control", "attacks", "trace")


@dataclass
class SimResult:
    """The report of one run, each table as a DataFrame, plus the raw report."""

    scenario: Scenario
    report: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in TABLES:
            self.tables[name] = pd.DataFrame(self.report[name])

    @property
    def streams(self) -> pd.DataFrame:
        """One row per stream (listener metrics)."""
        return self.tables["streams"]

    @property
    def series(self) -> pd.DataFrame:
        """One row per stream and interval."""
        return self.tables["series"]

    @property
    def ports(self) -> pd.DataFrame:
        """One row per port and traffic class that carried or dropped frames."""
        return self.tables["ports"]

    @property
    def port_series(self) -> pd.DataFrame:
        """One row per port (idle ones too) and interval: the largest and the time-weighted mean
        of the buffer bytes queued over all its traffic classes, at the streams' `interval`."""
        return self.tables["port_series"]

    @property
    def nodes(self) -> pd.DataFrame:
        """Peak buffer use per node."""
        return self.tables["nodes"]

    @property
    def frer(self) -> pd.DataFrame:
        """Counters of every sequence recovery function."""
        return self.tables["frer"]

    @property
    def pause(self) -> pd.DataFrame:
        """One row per link direction running IEEE 802.3x PAUSE (`port`, paused sender `node`,
        receiving `peer`): xoff_frames, xon_frames, pause_bytes (64 B each, on the reverse
        direction), paused_s, ingress_peak_bytes (the receiver's count for that link)."""
        return self.tables["pause"]

    @property
    def qcn_ports(self) -> pd.DataFrame:
        """One row per QCN congestion point: arrived_bytes (of QCN streams), samples,
        notifications, notification_bytes (64 B each)."""
        return self.tables["qcn_ports"]

    @property
    def bcn_ports(self) -> pd.DataFrame:
        """One row per BCN congestion point: arrived_bytes (of BCN streams), samples, negative
        and positive feedback sent, notification_bytes (64 B each)."""
        return self.tables["bcn_ports"]

    @property
    def fecn_ports(self) -> pd.DataFrame:
        """One row per FECN point: probes that passed, advertised_bps at the end,
        min_advertised_bps."""
        return self.tables["fecn_ports"]

    @property
    def cn_streams(self) -> pd.DataFrame:
        """One row per stream whose rate QCN, BCN or FECN controls: mechanism, received
        (notifications, or reflected probes for FECN), received_bytes (64 B each), probes_sent,
        final_rate_bps."""
        return self.tables["cn_streams"]

    @property
    def rate_series(self) -> pd.DataFrame:
        """One row per rate-controlled stream and interval: rate_mean_bps (time-weighted) and
        rate_max_bps of its sending rate, in the stream's rate layer (L1 or L2)."""
        return self.tables["rate_series"]

    @property
    def control(self) -> pd.DataFrame:
        """One row per port whose link carried control frames: forward_frames (FECN probes it
        sent), back_frames (notifications and reflected probes that crossed its link towards its
        node), control_bytes (64 B each)."""
        return self.tables["control"]

    @property
    def filters(self) -> pd.DataFrame:
        """One row per stream filter (`stream`, `node`, `ingress`: the port whose frames it takes,
        none for every link): matching_frames, passing_frames, passing_sdu, not_passing_sdu (too
        large), red_frames (dropped by the meter), passing_octets (SDU)."""
        return self.tables["filters"]

    @property
    def attacks(self) -> pd.DataFrame:
        """One row per attacker (`port`: the link direction it acts on, `stream`, `kind`): frames
        it sent (inject, replay, babble) or stripped of their R-TAG (strip_tag)."""
        return self.tables["attacks"]

    @property
    def trace(self) -> pd.DataFrame:
        """Every transmission and drop, when the scenario set `trace: true`."""
        return self.tables["trace"]

    @property
    def warnings(self) -> list[str]:
        """Why the scenario's PAUSE cannot be lossless (frerlab.sim.lossless); empty when it can."""
        return self.report.get("warnings", [])

    @property
    def run_info(self) -> dict[str, Any]:
        """Events, wall time, events per second, simulated seconds, frames created."""
        return self.report["run"]

    def save(self, directory: str | Path) -> Path:
        """Writes the raw report first, then meta.json and one CSV per table; returns the dir."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "report.json", json.dumps(self.report))
        write_atomic(out / "scenario.json", self.scenario.model_dump_json(indent=2))
        write_atomic(out / "meta.json", json.dumps(run_meta(self.scenario, self.report["run"], self.warnings), indent=2))
        for name, table in self.tables.items():
            if not table.empty:
                write_atomic(out / f"{name}.csv", table.to_csv(index=False))
        return out


def run_meta(scenario: Scenario, run: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """Who ran what, where and when, for a results directory."""
    return {
        "tool": "frerlab sim", "frerlab_version": __version__, "scenario": scenario.name,
        "host": platform.node(), "platform": platform.platform(), "python": platform.python_version(),
        "finished": datetime.now(UTC).isoformat(), "run": run, "warnings": warnings,
    }


def scenario_data(scenario: str | Path | dict[str, Any] | Scenario) -> dict[str, Any]:
    """Plain data of a scenario given as a path, a dict or a Scenario (a deep copy)."""
    if isinstance(scenario, Scenario):
        return scenario.model_dump(mode="json", exclude={"sweep"})
    if isinstance(scenario, dict):
        return copy.deepcopy(scenario)
    return read_data(scenario)


def prepare(
    scenario: str | Path | dict[str, Any] | Scenario, overrides: dict[str, Any] | None = None, source: str | None = None,
) -> Scenario:
    """The validated scenario after applying `overrides` (dotted field -> value); `source`
    names it in errors (default: its path, or "scenario")."""
    data = scenario_data(scenario)
    for dotted, value in (overrides or {}).items():
        set_field(data, dotted, value)
    if source is None:
        source = str(scenario) if isinstance(scenario, (str, Path)) else "scenario"
    return parse_scenario(data, source)


def check(
    scenario: str | Path | dict[str, Any] | Scenario, overrides: dict[str, Any] | None = None,
    allow_long: bool = False, source: str | None = None,
) -> tuple[Scenario, Cost]:
    """The validated scenario and the estimated cost of running it (see `frerlab.sim.cost`);
    UsageError when it is invalid or, unless `allow_long`, when the cost exceeds the limits."""
    sc = prepare(scenario, overrides, source)
    run_cost = estimate(compile_spec(sc))
    require_affordable(run_cost, sc.name, allow_long)
    return sc, run_cost


def run(
    scenario: str | Path | dict[str, Any] | Scenario, overrides: dict[str, Any] | None = None, allow_long: bool = False,
) -> SimResult:
    """Runs one scenario (its `sweep` section is ignored) and returns the result tables.
    Refuses (UsageError) a run whose estimated cost exceeds the limits of `frerlab.sim.cost`
    unless `allow_long`."""
    from frerlab import _native

    sc, _ = check(scenario, overrides, allow_long)
    spec = compile_spec(sc)
    try:
        report = json.loads(_native.sim_run(json.dumps(spec)))
    except ValueError as err:
        raise UsageError(f"{sc.name}: {err}") from None
    report["warnings"] = lossless.warnings(spec)
    return SimResult(sc, report)
