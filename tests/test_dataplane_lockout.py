"""A member path must come back after a short cut. Individual recovery reloads its reset
timer on every discard, rogue ones included (802.1CB 7.4.3.4), so a cut that loses
history-length frames or more but lasts less than the reset timeout leaves that path's member
stream rogue for as long as traffic flows. The shipped listener configuration must resync after
a 50 ms cut under load; a configuration that can lock out must be warned about by `dataplane up`
and, once locked out, flagged by `dataplane stats`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from conftest import NEEDS_BPF, ROOT

from frerlab.dataplane import control, stats
from frerlab.dataplane.config import load_config
from frerlab.netns import Namespaces
from frerlab.traffic.across import stream_across

pytestmark = NEEDS_BPF
CONFIGS = ROOT / "configs" / "dataplane"
CLI = [sys.executable, "-m", "frerlab.cli"]
RATE = 5000  # frames/s
COUNT = 15000  # 3 s


def two_nic_end_stations(net: Namespaces) -> None:
    """talker t0a/t0b - listener l0a/l0b, the stream's DA on both listener NICs."""
    net.add("tal", "lis")
    net.link("tal", "t0a", "lis", "l0a", mtu=1506)
    net.link("tal", "t0b", "lis", "l0b", mtu=1506)
    mac = net.mac("lis", "l0a")
    net.run("lis", "ip", "link", "set", "l0b", "address", mac)
    net.run("lis", "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.l0b.rp_filter=0")
    net.run("tal", "ip", "addr", "add", "198.18.0.1/24", "dev", "t0a")
    net.run("lis", "ip", "addr", "add", "198.18.0.2/24", "dev", "l0a")
    net.run("tal", "ip", "neigh", "replace", "198.18.0.2", "lladdr", mac, "dev", "t0a", "nud", "permanent")


def member_passed(name: str, port: str) -> int:
    (stream,) = control.snapshot(name)["streams"]
    (member,) = [r for r in stream["recovery"] if r["function"] == "individual" and r["port"] == port]
    return member["passed_packets"]


def stream_with_a_cut(net: Namespaces, listener: str, then=lambda: None) -> tuple[dict, int, int, dict]:
    """Sends COUNT frames at RATE while path b is cut once for 50 ms, once it carries traffic;
    returns the stream's report, l0b's member passes right after the cut and at the end, and a
    snapshot of the listener taken 1 s after the cut; `then()` runs after that snapshot, while
    traffic still flows."""
    report = {}

    def send() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            report.update(stream_across(net.exec("tal", []), net.exec("lis", []), "198.18.0.2",
                                        ["--rate-fps", str(RATE), "--count", str(COUNT)], Path(tmp)).stream())

    sender = threading.Thread(target=send)
    sender.start()
    try:
        deadline = time.monotonic() + 10
        while member_passed(listener, "l0b") < 1000 and time.monotonic() < deadline:
            time.sleep(0.01)
        net.run("tal", "ip", "link", "set", "t0b", "down")
        time.sleep(0.05)
        net.run("tal", "ip", "link", "set", "t0b", "up")
        time.sleep(0.2)  # the link is back and frames flow on it again
        after_cut = member_passed(listener, "l0b")
        time.sleep(0.8)
        during = control.snapshot(listener)
        then()
    finally:
        sender.join()
    return report, after_cut, member_passed(listener, "l0b"), during


def prefix() -> str:
    return f"flo{os.getpid()}x{time.monotonic_ns() % 100000}"


def test_shipped_listener_resyncs_a_member_path_after_a_50_ms_cut():
    with Namespaces(prefix()) as net:
        two_nic_end_stations(net)
        talker = load_config(CONFIGS / "talker-two-nics.yaml").model_copy(update={"name": f"{net.prefix}-tal"})
        listener = load_config(CONFIGS / "listener-two-nics.yaml").model_copy(update={"name": f"{net.prefix}-lis"})
        assert listener.blackout_notes() == []
        try:
            control.up(talker, net.ns["tal"])
            control.up(listener, net.ns["lis"])
            report, after_cut, at_end, snap = stream_with_a_cut(net, listener.name)
            sent, received = control.snapshot(talker.name), control.snapshot(listener.name)
        finally:
            control.down(talker.name)
            control.down(listener.name)
    assert (report["expected"], report["unique"], report["lost"], report["duplicates"]) == (COUNT, COUNT, 0, 0)
    assert at_end - after_cut > RATE, "path b passes again after the cut"
    members = {r["port"]: r for r in snap["streams"][0]["recovery"] if r["function"] == "individual"}
    assert members["l0b"]["resets"] >= 1 and not members["l0b"]["locked_out"]
    assert members["l0a"]["passed_packets"] > after_cut
    # a copy counts as output once the port took it: not the ones refused while t0b was down
    out = {p["port"]: p["output"] for p in sent["streams"][0]["ports"]}
    into = {p["port"]: p["input"] for p in received["streams"][0]["ports"]}
    tal_ports = {p["port"]: p for p in sent["ports"]}
    assert tal_ports["t0a"]["tx_errors"] > 0
    assert (out["t0a"], out["t0b"]) == (into["l0a"], into["l0b"])


def test_a_config_that_can_lock_out_is_warned_about_flagged_and_reset(tmp_path):
    """The shipped listener as it was: individual recovery with history 8 and a 500 ms timeout.
    `dataplane reset` (frerSeqRcvyReset) lets the locked-out member back in."""
    data = yaml.safe_load((CONFIGS / "listener-two-nics.yaml").read_text())
    for rec in data["sequence-recovery"][:2]:
        rec.update({"history-length": 8, "reset-timeout": 500, "frame-rate": RATE})
    with Namespaces(prefix()) as net:
        two_nic_end_stations(net)
        data["name"] = f"{net.prefix}-lis"
        unsafe = tmp_path / "unsafe.yaml"
        unsafe.write_text(yaml.safe_dump(data))
        talker = load_config(CONFIGS / "talker-two-nics.yaml").model_copy(update={"name": f"{net.prefix}-tal"})
        try:
            control.up(talker, net.ns["tal"])
            up = subprocess.run([*CLI, "dataplane", "up", "--config", str(unsafe), "--netns", net.ns["lis"]],
                                capture_output=True, text=True)
            assert up.returncode == 0, up.stderr
            assert "warning: sequence-recovery 2: individual recovery on l0b can lock a member stream out at " \
                   "frame-rate 5000 frames/s (lock-out-free up to 14 frames/s)" in up.stderr
            def reset_l0b() -> None:
                locked.append(member_passed(data["name"], "l0b"))
                subprocess.run([*CLI, "dataplane", "reset", "--name", data["name"], "--port", "l0b"],
                               check=True, capture_output=True)
                time.sleep(0.3)
                locked.append(member_passed(data["name"], "l0b"))

            locked = []
            report, after_cut, at_end, snap = stream_with_a_cut(net, data["name"], reset_l0b)
        finally:
            control.down(talker.name)
            control.down(data["name"])
    assert report["unique"] == COUNT, "path a still delivers everything"
    assert locked[0] == after_cut, "802.1CB's own rule: path b's member stream stays locked out"
    assert locked[1] - locked[0] > RATE * 0.2, "a management reset lets it back in"
    (stream,) = snap["streams"]
    members = {r["port"]: r for r in stream["recovery"] if r["function"] == "individual"}
    assert members["l0b"]["locked_out"] and not members["l0a"]["locked_out"]
    assert "LOCKED OUT stream 1 on l0b" in stats.table(snap)
    assert f'frerlab_member_locked_out{{node="{data["name"]}",stream="1",port="l0b"}} 1' in stats.prometheus(snap)
