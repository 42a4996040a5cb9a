"""Bad results directories given to `frerlab report`: a damaged file of each kind of results
(campaign, fail-over run, simulator run, sweep) is refused with exit 2 and one message naming
the file and the field, never a traceback nor a byte of the file; a file that is not what it
claims to be (a symlink leaving the directory, a FIFO, a device, an oversize file) is skipped,
and the report says so on stderr and in the page without showing it; the report's bounds are
checked before any figure is built.

Each results directory starts as a real one (the quick campaign fixture, a real fail-over run's
result, meta and timeline, a simulator run and a sweep made here) copied and then damaged; most
rows call the report's loader directly, one per class runs the real CLI (tests/badinput.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from badinput import SECRET, assert_refused, run_cli
from frerlab import sim
from frerlab.errors import UsageError
from frerlab.files import MAX_STORED_BYTES
from frerlab.report import sources
from frerlab.report.sources import load_all

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "results"
UNIT = "units/throughput/frer/frame_size=1024/r1/result.json"
LOSS_UNIT = "units/loss_vs_load/frer/frame_size=1024,load=40/r1/result.json"


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> dict[str, Path]:
    """One real results directory of each kind, and a secret file outside them all."""
    where = tmp_path_factory.mktemp("real")
    sim.run(ROOT / "scenarios" / "link_failure.yaml").save(where / "sim")
    subprocess.run([sys.executable, "-m", "frerlab.cli", "sim", "run", str(ROOT / "scenarios" / "loss_vs_load.yaml"),
                    "-o", str(where / "sweep"), "--jobs", "1"], check=True, capture_output=True)
    (where / "secret").write_text("\n".join(SECRET) + "\n")
    return {"campaign": FIXTURES / "quick", "failover": FIXTURES / "failover", "sim": where / "sim",
            "sweep": where / "sweep", "secret": where / "secret"}


def edit_json(rel: str, change) -> callable:
    """A damage: `change(data)` applied to the JSON file `rel`."""
    def damage(d: Path) -> None:
        data = json.loads((d / rel).read_text())
        change(data)
        (d / rel).write_text(json.dumps(data))
    return damage


def write(rel: str, content: str | bytes) -> callable:
    """A damage: file `rel` replaced by `content`."""
    return lambda d: (d / rel).write_bytes(content if isinstance(content, bytes) else content.encode())


def first_stat(summary: dict) -> dict:
    return next(m for g in summary["groups"] for m in g["metrics"].values() if m)


def overflowing_mean(d: Path) -> None:
    """A damage: summary.json's first mean is 1e400, which JSON parses as an infinity."""
    summary = json.loads((d / "summary.json").read_text())
    first_stat(summary)["mean"] = 0.5772156649
    (d / "summary.json").write_text(json.dumps(summary).replace("0.5772156649", "1e400"))


SECRET_TEXT = "\n".join(SECRET)
#: (kind of results, damage, file named, field or problem named) refused with exit 2.
DAMAGED = [
    ("campaign", write("metadata.json", SECRET_TEXT), "metadata.json", "not valid JSON"),
    ("campaign", write("metadata.json", ""), "metadata.json", "not valid JSON at line 1"),
    ("campaign", write("metadata.json", bytes(range(256))), "metadata.json", "not UTF-8"),
    ("campaign", write("metadata.json", "[1, 2]"), "metadata.json", "the top level: should be a JSON object"),
    ("campaign", edit_json("summary.json", lambda s: s["groups"][0].pop("metrics")), "summary.json",
     "groups.0.metrics: Field required"),
    ("campaign", edit_json("summary.json", lambda s: s.update(groups={"a": 1})), "summary.json", "groups: "),
    ("campaign", edit_json("summary.json", lambda s: first_stat(s).update(mean=SECRET[0])), "summary.json",
     "mean: Input should be a valid number"),
    ("campaign", edit_json("summary.json", lambda s: first_stat(s).update(n=True)), "summary.json",
     "n: Input should be a valid integer"),
    ("campaign", overflowing_mean, "summary.json", "mean: Input should be a finite number"),
    ("campaign", write("summary.json", '{"groups": [{"mean": NaN}]}'), "summary.json", "NaN"),
    ("campaign", write("summary.json", '{"groups": [{"n": ' + "7" * 400 + "}]}"), "summary.json", "400 digits"),
    ("campaign", write("summary.json", "[" * 100_000 + "]" * 100_000), "summary.json", "nested too deeply"),
    ("campaign", edit_json(UNIT, lambda r: r["unit"].update(params=[1])), UNIT, "unit.params: "),
    ("campaign", edit_json(UNIT, lambda r: r.update(valid="true")), UNIT, "valid: Input should be a valid boolean"),
    ("campaign", edit_json(UNIT, lambda r: r["unit"]["params"].pop("frame_size")), UNIT, "must give frame_size"),
    ("campaign", edit_json(UNIT, lambda r: r["detail"]["trials"][0].update(rate_fps="fast")), UNIT,
     "detail.trials.0.rate_fps"),
    ("campaign", edit_json(UNIT, lambda r: r["metrics"].update(x=[1])), UNIT, "metrics.x"),
    ("campaign", edit_json(LOSS_UNIT, lambda r: r["detail"]["frer"]["sw2"]["1"]["sequence"]["counters"].update(
        passed_packets="many")), LOSS_UNIT, "detail.frer.sw2.1.sequence.counters.passed_packets"),
    ("campaign", edit_json(LOSS_UNIT, lambda r: r["detail"].update(frer=[1])), LOSS_UNIT, "detail.frer: "),
    ("campaign", write("campaign.yaml", "steps:\n - kind: latency\n   verdict: {percentile: 120}\n"), "campaign.yaml",
     "steps.0.verdict: percentile"),
    ("campaign", write("campaign.yaml", "- " + SECRET[2] + "\n"), "campaign.yaml", "'steps' is a list"),
    ("failover", edit_json("result.json", lambda r: r["phases"][0].update(sent=-1)), "result.json", "phases.0.sent"),
    ("failover", edit_json("result.json", lambda r: r.pop("mode")), "result.json", "mode: Field required"),
    ("failover", edit_json("result.json", lambda r: r.update(intervals=r["intervals"][::-1])), "result.json",
     "t_s must increase"),
    ("failover", edit_json("timeline.json", lambda t: t.update(bin_ms=0)), "timeline.json", "bin_ms"),
    ("failover", edit_json("timeline.json", lambda t: t.update(series=[1])), "timeline.json", "series: "),
    ("failover", edit_json("timeline.json", lambda t: t["series"]["sent"].__setitem__(0, 1.5)), "timeline.json",
     "series.sent.0"),
    ("failover", write("meta.json", ""), "meta.json", "not valid JSON"),
    ("sim", write("series.csv", "a,b\n1,2\n"), "series.csv", "column 'stream' is missing"),
    ("sim", lambda d: (d / "series.csv").write_text((d / "series.csv").read_text().replace("299909120.0", "fast")),
     "series.csv", "'throughput_bps' must hold finite numbers"),
    ("sim", write("port_series.csv", "port,time_s,tx_bps,queue_max_bytes,queue_mean_bytes\np,0,inf,0,0\n"),
     "port_series.csv", "'tx_bps' must hold finite numbers"),
    ("sim", write("series.csv", ""), "series.csv", "cannot be read as CSV"),
    ("sim", write("series.csv", bytes(range(256)) * 4), "series.csv", "cannot be read as CSV"),
    ("sim", write("meta.json", '{"run": {"events": ' + "1" * 400 + "}}"), "meta.json", "400 digits"),
    ("sweep", write("sweep.csv", "a,b\n1,2\n"), "sweep.csv", "then 'stream'"),
    ("sweep", lambda d: (d / "sweep.csv").write_text((d / "sweep.csv").read_text().replace(",0.0,", ",inf,", 1)),
     "sweep.csv", "'loss_ratio' must hold finite numbers"),
    ("sweep", write("sweep.csv", SECRET_TEXT), "sweep.csv", "then 'stream'"),
    ("sweep", write("sweep.csv", ""), "sweep.csv", "cannot be read as CSV"),
]


def damaged(real: dict[str, Path], kind: str, damage, tmp_path: Path) -> Path:
    d = tmp_path / kind
    shutil.copytree(real[kind], d, symlinks=True)
    damage(d)
    return d


@pytest.mark.parametrize("kind, damage, file, problem", DAMAGED)
def test_a_damaged_results_file_is_refused_naming_it_and_the_field(real, kind, damage, file, problem, tmp_path):
    d = damaged(real, kind, damage, tmp_path)
    with pytest.raises(UsageError) as refused:
        load_all([d])
    message = str(refused.value)
    assert f"{d / file}" in message and problem in message, message
    assert not any(line in message for line in SECRET), message


#: One CLI row per kind of results: exit 2, the file named, no traceback, no secret, no page.
CLI_DAMAGED = [DAMAGED[0], DAMAGED[6], DAMAGED[19], DAMAGED[26], DAMAGED[34]]


@pytest.mark.parametrize("kind, damage, file, problem", CLI_DAMAGED)
def test_the_command_refuses_damaged_results_and_writes_nothing(real, kind, damage, file, problem, tmp_path):
    d = damaged(real, kind, damage, tmp_path)
    out = tmp_path / "out"
    assert_refused(["report", str(d), "-o", str(out / "r.html")], [str(d / file), problem], run_dir=tmp_path / "run",
                   never=SECRET)
    assert not out.exists()


def symlink(rel: str, target: str | None = None) -> callable:
    """A damage: `rel` replaced by a symlink to `target` (the secret outside by default)."""
    def damage(d: Path) -> None:
        (d / rel).unlink(missing_ok=True)
        (d / rel).symlink_to(target or d.parent / "secret")
    return damage


def fifo(rel: str) -> callable:
    def damage(d: Path) -> None:
        (d / rel).unlink(missing_ok=True)
        os.mkfifo(d / rel)
    return damage


def oversize(rel: str) -> callable:
    def damage(d: Path) -> None:
        with (d / rel).open("r+b") as f:
            f.truncate(MAX_STORED_BYTES + 1)  # sparse: no disk used
    return damage


def linked_directory(d: Path) -> None:
    """units/leak: a symlink to a directory outside holding a result.json and the secret."""
    outside = d.parent / "outside"
    outside.mkdir()
    shutil.copy(d / UNIT, outside / "result.json")
    shutil.copy(d.parent / "secret", outside / "secret.txt")
    (d / "units" / "leak").symlink_to(outside)


#: (kind of results, damage, file named as skipped, why) : the report is written without it.
SKIPPED = [
    ("campaign", symlink("campaign.yaml"), "campaign.yaml", "leads outside"),
    ("campaign", symlink("units/tcp/raw.txt"), "units/tcp/raw.txt", "leads outside"),
    ("campaign", symlink("campaign.yaml", "/dev/zero"), "campaign.yaml", "leads outside"),
    ("campaign", symlink("campaign.yaml", "../../../../../../../../proc/self/environ"), "campaign.yaml",
     "leads outside"),
    ("campaign", fifo("campaign.yaml"), "campaign.yaml", "not a regular file"),
    ("campaign", fifo("units/tcp/raw.txt"), "units/tcp/raw.txt", "not a regular file"),
    ("campaign", fifo(UNIT), UNIT, "not a regular file"),
    ("campaign", symlink(UNIT), UNIT, "leads outside"),
    ("campaign", oversize("summary.json"), "summary.json", f"larger than {MAX_STORED_BYTES} bytes"),
    ("campaign", oversize("campaign.yaml"), "campaign.yaml", "larger than"),
    ("campaign", linked_directory, "units/leak", "symlink to a directory: not followed"),
    ("failover", symlink("timeline.json"), "timeline.json", "leads outside"),
    ("failover", symlink("talker.pcap"), "talker.pcap", "leads outside"),
    ("sim", symlink("scenario.json"), "scenario.json", "leads outside"),
    ("sim", fifo("report.json"), "report.json", "not a regular file"),
    ("sweep", symlink("point-003/report.json"), "point-003/report.json", "leads outside"),
]


def copy_with_secret(real: dict[str, Path], kind: str, damage, tmp_path: Path) -> Path:
    shutil.copy(real["secret"], tmp_path / "secret")
    return damaged(real, kind, damage, tmp_path)


@pytest.mark.parametrize("kind, damage, file, why", SKIPPED)
def test_a_file_that_is_not_what_it_claims_is_skipped_and_named(real, kind, damage, file, why, tmp_path):
    d = copy_with_secret(real, kind, damage, tmp_path)
    (source,) = load_all([d])
    named = [s for s in source.skipped if str(d / file) in s]
    assert named and why in named[0], source.skipped
    assert file not in source.raw_files
    assert not any(line in repr(source) for line in SECRET)


#: The CLI rows: the page is written, says what it skipped, and nothing written shows the secret.
CLI_SKIPPED = [SKIPPED[0], SKIPPED[11]]


@pytest.mark.parametrize("kind, damage, file, why", CLI_SKIPPED)
def test_the_page_is_written_and_says_what_it_skipped(real, kind, damage, file, why, tmp_path):
    d = copy_with_secret(real, kind, damage, tmp_path)
    out = tmp_path / "out"
    done = run_cli(["report", str(d), "-o", str(out / "r.html")], tmp_path / "run")
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in output, output
    assert f"report: skipped results file {str(d / file)!r}" in done.stderr and why in done.stderr, done.stderr
    page = (out / "r.html").read_text()
    assert "Skipped" in page and str(d / file) in page
    for written in out.rglob("*"):
        if written.is_file():
            assert not any(line.encode() in written.read_bytes() for line in SECRET), written
    assert not any(line in output for line in SECRET)


@pytest.mark.parametrize("bound, value, total", [("MAX_UNITS", 5, "22 units"), ("MAX_BYTES", 10_000, "bytes"),
                                                 ("MAX_ROWS", 10, "rows"), ("MAX_ENTRIES", 20, "entries")])
def test_results_beyond_a_bound_are_refused_before_any_figure(real, monkeypatch, bound, value, total):
    monkeypatch.setattr(sources, bound, value)
    with pytest.raises(UsageError) as refused:
        load_all([real["campaign"]])
    message = str(refused.value)
    assert total in message and f"more than the {value} a report reads" in message, message


def test_the_real_results_are_within_the_bounds(real):
    """The largest real results (docs/results) and each kind made here load whole."""
    campaigns = sorted((ROOT / "docs" / "results").iterdir())
    found = load_all([*campaigns, real["failover"], real["sim"], real["sweep"]])
    assert [s.kind for s in found] == ["campaign"] * len(campaigns) + ["failover", "sim", "sim-sweep"]
    assert not any(s.skipped for s in found)
