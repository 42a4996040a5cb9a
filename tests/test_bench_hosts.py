"""A campaign on real hosts over SSH: sshd runs inside a testbed's talker and listener
namespaces (tests/sshd.py), reached over management veths, and the campaign names them in a
hosts file instead of asking for a testbed. Its figures must be those the same DUT gives
without SSH, its metadata must hold the hosts' pre-flight, and one-way latency must be refused
when the hosts' clocks are not known to be synchronised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NEEDS_BPF
from sshd import SSHD, OpenSshServer
from frerlab.testbed import bed, plan
from test_bench_testbed import capacity_fps, line_fps

pytestmark = [*NEEDS_BPF, pytest.mark.skipif(not Path(SSHD).exists(), reason="OpenSSH server not installed")]
CLI = [sys.executable, "-m", "frerlab.cli"]


def test_a_campaign_runs_on_hosts_over_ssh(tmp_path):
    name = f"h{os.getpid() % 100000}"
    with bed.Testbed(name=name, mode="control", rate="20Mbps", path_rate="10Mbps", queue_limit="32KiB") as tb:
        state = bed.read_state(tb.name)
        servers = {role: OpenSshServer(state["namespaces"][role], f"{name}{role[0]}", f"198.18.6.{1 + 4 * k}",
                                       f"198.18.6.{2 + 4 * k}", tmp_path / role)
                   for k, role in enumerate(("talker", "listener"))}
        with servers["talker"] as talker, servers["listener"] as listener:
            hosts = {"talker": talker.target(interface=plan.HOST_PORT), "listener": listener.target()}
            (tmp_path / "hosts.yaml").write_text(json.dumps(hosts))
            campaign = {"name": "on-hosts", "system": {
                "kind": "hosts", "hosts": str(tmp_path / "hosts.yaml"), "mode": "control", "rate": "20Mbps",
                "listener_address": plan.LISTENER_IP, "frerlab": CLI}, "steps": [
                {"kind": "tcp", "durations_s": [2]},
                {"kind": "loss_vs_load", "frame_sizes": [1024], "loads": [40, 60], "trial_s": 1},
                {"kind": "latency", "tools": ["sockperf", "oneway"], "frame_sizes": [512], "duration_s": 1,
                 "probe_rate_fps": 500}]}
            (tmp_path / "c.yaml").write_text(json.dumps(campaign))
            out = tmp_path / "out"
            done = subprocess.run([*CLI, "bench", "run", str(tmp_path / "c.yaml"), "--out", str(out)],
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
    meta = json.loads((out / "metadata.json").read_text())
    pre = meta["hosts"]["preflight"]
    assert pre["talker"]["interface"]["name"] == plan.HOST_PORT and pre["talker"]["interface"]["up"]
    assert pre["listener"]["tools"]["iperf3"].startswith("iperf 3")
    assert meta["hosts"]["one_way_latency"]["allowed"] is False

    def unit(unit_id: str) -> dict:
        return json.loads((out / "units" / unit_id / "result.json").read_text())

    tcp = unit("tcp/control/duration_s=2/r1")
    assert tcp["valid"] and 9.0 < tcp["metrics"]["throughput_mbps"] < 10.0
    assert (out / "units/tcp/control/duration_s=2/r1/iperf3.json").exists()
    assert unit("loss_vs_load/control/frame_size=1024,load=40/r1")["metrics"]["loss_percent"] == 0
    lossy = unit("loss_vs_load/control/frame_size=1024,load=60/r1")
    expected = (1 - capacity_fps("control", 1024, 1.0) / (line_fps(1024) * 0.6)) * 100
    assert lossy["valid"] and lossy["metrics"]["loss_percent"] == pytest.approx(expected, abs=1.0)
    assert json.loads((out / "units/loss_vs_load/control/frame_size=1024,load=60/r1/send.json").read_text())[
        "frames_sent"] > 0
    sock = unit("latency/control/tool=sockperf,frame_size=512,load=0/r1")
    assert sock["valid"] and sock["metrics"]["samples"] > 100
    oneway = unit("latency/control/tool=oneway,frame_size=512,load=0/r1")
    assert not oneway["valid"] and "clock_unsynchronised" in [f["name"] for f in oneway["flags"]]
    leftovers = subprocess.run(["pgrep", "-af", "frerlab.remote.exec"], capture_output=True, text=True).stdout
    assert leftovers == ""
