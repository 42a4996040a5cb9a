"""The campaigns for real hardware (docs/remote.md, "Campaigns for the seeds' hardware"), checked
without it: each file goes through the real campaign loader and planner, its plan has the units
its seed's methods imply, and `--dry-run` prints that plan, logs into nothing and says what the
run will need. Also the two schema fields they brought: `eliminate_at` on hosts and a latency
step's `sockperf_mps` (sockperf under-load), the latter run through the latency runner with
sockperf replaced by a recorded output."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from frerlab.bench.campaign import parse_campaign, plan, plan_text, read_campaign
from frerlab.bench.steps import Context
from frerlab.bench.steps import latency as latency_step
from frerlab.errors import UsageError
from frerlab.traffic.record import UDP_OVERHEAD
from frerlab.traffic.tools import sockperf

CLI = [sys.executable, "-m", "frerlab.cli"]
CAMPAIGNS = ROOT / "campaigns"
FIXTURES = ROOT / "tests" / "fixtures" / "tools"
HOSTS = {"kind": "hosts", "hosts": "lab-hosts.yaml", "rate": "1Gbps", "listener_address": "10.0.100.2"}


def test_seed_hardware_is_seed_methodology_on_hosts_with_the_elimination_point_named():
    hardware, _ = read_campaign(CAMPAIGNS / "seed-hardware.yaml")
    testbed, _ = read_campaign(CAMPAIGNS / "seed-methodology.yaml")
    assert (hardware.system.kind, hardware.system.mode, hardware.system.eliminate_at) == ("hosts", "frer", "sw2")
    assert (hardware.system.rate_bps, hardware.system.listener_address) == (1_000_000_000, "10.0.100.2")
    # the same steps with the same parameters: only the system differs
    assert [s.model_dump() for s in hardware.steps] == [s.model_dump() for s in testbed.steps]
    tcp, throughput, latency, loss, sweep = hardware.steps
    # seed 002: 3 durations x 3 repetitions, one search per frame size, 5 sizes x 3 repetitions
    # of ping-pong, 3 sizes x 11 loads x 3 repetitions, one sweep
    expected = (len(tcp.durations_s) * tcp.repetitions + len(throughput.frame_sizes)
                + len(latency.frame_sizes) * latency.repetitions
                + len(loss.frame_sizes) * len(loss.loads) * loss.repetitions + 1)
    units = plan(hardware)
    assert expected == 9 + 7 + 15 + 99 + 1 == len(units)
    assert {u.mode for u in units} == {"frer"}
    assert len(units) * 2 == len(plan(testbed))  # the testbed runs both modes in one campaign


def test_seed004_is_the_seeds_sockperf_tests_on_two_boards_without_frer():
    c, _ = read_campaign(CAMPAIGNS / "seed004-lan9662.yaml")
    assert (c.system.mode, c.system.eliminate_at, c.system.listener_address) == ("control", None, "192.168.1.3")
    steps = {s.name: s for s in c.steps}
    assert list(steps) == ["pingpong-default", "pingpong", "under-load", "throughput"]
    # 004 l.39, l.60/80/100, l.120, l.138: 30 s, 20 s, 30 s at 10,000 msg/s, 30 s
    assert (steps["pingpong-default"].duration_s, steps["pingpong"].duration_s) == (30, 20)
    assert (steps["under-load"].duration_s, steps["under-load"].sockperf_mps) == (30, 10_000)
    assert (steps["throughput"].trial_s, steps["throughput"].loads) == (30, [100])
    # the seed's payloads (~14 B padded to the 64-byte minimum, 64, 512, 1472) as frames
    payloads = [14, 64, 512, 1472]
    frames = steps["pingpong-default"].frame_sizes + steps["pingpong"].frame_sizes
    assert frames == [max(64, p + UDP_OVERHEAD) for p in payloads]
    assert steps["throughput"].frame_sizes == [1472 + UDP_OVERHEAD]
    assert all(s.tools == ["sockperf"] for s in c.steps if s.kind == "latency")
    units = plan(c)
    assert len(units) == (1 + 3 + 1 + 1) * 3 == 18
    assert [u.step for u in units].count("pingpong") == 9


@pytest.mark.parametrize("name, units, duration", [
    ("paradox-decider", 26, "12 min 26 s"),
    ("seed-hardware", 131, "1 h 21 min"),
    ("seed004-lan9662", 18, "7 min 56 s"),
])
def test_dry_run_of_a_hosts_campaign_plans_and_says_the_hosts_file_is_not_read(tmp_path, name, units, duration):
    (tmp_path / "campaigns").mkdir()
    path = tmp_path / "campaigns" / f"{name}.yaml"
    path.write_bytes((CAMPAIGNS / f"{name}.yaml").read_bytes())
    (tmp_path / "run").mkdir()
    done = subprocess.run([*CLI, "bench", "run", str(path), "--dry-run"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path / "run")
    assert done.returncode == 0, done.stderr
    c, _ = read_campaign(path)
    lines = done.stdout.strip().splitlines()
    assert "\n".join(lines[:-1]) == plan_text(c, plan(c))
    assert lines[0].startswith(f"campaign {name}: {units} units on the hosts of lab-hosts.yaml at 1Gbps")
    assert lines[-2].endswith(duration)
    assert lines[-1].startswith("hosts: a dry run reads no hosts file and logs into nothing")
    hosts = tmp_path / "campaigns" / "lab-hosts.yaml"  # `hosts:` is relative to the campaign file
    assert f"{hosts} (`hosts:` is relative to the campaign file), which is not there" in lines[-1]
    assert not list((tmp_path / "run").iterdir())  # no results directory: nothing ran
    hosts.write_text("talker: {host: 192.0.2.10}\n")
    again = subprocess.run([*CLI, "bench", "run", str(path), "--dry-run"], capture_output=True, text=True,
                           timeout=60, cwd=tmp_path / "run")
    assert "which is there;" in again.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("system, message", [
    ({"mode": "frer"}, "mode frer needs eliminate_at (sw2 or listener)"),
    ({"mode": "control", "eliminate_at": "sw2"}, "eliminate_at sw2 is given with mode control"),
    ({"mode": "frer", "eliminate_at": "sw3"}, "system.hosts.eliminate_at"),
])
def test_a_hosts_system_must_name_its_elimination_point_in_frer_mode_only(system, message):
    with pytest.raises(UsageError) as err:
        parse_campaign({"name": "t", "system": {**HOSTS, **system}, "steps": [{"kind": "tcp"}]}, "c.yaml")
    assert message in str(err.value)


def test_sockperf_mps_needs_the_sockperf_tool():
    with pytest.raises(UsageError) as err:
        parse_campaign({"name": "t", "steps": [{"kind": "latency", "tools": ["oneway"], "sockperf_mps": 10000}]},
                       "c.yaml")
    assert "sockperf_mps 10000 needs tool sockperf (tools are ['oneway'])" in str(err.value)
    with pytest.raises(UsageError) as err:
        parse_campaign({"name": "t", "steps": [{"kind": "latency", "tools": ["sockperf"], "sockperf_mps": 0}]},
                       "c.yaml")
    assert "sockperf_mps" in str(err.value)


class _Target:
    """What the latency runner asks of a target, for a sockperf unit without load."""

    listener_ip = "192.168.1.3"
    one_way_clock = (True, "")

    def prefix(self, role: str) -> list[str]:
        return [f"on-{role}"]


@pytest.mark.parametrize("step_name, test, mps, fixture", [
    ("under-load", "under-load", 10_000, "sockperf_underload_64B.txt"),
    ("pingpong-default", "ping-pong", None, "sockperf_pingpong_64B.txt"),
])
def test_the_latency_runner_runs_the_sockperf_test_the_step_names(tmp_path, monkeypatch, step_name, test, mps,
                                                                   fixture):
    c, _ = read_campaign(CAMPAIGNS / "seed004-lan9662.yaml")
    step = next(s for s in c.steps if s.name == step_name)
    raw = (FIXTURES / fixture).read_text()
    calls = []

    def fake_run_client(kind, server_ip, **options):
        calls.append((kind, server_ip, options))
        return raw, f"sockperf {kind}"

    monkeypatch.setattr(latency_step.sockperf, "run_client", fake_run_client)
    outcome = latency_step.run(Context(_Target(), tmp_path), step, {"tool": "sockperf", "frame_size": 64, "load": 0})
    [(kind, server_ip, options)] = calls
    assert (kind, server_ip, options["mps"], options["duration_s"], options["frame_size"]) == \
        (test, "192.168.1.3", mps, 30, 64)
    assert (options["client_prefix"], options["server_prefix"]) == (["on-talker"], ["on-listener"])
    expected = sockperf.parse(raw, test=test)[0].latency
    assert outcome["metrics"]["mean_us"] == expected.mean_us and outcome["detail"]["kind"] == "rtt_half"
    assert (tmp_path / "sockperf.txt").read_text() == raw


def test_a_latency_unit_whose_sockperf_output_is_unreadable_is_invalid_and_keeps_the_output(tmp_path, monkeypatch):
    c, _ = read_campaign(CAMPAIGNS / "seed004-lan9662.yaml")
    step = next(s for s in c.steps if s.name == "pingpong-default")
    raw = "sockperf: ERROR: no reply from the server\n"
    monkeypatch.setattr(latency_step.sockperf, "run_client", lambda kind, server_ip, **options: (raw, "sockperf"))
    outcome = latency_step.run(Context(_Target(), tmp_path), step, {"tool": "sockperf", "frame_size": 64, "load": 0})
    flags = {f["name"]: f for f in outcome["flags"]}
    assert not outcome["valid"] and flags["tool_failed"]["invalidates"], outcome
    assert "not sockperf output" in flags["tool_failed"]["detail"] and "sockperf.txt" in flags["tool_failed"]["detail"]
    assert (tmp_path / "sockperf.txt").read_text() == raw
