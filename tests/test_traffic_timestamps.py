"""Timestamps of `frerlab gen send` / `gen recv` across a veth pair between two network
namespaces this test creates (and removes, also on failure): which stamps the reports say
they used, the capability read from the interface (ETHTOOL_GET_TS_INFO, checked against
`ethtool -T`), and the hardware/software decision taken from that real ioctl result with
hardware bits added or removed (a veth has software stamps only, so the hardware path can
only be decided here, not run).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import needs_netns
from frerlab.traffic import gen
from frerlab.traffic.netpair import NetPair
from frerlab.traffic.tools.base import wait_for_udp_port

CLI = [sys.executable, "-m", "frerlab.cli"]

# linux/net_tstamp.h
TX_HARDWARE, TX_SOFTWARE, RX_HARDWARE, RX_SOFTWARE, SOFTWARE, RAW_HARDWARE = 1, 2, 4, 8, 16, 64
HWTSTAMP_TX_ON, HWTSTAMP_FILTER_ALL = 1, 1


@pytest.fixture
def pair():
    with NetPair() as p:
        yield p


def capability(pair: NetPair, side: str) -> dict:
    """The timestamping decision for the veth end in namespace `side`, read by frerlab there."""
    dev = pair.a_if if side == "a" else pair.b_if
    code = f"import json; from frerlab.traffic import gen; print(json.dumps(gen.timestamp_capability({dev!r})))"
    out = subprocess.run(pair.cmd(side, [sys.executable, "-c", code]), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run(pair: NetPair, tmp: Path, mode: str, send_args: list[str]) -> tuple[dict, dict, str, str]:
    """gen recv in b, gen send in a, in `mode`; both raw reports and both human outputs."""
    where = {"a": [], "b": []}
    if mode != "udp":
        where = {"a": ["--interface", pair.a_if, "--dst-mac", pair.mac("b")], "b": ["--interface", pair.b_if]}
    recv = subprocess.Popen(pair.cmd("b", [*CLI, "gen", "recv", "--mode", mode, "--port", "5555", "--duration", "30",
                                           "--linger", "0.3", "--output", str(tmp / "recv.json"), *where["b"]]),
                            stdout=subprocess.PIPE, text=True)
    try:
        if mode == "udp":
            wait_for_udp_port(pair.cmd("b", []), 5555)
        else:
            time.sleep(1.5)
        sent = subprocess.run(pair.cmd("a", [*CLI, "gen", "send", "--mode", mode, "--dst", pair.b_ip, "--port", "5555",
                                             "--output", str(tmp / "send.json"), *where["a"], *send_args]),
                              capture_output=True, text=True, timeout=60)
        received, _ = recv.communicate(timeout=40)
    finally:
        recv.kill()
    assert sent.returncode in (0, 3), sent.stderr  # 3: fell behind schedule on a busy host (reported)
    return (json.loads((tmp / "send.json").read_text()), json.loads((tmp / "recv.json").read_text()), sent.stdout,
            received)


@needs_netns
def test_veth_capability_is_software_as_ethtool_says(pair):
    decision = capability(pair, "a")
    cap = decision["capability"]
    assert (decision["tx"], decision["rx"], decision["tx_clock"], decision["rx_clock"]) == (
        "software", "software", "CLOCK_REALTIME", "CLOCK_REALTIME")
    assert cap["phc_index"] == -1 and cap["so_timestamping"] & (TX_HARDWARE | RX_HARDWARE | RAW_HARDWARE) == 0
    if shutil.which("ethtool"):
        shown = subprocess.run(pair.cmd("a", ["ethtool", "-T", pair.a_if]), capture_output=True, text=True,
                               check=True).stdout
        for bit, name in ((TX_SOFTWARE, "software-transmit"), (RX_SOFTWARE, "software-receive"),
                          (SOFTWARE, "software-system-clock"), (TX_HARDWARE, "hardware-transmit")):
            assert (name in shown) == bool(cap["so_timestamping"] & bit), (name, shown)
        assert "PTP Hardware Clock: none" in shown
    assert "PTP Hardware Clock: none" in decision["offers"]


@needs_netns
def test_hardware_is_chosen_only_with_the_bits_a_clock_and_the_modes(pair):
    real = capability(pair, "b")["capability"]
    nic = {**real, "so_timestamping": real["so_timestamping"] | TX_HARDWARE | RX_HARDWARE | RAW_HARDWARE,
           "phc_index": 3, "tx_types": 1 << HWTSTAMP_TX_ON, "rx_filters": 1 << HWTSTAMP_FILTER_ALL}
    d = gen.timestamp_decision(nic)
    assert (d["tx"], d["rx"], d["tx_clock"], d["rx_clock"]) == ("hardware", "hardware", "PHC 3", "PHC 3")
    assert "PTP Hardware Clock: 3" in d["offers"]
    for missing, expected in (({"phc_index": -1}, ("software", "software")),
                              ({"tx_types": 0}, ("software", "hardware")),
                              ({"rx_filters": 1 << 12}, ("hardware", "software")),  # PTP v2 events only
                              ({"so_timestamping": nic["so_timestamping"] & ~RAW_HARDWARE}, ("software", "software"))):
        d = gen.timestamp_decision({**nic, **missing})
        assert (d["tx"], d["rx"]) == expected, missing
        assert d["tx_clock"] == ("PHC 3" if d["tx"] == "hardware" else "CLOCK_REALTIME")
    assert gen.timestamp_decision(real)["tx"] == "software"
    with pytest.raises(ValueError, match="bad timestamping capability: unknown field `phc`"):
        gen.timestamp_decision({**real, "phc": 1})


@pytest.mark.parametrize("mode", ["udp", "raw"])
@needs_netns
def test_socket_modes_report_kernel_software_stamps_and_a_consistent_latency_pair(pair, tmp_path, mode):
    send, recv, send_out, recv_out = run(pair, tmp_path, mode, ["--rate-fps", "5k", "--count", "2000"])
    ts = send["timestamps"]
    assert (ts["tx"], ts["rx"], ts["clock"], ts["gaps"], ts["interface"]) == (
        "software", None, "CLOCK_REALTIME", "software", pair.a_if)
    assert f"{pair.a_if} has no hardware timestamps" in ts["hardware"]
    assert send["tx_stamps"] == send["frames_sent"] == 2000
    after = send["tx_stamp_after_payload_ns"]
    assert after["count"] == 2000 and 0 <= after["min"] <= after["percentiles"][0][1] < 1_000_000
    ts = recv["timestamps"]
    assert (ts["tx"], ts["rx"], ts["clock"], ts["gaps"]) == ("payload", "software", "CLOCK_REALTIME", "software")
    assert ts["interface"] == (None if mode == "udp" else pair.b_if)
    assert recv["untimestamped"] == 0 and recv["read_after_rx_stamp_ns"]["count"] >= 1
    (stream,) = recv["streams"]
    latency = stream["latency_ns"]
    assert latency["count"] == 2000 and stream["negative_latency"] == 0
    assert 0 < latency["min"] <= latency["percentiles"][0][1] < 1_000_000, "one clock: microseconds on a veth"
    assert "timestamps: tx software (CLOCK_REALTIME)" in send_out and "has no hardware timestamps" in send_out
    assert "timestamps: tx payload, rx software (CLOCK_REALTIME)" in recv_out


@needs_netns
def test_udp_receiver_bound_to_an_address_reads_its_interface(pair, tmp_path):
    recv = subprocess.Popen(pair.cmd("b", [*CLI, "gen", "recv", "--port", "5555", "--bind", pair.b_ip, "--duration",
                                           "20", "--linger", "0.3", "--report-json"]), stdout=subprocess.PIPE, text=True)
    try:
        wait_for_udp_port(pair.cmd("b", []), 5555)
        subprocess.run(pair.cmd("a", [*CLI, "gen", "send", "--dst", pair.b_ip, "--rate-fps", "2k", "--count", "100"]),
                       capture_output=True)
        report = json.loads(recv.communicate(timeout=30)[0])
    finally:
        recv.kill()
    assert report["timestamps"]["interface"] == pair.b_if
    assert f"{pair.b_if} has no hardware timestamps" in report["timestamps"]["hardware"]


@needs_netns
def test_xdp_mode_says_its_receive_times_are_read_in_user_space(pair, tmp_path):
    send, recv, _, recv_out = run(pair, tmp_path, "xdp", ["--rate-fps", "5k", "--count", "500"])
    assert (send["timestamps"]["tx"], send["tx_stamps"], send["tx_stamp_after_payload_ns"]) == ("payload", 0, None)
    ts = recv["timestamps"]
    assert (ts["tx"], ts["rx"], ts["clock"], ts["gaps"]) == ("payload", "userspace", "CLOCK_REALTIME", "userspace")
    assert "AF_XDP gives no receive stamp" in ts["hardware"] and recv["read_after_rx_stamp_ns"] is None
    assert recv["streams"][0]["latency_ns"]["count"] == 500
    assert "timestamps: tx payload, rx userspace" in recv_out


def test_latency_records_and_campaign_units_carry_the_timestamps():
    stamps = {"tx": "payload", "rx": "software", "clock": "CLOCK_REALTIME", "gaps": "software",
              "gaps_clock": "CLOCK_REALTIME", "interface": "veth1", "hardware": "veth1 has no hardware timestamps"}
    summary = {"count": 3, "min": 1000, "max": 3000, "mean": 2000.0, "stddev": 816.5,
               "percentiles": [[50.0, 2000], [99.9, 3000]]}
    latency = gen.latency_from_ns(summary, timestamps=stamps)
    assert latency.timestamps.clock == "CLOCK_REALTIME" and latency.timestamps.rx == "software"
    assert latency.model_dump()["timestamps"]["interface"] == "veth1"
    from frerlab.traffic.tools import sockperf
    assert sockperf.TIMESTAMPS.tx == "userspace"
