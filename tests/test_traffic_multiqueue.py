"""Multi-queue AF_XDP (`gen send/recv --mode xdp --queues N`) across a veth pair with two TX and
two RX queues per end, between two network namespaces this test creates (and removes, also on
failure).

A veth delivers a frame on the peer's RX queue of the TX queue it was sent on (its
queue_mapping), so sender thread k's frames arrive on the receiver's queue k: each queue's
count is checked against what that queue sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_netns
from frerlab.cli import main
from frerlab.traffic.netpair import NetPair

CLI = [sys.executable, "-m", "frerlab.cli"]

@pytest.fixture
def pair():
    with NetPair(subnet=7, queues=2) as p:
        yield p


def xdp_attached(pair: NetPair) -> bool:
    shown = subprocess.run(pair.cmd("b", ["ip", "-d", "link", "show", pair.b_if]), capture_output=True, text=True,
                           check=True)
    return "prog/xdp" in shown.stdout


def run_pair(pair: NetPair, tmp: Path, send_queues: int, recv_queues: int, extra: list[str] = ()) -> tuple[dict, dict]:
    """`gen recv --mode xdp` in b (once its XDP program is attached), `gen send --mode xdp` in a;
    both raw reports."""
    recv = subprocess.Popen(
        pair.cmd("b", [*CLI, "gen", "recv", "--mode", "xdp", "--queues", str(recv_queues), "--interface", pair.b_if,
                       "--port", "5555", "--duration", "30", "--linger", "0.3", "--output", str(tmp / "recv.json")]),
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            if xdp_attached(pair):
                break
            subprocess.run(["sleep", "0.1"])
        assert xdp_attached(pair), "the receiver did not attach its XDP program"
        sent = subprocess.run(
            pair.cmd("a", [*CLI, "gen", "send", "--mode", "xdp", "--queues", str(send_queues), "--interface", pair.a_if,
                           "--dst", pair.b_ip, "--dst-mac", pair.mac("b"), "--port", "5555", "--frame-size", "64",
                           "--output", str(tmp / "send.json"), *extra]),
            capture_output=True, text=True,
        )
        assert recv.wait(timeout=40) == 0
    finally:
        recv.kill()
    assert sent.returncode in (0, 3), sent.stderr
    assert not xdp_attached(pair), "the receiver's XDP program is detached when it ends"
    return json.loads((tmp / "send.json").read_text()), json.loads((tmp / "recv.json").read_text())


@needs_netns
def test_two_queues_share_one_stream_counted_exactly_in_one_report(pair, tmp_path):
    send, recv = run_pair(pair, tmp_path, 2, 2, ["--rate-fps", "20k", "--count", "20000"])
    assert (send["frames_sent"], send["sequence_count"], send["end_probes_sent"]) == (20000, 20000, 3)
    sent_q = [q["frames_sent"] for q in send["queues"]]
    assert [q["queue"] for q in send["queues"]] == [0, 1] and sum(sent_q) == 20000
    assert all(n > 0 for n in sent_q), f"both threads sent: {sent_q}"
    cpus = sorted(os.sched_getaffinity(0))
    assert [q["cpu"] for q in send["queues"]] == [cpus[0], cpus[1 % len(cpus)]], "thread k on the k-th allowed CPU"
    (stream,) = recv["streams"]
    assert stream["end_seen"] and stream["expected"] == 20000
    assert (stream["unique"], stream["lost"], stream["duplicates"], stream["reordered"]) == (20000, 0, 0, 0)
    assert stream["arrivals"] == 20000 and stream["latency_ns"]["count"] == 20000
    recv_q = [q["frames"] for q in recv["queues"]]
    assert sum(recv_q) == stream["arrivals"] + stream["end_probes"]
    # a veth keeps the queue: TX queue k's frames arrive on RX queue k (lane 0 also sent the end probes)
    assert recv_q == [sent_q[0] + stream["end_probes"], sent_q[1]]


@needs_netns
def test_a_known_impairment_is_counted_exactly_across_two_queues(pair, tmp_path):
    send, recv = run_pair(pair, tmp_path, 2, 2, ["--rate-fps", "20k", "--count", "2000", "--impair-drop", "5,6,1999",
                                                 "--impair-duplicate", "10,11", "--impair-swap", "20,500"])
    assert send["frames_sent"] == 1999 and send["impaired"]
    (stream,) = recv["streams"]
    assert (stream["expected"], stream["unique"], stream["arrivals"]) == (2000, 1997, 1999)
    assert (stream["lost"], stream["duplicates"]) == (3, 2)
    assert stream["reordered"] == 2, "each swap inverts two numbers within one sender thread; the threads' " \
                                     "interleaving is not counted"


@needs_netns
def test_a_receiver_reading_queue_0_only_misses_queue_1s_frames(pair, tmp_path):
    send, recv = run_pair(pair, tmp_path, 2, 1, ["--rate-fps", "20k", "--count", "4000"])
    (stream,) = recv["streams"]
    assert [q["queue"] for q in recv["queues"]] == [0]
    assert stream["lost"] == send["queues"][1]["frames_sent"] > 0, "queue 1's frames went to the stack"
    assert stream["unique"] == send["queues"][0]["frames_sent"]


@needs_netns
def test_more_queues_than_the_interface_has_are_refused_naming_the_range(pair, capsys):
    for verb, options in (("send", ["--dst", pair.b_ip, "--rate-fps", "1k", "--count", "10"]), ("recv", [])):
        side, dev = ("a", pair.a_if) if verb == "send" else ("b", pair.b_if)
        done = subprocess.run(pair.cmd(side, [*CLI, "gen", verb, "--mode", "xdp", "--queues", "3", "--interface", dev,
                                              *options]), capture_output=True, text=True, timeout=30)
        assert done.returncode == 2, done.stderr
        kind = "TX" if verb == "send" else "RX"
        assert f"queues 3 is out of range for {dev} (1..=2: it has 2 {kind} queues)" in done.stderr
    assert not xdp_attached(pair)


def test_queues_are_for_xdp_mode_only(capsys):
    assert main(["gen", "send", "--dst", "198.18.0.2", "--rate-fps", "1k", "--count", "1", "--queues", "2"]) == 2
    assert "--queues 2 is for --mode xdp only" in capsys.readouterr().err
    assert main(["gen", "recv", "--mode", "xdp", "--interface", "lo", "--queues", "0"]) == 2
    assert "--queues 0 is out of range (1 or more" in capsys.readouterr().err
