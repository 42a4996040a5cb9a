"""Congestion control from the scenario file to the tables: IEEE 802.3x PAUSE keeps a 2:1
incast into a small buffer lossless (and without it frames are lost), QCN (IEEE 802.1Qau)
brings identical sources near the fair share with the hotspot queue at Qeq, the vocabulary's
defaults reach the spec, and bad values are refused naming the field and the valid range.
The detailed checks (N = 2 and 4, sample counts by formula) are in crates/sim/tests/congestion.rs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from frerlab import sim
from frerlab.errors import UsageError
from frerlab.sim.scenario import compile_spec, parse_scenario


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
    result.save(tmp_path)
    assert len(pd.read_csv(tmp_path / "pause.csv")) == 4


def test_qcn_brings_two_sources_near_the_fair_share_with_the_queue_at_qeq(tmp_path: Path) -> None:
    data = incast(2, "1s")
    data["links"][-1]["egress"] = {"qcn": {}}
    for s in data["streams"]:
        s["qcn"] = {}
    result = sim.run(data)
    late = result.qcn_series[result.qcn_series["time_s"] >= 0.5]
    rates = late.groupby("stream")["rate_mean_bps"].mean()
    assert ((rates / 5e9 - 1).abs() < 0.25).all(), rates
    assert abs(rates.sum() / 10e9 - 1) < 0.03, rates
    queue = result.port_series.query("port == 'down:sw->dst' and time_s >= 0.5 and time_s < 1")["queue_mean_bytes"]
    assert 13_000 < queue.mean() < 52_000
    cp = result.qcn_ports.iloc[0]
    assert cp["notifications"] == result.qcn_streams["notifications"].sum() > 0
    assert cp["notification_bytes"] == 64 * cp["notifications"] == result.qcn_streams["notification_bytes"].sum()
    result.save(tmp_path)
    assert {"qcn_series.csv", "qcn_ports.csv", "qcn_streams.csv"} <= {p.name for p in tmp_path.iterdir()}


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


@pytest.mark.parametrize(("where", "value", "message"), [
    ("link", {"quanta": 70000}, r"links\.0\.pause\.quanta: .*less than or equal to 65535"),
    ("link", {"xoff": "10KB", "xon": "10KB"}, r"pause xon 10000 bytes is out of range \(0\.\.9999, below xoff\)"),
    ("egress", {"w": -1}, r"links\.2\.egress\.qcn\.w: .*greater than or equal to 0"),
    ("stream", {"gd": 0.5}, r"streams\.0\.qcn\.gd: .*less than or equal to 0\.0079"),
    ("stream", {"min_rate": "20Gbps"}, r"qcn\.min_rate 20000000000 bit/s is out of range \(1\.\.=10000000000 bit/s"),
])
def test_bad_congestion_parameters_name_the_field_and_range(where: str, value: dict, message: str) -> None:
    data = incast(2, "1ms")
    if where == "link":
        data["links"][0]["pause"] = value
    elif where == "egress":
        data["links"][2]["egress"]["qcn"] = value
    else:
        data["streams"][0]["qcn"] = value
    with pytest.raises(UsageError, match=message):
        parse_scenario(data)
