"""Campaigns on real hosts over SSH: sshd runs inside a testbed's talker and listener
namespaces (tests/sshd.py), reached over management veths, and the campaign names them in a
hosts file instead of asking for a testbed. Its figures must be those the same DUT gives
without SSH, its metadata must hold the hosts' pre-flight, one-way latency must be refused when
the hosts' clocks are not known to be synchronised, and faults (a host unreachable, a remote
process killed mid-trial) must give clear errors and keep the results already taken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from conftest import NEEDS_BPF, ROOT, processes_naming
from sshd import SSHD, OpenSshServer
from frerlab.bench.target import HostsTarget
from frerlab.errors import ToolFailed
from frerlab.testbed import bed, plan
from frerlab.traffic.across import stream_across
from test_bench_testbed import capacity_fps, line_fps

pytestmark = [*NEEDS_BPF, pytest.mark.sshd, pytest.mark.skipif(not Path(SSHD).exists(), reason="OpenSSH server not installed")]
CLI = [sys.executable, "-m", "frerlab.cli"]
#: The /24 of the management links to the sshd namespaces (in the host's namespace), one per
#: test process, so that two checkouts testing at once do not reach each other's servers.
MANAGEMENT = f"198.19.{os.getpid() % 256}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A control-mode testbed (paths 10 Mbit/s behind 20 Mbit/s links, as campaigns/quick.yaml)
    whose talker and listener run sshd; yields (its namespaces, the hosts file's data)."""
    tmp = tmp_path_factory.mktemp("lab")
    name = f"h{os.getpid() % 100000}"
    with bed.Testbed(name=name, mode="control", rate="20Mbps", path_rate="10Mbps", queue_limit="32KiB") as tb:
        namespaces = bed.read_state(tb.name)["namespaces"]
        servers = [OpenSshServer(namespaces[role], f"{name}{role[0]}", f"{MANAGEMENT}.{1 + 4 * k}",
                                 f"{MANAGEMENT}.{2 + 4 * k}", tmp / role) for k, role in enumerate(("talker", "listener"))]
        with servers[0] as talker, servers[1] as listener:
            yield namespaces, {"talker": talker.target(interface=plan.HOST_PORT), "listener": listener.target()}


def campaign_file(tmp_path: Path, hosts: dict, steps: list[dict]) -> Path:
    (tmp_path / "hosts.yaml").write_text(json.dumps(hosts))
    campaign = {"name": "on-hosts", "system": {
        "kind": "hosts", "hosts": str(tmp_path / "hosts.yaml"), "mode": "control", "rate": "20Mbps",
        "listener_address": plan.LISTENER_IP, "frerlab": CLI}, "steps": steps}
    (tmp_path / "c.yaml").write_text(json.dumps(campaign))
    return tmp_path / "c.yaml"


def unit(out: Path, unit_id: str) -> dict:
    return json.loads((out / "units" / unit_id / "result.json").read_text())


@pytest.mark.timing
def test_a_campaign_runs_on_hosts_over_ssh(lab, tmp_path):
    _, hosts = lab
    c = campaign_file(tmp_path, hosts, [
        {"kind": "tcp", "durations_s": [2]},
        {"kind": "loss_vs_load", "frame_sizes": [1024], "loads": [40, 60], "trial_s": 1},
        {"kind": "latency", "tools": ["sockperf", "oneway"], "frame_sizes": [512], "duration_s": 1,
         "probe_rate_fps": 500}])
    out = tmp_path / "out"
    run = subprocess.Popen([*CLI, "bench", "run", str(c), "--out", str(out)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    _, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr[-3000:]
    assert in_group(run.pid) == [], "processes the campaign started outlived it"
    meta = json.loads((out / "metadata.json").read_text())
    pre = meta["hosts"]["preflight"]
    assert pre["talker"]["interface"]["name"] == plan.HOST_PORT and pre["talker"]["interface"]["up"]
    assert pre["listener"]["tools"]["iperf3"].startswith("iperf 3")
    assert meta["hosts"]["one_way_latency"]["allowed"] is False
    tcp = unit(out, "tcp/control/duration_s=2/r1")
    assert tcp["valid"] and 9.0 < tcp["metrics"]["throughput_mbps"] < 10.0
    assert (out / "units/tcp/control/duration_s=2/r1/iperf3.json").exists()
    assert unit(out, "loss_vs_load/control/frame_size=1024,load=40/r1")["metrics"]["loss_percent"] == 0
    lossy = unit(out, "loss_vs_load/control/frame_size=1024,load=60/r1")
    expected = (1 - capacity_fps("control", 1024, 1.0) / (line_fps(1024) * 0.6)) * 100
    assert lossy["valid"] and lossy["metrics"]["loss_percent"] == pytest.approx(expected, abs=1.0)
    assert json.loads((out / "units/loss_vs_load/control/frame_size=1024,load=60/r1/send.json").read_text())[
        "frames_sent"] > 0
    sock = unit(out, "latency/control/tool=sockperf,frame_size=512,load=0/r1")
    assert sock["valid"] and sock["metrics"]["samples"] > 100
    oneway = unit(out, "latency/control/tool=oneway,frame_size=512,load=0/r1")
    assert not oneway["valid"] and "clock_unsynchronised" in [f["name"] for f in oneway["flags"]]


def in_group(pgid: int) -> list[str]:
    """The command lines of the processes of process group `pgid` (one a test started with a
    session of its own): what it started, never another process of the machine."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
            if int(fields[2]) == pgid:
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, IndexError, ValueError):  # ended meanwhile
            continue
    return found


def test_an_unreachable_host_stops_the_campaign_with_one_clear_line(lab, tmp_path):
    _, hosts = lab
    c = campaign_file(tmp_path, {**hosts, "listener": {**hosts["listener"], "port": 2299}},
                      [{"kind": "tcp", "durations_s": [1]}])
    out = tmp_path / "out"
    done = subprocess.run([*CLI, "bench", "run", str(c), "--out", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 4 and done.stderr.strip().count("\n") == 0
    assert f"listener: cannot reach root@{MANAGEMENT}.6:2299" in done.stderr
    assert json.loads((out / "metadata.json").read_text())["runs"][-1]["ended"] == "failed"


def test_a_remote_process_killed_mid_trial_fails_its_unit_and_the_campaign_goes_on(lab, tmp_path):
    namespaces, hosts = lab
    c = campaign_file(tmp_path, hosts, [{"kind": "loss_vs_load", "frame_sizes": [512], "loads": [20],
                                         "trial_s": 3, "repetitions": 2}])
    out = tmp_path / "out"

    def kill_first_sender() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            senders = [line.split()[0] for line in processes_naming("frerlab.cli gen send", namespace=namespaces["talker"])]
            if senders:
                time.sleep(1.0)
                for pid in senders:
                    os.kill(int(pid), 9)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_first_sender)
    killer.start()
    done = subprocess.run([*CLI, "bench", "run", str(c), "--out", str(out)], capture_output=True, text=True,
                          timeout=300)
    killer.join()
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = (unit(out, f"loss_vs_load/control/frame_size=512,load=20/r{r}") for r in (1, 2))
    assert not first["valid"] and first["flags"][0]["name"] == "failed"
    assert "gen send failed" in first["flags"][0]["detail"]
    assert second["valid"] and second["metrics"]["loss_percent"] == 0, second
    summary = json.loads((out / "summary.json").read_text())
    assert summary["groups"][0]["units"] == 2 and summary["groups"][0]["valid_units"] == 1


def test_a_failed_stream_stops_the_other_ends_remote_command(lab, tmp_path):
    """When the sender fails, the receiver's remote command is stopped too (SIGTERM to
    frerlab.remote.exec, which stops it over SSH), not left running on its host, where it would
    hold the port the next trial needs."""
    namespaces, hosts = lab
    (tmp_path / "hosts.yaml").write_text(json.dumps(hosts))
    target = HostsTarget(mode="control", rate_bps=20_000_000, listener_ip=plan.LISTENER_IP,
                         hosts_file=tmp_path / "hosts.yaml")
    with pytest.raises(ToolFailed, match="gen send failed"):
        stream_across(target.prefix("talker"), target.prefix("listener"), target.listener_ip, ["--frame-size", "1"],
                      tmp_path / "out", frerlab=CLI)
    assert processes_naming("frerlab.cli gen recv", namespace=namespaces["listener"]) == []


@pytest.mark.timing
def test_the_quick_campaign_runs_on_hosts_over_ssh(lab, tmp_path):
    """campaigns/quick.yaml with its system replaced by the hosts (and without failover, which
    needs a testbed): every unit valid but the one-way latency ones."""
    _, hosts = lab
    quick = yaml.safe_load((ROOT / "campaigns" / "quick.yaml").read_text())
    steps = [{k: v for k, v in step.items() if k != "modes"} for step in quick["steps"] if step["kind"] != "failover"]
    c = campaign_file(tmp_path, hosts, steps)
    out = tmp_path / "out"
    done = subprocess.run([*CLI, "bench", "run", str(c), "--out", str(out)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(p.read_text()) for p in (out / "units").rglob("result.json")]
    assert len(results) == 14
    invalid = {r["unit"]["id"] for r in results if not r["valid"]}
    assert invalid == {"latency/control/tool=oneway,frame_size=512,load=0/r1",
                       "latency/control/tool=oneway,frame_size=512,load=30/r1"}
    ndr = unit(out, "throughput/control/frame_size=1024/r1")["metrics"]["throughput_fps_loss_0"]
    assert ndr == pytest.approx(capacity_fps("control", 1024, 2.0), rel=0.02)
