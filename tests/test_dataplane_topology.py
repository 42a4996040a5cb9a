"""A stream through a two-path namespace topology with the eBPF data plane: talker - sw1
(numbers and replicates onto paths a and b) - sw2 (eliminates, removes the R-TAG) - listener.
frerlab's receiver at the listener must see every frame exactly once, also while path a is
cut, and sw2's recovery counters must prove the elimination."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from frerlab.dataplane.layout import RecoveryConfig
from frerlab.dataplane.node import Node
from frerlab.traffic.tools.base import wait_for_udp_port

CLI = [sys.executable, "-m", "frerlab.cli"]
missing = [tool for tool in ("clang", "bpftool", "tc") if shutil.which(tool) is None]
pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and BPF need root"),
    pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}"),
]
_ids = itertools.count()
# (namespace, interface) pairs joined by veths: talker-sw1, path a, path b, sw2-listener.
LINKS = [("tal", "t0", "sw1", "up"), ("sw1", "pa", "sw2", "pa"), ("sw1", "pb", "sw2", "pb"),
         ("sw2", "down", "lis", "l0")]


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def topology():
    """The four namespaces, their links and sw1/sw2 data planes; all removed afterwards."""
    prefix = f"frd{os.getpid()}x{next(_ids)}"
    ns = {role: f"{prefix}-{role}" for role in ("tal", "sw1", "sw2", "lis")}
    nodes = []
    try:
        for name in ns.values():
            sh("ip", "netns", "add", name)
            sh("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            sh("ip", "-n", name, "link", "set", "lo", "up")
        for a_ns, a_if, b_ns, b_if in LINKS:
            sh("ip", "link", "add", f"{prefix}a", "netns", ns[a_ns], "type", "veth", "peer", "name",
               f"{prefix}b", "netns", ns[b_ns])
            sh("ip", "-n", ns[a_ns], "link", "set", f"{prefix}a", "name", a_if, "up")
            sh("ip", "-n", ns[b_ns], "link", "set", f"{prefix}b", "name", b_if, "up")
        sh("ip", "-n", ns["tal"], "addr", "add", "198.18.0.1/24", "dev", "t0")
        sh("ip", "-n", ns["lis"], "addr", "add", "198.18.0.2/24", "dev", "l0")
        (l0,) = json.loads(sh("ip", "-n", ns["lis"], "-j", "link", "show", "dev", "l0"))
        sh("ip", "-n", ns["tal"], "neigh", "replace", "198.18.0.2", "lladdr", l0["address"],
           "dev", "t0", "nud", "permanent")
        sw1 = Node(f"{prefix}-sw1", ns["sw1"], ["up", "pa", "pb"]).__enter__()
        nodes.append(sw1)
        sw1.add_stream(0, ingress=["up"], outputs=["pa", "pb"], generate=True, encode=True)
        sw2 = Node(f"{prefix}-sw2", ns["sw2"], ["pa", "pb", "down"]).__enter__()
        nodes.append(sw2)
        sw2.add_stream(0, ingress=["pa", "pb"], outputs=["down"],
                       recovery=RecoveryConfig(history_length=32, reset_timeout_ns=1_000_000_000))
        sw1.attach()
        sw2.attach()
        yield ns, sw1, sw2
    finally:
        for node in nodes:
            node.close()
        for name in ns.values():
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def stream_through(ns: dict, tmp_path, count: int, during=None) -> dict:
    out = tmp_path / "recv.json"
    recv = subprocess.Popen(["ip", "netns", "exec", ns["lis"], *CLI, "gen", "recv", "--port", "5555",
                             "--duration", "30", "--linger", "0.3", "--output", str(out)],
                            stdout=subprocess.DEVNULL)
    try:
        wait_for_udp_port(["ip", "netns", "exec", ns["lis"]], 5555)
        send = subprocess.Popen(["ip", "netns", "exec", ns["tal"], *CLI, "gen", "send", "--dst",
                                 "198.18.0.2", "--port", "5555", "--rate-fps", "10k", "--count",
                                 str(count)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if during:
            during()
        assert send.wait(timeout=60) == 0, send.stderr.read()
        recv.wait(timeout=40)
    finally:
        send.kill()
        recv.kill()
    (stream,) = json.loads(out.read_text())["streams"]
    return stream


def test_every_frame_arrives_exactly_once_over_two_paths(topology, tmp_path):
    ns, _, sw2 = topology
    stream = stream_through(ns, tmp_path, 3000)
    assert (stream["expected"], stream["unique"], stream["lost"], stream["duplicates"]) == (3000, 3000, 0, 0)
    counters = sw2.recovery_counters(0)
    assert counters["passed_packets"] >= 3000, "every probe (and the end probes) passed once"
    assert counters["discarded_packets"] == counters["passed_packets"], "the copy from the other path"
    assert counters["lost_packets"] == counters["rogue_packets"] == 0


def wait_for_passed(node: Node, at_least: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while node.recovery_counters(0)["passed_packets"] < at_least:
        assert time.monotonic() < deadline, f"fewer than {at_least} frames passed sw2 in {timeout} s"
        time.sleep(0.01)


def test_cutting_path_a_mid_stream_loses_nothing(topology, tmp_path):
    ns, _, sw2 = topology

    def cut_and_restore():
        wait_for_passed(sw2, 2000)
        sh("ip", "-n", ns["sw1"], "link", "set", "pa", "down")
        wait_for_passed(sw2, 2000 + 3000)
        sh("ip", "-n", ns["sw1"], "link", "set", "pa", "up")

    stream = stream_through(ns, tmp_path, 12000, during=cut_and_restore)
    assert (stream["expected"], stream["unique"], stream["lost"], stream["duplicates"]) == (12000, 12000, 0, 0)
    counters = sw2.recovery_counters(0)
    single = counters["passed_packets"] - counters["discarded_packets"]
    assert single >= 3000, f"3000 frames crossed on path b alone during the cut, saw {single}"
