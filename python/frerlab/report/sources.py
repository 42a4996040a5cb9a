"""The stored results a report is built from, read and never re-run: a campaign's or an
import's results directory (metadata.json, units/*/result.json, summary.json), a fail-over
run's directory (`frerlab failover`, `frerlab demo --output`: result.json with phases and
events, and timeline.json where the run captured one), and a simulator run's directory
(`frerlab sim run -o`: meta.json and one CSV per table) or sweep (sweep.csv: one row per grid
point and stream, the grid's fields first, and each point's run in point-NNN/), an attack run's
directory (`frerlab attack run -o`: meta.json `test: attack`, result.json, the tools' reports)
and an attack suite's (`frerlab attack suite -o`: suite.json, each run's directory under it).

Each directory given becomes one or more `Source`s, labelled by the directory's name (made
unique), with the paths of its raw files kept for the report's raw-data section.

What a report reads is what it claims to be (docs/errors.md, "Results directories"): only
regular files inside the results directory (a symlink leaving it, a device, a FIFO or a file
larger than files.MAX_STORED_BYTES is skipped, and the report says so); a file that is one but
does not hold what frerlab wrote there (report.shapes) stops the report with one error naming
it and the field. The work is bounded: at most MAX_ENTRIES directory entries walked, MAX_UNITS
units, MAX_BYTES bytes read and MAX_ROWS rows to plot, checked before any figure is built."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from frerlab import yamlfile
from frerlab.bench.verdict import Verdict
from frerlab.errors import UsageError
from frerlab.files import MAX_STORED_BYTES, check_shape, read_json, read_stored, shape_error, stored_file
from frerlab.report import shapes

KINDS = ("campaign", "import", "failover", "sim", "sim-sweep", "attack", "attack-suite")
#: Directory entries walked per report (the largest real results, docs/results/seed-methodology, hold 1,400).
MAX_ENTRIES = 200_000
#: Units (result.json files) per report (seed-methodology: 262).
MAX_UNITS = 20_000
#: Bytes of stored files read per report (seed-methodology: 7 MB).
MAX_BYTES = 512 << 20
#: Rows to plot per report: CSV rows, timeline bins, search and sweep trials, fail-over intervals.
MAX_ROWS = 2_000_000
#: Files a campaign or fail-over run derived (the others under it are the tools' raw outputs).
DERIVED = {"result.json", "summary.json", "summary.csv", "metadata.json", "meta.json", "timeline.json"}
#: Files an attack suite derived from its runs (beside them, the runs' raw files).
SUITE_DERIVED = {"suite.json", "suite.csv", "suite.md"}
#: Columns of a simulator run's tables the figures draw, per table: name -> NaN allowed.
SIM_COLUMNS = {"series": {"stream": None, "time_s": False, "throughput_bps": False, "lost": False},
               "rate_series": {"stream": None, "time_s": False, "rate_mean_bps": False, "rate_max_bps": False},
               "port_series": {"port": None, "time_s": False, "tx_bps": False, "queue_max_bytes": False,
                               "queue_mean_bytes": False}}
#: Columns of sweep.csv after the grid's, by kind of sweep (per stream, or of hotspot metrics).
SWEEP_COLUMNS = {"stream": {"stream": None, "loss_ratio": False, "latency_p50_ns": True, "latency_p99_ns": True,
                            "latency_p99_9_ns": True},
                 "drain_time_s": {"drain_time_s": True, "control_bps": False}}
WHAT = "results file"


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
    #: campaign.yaml as the campaign ran it, its text and its data
    campaign_text: str | None = None
    campaign: dict[str, Any] | None = None
    #: the TSN latency verdict of campaign.yaml's first latency step that gives one
    verdict: Verdict | None = None
    #: failover: (mode, result.json, timeline.json or None) per run
    failovers: list[tuple[str, dict, dict | None]] = field(default_factory=list)
    #: sim: table name -> DataFrame; sim-sweep: "sweep" -> sweep.csv
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: sim: scenario.json, for the figures that need the topology
    scenario: dict[str, Any] | None = None
    #: attack: the run's result.json
    attack: dict[str, Any] | None = None
    #: attack-suite: suite.json
    suite: dict[str, Any] | None = None
    #: files holding what the tools produced, relative to `path`
    raw_files: list[str] = field(default_factory=list)
    #: files not read or listed, each with why (not a regular file inside `path`, too large)
    skipped: list[str] = field(default_factory=list)


@dataclass
class _Budget:
    """What one report has read so far, against its bounds."""

    entries: int = 0
    units: int = 0
    bytes: int = 0
    rows: int = 0

    def add(self, what: str, n: int, bound: int, where: Path) -> None:
        total = getattr(self, what) + n
        setattr(self, what, total)
        if total > bound:
            raise UsageError(f"the results given hold {total} {what} to read (as far as {where}), more than the "
                             f"{bound} a report reads: report fewer or smaller results directories")


class _Directory:
    """One results directory being read: only its regular files inside it, within the
    report's budget; what is skipped, with why, in `skipped`."""

    def __init__(self, root: Path, budget: _Budget):
        self.root, self.budget, self.skipped = root, budget, []

    def usable(self, rel: str | Path) -> Path | None:
        """root/rel if it is a readable stored file; None if it is missing, or (noted in
        `skipped`) not a regular file inside root or larger than MAX_STORED_BYTES."""
        path = self.root / rel
        if not (path.is_symlink() or path.exists()):
            return None
        try:
            stored_file(path, WHAT, self.root)
        except UsageError as err:
            self.skipped.append(str(err))
            return None
        if path.stat().st_size > MAX_STORED_BYTES:
            self.skipped.append(f"{WHAT} {str(path)!r} is larger than {MAX_STORED_BYTES} bytes, the most frerlab "
                                "reads back")
            return None
        return path

    def reserve(self, rels: list[str | Path]) -> list[Path | None]:
        """The usable paths of `rels` (None where not), their bytes taken from the budget before
        any is read."""
        paths = [self.usable(r) for r in rels]
        self.budget.add("bytes", sum(p.stat().st_size for p in paths if p), MAX_BYTES, self.root)
        return paths

    def json(self, path: Path | None, model: type[BaseModel]) -> Any:
        """The JSON data of a reserved `path` (None for None), checked against `model`."""
        if path is None:
            return None
        data = read_json(path, WHAT, self.root)
        check_shape(model, data, path, WHAT)
        return data

    def table(self, path: Path) -> pd.DataFrame:
        """The CSV table of a reserved `path`, its rows taken from the budget."""
        data = read_stored(path, WHAT, self.root)
        try:
            table = pd.read_csv(io.BytesIO(data))
        except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
            raise UsageError(f"{WHAT} {str(path)!r} cannot be read as CSV ({type(err).__name__}): is it a file "
                             "frerlab wrote?") from None
        self.budget.add("rows", len(table), MAX_ROWS, path)
        return table

    def walk(self) -> list[str]:
        """Every file under root, relative and sorted; a symlink to a directory is not followed
        (it is noted as skipped)."""
        found = []
        for top, dirs, files in os.walk(self.root):
            self.budget.add("entries", len(dirs) + len(files), MAX_ENTRIES, self.root)
            for d in [d for d in dirs if os.path.islink(os.path.join(top, d))]:
                dirs.remove(d)
                self.skipped.append(f"{os.path.join(top, d)!r} is a symlink to a directory: not followed")
            found += [str(Path(top, f).relative_to(self.root)) for f in files]
        return sorted(found)

    def listed(self, rels: list[str]) -> list[str]:
        """Those of `rels` that are regular files inside root (the raw files a page lists)."""
        kept = []
        for rel in rels:
            try:
                stored_file(self.root / rel, WHAT, self.root)
                kept.append(rel)
            except UsageError as err:
                self.skipped.append(str(err))
        return kept


def load_all(paths: list[Path]) -> list[Source]:
    """Every run in `paths`, labels unique; UsageError naming a path that holds none, a
    damaged file, or results beyond the report's bounds."""
    if not paths:
        raise UsageError("no results directory given: name one or more (a campaign's, an import's, a fail-over "
                         "run's, a simulator run's, an attack run's or an attack suite's)")
    budget = _Budget()
    sources: list[Source] = []
    for path in paths:
        sources += load(Path(path), budget)
    seen: dict[str, int] = {}
    for s in sources:
        seen[s.label] = seen.get(s.label, 0) + 1
        if seen[s.label] > 1:
            s.label = f"{s.label} ({seen[s.label]})"
    return sources


def _columns(path: Path, table: pd.DataFrame, columns: dict[str, bool | None]) -> pd.DataFrame:
    """`table` if it holds `columns` (name -> whether NaN is allowed in that numeric column;
    None: any values); files.shape_error naming the column otherwise."""
    for name, nan in columns.items():
        if name not in table.columns:
            raise shape_error(path, WHAT, f"column {name!r} is missing")
        values = table[name]
        if nan is None:
            continue
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if not numeric or values.isin([float("inf"), float("-inf")]).any() or (not nan and values.isna().any()):
            raise shape_error(path, WHAT, f"column {name!r} must hold finite numbers{' (or nothing)' if nan else ''}")
    return table


def _exists(path: Path) -> bool:
    """Whether `path` is there, as any kind of file (a symlink too, wherever it points)."""
    return path.is_symlink() or path.exists()


def load(path: Path, budget: _Budget | None = None) -> list[Source]:
    """The runs stored in one directory."""
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory: give a results directory")
    d = _Directory(path, budget or _Budget())
    if _exists(path / "metadata.json"):
        source = _campaign(d)
    elif _exists(path / "report.json") and _exists(path / "meta.json"):
        source = _sim(d)
    elif _exists(path / "sweep.csv"):
        source = _sweep(d)
    elif _exists(path / "suite.json"):
        source = _attack_suite(d)
    else:
        source = _attack(d) or _failover(d)
    if source is None:
        raise UsageError(f"{path} holds no results frerlab can read: expected a campaign's or an import's results "
                         "directory (metadata.json), a simulator run or sweep (report.json and meta.json, or sweep.csv, "
                         "from `sim run -o`), a fail-over run (result.json from `frerlab failover` or "
                         "`frerlab demo --output`), an attack run (meta.json and result.json from `frerlab attack run`) "
                         "or an attack suite (suite.json from `frerlab attack suite`)"
                         + (f"; skipped: {'; '.join(d.skipped)}" if d.skipped else ""))
    source.skipped = d.skipped
    return [source]


def _campaign(d: _Directory) -> Source:
    files = d.walk()
    unit_files = [f for f in files if f.startswith(f"units{os.sep}") and Path(f).name == "result.json"]
    d.budget.add("units", len(unit_files), MAX_UNITS, d.root)
    meta_path, summary_path, *unit_paths = d.reserve(["metadata.json", "summary.json", *unit_files])
    yaml_path = d.usable("campaign.yaml")
    if yaml_path and yaml_path.stat().st_size > yamlfile.MAX_FILE_BYTES:
        d.skipped.append(f"{WHAT} {str(yaml_path)!r} is larger than {yamlfile.MAX_FILE_BYTES} bytes, the most "
                         "frerlab reads of a YAML file")
        yaml_path = None
    meta = d.json(meta_path, shapes.Metadata) or {}
    units = []
    for p in (p for p in unit_paths if p):
        unit = d.json(p, shapes.Unit)
        kind = unit["unit"]["kind"]
        if kind in shapes.DETAILS and (kind == "failover" or "trials" in unit["detail"]):
            check_shape(shapes.DETAILS[kind], unit["detail"], p, WHAT, "detail")
            d.budget.add("rows", len(unit["detail"].get("trials", [])), MAX_ROWS, p)
        if "frer" in unit["detail"]:
            check_shape(shapes.Evidence, unit["detail"]["frer"], p, WHAT, "detail.frer")
        units.append((p, unit))
    failovers = [(u["unit"]["mode"], u["detail"], _timeline(d, p.parent)) for p, u in units
                 if u["unit"]["kind"] == "failover"]
    text, data, verdict = _campaign_file(d, yaml_path)
    raw = d.listed([f for f in files if Path(f).name not in DERIVED and f != "campaign.yaml" and not _report_output(f)])
    return Source("import" if meta.get("kind") == "import" else "campaign", d.root.resolve().name, d.root, meta,
                  units=[u for _, u in units], summary=d.json(summary_path, shapes.Summary) or {},
                  campaign_text=text, campaign=data, verdict=verdict, failovers=failovers, raw_files=raw)


def _report_output(rel: str) -> bool:
    """Whether a file at `rel` in a results directory is a report built from it (a page at its
    top, or a file in a page's `<name>-images/`): not one of the raw files."""
    parts = Path(rel).parts
    return parts[0].endswith(".html") if len(parts) == 1 else parts[0].endswith("-images")


def _campaign_file(d: _Directory, path: Path | None) -> tuple[str | None, dict | None, Verdict | None]:
    """campaign.yaml's text, its data and the TSN verdict of its first latency step that gives one."""
    if path is None:
        return None, None, None
    d.budget.add("bytes", path.stat().st_size, MAX_BYTES, path)
    try:
        text = read_stored(path, WHAT, d.root, yamlfile.MAX_FILE_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{WHAT} {str(path)!r} is not UTF-8 text: is it a file frerlab wrote?") from None
    data = yamlfile.load(text, str(path))
    steps = data.get("steps", []) if isinstance(data, dict) else None
    if not isinstance(steps, list):
        raise shape_error(path, WHAT, "it must be a campaign: a mapping whose 'steps' is a list")
    for k, step in enumerate(steps):
        if isinstance(step, dict) and step.get("kind") == "latency" and step.get("verdict") is not None:
            verdict = yamlfile.validate(Verdict, step["verdict"], f"{path}: steps.{k}.verdict",
                                        "a mapping of percentile and limit_us")
            return text, data, verdict
    return text, data, None


def _timeline(d: _Directory, run: Path) -> dict | None:
    (path,) = d.reserve([run.relative_to(d.root) / "timeline.json"])
    timeline = d.json(path, shapes.Timeline)
    if timeline:
        d.budget.add("rows", sum(len(s) for s in timeline["series"].values()), MAX_ROWS, path)
    return timeline


def _sim(d: _Directory) -> Source:
    csvs = [f for f in d.walk() if os.sep not in f and f.endswith(".csv")]
    meta_path, scenario_path, *table_paths = d.reserve(["meta.json", "scenario.json", *csvs])
    tables = {Path(name).stem: _columns(p, d.table(p), SIM_COLUMNS.get(Path(name).stem, {}))
              for name, p in zip(csvs, table_paths) if p}
    return Source("sim", d.root.resolve().name, d.root, d.json(meta_path, shapes.Metadata) or {}, tables=tables,
                  scenario=d.json(scenario_path, shapes.Metadata),
                  raw_files=d.listed([f for f in ("report.json", "scenario.json") if _exists(d.root / f)]))


def _sweep(d: _Directory) -> Source | None:
    files = d.walk()
    sweep_path, meta_path = d.reserve(["sweep.csv", "point-000/meta.json"])
    if sweep_path is None:
        return None
    table = d.table(sweep_path)
    kind = next((k for k in SWEEP_COLUMNS if k in table.columns), None)
    if kind is None or list(table.columns).index(kind) == 0:
        raise shape_error(sweep_path, WHAT, "it must hold the grid's columns, then 'stream' (or 'drain_time_s' for "
                                            "a hotspot sweep)")
    points = [f for f in files if f.startswith("point-") and f.endswith(f"{os.sep}report.json")]
    return Source("sim-sweep", d.root.resolve().name, d.root, d.json(meta_path, shapes.Metadata) or {},
                  tables={"sweep": _columns(sweep_path, table, SWEEP_COLUMNS[kind])}, raw_files=d.listed(points))


def _failover(d: _Directory) -> Source | None:
    """The fail-over runs in the directory itself and in its subdirectories, in that order."""
    subdirs = sorted(e.name for e in os.scandir(d.root) if e.is_dir(follow_symlinks=False))
    d.budget.add("entries", len(subdirs), MAX_ENTRIES, d.root)
    candidates = [Path(r) for r in (".", *subdirs) if _exists(d.root / r / "meta.json")
                  and _exists(d.root / r / "result.json")]
    paths = d.reserve([p for run in candidates for p in (run / "meta.json", run / "result.json")])
    runs = []
    for run, meta_path, result_path in zip(candidates, paths[::2], paths[1::2]):
        meta = d.json(meta_path, shapes.Metadata)
        if meta and meta.get("test") == "failover" and result_path:
            result = d.json(result_path, shapes.FailoverRun)
            runs.append((result["mode"], result, _timeline(d, d.root / run)))
    if not runs:
        return None
    files = d.walk()
    return Source("failover", d.root.resolve().name, d.root, runs[0][1].get("meta", {}), failovers=runs,
                  raw_files=d.listed([f for f in files if Path(f).name not in DERIVED and not _report_output(f)]))


def _attack(d: _Directory) -> Source | None:
    """The attack run in the directory itself (meta.json says `test: attack`), or None."""
    if not (_exists(d.root / "meta.json") and _exists(d.root / "result.json")):
        return None
    (meta_path,) = d.reserve(["meta.json"])
    meta = d.json(meta_path, shapes.Metadata)
    if not meta or meta.get("test") != "attack":
        return None
    (result_path,) = d.reserve(["result.json"])
    if result_path is None:
        return None
    result = d.json(result_path, shapes.AttackRun)
    d.budget.add("rows", len(result["intervals"]), MAX_ROWS, result_path)
    files = d.walk()
    return Source("attack", d.root.resolve().name, d.root, meta, attack=result,
                  raw_files=d.listed([f for f in files if Path(f).name not in DERIVED and not _report_output(f)]))


def _attack_suite(d: _Directory) -> Source | None:
    """suite.json, and the meta.json of its first run for where it ran (the runs' own files are
    listed as its raw files)."""
    files = d.walk()
    (suite_path,) = d.reserve(["suite.json"])
    if suite_path is None:
        return None
    suite = d.json(suite_path, shapes.Suite)
    d.budget.add("rows", len(suite["runs"]) + len(suite["groups"]), MAX_ROWS, suite_path)
    meta: dict[str, Any] = {}
    if suite["runs"]:
        first = suite["runs"][0]
        (meta_path,) = d.reserve([Path(first["algorithm"], first["attack"], first["defence"],
                                       f"r{first['repetition']}", "meta.json")])
        meta = d.json(meta_path, shapes.Metadata) or {}
    raw = [f for f in files if f not in SUITE_DERIVED and Path(f).name not in DERIVED and not _report_output(f)]
    return Source("attack-suite", d.root.resolve().name, d.root, meta, suite=suite, raw_files=d.listed(raw))
