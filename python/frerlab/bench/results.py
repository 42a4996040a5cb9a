"""A campaign's results directory (in the spirit of flent: everything needed to re-read a run).

    OUT/campaign.yaml    the campaign file as given (by the run that created the directory)
    OUT/metadata.json    host, kernel, CPU, tool versions, frerlab version and commit, the
                         campaign's fingerprint, and every invocation (start, end, how it ended)
    OUT/units/STEP/MODE/POINT/rK/
                         the raw outputs of the unit's tools first (send.json, recv.json,
                         iperf3.json, sockperf.txt, trials/NNN/...), then result.json, written
                         last: a unit is done exactly when its result.json exists
    OUT/summary.json, OUT/summary.csv
                         per step, mode and point, every metric over the valid repetitions
                         (n, mean, std, CV, 95 % interval), the flags seen, and FRER vs control
                         (Welch's t-test, Hedges' g) where both modes ran

Every file is written atomically, so Ctrl-C or a kill leaves finished units whole and an
unfinished one without result.json; `--resume` redoes only those, after checking that the
campaign is the same one (by fingerprint). What `--resume` reads back (metadata.json, every
result.json, campaign.yaml's presence) is read with frerlab.files, as regular files inside the
directory, and checked before anything runs: a damaged file is one UsageError naming it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from frerlab import __version__
from frerlab.bench import stats
from frerlab.bench.campaign import Campaign, Unit, fingerprint, plan
from frerlab.bench.metrics import metric
from frerlab.errors import UsageError
from frerlab.files import read_json, shape_error, stored_file, write_atomic
from frerlab.names import shown

ROOT = Path(__file__).resolve().parents[3]
TOOLS = {"iperf3": ["iperf3", "--version"], "sockperf": ["sockperf", "--version"], "tshark": ["tshark", "--version"],
         "tc": ["tc", "-V"]}


class ResultsDir:
    """The results directory of one campaign."""

    def __init__(self, out: Path, campaign: Campaign, text: str) -> None:
        self.out, self.campaign, self.text = Path(out), campaign, text

    def open(self, resume: bool) -> list[str]:
        """Creates the directory (or, with `resume`, checks it holds this campaign); returns the
        ids of the units already done."""
        meta_path = self.out / "metadata.json"
        if meta_path.exists():
            if not resume:
                raise UsageError(f"{self.out} holds results already: give --resume to complete them, "
                                 "or another -o/--output")
            meta = self.metadata()
            if meta["fingerprint"] != fingerprint(self.campaign):
                raise UsageError(f"{self.out} holds results of another campaign ({shown(meta.get('campaign'))}, "
                                 f"fingerprint {shown(meta['fingerprint'])}); --resume needs the same campaign file")
            stored_file(self.out / "campaign.yaml", "campaign file of the results", root=self.out)
            units = plan(self.campaign)
            return [u.id for u in units if self._unit_result(u) is not None]
        if self.out.exists() and any(self.out.iterdir()):
            raise UsageError(f"{self.out} exists and is not a campaign's results directory: give an empty or new -o/--output")
        self.out.mkdir(parents=True, exist_ok=True)
        write_atomic(self.out / "campaign.yaml", self.text)
        write_atomic(meta_path, json.dumps(metadata(self.campaign), indent=1))
        return []

    def metadata(self) -> dict[str, Any]:
        """metadata.json; UsageError if it is damaged (not a mapping with a fingerprint and a list of runs)."""
        path = self.out / "metadata.json"
        meta = read_json(path, "results metadata", root=self.out)
        if not isinstance(meta, dict) or not isinstance(meta.get("fingerprint"), str):
            raise shape_error(path, "results metadata", "it must be a mapping holding the campaign's fingerprint (a text)")
        if not isinstance(meta.get("runs", []), list):
            raise shape_error(path, "results metadata", "its `runs` must be a list")
        return meta

    def unit_dir(self, unit: Unit) -> Path:
        """units/UNIT-ID; UsageError if it leads outside the results directory (a symlink planted there)."""
        where = self.out / "units" / unit.id
        if not where.resolve().is_relative_to(self.out.resolve()):
            raise UsageError(f"{where} leads outside {self.out} (a symlink): frerlab writes results only inside it")
        return where

    def _unit_result(self, unit: Unit) -> dict[str, Any] | None:
        """The unit's result.json (None: not done); UsageError if it is damaged."""
        path = self.unit_dir(unit) / "result.json"
        if not os.path.lexists(path):
            return None
        found = read_json(path, "unit result", root=self.out)
        problem = result_problem(found, _unit_record(unit))
        if problem:
            raise shape_error(path, "unit result", problem)
        return found

    def start_unit(self, unit: Unit) -> Path:
        """A clean directory for a unit about to run (what an interrupted try left is removed)."""
        where = self.unit_dir(unit)
        if where.exists():
            shutil.rmtree(where)
        where.mkdir(parents=True)
        return where

    def finish_unit(self, unit: Unit, result: dict[str, Any]) -> None:
        write_atomic(self.unit_dir(unit) / "result.json", json.dumps({"unit": _unit_record(unit), **result}, indent=1))

    def results(self) -> list[dict[str, Any]]:
        """Every finished unit's result, in plan order."""
        return [found for unit in plan(self.campaign) if (found := self._unit_result(unit)) is not None]

    def add_metadata(self, key: str, value: Any) -> None:
        """Records `value` under `key` in metadata.json."""
        write_atomic(self.out / "metadata.json", json.dumps({**self.metadata(), key: value}, indent=1))

    def log_run(self, started: float, how: str) -> None:
        """Appends one invocation to metadata.json."""
        meta = self.metadata()
        meta.setdefault("runs", []).append({"start": started, "end": time.time(), "ended": how})
        write_atomic(self.out / "metadata.json", json.dumps(meta, indent=1))

    def write_summary(self) -> dict[str, Any]:
        """summary.json and summary.csv from every finished unit."""
        return write_summary(self.out, self.results())


def _unit_record(unit: Unit) -> dict[str, Any]:
    """What a unit's result.json says of the unit."""
    return {"id": unit.id, "step": unit.step, "kind": unit.kind, "mode": unit.mode, "params": unit.params,
            "repetition": unit.repetition}


def result_problem(found: Any, unit: dict[str, Any] | None = None) -> str | None:
    """What is wrong with a unit's result.json as read back (None: it is one frerlab wrote for
    `unit`, or for any unit when `unit` is None)."""
    if unit is None and isinstance(found, dict) and isinstance(found.get("unit"), dict) \
            and isinstance(found["unit"].get("id"), str):
        unit = found["unit"]
    if unit is None:
        return "it must be a mapping whose `unit` is a mapping with an `id`"
    if not isinstance(found, dict) or found.get("unit") != unit:
        return f"it must be a mapping whose `unit` is unit {unit['id']}"
    if not isinstance(found.get("valid"), bool):
        return "its `valid` must be true or false"
    metrics = found.get("metrics")
    if not isinstance(metrics, dict) or not all(v is None or isinstance(v, (int, float)) for v in metrics.values()):
        return "its `metrics` must be a mapping of names to numbers (or null)"
    flags = found.get("flags")
    if not isinstance(flags, list) or not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in flags):
        return "its `flags` must be a list of mappings, each with a `name`"
    return None


def write_summary(out: Path, results: list[dict[str, Any]]) -> dict[str, Any]:
    """summary.json and summary.csv of `results` into `out`."""
    summary = summarize(results)
    write_atomic(out / "summary.json", json.dumps(summary, indent=1))
    write_atomic(out / "summary.csv", summary_csv(summary))
    return summary


def metadata(campaign: Campaign) -> dict[str, Any]:
    """Who ran what, where, with which tools."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return {"campaign": campaign.name, "fingerprint": fingerprint(campaign), "frerlab": __version__,
            "commit": _commit(), "host": platform.node(), "kernel": platform.release(), "cpu": cpu,
            "cpus": os.cpu_count(), "python": platform.python_version(), "tools": tool_versions(),
            "created": time.time(), "runs": []}


def _commit() -> str | None:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def tool_versions() -> dict[str, str | None]:
    """The first line each tool prints about its version (None: not installed)."""
    versions = {}
    for name, argv in TOOLS.items():
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            versions[name] = ((done.stdout or done.stderr).strip().splitlines() or [None])[0]
        except (OSError, subprocess.TimeoutExpired):
            versions[name] = None
    return versions


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per (step, mode, point): each metric over the valid repetitions, and the flags; then
    FRER vs control per (step, point, outcome metric: frerlab.bench.metrics) where both have at
    least two valid values."""
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        u = r["unit"]
        groups.setdefault((u["step"], u["mode"], json.dumps(u["params"])), []).append(r)
    rows = []
    for (step, mode, params), members in groups.items():
        valid = [m for m in members if m["valid"]]
        flag_counts: dict[str, int] = {}
        for m in members:
            for name in {f["name"] for f in m["flags"]}:
                flag_counts[name] = flag_counts.get(name, 0) + 1
        metrics = {}
        for name in dict.fromkeys(k for m in members for k in m["metrics"]):
            values = [m["metrics"][name] for m in valid if m["metrics"].get(name) is not None]
            metrics[name] = _summary(values)
        rows.append({"step": step, "kind": members[0]["unit"]["kind"], "mode": mode, "params": json.loads(params),
                     "units": len(members), "valid_units": len(valid), "flags": flag_counts, "metrics": metrics})
    return {"groups": rows, "comparisons": _comparisons(rows, results)}


def _summary(values: list[float]) -> dict[str, Any] | None:
    if not values:
        return None
    s = stats.summarize(values)
    return {"n": s.n, "mean": s.mean, "std": s.std, "cv": s.cv, "ci_low": s.low, "ci_high": s.high, "text": s.text()}


def _comparisons(rows: list[dict], results: list[dict]) -> list[dict]:
    values: dict[tuple, dict[str, list[float]]] = {}
    for r in results:
        if not r["valid"]:
            continue
        u = r["unit"]
        for name, value in r["metrics"].items():
            if value is not None and metric(name, u["kind"]).outcome:
                values.setdefault((u["step"], json.dumps(u["params"]), name), {}).setdefault(u["mode"], []).append(value)
    found = []
    for (step, params, name), by_mode in values.items():
        frer, control = by_mode.get("frer", []), by_mode.get("control", [])
        if len(frer) < 2 or len(control) < 2:
            continue
        try:
            c = stats.welch(frer, control)
        except ValueError as err:  # no spread in either sample: t and g undefined
            found.append({"step": step, "params": json.loads(params), "metric": name, "refused": str(err)})
            continue
        found.append({"step": step, "params": json.loads(params), "metric": name, "difference": c.difference,
                      "ci_low": c.low, "ci_high": c.high, "t": c.t, "df": c.df, "p": c.p, "hedges_g": c.hedges_g,
                      "significant": c.significant, "effect": c.size,
                      "text": c.text(names=("frer", "control"))})
    return found


def summary_csv(summary: dict[str, Any]) -> str:
    """One row per group and metric."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["step", "mode", "params", "metric", "n", "mean", "std", "cv", "ci_low", "ci_high",
                     "units", "valid_units", "flags"])
    for g in summary["groups"]:
        params = ";".join(f"{k}={v}" for k, v in g["params"].items())
        flags = ";".join(f"{k}:{v}" for k, v in g["flags"].items())
        for name, s in g["metrics"].items():
            cells = [s[k] for k in ("n", "mean", "std", "cv", "ci_low", "ci_high")] if s else [0, "", "", "", "", ""]
            writer.writerow([g["step"], g["mode"], params, name, *cells, g["units"], g["valid_units"], flags])
    return out.getvalue()
