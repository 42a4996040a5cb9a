"""Congestion control from the scenario file to the tables: IEEE 802.3x PAUSE keeps a 2:1
incast into a small buffer lossless (and without it frames are lost), QCN (IEEE 802.1Qau)
brings identical sources near the fair share with the hotspot queue at Qeq, FECN gives them
the fair share with one probe per flow per interval, BCN fills the bottleneck and drifts to
the fair share, a rate change slows an egress, the vocabulary's defaults reach the spec,
and bad values are refused naming the field and the valid range.
The detailed checks (N = 2 and 4, sample counts by formula) are in crates/sim/tests/congestion.rs,
fairness at 1 and 10 Gbit/s for N = 2, 3, 5 in test_sim_fairness.py; every run conserves frames."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from frerlab import sim
from frerlab.errors import UsageError
from frerlab.sim.compile import compile_spec
from frerlab.sim.schema import parse_scenario
from simcheck import assert_conserved


def incast(n: int, duration: str, **link: object) -> dict:
    """h0..h{n-1} -> sw -> dst, 10 Gbit/s links of 1 us, each talker at 10 Gbit/s (L1)."""
    nodes = {f"h{i}": {"kind": "host"} for i in range(n)} | {"sw": {"kind": "switch"}, "dst": {"kind": "host"}}
    links = [{"name": f"up{i}", "a": f"h{i}", "b": "sw", "rate": "10Gbps", "delay": "1us", **link} for i in range(n)]
    links.append({"name": "down", "a": "sw", "b": "dst", "rate": "10Gbps", "delay": "1us",
                  "egress": {"queue_limit": "100KB"}})
    streams = [{"name": f"s{i}", "talker": f"h{i}", "listener": "dst", "frame_size": 1500, "rate": "10Gbps",
                "rate_layer": "l1", "paths": [[f"up{i}", "down"]]} for i in range(n)]
    return {"name": "incast", "duration": duration, "interval": "1ms", "nodes": nodes, "links": links,
            "streams": streams}


def test_pause_makes_a_two_to_one_incast_lossless_and_reports_each_paused_direction(tmp_path: Path) -> None:
    lossy = sim.run(incast(2, "2ms"))
    assert lossy.streams["lost"].sum() > lossy.streams["sent"].sum() / 4
    assert lossy.pause.empty

    result = sim.run(incast(2, "2ms", pause={"xoff": "20KB", "xon": "10KB"}))
    assert (result.streams["lost"] == 0).all() and (result.streams["received"] == result.streams["sent"]).all()
    # Both directions of each talker link run PAUSE; only the talkers' directions are paused.
    pause = result.pause.set_index("port")
    assert len(pause) == 4
    talkers = pause.loc[["up0:h0->sw", "up1:h1->sw"]]
    assert (talkers["xoff_frames"] > 0).all() and (talkers["paused_s"] > 0).all()
    assert (talkers["pause_bytes"] == 64 * (talkers["xoff_frames"] + talkers["xon_frames"])).all()
    assert (pause.loc[["up0:sw->h0", "up1:sw->h1"], "xoff_frames"] == 0).all()
    assert_conserved(result)
    result.save(tmp_path)
    assert len(pd.read_csv(tmp_path / "pause.csv")) == 4


def test_qcn_brings_two_sources_near_the_fair_share_with_the_queue_at_qeq(tmp_path: Path) -> None:
    data = incast(2, "1s")
    data["links"][-1]["egress"] = {"qcn": {}}
    for s in data["streams"]:
        s["qcn"] = {}
    result = sim.run(data)
    late = result.rate_series[result.rate_series["time_s"] >= 0.5]
    rates = late.groupby("stream")["rate_mean_bps"].mean()
    assert ((rates / 5e9 - 1).abs() < 0.25).all(), rates
    assert abs(rates.sum() / 10e9 - 1) < 0.03, rates
    queue = result.port_series.query("port == 'down:sw->dst' and time_s >= 0.5 and time_s < 1")["queue_mean_bytes"]
    assert 13_000 < queue.mean() < 52_000
    cp = result.qcn_ports.iloc[0]
    assert cp["notifications"] == result.cn_streams["received"].sum() > 0
    assert cp["notification_bytes"] == 64 * cp["notifications"] == result.cn_streams["received_bytes"].sum()
    assert_conserved(result)
    result.save(tmp_path)
    assert {"rate_series.csv", "qcn_ports.csv", "cn_streams.csv"} <= {p.name for p in tmp_path.iterdir()}


def controlled(mechanism: str, n: int, duration: str) -> dict:
    """The incast with `mechanism`'s congestion point on the bottleneck and a regulator on
    every stream (defaults), without a queue limit."""
    data = incast(n, duration)
    data["links"][-1]["egress"] = {mechanism: {}}
    for s in data["streams"]:
        s[mechanism] = {}
    return data


@pytest.mark.parametrize("n", [2, 4])
def test_fecn_gives_identical_sources_the_fair_share_with_one_probe_per_flow_per_interval(n: int) -> None:
    result = sim.run(controlled("fecn", n, "500ms"))
    late = result.rate_series[result.rate_series["time_s"] >= 0.25]
    rates = late.groupby("stream")["rate_mean_bps"].mean()
    assert ((rates / (10e9 / n) - 1).abs() < 0.01).all(), rates
    queue = result.port_series.query("port == 'down:sw->dst' and time_s >= 0.25")["queue_mean_bytes"]
    assert queue.mean() < 2 * 24_000, "FECN holds the queue near its Qeq (24 KB)"
    assert (result.streams["lost"] == 0).all()
    # One probe per flow per T = 1 ms, each one back: 500 per flow in 500 ms.
    streams = result.cn_streams.set_index("stream")
    assert (streams["probes_sent"] == 500).all() and (streams["received"] == 500).all()
    control = result.control.set_index("port")
    talkers = control.loc[[f"up{i}:h{i}->sw" for i in range(n)]]
    assert (talkers["forward_frames"] == 500).all() and (talkers["back_frames"] == 500).all()
    assert control.loc["down:sw->dst", "forward_frames"] == control.loc["down:sw->dst", "back_frames"] == 500 * n
    assert (control["control_bytes"] == 64 * (control["forward_frames"] + control["back_frames"])).all()
    assert result.fecn_ports.set_index("port").loc["down:sw->dst", "probes"] == 500 * n
    assert_conserved(result)


@pytest.mark.parametrize("n", [2, 4])
def test_bcn_fills_the_bottleneck_and_its_shares_drift_to_the_fair_share(n: int) -> None:
    """AIMD on sampled feedback: the rates add up to the bottleneck at once, but the shares
    the first cuts left unequal (4.4/5.6 Gbit/s at 0.25-0.5 s for N = 2) reach C/N only
    slowly: within 20 % over the second second."""
    data = controlled("bcn", n, "2s")
    data["interval"] = "10ms"
    result = sim.run(data)
    late = result.rate_series[result.rate_series["time_s"] >= 1]
    rates = late.groupby("stream")["rate_mean_bps"].mean()
    assert abs(rates.sum() / 10e9 - 1) < 0.02, rates
    assert ((rates / (10e9 / n) - 1).abs() < 0.20).all(), rates
    queue = result.port_series.query("port == 'down:sw->dst' and time_s >= 1")["queue_mean_bytes"]
    assert 13_000 < queue.mean() < 52_000, "near its Qeq (26 KB)"
    cp = result.bcn_ports.set_index("port").loc["down:sw->dst"]
    frames = cp["arrived_bytes"] / 1500
    assert abs(cp["samples"] - 0.01 * frames) < 4 * (0.01 * 0.99 * frames) ** 0.5, "pm = 0.01 of the frames"
    sent = cp["negative"] + cp["positive"]
    assert sent == result.cn_streams["received"].sum() and cp["notification_bytes"] == 64 * sent
    back = result.control.set_index("port")["back_frames"]
    for row in result.cn_streams.itertuples():
        assert back[f"up{row.stream[1:]}:h{row.stream[1:]}->sw"] == row.received
    assert_conserved(result)


def test_a_rate_change_makes_the_egress_send_slower_from_that_time_on() -> None:
    data = incast(1, "20ms")
    data["streams"][0]["rate"] = "5Gbps"
    data["links"][-1]["rate_changes"] = [{"at": "10ms", "rate": "1Gbps", "toward": "dst"}]
    result = sim.run(data)
    tx = result.port_series.set_index(["port", "time_s"])["tx_bps"]
    before, after = tx["down:sw->dst"].loc[0.002:0.009], tx["down:sw->dst"].loc[0.011:0.019]
    assert (abs(before * 1520 / 1500 / 5e9 - 1) < 0.01).all(), "the stream's 5 Gbit/s (L2 counted)"
    assert (abs(after * 1520 / 1500 / 1e9 - 1) < 0.01).all(), "the new 1 Gbit/s"
    down = result.ports.set_index("port").loc["down:sw->dst"]
    assert down["max_queue_bytes"] > 95_000 and down["drop_queue_full"] > 0, "the 100 KB queue overflows"
    assert_conserved(result)


def test_defaults_and_directions_reach_the_spec() -> None:
    data = incast(2, "1ms")
    data["nodes"]["sw"]["pause"] = {}
    data["links"][-1]["egress"]["qcn"] = {"qeq": "10KB"}
    data["streams"][0]["qcn"] = {"timer": "10ms"}
    spec = compile_spec(parse_scenario(data))
    by_name = {p["name"]: p for p in spec["ports"]}
    # The switch pauses its talkers: only the directions into it run PAUSE; XOFF/XON go back.
    assert by_name["up0:h0->sw"]["pause"] == {"reverse": 1, "xoff": 30_000, "xon": 15_000, "quanta": 65535}
    assert by_name["up0:sw->h0"]["pause"] is None and by_name["down:sw->dst"]["pause"] is None
    assert spec["ports"][1]["name"] == "up0:sw->h0"
    assert by_name["down:sw->dst"]["qcn"] == {"qeq": 10_000, "w": 2.0, "jitter": 0.15}
    assert spec["streams"][0]["qcn"] == {
        "gd": 1 / 128, "byte_counter": 150_000, "timer": 10 * 10**9, "fast_recovery": 5,
        "active_increase": 5_000_000, "hyper_increase": 50_000_000, "min_rate": 5_000_000}
    assert "qcn" not in spec["streams"][1]
    # BCN and FECN: every default with its source in schema.py.
    data["links"][-1]["egress"] = {"bcn": {"pm": 0.1}}
    data["links"][0]["egress"] = {"fecn": {"interval": "250us"}}
    data["streams"][0] = {**data["streams"][0], "qcn": None, "bcn": {}}
    data["streams"][1]["fecn"] = {}
    spec = compile_spec(parse_scenario(data))
    by_name = {p["name"]: p for p in spec["ports"]}
    assert by_name["down:sw->dst"]["bcn"] == {"qeq": 26_000, "w": 2.0, "pm": 0.1, "qsc": 104_000}
    assert by_name["up0:h0->sw"]["fecn"] == by_name["up0:sw->h0"]["fecn"] == {
        "interval": 250 * 10**6, "qeq": 24_000, "a": 1.1, "b": 1.002, "c": 0.1, "alpha": 0.5, "n0": 200,
        "max_increase": 2.0}
    assert spec["streams"][0]["bcn"] == {"gi": 4.0, "gd": 1 / 128, "ru": 1_000_000, "min_rate": 5_000_000}
    assert spec["streams"][1]["fecn"] == {"interval": 10**9}


@pytest.mark.parametrize(("where", "value", "message"), [
    ("link", {"quanta": 70000}, r"links\.0\.pause\.quanta: .*less than or equal to 65535"),
    ("link", {"xoff": "10KB", "xon": "10KB"}, r"pause xon 10000 bytes is out of range \(0\.\.9999, below xoff\)"),
    ("egress", {"w": -1}, r"links\.2\.egress\.qcn\.w: .*greater than or equal to 0"),
    ("stream", {"gd": 0.5}, r"streams\.0\.qcn\.gd: .*less than or equal to 0\.0079"),
    ("stream", {"min_rate": "20Gbps"}, r"qcn\.min_rate 20000000000 bit/s is out of range \(1\.\.=10000000000 bit/s"),
    ("bcn-egress", {"qeq": "30KB", "qsc": "20KB"}, r"qsc 20000 bytes is below qeq 30000 bytes \(qsc >= qeq\)"),
    ("bcn-egress", {"pm": 0}, r"links\.2\.egress\.bcn\.pm: .*greater than 0"),
    ("bcn-stream", {"gd": 0.1}, r"streams\.0\.bcn\.gd: .*less than 0\.0158"),
    ("fecn-egress", {"b": 1}, r"links\.2\.egress\.fecn\.b: .*greater than 1"),
    ("fecn-stream", {"interval": 0}, r"streams\.0\.fecn\.interval: .*greater than 0"),
    ("two-regulators", {}, r"qcn and fecn on one stream: choose one regulator"),
    ("fecn-two-paths", {}, r"fecn on a stream of 2 paths is not modelled"),
    ("rate-change", [{"at": "1ms", "rate": "1Gbps", "toward": "h9"}], r"rate_changes toward 'h9' is not one of its ends \(sw, dst\)"),
    ("rate-change", [{"at": "2ms", "rate": "1Gbps"}, {"at": "1ms", "rate": "2Gbps"}], r"rate_changes toward sw must be in increasing time"),
])
def test_bad_congestion_parameters_name_the_field_and_range(where: str, value: dict, message: str) -> None:
    data = incast(2, "1ms")
    if where == "link":
        data["links"][0]["pause"] = value
    elif where == "egress":
        data["links"][2]["egress"]["qcn"] = value
    elif where.endswith("-egress"):
        data["links"][2]["egress"][where.split("-")[0]] = value
    elif where.endswith("-stream"):
        data["streams"][0][where.split("-")[0]] = value
    elif where == "two-regulators":
        data["streams"][0] |= {"qcn": {}, "fecn": {}}
    elif where == "fecn-two-paths":
        data["streams"][0] |= {"fecn": {}, "paths": [["up0", "down"], ["up0", "down"]]}
    elif where == "rate-change":
        data["links"][2]["rate_changes"] = value
    else:
        data["streams"][0]["qcn"] = value
    with pytest.raises(UsageError, match=message):
        parse_scenario(data)
