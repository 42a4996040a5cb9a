"""`frerlab demo` (what `make demo` runs): the core part keeps the FRER promise, the kernel
part shows FRER losing nothing where the control group loses, with every count exact (per
phase, per path, after elimination), and bad options exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from frerlab.demo import kernel_unavailable

CLI = [sys.executable, "-m", "frerlab.cli"]


@pytest.mark.root
def test_demo_core_and_kernel_parts_as_json(tmp_path):
    unavailable = kernel_unavailable()
    args = ["--frames", "3000", "--kernel-rate-fps", "2000", "--kernel-duration", "4", "--json",
            "--output", str(tmp_path)]
    done = subprocess.run([*CLI, "demo", *args], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["exactly_once"] and result["duplicates_delivered"] == 0
    assert result["delivered"] + result["lost_on_every_path"] == 3000
    if unavailable:
        pytest.skip(f"kernel part: {unavailable}")
    frer, control = result["kernel_failover"]["frer"], result["kernel_failover"]["control"]
    assert frer["received"] == frer["expected"] >= 7000 and (frer["lost"], frer["duplicates"]) == (0, 0)
    assert control["lost"] > 1000, "the control group loses what is sent during the cut"
    for r in (frer, control):  # every count exact: per phase, per path, after elimination
        assert all(p["sent"] == p["received"] + p["lost"] for p in r["phases"]), r["phases"]
        assert sum(p["sent"] for p in r["phases"]) == r["expected"] and sum(p["lost"] for p in r["phases"]) == r["lost"]
        assert all(p["exact"] and p["into"] == r["sent"] + r["end_probes_sent"] for p in r["paths"]), r["paths"]
    assert frer["elimination"]["exact"] and frer["elimination"]["passed"] == frer["expected"] + frer["end_probes_sent"]
    assert (tmp_path / "frer" / "recv.json").exists() and (tmp_path / "control" / "result.json").exists()
    # the demo ends with a report of what it ran: a fail-over timeline per mode, and their images
    page = Path(result["report"]).read_text()
    assert page.count('id="fig-failover-') == 2 and "Fail-over phases" in page
    assert len(list((tmp_path / "report-images").glob("failover-*.png"))) == 2


def test_bad_option_names_the_value_and_exits_2():
    done = subprocess.run([*CLI, "demo", "--history-length", "1", "--no-kernel"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "history_length 1 is out of range (2..=1024)" in done.stderr
