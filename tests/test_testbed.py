"""The emulated testbed (frerlab.testbed): brought up and down in both modes with nothing left
behind (also after a killed `up`), the fail-over verdicts, impairments that measure as
configured, and real tools (iperf3 TCP and UDP, sockperf ping-pong) across it, including an
iperf3 UDP run that loses nothing while path a is cut in frer mode."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import NEEDS_BPF, binomial_bounds, processes_naming

from frerlab.dataplane import control
from frerlab.errors import UsageError
from frerlab.testbed import bed, failover, plan
from frerlab.traffic.across import stream_across
from frerlab.traffic.tools import iperf3, sockperf

pytestmark = NEEDS_BPF
CLI = [sys.executable, "-m", "frerlab.cli"]


def name(tag: str) -> str:
    return f"t{os.getpid() % 100000}{tag}"


def leftovers(tb_name: str) -> list[str]:
    """Everything of testbed `tb_name` still on the machine."""
    found = [ns for ns in os.listdir("/run/netns")
             if ns.startswith(f"tb-{tb_name}-")] if os.path.isdir("/run/netns") else []
    for root in (Path("/run/frerlab/bpf"), Path("/run/frerlab/dataplane"), Path("/run/frerlab/impair"),
                 bed.STATE_DIR):
        if root.is_dir():
            found += [str(p) for p in root.iterdir() if p.name.startswith((f"tb-{tb_name}-", f"{tb_name}."))]
    return found + processes_naming(f"tb-{tb_name}-")


def test_bad_settings_are_refused_naming_the_value():
    for settings, message in ((dict(rate="fast"), "fast"), (dict(queue_limit="100"), "queue limit 100 is out of range"),
                              (dict(mode="ring"), "mode 'ring' is not valid (frer or control)"),
                              (dict(name="../x"), "testbed name '../x' is not valid"),
                              (dict(eliminate_at="sw1"), "eliminate-at 'sw1' is not valid (sw2 or listener)")):
        with pytest.raises(UsageError, match=re.escape(message)):
            bed.Settings(**settings).check()
    with pytest.raises(UsageError, match="must come one after the other"):
        failover.Schedule(cut_a=(2, 1)).check()


@pytest.mark.parametrize("mode", ["frer", "control"])
def test_up_status_down_in_both_modes_leave_nothing_behind(mode):
    tb_name = name(f"u{mode[0]}")
    up = subprocess.run([*CLI, "testbed", "up", "--name", tb_name, "--mode", mode, "--rate", "50Mbps",
                         "--queue-limit", "32KiB"], capture_output=True, text=True)
    try:
        assert up.returncode == 0, up.stderr
        st = json.loads(subprocess.run([*CLI, "testbed", "status", "--name", tb_name, "--json"],
                                       capture_output=True, text=True, check=True).stdout)
        assert [h["host"] for h in st["hosts"]] == ["talker", "sw1", "sw2", "listener", "a", "b"]
        assert st["settings"]["rate_bps"] == 50_000_000 and st["settings"]["queue_limit_bytes"] == 32 * 1024
        assert len(st["links"]) == 6 and set(st["paths"]) == {"a", "b"}
        assert set(st["dataplanes"]) == {"sw1", "sw2"}
        ping = subprocess.run([*CLI, "testbed", "exec", "--name", tb_name, "talker", "--", "ping", "-c", "2", "-i",
                               "0.2", "-W", "1", plan.LISTENER_IP], capture_output=True, text=True)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        failing = subprocess.run([*CLI, "testbed", "exec", "--name", tb_name, "listener", "--", "false"])
        assert failing.returncode == 1, "exec passes the command's exit status on"
    finally:
        down = subprocess.run([*CLI, "testbed", "down", "--name", tb_name], capture_output=True, text=True)
    assert "removed" in down.stdout
    assert leftovers(tb_name) == []
    again = subprocess.run([*CLI, "testbed", "down", "--name", tb_name], capture_output=True, text=True)
    assert again.returncode == 0 and "was not up" in again.stdout


def test_up_refuses_to_take_over_a_namespace_it_did_not_make():
    """A namespace with one of the testbed's names that is not the testbed's: `up` refuses and
    leaves it alone (undoing a half-made testbed would have deleted it)."""
    tb_name = name("o")
    with bed.namespaces(tb_name) as net:  # the names the testbed would give, made by this test
        net.add("talker")
        foreign = net.ns["talker"]
        up = subprocess.run([*CLI, "testbed", "up", "--name", tb_name], capture_output=True, text=True)
        assert up.returncode == 2, up.stderr
        assert f"network namespace {foreign} exists already, not made by testbed '{tb_name}'" in up.stderr
        assert os.path.exists(f"/run/netns/{foreign}"), "up deleted a namespace it did not make"
        assert leftovers(tb_name) == [foreign]


def test_a_tool_that_fails_is_one_line_and_exit_4(tmp_path):
    """The system refuses (here: the testbed's namespaces were deleted behind its back, so `ip`
    cannot read its links): `frerlab: failed: ...` with ip's own words, exit 4, no traceback."""
    tb_name = name("d")
    state_dir = tmp_path / "testbed"
    state_dir.mkdir()
    (state_dir / f"{tb_name}.json").write_text(json.dumps({
        "name": tb_name, "settings": {"name": tb_name, "mode": "control", "rate": "100Mbps", "queue_limit": "100KB",
                                      "replicate_at": "sw1", "eliminate_at": "sw2", "history_length": 32,
                                      "rate_bps": 10**8, "queue_limit_bytes": 10**5},
        "namespaces": {role: f"tb-{tb_name}-{role}" for role in (*bed.HOSTS, *bed.PATHS)},
        "dataplanes": {}, "paths": {p: f"tb-{tb_name}-path-{p}" for p in bed.PATHS}, "started": 0.0}))
    status = subprocess.run([*CLI, "testbed", "status", "--name", tb_name], capture_output=True, text=True,
                            env={**os.environ, "FRERLAB_RUN_DIR": str(tmp_path)})
    assert status.returncode == 4, status.stderr
    assert status.stderr.startswith(f"frerlab: failed: ip -n tb-{tb_name}-") and "Traceback" not in status.stderr


def test_a_killed_up_is_cleared_by_down():
    tb_name = name("k")
    proc = subprocess.Popen([*CLI, "testbed", "up", "--name", tb_name], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not any(ns.startswith(f"tb-{tb_name}-b") for ns in os.listdir("/run/netns")):
        assert time.monotonic() < deadline, "the testbed did not start"
        time.sleep(0.01)
    time.sleep(0.5)  # somewhere in the middle: links, shaping, path elements or data planes
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert leftovers(tb_name), "the killed run left something to clean"
    subprocess.run([*CLI, "testbed", "down", "--name", tb_name], check=True, capture_output=True)
    assert leftovers(tb_name) == []
    # killed while a data plane probed the kernel, it also left that probe's namespace
    assert not [ns for ns in os.listdir("/run/netns") if ns.startswith(f"frerlab-probe-{proc.pid}-")]


def test_a_dead_process_s_probe_namespace_is_removed_and_a_live_one_s_kept():
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale, live = f"frerlab-probe-{dead.pid}-clsact", f"frerlab-probe-{os.getpid()}-clsact"
    try:
        for ns in (stale, live):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        assert stale in control.remove_stale_probes()
        assert stale not in os.listdir("/run/netns") and live in os.listdir("/run/netns")
    finally:
        for ns in (stale, live):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_failover_frer_loses_nothing_and_control_loses_the_cut(frer_bed, control_bed, tmp_path):
    schedule = failover.Schedule(rate_fps=4000, frame_size=256, duration_s=4.0, cut_a=(1.0, 2.0), cut_b=(2.5, 3.5))
    frer = failover.run(frer_bed.name, schedule, tmp_path / "frer")
    assert (frer["lost"], frer["duplicates"], frer["verdict_met"]) == (0, 0, True), failover.summary(frer)
    assert frer["received"] == frer["expected"] >= 15000
    sw2 = frer["dataplane_recovery"]["sw2"]["1"]
    assert sw2["passed_packets"] >= frer["expected"]
    # about 4000 frames crossed on one path only during each cut: fewer discards than passes
    assert sw2["passed_packets"] - sw2["discarded_packets"] >= 6000
    control = failover.run(control_bed.name, schedule, tmp_path / "control")
    cut_frames = 4000
    assert 0.7 * cut_frames <= control["lost"] <= 1.3 * cut_frames, failover.summary(control)
    assert control["verdict_met"] and "control group" in control["verdict"]
    for d in ("frer", "control"):
        assert {"meta.json", "recv.json", "send.json", "result.json"} <= {p.name for p in (tmp_path / d).iterdir()}


@pytest.mark.parametrize("fixture", ["frer_bed", "control_bed"])
def test_failover_accounting_is_exact_per_phase_per_path_and_after_elimination(fixture, request, tmp_path):
    """Every count adds up: per phase sent = received + lost and the phases sum to the stream's
    totals; per path what sw1 sent into it = what it delivered to sw2 + what it dropped; with FRER,
    what sw2's recovery passed = data frames + end-of-stream probes - what was lost on both paths.
    The testbed carried a stream before: only this run's frames are counted."""
    tb = request.getfixturevalue(fixture)
    _stream(tb, tmp_path / "earlier", 500)
    schedule = failover.Schedule(rate_fps=3000, frame_size=128, duration_s=2.0, cut_a=(0.5, 1.0), cut_b=(1.25, 1.75))
    result = failover.run(tb.name, schedule, tmp_path)
    report = failover.summary(result)
    sender = json.loads((tmp_path / "send.json").read_text())
    on_wire = sender["frames_sent"] + sender["end_probes_sent"]
    assert sender["end_probes_sent"] == 3 and result["sent"] == result["expected"] == sender["frames_sent"]
    phases = result["phases"]
    for row in [*phases, *result["intervals"]]:
        assert row["sent"] == row["received"] + row["lost"], (row, report)
    totals = {k: sum(p[k] for p in phases) for k in ("sent", "received", "lost", "duplicates")}
    assert totals == {"sent": result["expected"], "received": result["received"], "lost": result["lost"],
                      "duplicates": result["duplicates"]}, report
    paths = {p["path"]: p for p in result["paths"]}
    assert set(paths) == ({"a", "b"} if fixture == "frer_bed" else {"a"})
    for p in paths.values():
        assert p["into"] == on_wire and p["into"] == p["delivered"] + p["dropped"] and p["exact"], report
    assert paths["a"]["dropped"] == paths["a"]["drops"]["element"]["dropped_down"] > 0, "path a was cut"
    elimination = result["elimination"]
    if fixture == "control_bed":
        assert elimination is None and paths["a"]["dropped"] == result["lost"], report
        return
    assert paths["b"]["drops"]["element"]["dropped_down"] > 0, "path b was cut"
    assert elimination["exact"] and elimination["lost_on_both_paths"] == 0, report
    assert elimination["passed"] == on_wire == result["expected"] + 3, report
    assert f"sw2 passed {on_wire} = {result['expected']} data + 3 end-of-stream probes - 0 lost" in report


def test_failover_command_on_a_temporary_testbed(tmp_path):
    tb_name = name("o")
    done = subprocess.run([*CLI, "failover", "--name", tb_name, "--rate-fps", "2000", "--duration", "3",
                           "--cut-a", "0.5,1.5", "--cut-b", "2,2.5", "--output", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verdict_met"] and result["lost"] == 0 and [e["path"] for e in result["events"]] == ["a", "a", "b", "b"]
    assert leftovers(tb_name) == []


def _stream(tb: bed.Testbed, out: Path, count: int, rate: str = "10k") -> dict:
    return stream_across(tb.prefix("talker"), tb.prefix("listener"), plan.LISTENER_IP,
                         ["--rate-fps", rate, "--count", str(count), "--frame-size", "128"], out).stream()


def test_configured_loss_measures_within_its_confidence_interval(control_bed, tmp_path):
    control_bed.impair("a", "forward", loss=0.05)
    try:
        stream = _stream(control_bed, tmp_path, 20000, rate="20k")
    finally:
        control_bed.impair("a", clear=True)
    low, high = binomial_bounds(stream["expected"], 0.05)
    measured = stream["lost"] / stream["expected"]
    assert low <= measured <= high, f"loss {measured:.4f} outside {low:.4f}..{high:.4f} (n={stream['expected']})"


def median_ns(stream: dict) -> int:
    return dict(stream["latency_ns"]["percentiles"])[50.0]


@pytest.mark.timing
def test_configured_delay_shows_up_in_latency(control_bed, tmp_path):
    base = median_ns(_stream(control_bed, tmp_path / "base", 2000))
    control_bed.impair("a", "forward", delay_ms=5)
    try:
        delayed = median_ns(_stream(control_bed, tmp_path / "delayed", 2000))
    finally:
        control_bed.impair("a", clear=True)
    added_ms = (delayed - base) / 1e6
    assert 4.8 <= added_ms <= 5.5, f"added median latency {added_ms:.3f} ms for a 5 ms delay"


def socket_drops(tb: bed.Testbed, host: str) -> int:
    """UDP datagrams the host's sockets dropped so far (RcvbufErrors: a starved receiver, not
    the network). On these shared 2-core machines iperf3's server sometimes falls behind."""
    head, values = [line.split() for line in tb.run(host, "cat", "/proc/net/snmp").stdout.splitlines()
                    if line.startswith("Udp:")][:2]
    return int(values[head.index("RcvbufErrors")])


@pytest.mark.parametrize("fixture", ["frer_bed", "control_bed"])
def test_iperf3_and_sockperf_across_the_testbed(fixture, request):
    tb = request.getfixturevalue(fixture)
    ends = dict(client_prefix=tb.prefix("talker"), server_prefix=tb.prefix("listener"))
    _, (tcp,) = iperf3.run_test(plan.LISTENER_IP, udp=False, duration_s=2, **ends)
    assert tcp.payload_bps > 20e6, "TCP fills a good part of the 100 Mbit/s links"
    before = socket_drops(tb, "listener")
    _, (udp,) = iperf3.run_test(plan.LISTENER_IP, udp=True, duration_s=2, frame_size=512, frames_per_s=5000, **ends)
    assert udp.sent > 9000 and udp.lost == socket_drops(tb, "listener") - before, "no loss in the network"
    _, (ping,) = sockperf.run_test("ping-pong", plan.LISTENER_IP, duration_s=2, frame_size=64, mps=1000, **ends)
    assert ping.sent and ping.latency and ping.latency.percentiles_us["50"] < 2000


def test_iperf3_udp_loses_nothing_while_path_a_is_cut_in_frer_mode(frer_bed):
    def cut_and_restore():
        time.sleep(1.0)
        frer_bed.impair("a", down=True)
        time.sleep(1.0)
        frer_bed.impair("a", down=False)

    before = socket_drops(frer_bed, "listener")
    cutter = threading.Thread(target=cut_and_restore)
    cutter.start()
    try:
        _, (udp,) = iperf3.run_test(plan.LISTENER_IP, client_prefix=frer_bed.prefix("talker"),
                                    server_prefix=frer_bed.prefix("listener"), udp=True, duration_s=4,
                                    frame_size=1024, frames_per_s=4000)
    finally:
        cutter.join()
        frer_bed.impair("a", down=False)
    cut = frer_bed.status()["paths"]["a"]["counters"]["forward"]["dropped_down"]
    assert cut > 2000, "path a really was down for about a second under load"
    starved = socket_drops(frer_bed, "listener") - before
    assert udp.sent > 12000 and udp.lost - starved == 0, \
        f"iperf3 saw {udp.lost} of {udp.sent} lost, {starved} of them by its own receiving socket"
    (rcvy,) = frer_bed.status()["dataplanes"]["sw2"]["streams"][0]["recovery"]
    assert rcvy["lost_packets"] == 0


def test_frer_stream_crosses_a_delayed_path_b_while_path_a_is_down(frer_bed, tmp_path):
    """The copies carry their path's VLAN in the skb's metadata: the delay line must keep it."""
    frer_bed.impair("a", down=True)
    frer_bed.impair("b", delay_ms=5)
    try:
        stream = _stream(frer_bed, tmp_path, 2000)
    finally:
        frer_bed.impair("a", clear=True)
        frer_bed.impair("b", clear=True)
    assert (stream["expected"], stream["unique"], stream["lost"]) == (2000, 2000, 0)
    assert 4.8e6 <= median_ns(stream) <= 6e6


def test_xdp_mode_counts_exactly_through_frer_with_a_lossy_path(frer_bed, tmp_path):
    """AF_XDP at both hosts, the FRER data plane between them, 5 % loss on path a (recovered
    from path b) and the sender's known impairment: the receiver counts exactly that."""
    frer_bed.impair("a", "forward", loss=0.05)
    try:
        reports = stream_across(
            frer_bed.prefix("talker"), frer_bed.prefix("listener"), plan.LISTENER_IP,
            ["--mode", "xdp", "--interface", plan.HOST_PORT, "--dst-mac", plan.LISTENER_MAC, "--rate-fps", "10k",
             "--count", "2000", "--frame-size", "128", "--impair-drop", "5,6,1999", "--impair-duplicate", "10,11",
             "--impair-swap", "20,500"],
            tmp_path, recv_args=["--mode", "xdp", "--interface", plan.HOST_PORT])
    finally:
        frer_bed.impair("a", clear=True)
    assert reports.sender["mode"] == "xdp" and reports.receiver["xsk_bind"] == "copy"
    stream = reports.stream()
    assert (stream["expected"], stream["unique"], stream["lost"]) == (2000, 1997, 3), "5, 6 and 1999, sent never"
    assert (stream["duplicates"], stream["reordered"]) == (2, 2), "FRER numbers the sender's duplicates apart"
    assert frer_bed.status()["dataplanes"]["sw2"]["streams"][0]["recovery"][0]["lost_packets"] == 0
    shown = frer_bed.run("listener", "ip", "-d", "link", "show", "dev", plan.HOST_PORT).stdout
    assert "prog/xdp" not in shown, "the receiver's XDP program is detached when it ends"


@pytest.mark.parametrize("replicate_at, eliminate_at", [("talker", "sw2"), ("sw1", "listener"), ("talker", "listener")])
def test_every_placement_is_fail_operational_in_both_directions(replicate_at, eliminate_at, tmp_path):
    tb_name = name(f"p{replicate_at[0]}{eliminate_at[0]}")
    with bed.Testbed(name=tb_name, replicate_at=replicate_at, eliminate_at=eliminate_at) as tb:
        schedule = failover.Schedule(rate_fps=2000, frame_size=256, duration_s=3.0, cut_a=(0.5, 1.5), cut_b=(2.0, 2.5))
        result = failover.run(tb_name, schedule, tmp_path)
        assert result["verdict_met"] and result["lost"] == 0, failover.summary(result)
        forward = result["dataplane_recovery"][eliminate_at]["1"]
        assert forward["passed_packets"] >= result["expected"], f"stream 1 is eliminated at {eliminate_at}"
        # the reverse direction is eliminated where the forward one is replicated: ping's replies
        ping = tb.run("talker", "ping", "-c", "3", "-i", "0.2", "-W", "1", plan.LISTENER_IP)
        assert ping.returncode == 0, ping.stdout
        reverse = bed.status_dataplane(tb_name, replicate_at)
        (rcvy,) = [r for s in reverse["streams"] if s["handle"] == 2 for r in s["recovery"]]
        assert rcvy["passed_packets"] >= 3 and rcvy["discarded_packets"] >= 3
    assert leftovers(tb_name) == []
