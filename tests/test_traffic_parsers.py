"""Parsers and command builders of the tool drivers, on real outputs captured from iperf3 3.12,
sockperf 3.7 and mausezahn 0.6.8 on this project's machine (tests/fixtures/tools, made by
capture.py there; MANIFEST.json has each command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frerlab.cli import main
from frerlab.errors import UsageError
from frerlab.traffic import importer
from frerlab.traffic.tools import iperf3, mausezahn, sockperf
from frerlab.traffic.tools.base import ParseError, Tool, ToolMissing

FIXTURES = Path(__file__).parent / "fixtures" / "tools"


def one(records):
    assert len(records) == 1
    return records[0]


def test_iperf3_udp_loss_comes_from_the_receiver_counts():
    path = FIXTURES / "iperf3_udp_1518B_unlimited.json"
    raw = json.loads(path.read_text())["end"]
    r = one(iperf3.parse_file(path))
    assert (r.tool, r.test, r.frame_size, r.payload_size) == ("iperf3", "udp", 1518, 1472)
    assert r.sent == raw["sum_sent"]["packets"] == 382620
    assert r.lost == raw["sum_received"]["lost_packets"] == 22971
    assert r.received == r.sent - r.lost
    assert r.loss_percent == pytest.approx(22971 / 382620 * 100)
    assert r.latency is None, "iperf3 measures no latency; jitter is not latency"
    assert r.jitter_ms == raw["sum_received"]["jitter_ms"]
    assert r.l1_bps == pytest.approx(r.frames_per_s * (1518 + 20) * 8)


def test_iperf3_udp_64_byte_frames_and_intervals():
    r = one(iperf3.parse_file(FIXTURES / "iperf3_udp_64B.json"))
    assert (r.frame_size, r.payload_size, r.sent, r.lost, r.reordered) == (64, 18, 59986, 0, 0)
    assert len(r.intervals) == 3
    assert sum(i.frames for i in r.intervals) == pytest.approx(59986, abs=20)


def test_iperf3_tcp_reports_goodput_only():
    r = one(iperf3.parse_file(FIXTURES / "iperf3_tcp.json"))
    assert r.test == "tcp"
    assert r.payload_bps == pytest.approx(14679179086.807665)
    assert r.sent is None and r.lost is None and r.frame_size is None


def test_iperf3_tcp_retransmits_are_the_senders_per_interval_and_in_total():
    r = one(iperf3.parse_file(FIXTURES / "iperf3_tcp.json"))  # a real run over veth with retransmits
    assert r.retransmits == 11438
    assert [i.retransmits for i in r.intervals] == [4279, 7159]
    udp = one(iperf3.parse_file(FIXTURES / "iperf3_udp_64B.json"))
    assert udp.retransmits is None and {i.retransmits for i in udp.intervals} == {None}
    # the client's text output (written by hand: loopback runs retransmit nothing): a Retr column per
    # interval, the total on the sender line
    text = """[ ID] Interval           Transfer     Bitrate         Retr  Cwnd
[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec   17    403 KBytes
[  5]   1.00-2.00   sec   112 MBytes   942 Mbits/sec    0    421 KBytes
- - - - - - - - - - - - - - - - - - - - - - - - -
[ ID] Interval           Transfer     Bitrate         Retr
[  5]   0.00-2.00   sec   224 MBytes   941 Mbits/sec   17             sender
[  5]   0.00-2.00   sec   224 MBytes   940 Mbits/sec                  receiver
"""
    r = one(iperf3.parse_text(text, source="tcp.txt"))
    assert (r.test, r.retransmits, [i.retransmits for i in r.intervals]) == ("tcp", 17, [17, 0])


def test_iperf3_udp_text_payload_is_transfer_over_datagrams_where_that_determines_it():
    # 244 KBytes (1024-based, +-0.5 KiB as printed) / 13883 datagrams: 17.96..18.03 bytes each
    r = one(importer.import_file(FIXTURES / "iperf3_udp_64B_text.txt"))
    assert (r.test, r.sent, r.payload_size, r.frame_size) == ("udp", 13883, 18, 64)
    assert not any("payload" in w for w in r.warnings)
    # 2.38 MBytes / 1698 datagrams: 1467..1472 bytes each (-l was 1472), so the size stays unknown
    r = one(importer.import_file(FIXTURES / "iperf3_udp_1518B_text.txt"))
    assert (r.payload_size, r.frame_size) == (None, None)
    assert ("the UDP payload per datagram is unknown (transfer / datagrams allows 1467..1472 bytes at the "
            "precision iperf3 prints), so the frame size is unknown too") in r.warnings


def test_iperf3_error_document_is_refused_with_its_message():
    with pytest.raises(ParseError, match="unable to connect"):
        iperf3.parse(json.dumps({"start": {}, "end": {}, "error": "unable to connect to server"}), source="x.json")


def test_sockperf_ping_pong_summary_is_rtt_half_with_every_percentile_line():
    r = one(sockperf.parse_file(FIXTURES / "sockperf_pingpong_64B.txt"))
    assert (r.test, r.sent, r.received, r.lost, r.duplicates, r.reordered) == ("ping-pong", 49313, 49313, 0, 0, 0)
    lat = r.latency
    assert lat.kind == "rtt_half"
    assert (lat.samples, lat.mean_us, lat.stddev_us) == (49313, 25.838, 61.593)
    assert (lat.min_us, lat.max_us) == (6.264, 3389.071)
    assert lat.percentiles_us["50"] == 6.945
    assert lat.percentiles_us["99.9"] == 598.579
    assert lat.percentiles_us["99.999"] == 3389.071
    assert set(lat.percentiles_us) == {"25", "50", "75", "90", "99", "99.9", "99.99", "99.999"}


def test_sockperf_full_rtt_is_labelled_rtt():
    r = one(sockperf.parse_file(FIXTURES / "sockperf_pingpong_fullrtt_512B.txt"))
    assert r.latency.kind == "rtt"
    assert r.latency.mean_us == 15.169


def test_sockperf_under_load_loss_is_dropped_messages_not_sent_minus_received():
    r = one(sockperf.parse_file(FIXTURES / "sockperf_underload_64B.txt"))
    assert (r.test, r.sent, r.received, r.lost, r.loss_percent) == ("under-load", 12501, 126, 0, 0.0)
    assert any("reply-every" in w for w in r.warnings)


def test_sockperf_throughput_bandwidth_is_mebibyte_based():
    r = one(sockperf.parse_file(FIXTURES / "sockperf_throughput_1518B.txt"))
    assert (r.test, r.sent, r.frames_per_s) == ("throughput", 353223, 176570)
    assert r.payload_bps == pytest.approx(247.870 * 1024 * 1024 * 8)
    assert (r.payload_size, r.frame_size) == (1472, 1518)
    assert r.received is None


def test_sockperf_full_log_statistics_from_every_message():
    path = FIXTURES / "sockperf_fulllog_64B.csv"
    rows = [line.split(",") for line in path.read_text().splitlines() if line[:1].isdigit()]
    values = sorted(float(row[3]) for row in rows)
    r = one(sockperf.parse_file(path))
    assert (r.test, r.received, r.payload_size, r.frame_size) == ("ping-pong-log", 1549, 18, 64)
    assert r.latency.kind == "rtt_half"
    assert (r.latency.min_us, r.latency.max_us) == (values[0], values[-1])
    assert r.latency.percentiles_us["50"] == values[774]
    assert sum(i.frames for i in r.intervals) == 1549


def test_sockperf_truncated_full_log_is_flagged_with_both_counts(tmp_path, capsys):
    lines = (FIXTURES / "sockperf_fulllog_64B.csv").read_text().splitlines(keepends=True)
    header = next(k for k, line in enumerate(lines) if line.startswith("packet, txTime"))
    cut = tmp_path / "fulllog_cut.csv"
    cut.write_text("".join(lines[:header + 1 + 1000]) + "1000, 3.4024")  # 1000 rows and a torn one
    r = one(sockperf.parse_file(cut))
    assert (r.received, r.latency.samples) == (1000, 1000)
    assert ("the --full-log holds 1000 message rows but its summary counts 1549 observations: the log is "
            "truncated, and the statistics are of its 1000 rows only") in r.warnings
    assert one(sockperf.parse_file(FIXTURES / "sockperf_fulllog_64B.csv")).warnings == []
    assert main(["import", str(cut)]) == 0
    assert "warning: the --full-log holds 1000 message rows but its summary counts 1549" in capsys.readouterr().out


def test_sockperf_garbage_names_what_was_expected():
    with pytest.raises(ParseError, match=r"bad\.txt: not sockperf output \(expected a '\[Valid Duration\]'"):
        sockperf.parse("sockperf: hello", source="bad.txt")


def test_frerlab_gen_reports_import_with_the_impairment_counted():
    recv = one(importer.import_file(FIXTURES / "frerlab_gen_recv_128B.json"))
    assert (recv.sent, recv.received, recv.lost, recv.duplicates, recv.reordered) == (30000, 29999, 1, 0, 0)
    assert recv.latency.kind == "one_way" and recv.frame_size == 128
    send = one(importer.import_file(FIXTURES / "frerlab_gen_send_128B.json"))
    assert send.sent == 29999 and any("impairment" in w for w in send.warnings)


def test_import_cli_reads_every_format(tmp_path, capsys):
    files = [FIXTURES / n for n in ("iperf3_udp_64B.json", "sockperf_pingpong_64B.txt", "sockperf_fulllog_64B.csv")]
    out = tmp_path / "records.json"
    assert main(["import", *map(str, files), "--output", str(out), "--json"]) == 0
    records = json.loads(out.read_text())
    assert [r["tool"] for r in records] == ["iperf3", "sockperf", "sockperf"]
    assert json.loads(capsys.readouterr().out) == records


def test_import_unknown_format_is_a_usage_error(tmp_path):
    odd = tmp_path / "notes.txt"
    odd.write_text("hello")
    with pytest.raises(UsageError, match=r"notes\.txt: format not recognised \(known: iperf3"):
        importer.import_file(odd)
    assert main(["import", str(tmp_path / "missing.json")]) == 2


def test_mausezahn_announcement_is_parsed_as_planned_not_achieved():
    text = (FIXTURES / "mausezahn_64B_10kfps.txt").read_text()
    assert mausezahn.parse_announcement(text)["frames"] == 20000
    with pytest.raises(ParseError, match="not mausezahn output"):
        mausezahn.parse_announcement("segfault")


def test_command_lines_get_sizes_and_rates_right():
    argv = iperf3.client_command("198.18.0.2", frame_size=64, frames_per_s=1000, duration_s=5)
    assert argv[argv.index("-l") + 1] == "18"
    assert argv[argv.index("-b") + 1] == str(1000 * 18 * 8)
    assert "--udp-counters-64bit" in argv and "--json" in argv
    assert sockperf.client_command("ping-pong", "198.18.0.2", frame_size=1518)[-1] == "1472"
    with pytest.raises(ValueError, match="'pong' is not valid"):
        sockperf.client_command("pong", "198.18.0.2")
    argv = mausezahn.command("veth0", count=10, frame_size=64, src_ip="198.18.0.1", dst_ip="198.18.0.2",
                             dst_mac="02:00:00:00:00:02", frames_per_s=1000, stream_id=7)
    assert argv[argv.index("-d") + 1] == "1000" and argv[argv.index("-b") + 1] == "02:00:00:00:00:02"
    payload = bytes.fromhex(argv[-1].split(",p=")[1].replace(":", ""))
    assert len(payload) == 18 and payload[:4] == bytes([0xFB, ord("D"), 0, 7])


def test_missing_tool_says_how_to_install_it():
    with pytest.raises(ToolMissing, match=r"install it with `apt-get install frl-pkg`"):
        Tool("frl-tool", "frl-no-such-program", "frl-pkg").require()


def test_a_receiver_that_never_listens_fails_as_the_tool_failure_campaigns_catch():
    # a campaign stores a unit whose tool failed (frerlab.errors.ToolFailed) and goes on; a
    # receiver that never came up once raised a ToolFailed class of its own and ended the run
    from frerlab.errors import ToolFailed
    from frerlab.traffic.tools.base import wait_for_udp_port

    with pytest.raises(ToolFailed, match="nothing listened on UDP port 5555"):
        wait_for_udp_port(["unshare", "--net"], 5555, timeout_s=0.3)  # a new, empty network namespace
