"""The seeds' published raw files (docs/seed-data/, cited in its README) read through the real
importer, and the figures the seeds quote checked against what the files say
(docs/seed-claims.md, rows 004-1 to 004-7, 000-1, C2, C12, C13).

Where a file says something other than the seed, the test asserts the file and its docstring
names the disagreement."""

from __future__ import annotations

import csv
import json

import pytest

from conftest import ROOT
from frerlab.errors import UsageError
from frerlab.traffic import importer

SEED = ROOT / "docs" / "seed-data"
BOARDS = SEED / "9692test"
D10 = SEED / "d10test"
TOOLS = ROOT / "tests" / "fixtures" / "tools"


def one(path):
    (record,) = importer.import_file(path)
    return record


def test_seed004_best_latency_is_what_the_file_says():
    """004-1: 52.69 us mean, std 15.91, P99.9 187.83, min 38.75, max 551.36, 280,219 samples,
    as sockperf's RTT/2 (its default; the seed does not say)."""
    r = one(BOARDS / "sockperf_pingpong_udp.txt")
    lat = r.latency
    assert (r.test, lat.kind, lat.samples) == ("ping-pong", "rtt_half", 280_219)
    assert (lat.mean_us, lat.stddev_us, lat.percentiles_us["99.9"]) == (52.688, 15.909, 187.827)
    assert (lat.min_us, lat.max_us) == (38.754, 551.355)
    assert (r.sent, r.received, r.lost) == (280_219, 280_219, 0)


@pytest.mark.parametrize("size, mean, p999, samples", [
    ("64B", 56.829, 196.952, 171_898), ("512B", 93.640, 247.449, 104_349), ("1472B", 131.392, 301.620, 74_372),
])
def test_seed004_sizes_and_no_loss_at_all(size, mean, p999, samples):
    """004-2 and 004-3: the means the seed quotes; and sent = received with sockperf's own
    dropped count 0, so the seed's "0.001 %" loss is not in the data (0 %)."""
    r = one(BOARDS / f"sockperf_pingpong_{size}.txt")
    assert (r.latency.mean_us, r.latency.percentiles_us["99.9"], r.latency.samples) == (mean, p999, samples)
    assert (r.lost, r.loss_percent, r.sent) == (0, 0.0, r.received)


def test_seed004_largest_max_is_the_1472_byte_run():
    assert one(BOARDS / "sockperf_pingpong_1472B.txt").latency.max_us == 1251.222


def test_seed004_under_load_replies_are_one_in_a_hundred_not_loss():
    """004-4: "99 % loss" is 2,953 replies to 295,201 messages, which is sockperf under-load's
    one reply per --reply-every (100) messages; sockperf itself counts 0 dropped."""
    for name in ("sockperf_underload_udp.txt", "sockperf_single_underload_udp.txt"):
        r = one(BOARDS / name)
        assert (r.test, r.sent, r.received, r.lost) == ("under-load", 295_201, 2_953, 0)
        assert round(100 * r.received / r.sent, 3) == 1.000
        assert any("reply-every" in w for w in r.warnings)


def test_seed004_throughput_is_the_payload_ceiling_counted_at_the_sender():
    """004-5: 2,438,169 messages of 1472 B in 30 s are 957.1 Mbit/s of payload; sockperf's
    "912.723 Mbps" is the same figure in 2^20-bit units; only the send side is counted."""
    r = one(BOARDS / "sockperf_throughput_udp.txt")
    assert (r.test, r.sent, r.payload_size, r.received) == ("throughput", 2_438_169, 1472, None)
    assert round(r.payload_bps / 1e6, 1) == 957.1
    assert abs(r.payload_bps / 2**20 - 912.723) < 0.01
    assert any("send side only" in w for w in r.warnings)
    single = one(BOARDS / "sockperf_single_throughput_udp.txt")
    assert single.frames_per_s == r.frames_per_s == 81_272


@pytest.mark.parametrize("name, dual, single", [
    ("udp", 52.688, 44.375), ("64B", 56.829, 46.313), ("512B", 93.640, 71.744), ("1472B", 131.392, 127.550),
])
def test_seed004_single_board_is_not_half_the_latency(name, dual, single):
    """004-7 predicted 26-35 us for one board, "approximately 50 % lower". The published
    single-board runs are 2.9-23.4 % lower, and above 35 us at every size."""
    d, s = one(BOARDS / f"sockperf_pingpong_{name}.txt"), one(BOARDS / f"sockperf_single_pingpong_{name}.txt")
    assert (d.latency.mean_us, s.latency.mean_us) == (dual, single)
    assert s.latency.mean_us > 35 and s.latency.mean_us / d.latency.mean_us > 0.75


def test_iperf3_client_text_output_is_imported():
    """The control group's TCP run is iperf3's text output (not --json): the importer reads its
    receiver summary, 941 Mbit/s over 10 s (000 l.189), and its per-second lines."""
    r = one(D10 / "control_group_no_frer" / "control_results_20251023_095238" / "tcp_10s.txt")
    assert (r.tool, r.test, r.duration_s, r.payload_bps) == ("iperf3", "tcp", 10.0, 941e6)
    assert len(r.intervals) == 10 and r.intervals[0].payload_bps == 959e6
    assert any("3 significant digits" in w for w in r.warnings)
    udp = one(TOOLS / "iperf3_udp_1518B_text.txt")
    assert (udp.test, udp.sent, udp.lost, udp.jitter_ms, udp.duration_s) == ("udp", 1698, 0, 0.012, 2.0)
    assert [i.frames for i in udp.intervals] == [849, 849]


def test_a_json_file_of_no_known_kind_is_named_once():
    path = D10 / "experimental_data" / "rfc2544_comprehensive_data.json"
    with pytest.raises(UsageError) as err:
        importer.import_file(path)
    assert str(err.value).count(str(path)) == 1 and "neither iperf3 --json output" in str(err.value)


def rows(path):
    return list(csv.DictReader(path.open()))


@pytest.mark.parametrize("path", [
    D10 / "control_group_no_frer" / "control_udp_1518B_sweep.csv",
    D10 / "experimental_data" / "zero_loss_threshold.csv",
])
def test_summary_tables_are_refused_as_tool_output(path):
    """The CSVs are tables the seeds' scripts wrote from their runs, not a tool's output."""
    with pytest.raises(UsageError, match="format not recognised"):
        importer.import_file(path)


def test_control_398_is_a_single_10s_sweep_point():
    """000-1, C2: the control's 398 Mbit/s is the last loss-free target of single 10 s trials,
    not a binary search: 393 lost 0.010 %, 394-398 lost nothing, 399 lost 0.0065 %."""
    sweep = {int(r["Target_Mbps"]): r for r in rows(D10 / "control_group_no_frer" / "control_udp_1518B_sweep.csv")}
    assert {r["Test_Duration_Sec"] for r in sweep.values()} == {"10"}
    assert [float(sweep[t]["Loss_Rate_Pct"]) for t in range(393, 400)] == [0.010, 0, 0, 0, 0, 0, 0.0065]
    assert float(sweep[530]["Loss_Rate_Pct"]) == 0.5


def test_frer_530_is_a_5s_trial_and_341_a_30s_search():
    """000-1, C1, C2: FRER's 530 comes from 5 s trials; 341.47 is the tenth 30 s trial of the
    binary search, which itself lost 0.0005 %."""
    z = rows(D10 / "experimental_data" / "zero_loss_threshold.csv")
    clean = [r for r in z if r["Status"] == "zero_loss"]
    assert {r["Test_Duration_Sec"] for r in clean} == {"5"}
    assert max(int(r["Target_Mbps"]) for r in clean) == 540
    doc = json.loads((D10 / "experimental_data" / "rfc2544_comprehensive_data.json").read_text())
    (search,) = [f for f in doc["udp_zero_loss_throughput"]["frame_sizes"] if f["frame_size_bytes"] == 1518]
    trace = search["binary_search_convergence"]
    assert len(trace) == 10 and doc["udp_zero_loss_throughput"]["test_duration_per_iteration"] == 30
    assert (trace[-1]["result_mbps"], trace[-1]["loss_pct"]) == (341.47, 0.0005)
    assert (trace[0]["test_mbps"], trace[0]["loss_pct"]) == (500.5, 0.0759)


def test_frer_packet_counts_do_not_fit_the_rates():
    """C12: the 30 s rows' Packets_Sent are about twice the 1472-byte datagrams the rate
    carries (535 Mbit/s x 30 s = 1,362,942), and the loss percent is lost / Packets_Sent."""
    path = D10 / "experimental_data" / "zero_loss_threshold.csv"
    z = {(r["Target_Mbps"], r["Test_Duration_Sec"]): r for r in rows(path)}
    row = z[("535", "30")]
    datagrams = 535e6 * 30 / (1472 * 8)
    assert round(datagrams) == 1_362_942 and round(int(row["Packets_Sent"]) / datagrams, 2) == 1.97
    assert round(100 * int(row["Packets_Lost"]) / int(row["Packets_Sent"]), 3) == float(row["Loss_Rate_Pct"])


def test_frer_latency_table_is_derived_not_measured():
    """001-7, C13: in the FRER latency file min = mean / 2 and max = 2 x mean in every row, max
    lies below P99.9, and no sample count is given (the control's file has one)."""
    frer = rows(D10 / "experimental_data" / "latency_measurements.csv")
    for r in frer:
        avg = float(r["Avg_us"])
        assert abs(float(r["Min_us"]) - avg / 2) <= 0.01 and abs(float(r["Max_us"]) - 2 * avg) <= 0.01
        assert float(r["Max_us"]) < float(r["P99_9_us"])
    assert "Observations" not in frer[0]
    control = rows(D10 / "control_group_no_frer" / "control_latency_measurements.csv")
    assert [int(r["Observations"]) for r in control][-1] == 270_097


def test_mausezahn_rates_are_a_quarter_of_the_line_rate_by_construction():
    """001-5, 002-6: max_achieved_mbps is 0.25 x theoretical at every size, and max_pps is
    theoretical_mbps over the frame's bits with 20 B added: a line-rate figure, four times
    the frame rate the achieved Mbit/s imply. No achieved frame count is published."""
    doc = json.loads((D10 / "experimental_data" / "rfc2544_comprehensive_data.json").read_text())
    for size in doc["mausezahn_precision_tests"]["frame_sizes"]:
        bits = (size["frame_size_bytes"] + 20) * 8
        assert abs(size["max_achieved_mbps"] / size["theoretical_mbps"] - 0.25) < 0.001
        assert abs(size["max_pps"] / (size["theoretical_mbps"] * 1e6 / bits) - 1) < 1e-4
        assert abs(size["max_pps"] / (size["max_achieved_mbps"] * 1e6 / bits) - 4) < 0.01
