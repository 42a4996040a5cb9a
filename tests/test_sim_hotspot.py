"""Seed 003's multi-stage output-generated hotspot (frerlab.sim.hotspot): the shipped scenario
files are what the builder makes, every mechanism runs on it from the CLI and the Python API,
the metrics measure what they say on runs whose truth is known, PAUSE spreads the hotspot to
flows that do not go there (and congestion notification does not), FECN's overhead follows its
formula on the fabric, and a grid with `summary: hotspot` gives one row of metrics per run."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml

from frerlab import sim
from frerlab.cli import main
from frerlab.errors import UsageError
from frerlab.sim import hotspot
from simcheck import assert_conserved

HOTSPOT = Path(__file__).resolve().parent.parent / "scenarios" / "hotspot"


@pytest.mark.parametrize("stem", sorted(hotspot.VARIANTS))
def test_the_shipped_file_is_what_the_builder_makes(stem: str) -> None:
    assert yaml.safe_load((HOTSPOT / f"{stem}.yaml").read_text()) == hotspot.scenario(**hotspot.VARIANTS[stem])


@pytest.mark.parametrize("stem", sorted(hotspot.VARIANTS))
def test_every_variant_runs_from_the_cli(stem: str, tmp_path: Path) -> None:
    out = tmp_path / stem
    assert main(["sim", "run", str(HOTSPOT / f"{stem}.yaml"), "--set", "duration=20ms", "-o", str(out)]) == 0
    streams = pd.read_csv(out / "streams.csv")
    assert len(streams) == 90 and streams["sent"].gt(0).all()
    regulated = hotspot.VARIANTS[stem]["mechanism"] != "none"
    assert (out / "rate_series.csv").exists() == regulated
    assert (out / "control.csv").exists() == regulated


def test_the_fabric_is_the_seeds() -> None:
    sc = sim.api.prepare(hotspot.scenario("none"))
    assert len(sc.nodes) == 13 and len(sc.links) == 12 and {link.rate for link in sc.links} == {10**10}
    edge = {link.a: link.b for link in sc.links if link.a.startswith("n")}
    assert [n for n in hotspot.NODES if edge[n] == "e1"] == ["n1", "n3", "n5", "n7", "n9"]
    # 8 us loop: a node-edge-core-edge-node path crossed twice, 1 us per link.
    assert {link.delay for link in sc.links} == {10**6}
    offered = pd.Series({s.name: s.rate for s in sc.streams}).groupby(lambda n: n.split("-")[0]).sum()
    assert offered[[f"n{i}" for i in range(1, 7)]].round(-3).eq(2.5e9).all()
    assert offered[[f"n{i}" for i in range(7, 11)]].round(-3).eq(4e9).all()
    assert all(s.frame_size == 1500 and s.paths is None for s in sc.streams)
    with pytest.raises(ValueError, match="mechanism 'dctcp' is not one of none, qcn, bcn, fecn"):
        hotspot.scenario("dctcp")
    with pytest.raises(ValueError, match="placement 'ring' is not one of interleaved, blocks"):
        hotspot.scenario("none", placement="ring")


def test_no_link_is_over_its_rate_before_the_hotspot_unless_the_nodes_are_placed_in_blocks() -> None:
    data = hotspot.scenario("none")
    loads = pd.Series(hotspot.link_loads(data))
    # Every stream's rate counts once per link of its route: 2 links within an edge, 4 across.
    rates = {s["name"]: float(s["rate"].removesuffix("bps")) for s in data["streams"]}
    same_edge = sum(rates[f"{a}-{b}"] for a in hotspot.NODES for b in hotspot.NODES
                    if a != b and int(a[1:]) % 2 == int(b[1:]) % 2)
    assert loads.sum() == pytest.approx(2 * same_edge + 4 * (sum(rates.values()) - same_edge))
    # Each edge's nodes offer 15.5 Gbit/s, 5/9 of it to the other edge: 86 % of an uplink.
    assert loads.max() == pytest.approx(15.5e9 * 5 / 9) and loads.max() < 10e9
    blocks = pd.Series(hotspot.link_loads(hotspot.scenario("none", placement="blocks")))
    # The first pass's fabric: n6-n10 offer 18.5 Gbit/s, 5/9 of it to the other edge.
    assert blocks[blocks > 10e9].to_dict() == pytest.approx({"e2:e2->core": 18.5e9 * 5 / 9,
                                                             "e1:core->e1": 18.5e9 * 5 / 9})


def one_slow_egress(**congestion: object) -> dict:
    """a, b -> sw -> hot (slows from 10 to 1 Gbit/s at 2 ms) and a -> sw -> cold: each talker
    sends 2 Gbit/s (L1) of 1500-byte frames to hot, a also 2 Gbit/s to cold."""
    link = {"rate": "10Gbps", "delay": "1us", "egress": {"queue_limit": "150KB"}}
    streams = [{"name": f"{src}-{dst}", "talker": src, "listener": dst, "frame_size": 1500, "rate": "2Gbps",
                "rate_layer": "l1"} for src, dst in (("a", "hot"), ("b", "hot"), ("a", "cold"))]
    return {"name": "slow-egress", "duration": "40ms", "interval": "500us",
            "nodes": {n: {"kind": "host"} for n in ("a", "b", "hot", "cold")} | {"sw": {"kind": "switch"}},
            "links": [{"name": n, "a": n, "b": "sw", **link} for n in ("a", "b", "cold")]
            + [{"name": "hot", "a": "hot", "b": "sw", **link,
                "rate_changes": [{"at": "2ms", "rate": "1Gbps", "toward": "hot"}]}],
            "streams": streams, **({"congestion": congestion} if congestion else {})}


def test_without_control_the_hotspot_never_drains_and_the_other_flow_is_untouched() -> None:
    result = sim.run(one_slow_egress())
    assert_conserved(result)
    m = hotspot.metrics(result)
    row = m.summary.iloc[0]
    assert math.isnan(row["drain_time_s"]) and math.isnan(row["settle_time_s"]) and math.isnan(row["fair_time_s"])
    assert row["utilisation"] == pytest.approx(1500 / 1520, rel=1e-3), "busy at its new rate, L2 counted"
    assert row["jain"] == pytest.approx(1.0), "two flows at the same configured rate"
    assert row["victim_ratio"] == 1.0
    # 4 Gbit/s offered into 1 Gbit/s: 3/4 of what arrives after the onset is lost.
    assert 0.6 < row["hotspot_loss_ratio"] < 0.75
    assert row["control_bps"] == 0 and row["pause_bps"] == 0
    hot = m.hotspot.set_index("time_s")
    assert hot.loc[0.0005:0.0015, "queue_mean_bytes"].max() < 3_000 < hot.loc[0.01:, "queue_mean_bytes"].min()
    assert set(m.sources["talker"]) == {"a", "b"}
    assert m.sources.groupby("talker")["rate_bps"].max().tolist() == [4e9, 2e9]


def test_fecn_starts_flows_at_c_over_n0_and_shares_the_hotspot_fairly_without_loss() -> None:
    """The first probes come back with the ports' first advertised rate, C / N0 = 50 Mbit/s:
    the flows ramp up from there, so the queue never builds, and settle at the fair share."""
    result = sim.run(one_slow_egress(mechanism="fecn", point={"b": 1.2}))
    assert_conserved(result)
    m = hotspot.metrics(result)
    row = m.summary.iloc[0]
    hot = m.hotspot.set_index("time_s")
    assert hot.loc[0.0005, "rate_bps"] == pytest.approx(2 * 50e6, rel=1e-6)
    assert row["drain_time_s"] == row["settle_time_s"] == 0 < row["fair_time_s"] < 0.01
    assert row["hotspot_loss_ratio"] == 0 and row["jain"] == pytest.approx(1.0, abs=1e-6)
    assert hot.loc[0.02:, "rate_bps"].mean() == pytest.approx(1e9, rel=0.05)
    # One probe per flow per millisecond over 40 ms, each one back: 64 B x 2 per probe.
    overhead = m.overhead.set_index("port")
    assert overhead.loc["a:a->sw", "forward_frames"] == 80 and overhead.loc["a:a->sw", "back_frames"] == 80
    assert overhead.loc["a:a->sw", "bytes_per_s"] == pytest.approx(160 * 64 / 0.04)


def test_metrics_need_a_hotspot_within_the_run() -> None:
    data = one_slow_egress()
    data["duration"] = "2ms"
    with pytest.raises(UsageError, match="the hotspot's onset 2ms is not before the end of the duration 2ms"):
        hotspot.metrics(sim.run(data))
    del data["links"][-1]["rate_changes"]
    with pytest.raises(UsageError, match="no link with rate_changes toward a node"):
        hotspot.metrics(sim.run(data))


def test_pause_spreads_the_hotspot_to_flows_that_do_not_go_there_and_qcn_does_not() -> None:
    results = {stem: sim.run(hotspot.scenario(**args, onset="10ms", duration="60ms"))
               for stem, args in hotspot.VARIANTS.items() if stem in ("none", "pause", "qcn")}
    for result in results.values():
        assert_conserved(result)
    runs = {stem: hotspot.metrics(result).summary.iloc[0] for stem, result in results.items()}
    assert runs["none"]["victim_ratio"] > 0.98
    assert runs["pause"]["victim_ratio"] < 0.8 and runs["pause"]["pause_bps"] > 0
    assert runs["qcn"]["victim_ratio"] > 0.999 and runs["qcn"]["drain_time_s"] < 0.03


def test_a_grid_with_the_hotspot_summary_gives_one_row_of_metrics_per_run(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"scenario": str(HOTSPOT / "none.yaml"), "summary": "hotspot",
                                    "grid": {"duration": ["70ms"], "congestion": [None, {"mechanism": "bcn"}]}}))
    assert main(["sim", "sweep", str(grid), "-o", str(tmp_path / "out"), "--jobs", "2"]) == 0
    table = pd.read_csv(tmp_path / "out" / "sweep.csv")
    assert len(table) == 2 and {"drain_time_s", "jain", "victim_ratio", "control_bps", "worker"} <= set(table)
    assert table["control_bps"].iloc[0] == 0 < table["control_bps"].iloc[1]
    assert "drain_time_s" in capsys.readouterr().out
    # The report draws the sweep's overhead per run (and its drain times, when a run drained).
    assert main(["report", str(tmp_path / "out"), "-o", str(tmp_path / "report.html")]) == 0
    assert 'id="fig-hotspot-control-out"' in (tmp_path / "report.html").read_text()
    grid.write_text(yaml.safe_dump({"scenario": str(HOTSPOT / "none.yaml"), "summary": "fairness",
                                    "grid": {"seed": [1]}}))
    assert main(["sim", "sweep", str(grid), "-o", str(tmp_path / "bad")]) == 2
    assert "summary 'fairness' is not valid (streams or hotspot)" in capsys.readouterr().err


def test_metrics_without_victims_give_nan_for_their_ratio_and_no_warning() -> None:
    data = one_slow_egress()
    data["streams"] = [s for s in data["streams"] if s["listener"] == "hot"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = hotspot.metrics(sim.run(data)).summary.iloc[0]
    assert math.isnan(summary["victim_ratio"]) and summary["hotspot_loss_ratio"] > 0


def test_fecn_with_pause_counts_a_paused_port_as_slower_and_drains_the_hotspot() -> None:
    """The seed's "fast start with Pause": PAUSE holds the hotspot's arrivals near its service
    rate, so the hotspot port alone sees little overload; the ports PAUSE stops advertise for the
    share of the interval they could send, cut the flows behind them, and with b = 1.2 the
    hotspot drains while the flows that do not go there keep most of their frames; with the
    pseudo-code's b = 1.002 it does not drain, and PAUSE spreads the congestion as without FECN."""
    rows = {}
    for b in (1.2, 1.002):
        data = hotspot.scenario(**hotspot.VARIANTS["fecn_T1ms_pause"], onset="20ms", duration="150ms")
        data["congestion"]["point"] = {"b": b}
        result = sim.run(data)
        assert_conserved(result)
        assert result.ports[result.ports["node"].isin(["e1", "e2", "core"])]["drop_queue_full"].sum() == 0
        rows[b] = hotspot.metrics(result).summary.iloc[0]
    assert rows[1.2]["drain_time_s"] < 0.03 and rows[1.2]["jain"] > 0.99 and rows[1.2]["victim_ratio"] > 0.9
    assert math.isnan(rows[1.002]["drain_time_s"]) and rows[1.002]["victim_ratio"] < 0.6
