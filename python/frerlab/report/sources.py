"""The stored results a report is built from, read and never re-run: a campaign's or an
import's results directory (metadata.json, units/*/result.json, summary.json), a fail-over
run's directory (`frerlab failover`, `frerlab demo --output`: result.json with phases and
events, and timeline.json where the run captured one), and a simulator run's directory
(`frerlab sim run -o`: meta.json and one CSV per table) or sweep (sweep.csv: one row per grid
point and stream, the grid's fields first, and each point's run in point-NNN/).

Each directory given becomes one or more `Source`s, labelled by the directory's name (made
unique), with the paths of its raw files kept for the report's raw-data section."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from frerlab.errors import UsageError

KINDS = ("campaign", "import", "failover", "sim", "sim-sweep")


@dataclass
class Source:
    """One stored run."""

    kind: str
    label: str
    path: Path
    meta: dict[str, Any]
    #: campaign and import: every finished unit's result.json, in unit order
    units: list[dict[str, Any]] = field(default_factory=list)
    #: campaign and import: summary.json
    summary: dict[str, Any] = field(default_factory=dict)
    #: campaign.yaml as the campaign ran it
    campaign_text: str | None = None
    #: failover: (mode, result.json, timeline.json or None) per run
    failovers: list[tuple[str, dict, dict | None]] = field(default_factory=list)
    #: sim: table name -> DataFrame; sim-sweep: "sweep" -> sweep.csv
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: files holding what the tools produced, relative to `path`
    raw_files: list[str] = field(default_factory=list)


def load_all(paths: list[Path]) -> list[Source]:
    """Every run in `paths`, labels unique; UsageError naming a path that holds none."""
    if not paths:
        raise UsageError("no results directory given: name one or more (a campaign's, an import's, a fail-over "
                         "run's or a simulator run's)")
    sources: list[Source] = []
    for path in paths:
        sources += load(Path(path))
    seen: dict[str, int] = {}
    for s in sources:
        seen[s.label] = seen.get(s.label, 0) + 1
        if seen[s.label] > 1:
            s.label = f"{s.label} ({seen[s.label]})"
    return sources


def load(path: Path) -> list[Source]:
    """The runs stored in one directory."""
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory: give a results directory")
    label = path.resolve().name
    meta_path = path / "metadata.json"
    if meta_path.is_file():
        meta = _json(meta_path)
        kind = "import" if meta.get("kind") == "import" else "campaign"
        units = [_json(p) for p in sorted((path / "units").rglob("result.json"))] if (path / "units").is_dir() else []
        summary = _json(path / "summary.json") if (path / "summary.json").is_file() else {}
        text = (path / "campaign.yaml").read_text() if (path / "campaign.yaml").is_file() else None
        return [Source(kind, label, path, meta, units=units, summary=summary, campaign_text=text,
                       failovers=_campaign_failovers(path, units), raw_files=_raw_files(path))]
    if (path / "report.json").is_file() and (path / "meta.json").is_file():
        tables = {p.stem: pd.read_csv(p) for p in sorted(path.glob("*.csv"))}
        return [Source("sim", label, path, _json(path / "meta.json"), tables=tables,
                       raw_files=["report.json", "scenario.json"])]
    if (path / "sweep.csv").is_file():
        first = path / "point-000" / "meta.json"
        return [Source("sim-sweep", label, path, _json(first) if first.is_file() else {},
                       tables={"sweep": pd.read_csv(path / "sweep.csv")},
                       raw_files=sorted(str(p.relative_to(path)) for p in path.glob("point-*/report.json")))]
    runs = [d for d in ([path] + sorted(p for p in path.iterdir() if p.is_dir())) if _is_failover(d)]
    if runs:
        failovers = [(r["mode"], r, _timeline(d)) for d, r in ((d, _json(d / "result.json")) for d in runs)]
        return [Source("failover", label, path, failovers[0][1].get("meta", {}), failovers=failovers,
                       raw_files=_raw_files(path))]
    raise UsageError(f"{path} holds no results frerlab can read: expected a campaign's or an import's results "
                     "directory (metadata.json), a simulator run or sweep (report.json and meta.json, or sweep.csv, from "
                     "`sim run -o`) or "
                     "a fail-over run (result.json from `frerlab failover` or `frerlab demo --output`)")


def _is_failover(d: Path) -> bool:
    if not (d / "result.json").is_file() or not (d / "meta.json").is_file():
        return False
    return _json(d / "meta.json").get("test") == "failover"


def _campaign_failovers(path: Path, units: list[dict]) -> list[tuple[str, dict, dict | None]]:
    """The fail-over units of a campaign, with the timeline each captured."""
    return [(u["unit"]["mode"], u["detail"], _timeline(path / "units" / u["unit"]["id"]))
            for u in units if u["unit"]["kind"] == "failover"]


def _timeline(d: Path) -> dict | None:
    return _json(d / "timeline.json") if (d / "timeline.json").is_file() else None


def _raw_files(path: Path) -> list[str]:
    """The tools' own outputs under `path` (what frerlab derived is left out)."""
    derived = {"result.json", "summary.json", "summary.csv", "metadata.json", "meta.json", "timeline.json"}
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and p.name not in derived)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path} cannot be read as JSON ({type(err).__name__}): is this a results directory "
                         "frerlab wrote?") from None
