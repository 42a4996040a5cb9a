"""Old results (iperf3, sockperf, mausezahn, frerlab gen files: `frerlab import`) into the
layout of a campaign's results directory, so that runs made by hand and campaign runs are read,
summarised, compared and reported the same way.

    frerlab import --results DIR --mode frer    frer-run-1.json frer-run-2.json ...
    frerlab import --results DIR --mode control ctl-run-1.json ...

Each record becomes a unit `import/<tool>-<test>/<mode>/frame_size=F/rK`: the raw file copied
in first, then result.json with the record's figures as metrics and its warnings as flags.
Records of the same tool, test, mode and frame size are repetitions (K counts up across
imports), so their summary carries n, mean and interval, and FRER vs control is compared
with Welch's t-test as for a campaign. Importing into a directory adds to it; a campaign's
results directory is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from frerlab import __version__
from frerlab.bench.results import result_problem, write_summary
from frerlab.errors import UsageError
from frerlab.files import read_json, shape_error, write_atomic
from frerlab.names import shown
from frerlab.traffic import importer
from frerlab.traffic.record import TrafficRecord

KIND = "import"
PERCENTILES = ("50", "90", "99", "99.9", "99.99", "99.999")


def import_into(out: Path, paths: list[Path], mode: str) -> list[dict[str, Any]]:
    """Imports `paths` as `mode` runs into results directory `out`; returns the new units'
    results. Every file is read before anything is written (a bad one writes nothing)."""
    records = [(Path(p), importer.import_file(p)) for p in paths]
    out = Path(out)
    meta_path = out / "metadata.json"
    if os.path.lexists(meta_path):
        meta = read_json(meta_path, "results metadata", root=out)
        if not isinstance(meta, dict):
            raise shape_error(meta_path, "results metadata", "it must be a mapping")
        if meta.get("kind") != KIND:
            raise UsageError(f"{out} holds a campaign's results ({shown(meta.get('campaign'))}): import into "
                             "another directory")
        if not isinstance(meta.get("imported"), list):
            raise shape_error(meta_path, "results metadata", "its `imported` must be a list")
    elif out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} exists and is not a results directory: give an empty or new one")
    else:
        meta = {"kind": KIND, "campaign": "import", "frerlab": __version__, "created": time.time(), "imported": []}
    out.mkdir(parents=True, exist_ok=True)
    added = []
    for path, found in records:
        for record in found:
            unit_id = _unit_id(out, record, mode)
            where = out / "units" / unit_id
            where.mkdir(parents=True)
            shutil.copyfile(path, where / f"raw-{path.name}")
            result = {"unit": {"id": unit_id, "step": _step(record), "kind": KIND, "mode": mode,
                               "params": _params(record), "repetition": int(unit_id.rsplit("/r", 1)[1])},
                      "metrics": metrics(record), "valid": True,
                      "flags": [{"name": "import_warning", "detail": w, "invalidates": False} for w in record.warnings],
                      "detail": {"source": str(path), "record": record.model_dump(mode="json")}}
            write_atomic(where / "result.json", json.dumps(result, indent=1))
            added.append(result)
        meta["imported"].append({"file": str(path), "mode": mode, "records": len(found), "at": time.time()})
    write_atomic(meta_path, json.dumps(meta, indent=1))
    write_summary(out, results(out))
    return added


def results(out: Path) -> list[dict[str, Any]]:
    """Every unit's result in an import directory, in unit order; UsageError naming a damaged one."""
    found = []
    for path in sorted((Path(out) / "units").rglob("result.json"), key=_unit_order):
        result = read_json(path, "unit result", root=out)
        problem = result_problem(result)
        if problem:
            raise shape_error(path, "unit result", problem)
        found.append(result)
    return found


def _unit_order(path: Path) -> tuple:
    """Units of one point by repetition (units/.../rK/result.json), numerically."""
    rep = path.parent.name[1:]
    return (path.parent.parent, int(rep) if rep.isdigit() and len(rep) < 10 else -1, path.parent.name)


def metrics(record: TrafficRecord) -> dict[str, float | None]:
    """The record's figures under the names campaign units use."""
    r = record.with_rates()
    found: dict[str, float | None] = {
        "throughput_mbps": None if r.payload_bps is None else r.payload_bps / 1e6,
        "l2_mbps": None if r.l2_bps is None else r.l2_bps / 1e6,
        "frames_per_s": r.frames_per_s, "loss_percent": r.loss_percent, "lost": r.lost,
        "duplicates": r.duplicates, "reordered": r.reordered, "retransmits": r.retransmits,
        "jitter_ms": r.jitter_ms}
    if r.latency:
        found |= {"mean_us": r.latency.mean_us, "min_us": r.latency.min_us, "max_us": r.latency.max_us,
                  "samples": r.latency.samples}
        for p in PERCENTILES:
            found[f"p{p}_us".replace(".", "_")] = r.latency.percentiles_us.get(p)
    return {k: v for k, v in found.items() if v is not None}


def _step(record: TrafficRecord) -> str:
    return f"{record.tool}-{record.test}"


def _params(record: TrafficRecord) -> dict[str, Any]:
    return {"frame_size": record.frame_size} if record.frame_size else {}


def _unit_id(out: Path, record: TrafficRecord, mode: str) -> str:
    """The next free repetition of the record's group."""
    point = ",".join(f"{k}={v}" for k, v in _params(record).items()) or "all"
    group = f"{KIND}/{_step(record)}/{mode}/{point}"
    k = 1
    while (out / "units" / group / f"r{k}").exists():
        k += 1
    return f"{group}/r{k}"
