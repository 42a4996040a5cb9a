"""`frerlab gen send` / `gen recv` across a veth pair between two network namespaces this test
creates (and removes, also on failure).

The impairment whose effect is known in advance is the sender's test mode: chosen sequence
numbers are dropped, duplicated or swapped after numbering, exactly as a lossy, duplicating or
reordering link would; the receiver, which knows nothing of the plan, must count each exactly.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import interruptible, needs_netns
from frerlab.cli import main
from frerlab.traffic import gen
from frerlab.traffic.netpair import NetPair
from frerlab.traffic.tools import iperf3, mausezahn, sockperf
from frerlab.traffic.tools.base import wait_for_udp_port

CLI = [sys.executable, "-m", "frerlab.cli"]


@pytest.fixture
def pair():
    with NetPair() as p:
        yield p


@pytest.fixture
def jumbo_pair():
    with NetPair(mtu=9000) as p:
        yield p


def send_and_receive(pair: NetPair, tmp: Path, send_args: list[str], recv_args: list[str] = ()) -> tuple[dict, dict, int]:
    """Runs `gen recv` in namespace b and `gen send` in a; returns both raw reports and the
    sender's exit status."""
    recv = subprocess.Popen(
        pair.cmd("b", [*CLI, "gen", "recv", "--port", "5555", "--duration", "30", "--linger", "0.3",
                       "--output", str(tmp / "recv.json"), *recv_args]),
        stdout=subprocess.DEVNULL,
    )
    try:
        if "raw" in recv_args or "xdp" in recv_args:
            subprocess.run(["sleep", "1"])
        else:
            wait_for_udp_port(pair.cmd("b", []), 5555)
        sent = subprocess.run(
            pair.cmd("a", [*CLI, "gen", "send", "--port", "5555", "--output", str(tmp / "send.json"), *send_args]),
            capture_output=True, text=True,
        )
        recv.wait(timeout=40)
    finally:
        recv.kill()
    assert sent.returncode in (0, 3), sent.stderr
    return json.loads((tmp / "send.json").read_text()), json.loads((tmp / "recv.json").read_text()), sent.returncode


IMPAIR = ["--impair-drop", "5,6,1999", "--impair-duplicate", "10,11", "--impair-swap", "20,500"]


def check_impairment_counted(recv: dict) -> None:
    (stream,) = recv["streams"]
    assert stream["end_seen"]
    assert stream["expected"] == 2000
    assert stream["lost"] == 3, "5, 6 and the last one (1999, known only from the end probe)"
    assert stream["duplicates"] == 2
    assert stream["reordered"] == 2 and stream["max_reorder_distance"] == 2
    assert stream["unique"] == 1997 and stream["arrivals"] == 1999
    assert stream["latency_ns"]["count"] == 1997
    assert sum(i["lost"] for i in stream["intervals"]) == 3


@needs_netns
def test_udp_counts_a_known_impairment_exactly(pair, tmp_path):
    send, recv, status = send_and_receive(
        pair, tmp_path, ["--dst", pair.b_ip, "--frame-size", "64", "--rate-fps", "20k", "--count", "2000", *IMPAIR],
        ["--interval", "0.02"],
    )
    assert send["sequence_count"] == 2000 and send["frames_sent"] == 1999 and send["impaired"]
    check_impairment_counted(recv)
    (stream,) = recv["streams"]
    assert stream["frame_size_min"] == stream["frame_size_max"] == 64
    lat = stream["latency_ns"]
    assert 0 < lat["min"] <= lat["percentiles"][0][1] <= lat["max"] < 1e9
    assert len(stream["intervals"]) >= 4, "0.1 s of traffic in 0.02 s intervals"


@needs_netns
def test_raw_af_packet_mode_counts_a_known_impairment_exactly(pair, tmp_path):
    send, recv, _ = send_and_receive(
        pair, tmp_path,
        ["--mode", "raw", "--interface", pair.a_if, "--dst", pair.b_ip, "--dst-mac", pair.mac("b"),
         "--frame-size", "128", "--rate-fps", "20k", "--count", "2000", *IMPAIR],
        ["--mode", "raw", "--interface", pair.b_if],
    )
    assert send["mode"] == "raw"
    check_impairment_counted(recv)
    assert recv["streams"][0]["frame_size_max"] == 128


def xdp_attached(pair: NetPair, side: str) -> bool:
    """Whether the veth end in namespace `side` has an XDP program attached."""
    dev = pair.a_if if side == "a" else pair.b_if
    shown = subprocess.run(pair.cmd(side, ["ip", "-d", "link", "show", dev]), capture_output=True, text=True, check=True)
    return "prog/xdp" in shown.stdout


@needs_netns
def test_xdp_mode_counts_a_known_impairment_exactly_and_leaves_nothing_attached(pair, tmp_path):
    send, recv, _ = send_and_receive(
        pair, tmp_path,
        ["--mode", "xdp", "--interface", pair.a_if, "--dst", pair.b_ip, "--dst-mac", pair.mac("b"),
         "--frame-size", "128", "--rate-fps", "20k", "--count", "2000", *IMPAIR],
        ["--mode", "xdp", "--interface", pair.b_if, "--interval", "0.02"],
    )
    assert send["mode"] == "xdp" and send["xsk_bind"] == "copy", "a veth has no zero-copy AF_XDP"
    assert recv["xsk_bind"] == "copy" and recv["xdp_attach"] in ("native", "generic")
    check_impairment_counted(recv)
    (stream,) = recv["streams"]
    assert stream["frame_size_min"] == stream["frame_size_max"] == 128
    assert recv["untimestamped"] == stream["arrivals"] + stream["end_probes"], "AF_XDP: timed in user space"
    assert not xdp_attached(pair, "b"), "the receiver's XDP program is detached when it ends"
    records = gen.receiver_records(recv, 0.02)
    assert any("copy mode" in w for w in records[0].warnings)
    assert any("user space" in w for w in records[0].warnings)


@contextmanager
def xdp_receiver(pair: NetPair, out: Path) -> Iterator[subprocess.Popen]:
    """`gen recv --mode xdp` in namespace b (interruptible), once its XDP program is attached."""
    with interruptible(pair.cmd("b", [*CLI, "gen", "recv", "--mode", "xdp", "--interface", pair.b_if,
                                      "--output", str(out)]), stdout=subprocess.PIPE, text=True) as recv:
        for _ in range(100):
            if xdp_attached(pair, "b"):
                break
            subprocess.run(["sleep", "0.1"])
        assert xdp_attached(pair, "b")
        yield recv


@needs_netns
def test_xdp_receiver_ends_on_ctrl_c_or_kill_with_its_program_detached(pair, tmp_path):
    with xdp_receiver(pair, tmp_path / "recv.json") as recv:
        recv.send_signal(signal.SIGINT)
        assert recv.wait(timeout=10) == 0
    assert json.loads((tmp_path / "recv.json").read_text())["interrupted"] is True
    assert not xdp_attached(pair, "b")
    with xdp_receiver(pair, tmp_path / "killed.json") as recv:
        recv.kill()
        recv.wait(timeout=10)
    assert not xdp_attached(pair, "b"), "the kernel detaches a BPF link's program when its holder dies"


@needs_netns
def test_udp_gso_batches_seen_by_a_raw_receiver_are_counted_per_segment(pair, tmp_path):
    send, recv, _ = send_and_receive(
        pair, tmp_path, ["--dst", pair.b_ip, "--frame-size", "64", "--max-rate", "--gso", "--count", "5000", *IMPAIR[:2]],
        ["--mode", "raw", "--interface", pair.b_if],
    )
    assert send["gso"]
    (stream,) = recv["streams"]
    assert stream["frame_size_min"] == stream["frame_size_max"] == 64
    assert (stream["expected"], stream["unique"], stream["lost"]) == (5000, 4997, 3)


@needs_netns
def test_udp_gso_sends_and_gro_receives_are_counted_per_datagram(pair, tmp_path):
    send, recv, _ = send_and_receive(
        pair, tmp_path, ["--dst", pair.b_ip, "--frame-size", "64", "--max-rate", "--gso", "--count", "2000", *IMPAIR],
    )
    assert send["gso"]
    check_impairment_counted(recv)


@needs_netns
def test_clean_path_loses_nothing_and_rates_are_in_l1_units(pair, tmp_path):
    send, recv, status = send_and_receive(
        pair, tmp_path, ["--dst", pair.b_ip, "--frame-size", "max", "--rate-l1", "50M", "--count", "4000",
                         "--stream-id", "42"],
    )
    assert send["requested_fps"] == pytest.approx(50e6 / ((1518 + 20) * 8))
    assert send["achieved_fps"] == pytest.approx(send["requested_fps"], rel=0.05)
    assert send["achieved_l1_bps"] == pytest.approx(50e6, rel=0.05)
    (stream,) = recv["streams"]
    assert (stream["stream_id"], stream["lost"], stream["duplicates"], stream["reordered"]) == (42, 0, 0, 0)
    assert stream["frame_size_max"] == 1518


@needs_netns
def test_jumbo_frames_and_poisson_bursts(jumbo_pair, tmp_path):
    send, recv, _ = send_and_receive(
        jumbo_pair, tmp_path, ["--dst", jumbo_pair.b_ip, "--frame-size", "jumbo", "--rate-fps", "5k",
                               "--pattern", "poisson", "--count", "500"],
    )
    assert recv["streams"][0]["frame_size_max"] == 9018 and recv["streams"][0]["lost"] == 0
    send, recv, _ = send_and_receive(
        jumbo_pair, tmp_path, ["--dst", jumbo_pair.b_ip, "--rate-fps", "5k", "--pattern", "bursts",
                               "--burst-frames", "25", "--count", "500"],
    )
    assert recv["streams"][0]["unique"] + recv["streams"][0]["lost"] == 500


@needs_netns
@pytest.mark.timing
def test_impossible_rate_is_flagged_as_a_generator_shortfall(pair, tmp_path):
    send, recv, status = send_and_receive(
        pair, tmp_path, ["--dst", pair.b_ip, "--rate-fps", "50M", "--duration", "0.3"],
    )
    assert status == 3
    assert send["shortfall"] and "never sent" in send["shortfall_reason"]
    assert send["achieved_fps"] < 50e6
    assert recv["streams"][0]["end_seen"]


@needs_netns
def test_tool_drivers_run_in_namespaces(pair):
    a, b = pair.cmd("a", []), pair.cmd("b", [])
    _, (udp,) = iperf3.run_test(pair.b_ip, client_prefix=a, server_prefix=b, frame_size=64, frames_per_s=5000,
                                duration_s=1)
    assert udp.payload_size == 18 and udp.sent > 0 and udp.lost is not None
    _, (pp,) = sockperf.run_test("ping-pong", pair.b_ip, client_prefix=a, server_prefix=b, duration_s=1)
    assert pp.latency.kind == "rtt_half" and pp.latency.samples > 0 and pp.payload_size == 18
    _, report, (mz,) = mausezahn.run_paired(
        pair.a_if, count=1000, frame_size=64, src_ip=pair.a_ip, dst_ip=pair.b_ip, dst_mac=pair.mac("b"),
        sender_prefix=a, receiver_prefix=b,
    )
    assert mz.sent == 1000 and mz.received + mz.lost == 1000 and mz.received > 0


def test_bad_input_names_the_value_and_the_valid_range(capsys):
    assert main(["gen", "send", "--dst", "198.18.0.2", "--frame-size", "63", "--rate-fps", "1k", "--count", "1"]) == 2
    assert "--frame-size 63 is out of range (64..9216 bytes" in capsys.readouterr().err
    assert main(["gen", "send", "--dst", "198.18.0.2", "--rate-fps", "1k"]) == 2
    assert "--duration SECONDS or --count FRAMES" in capsys.readouterr().err
    assert main(["gen", "send", "--dst", "198.18.0.2", "--rate-l1", "fast", "--count", "1"]) == 2
    assert "--rate-l1 'fast' is not valid" in capsys.readouterr().err
    assert main(["gen", "send", "--dst", "198.18.0.2", "--max-rate", "--count", "1", "--batch", "65"]) == 2
    assert "--batch 65 is out of range (1..64 frames per call)" in capsys.readouterr().err
    assert main(["gen", "send", "--dst", "198.18.0.256", "--max-rate", "--count", "1"]) == 2
    assert "destination '198.18.0.256' is not valid (an IPv4 address" in capsys.readouterr().err
    assert main(["gen", "recv", "--interval", "0"]) == 2
    assert "--interval 0 is out of range (more than 0 s, at most 86400 s)" in capsys.readouterr().err
    assert main(["gen", "recv", "--mode", "xdp"]) == 2
    assert "--mode xdp needs --interface NAME" in capsys.readouterr().err
    assert main(["gen", "send", "--dst", "198.18.0.2", "--max-rate", "--count", "1", "--mode", "xdp",
                 "--interface", "lo", "--frame-size", "jumbo"]) == 2
    assert "frame size 9018 is too large for xdp mode (64..=3844 bytes" in capsys.readouterr().err


def test_receiver_records_carry_one_way_latency_in_microseconds():
    report = json.loads((Path(__file__).parent / "fixtures/tools/frerlab_gen_recv_128B.json").read_text())
    (record,) = gen.receiver_records(report, interval_s=0.5)
    stream = report["streams"][0]
    assert record.latency.kind == "one_way"
    assert record.latency.min_us == stream["latency_ns"]["min"] / 1e3
    assert record.latency.percentiles_us["99.999"] == stream["latency_ns"]["percentiles"][6][1] / 1e3
    assert [i.frames for i in record.intervals] == [i["received"] for i in stream["intervals"]]


@needs_netns
def test_ctrl_c_ends_the_receiver_with_its_report_written(pair, tmp_path):
    out = tmp_path / "recv.json"
    with interruptible(pair.cmd("b", [*CLI, "gen", "recv", "--port", "5555", "--output", str(out)]),
                       stdout=subprocess.PIPE, text=True) as recv:
        wait_for_udp_port(pair.cmd("b", []), 5555)
        recv.send_signal(signal.SIGINT)
        printed, _ = recv.communicate(timeout=10)
    assert recv.returncode == 0
    report = json.loads(out.read_text())
    assert report["interrupted"] is True and report["streams"] == []
    assert "no probe frames received" in printed
