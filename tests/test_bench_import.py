"""Old results imported into the layout of a campaign's results: units with their raw files,
metrics named as campaign units name them, repetitions across imports, and FRER vs control
compared as for a campaign."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from frerlab.bench.imported import import_into
from frerlab.errors import UsageError
from frerlab.traffic import importer
from frerlab.traffic.across import stream_across

FIXTURES = ROOT / "tests" / "fixtures" / "tools"


def test_each_record_becomes_a_unit_with_its_raw_file_and_metrics(tmp_path):
    out = tmp_path / "old"
    udp, ping = FIXTURES / "iperf3_udp_64B.json", FIXTURES / "sockperf_pingpong_64B.txt"
    added = import_into(out, [udp, ping], "frer")
    (iperf_record,), (sock_record,) = importer.import_file(udp), importer.import_file(ping)
    # the sockperf output names no message size, so its record has no frame size: point "all"
    assert sock_record.frame_size is None
    assert [a["unit"]["id"] for a in added] == [f"import/iperf3-{iperf_record.test}/frer/frame_size=64/r1",
                                                "import/sockperf-ping-pong/frer/all/r1"]
    unit = out / "units" / added[0]["unit"]["id"]
    assert (unit / "raw-iperf3_udp_64B.json").read_bytes() == udp.read_bytes()
    stored = json.loads((unit / "result.json").read_text())
    assert stored["metrics"]["loss_percent"] == iperf_record.loss_percent
    assert stored["metrics"]["lost"] == iperf_record.lost
    sock = json.loads((out / "units" / added[1]["unit"]["id"] / "result.json").read_text())["metrics"]
    assert sock["p99_9_us"] == sock_record.latency.percentiles_us["99.9"]
    assert sock["mean_us"] == sock_record.latency.mean_us
    summary = json.loads((out / "summary.json").read_text())
    assert {(g["step"], g["mode"]) for g in summary["groups"]} == {(f"iperf3-{iperf_record.test}", "frer"),
                                                                   ("sockperf-ping-pong", "frer")}
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["kind"] == "import" and [i["file"] for i in meta["imported"]] == [str(udp), str(ping)]


def test_iperf3_tcp_retransmits_come_into_the_unit_and_the_summary(tmp_path):
    out = tmp_path / "old"
    (added,) = import_into(out, [FIXTURES / "iperf3_tcp.json"], "frer")
    stored = json.loads((out / "units" / added["unit"]["id"] / "result.json").read_text())
    assert stored["metrics"]["retransmits"] == 11438
    assert [i["retransmits"] for i in stored["detail"]["record"]["intervals"]] == [4279, 7159]
    (group,) = json.loads((out / "summary.json").read_text())["groups"]
    assert group["metrics"]["retransmits"]["mean"] == 11438


def test_a_bad_file_imports_nothing_and_a_campaign_directory_is_refused(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("not a tool's output\n")
    out = tmp_path / "old"
    with pytest.raises(UsageError, match="format not recognised"):
        import_into(out, [FIXTURES / "iperf3_tcp.json", bad], "frer")
    assert not out.exists()
    campaign_dir = tmp_path / "campaign"
    campaign_dir.mkdir()
    (campaign_dir / "metadata.json").write_text(json.dumps({"campaign": "quick", "fingerprint": "x"}))
    with pytest.raises(UsageError, match="holds a campaign's results"):
        import_into(campaign_dir, [FIXTURES / "iperf3_tcp.json"], "frer")


def _loopback_runs(where: Path, count: int) -> list[Path]:
    """`count` real generator runs over loopback; the sender's raw reports."""
    files = []
    for k in range(count):
        run_dir = where / f"run{k}"
        stream_across([], [], "127.0.0.1", ["--rate-fps", "20000", "--count", "4000", "--frame-size", "256"],
                      run_dir, port=47000 + k)
        files.append(run_dir / "send.json")
    return files


@pytest.mark.slow
def test_repeated_imports_are_repetitions_and_frer_is_compared_with_control(tmp_path):
    frer_runs, control_runs = _loopback_runs(tmp_path / "f", 3), _loopback_runs(tmp_path / "c", 3)
    out = tmp_path / "old"
    import_into(out, frer_runs[:2], "frer")
    import_into(out, frer_runs[2:], "frer")  # a later import adds repetitions
    import_into(out, control_runs, "control")
    summary = json.loads((out / "summary.json").read_text())
    groups = {g["mode"]: g for g in summary["groups"]}
    assert groups["frer"]["units"] == groups["control"]["units"] == 3
    fps = groups["frer"]["metrics"]["frames_per_s"]
    achieved = [json.loads(p.read_text())["achieved_fps"] for p in frer_runs]
    assert fps["n"] == 3 and fps["mean"] == pytest.approx(sum(achieved) / 3)
    compared = {c["metric"]: c for c in summary["comparisons"]}
    assert "text" in compared["frames_per_s"] and "frer − control" in compared["frames_per_s"]["text"]
    shown = subprocess.run([sys.executable, "-m", "frerlab.cli", "bench", "show", str(out)], capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "frerlab-gen-udp-send frer frame_size=256" in shown.stdout and "frames_per_s: " in shown.stdout
    assert "(95 % CI, n=3" in shown.stdout and "FRER vs control:" in shown.stdout


def test_the_import_command_fills_a_results_directory(tmp_path):
    cli = [sys.executable, "-m", "frerlab.cli", "import"]
    out = tmp_path / "old"
    done = subprocess.run([*cli, "--results", str(out), "--mode", "frer", str(FIXTURES / "iperf3_tcp.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"1 records added to {out}")
    assert len(list((out / "units").rglob("result.json"))) == 1 and (out / "summary.csv").exists()
    missing = subprocess.run([sys.executable, "-m", "frerlab.cli", "bench", "show", str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "holds no summary.json" in missing.stderr
    alone = subprocess.run([*cli, "--results", str(out), str(FIXTURES / "iperf3_tcp.json")], capture_output=True,
                           text=True, timeout=60)
    assert alone.returncode == 2 and "--results and --mode go together" in alone.stderr
