"""IEEE 802.3x PAUSE configured as lossless switches configure it (frerlab.sim.lossless): with
thresholds derived from the shared queue, the headroom of the link's delay and the largest
frame, a 2:1 and a 5:1 incast lose nothing; the defaults lose frames at 5:1 and say so before the
run; a pause is renewed while the receiver stays congested; paused time is counted within the
run's duration; a lossless configuration that cannot be met is refused naming the queue; a
lossless run's saved scenario reads back; a PAUSE deadlock does not hold the run open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frerlab import sim
from frerlab.errors import UsageError
from frerlab.sim import hotspot, lossless
from frerlab.sim.compile import compile_spec
from frerlab.sim.schema import parse_scenario
from simcheck import assert_conserved


def incast(n: int, pause: dict | None, queue: str = "150KB", duration: str = "5ms") -> dict:
    """h0..h{n-1} -> sw -> dst at 10 Gbit/s, 1 us links, every talker at line rate (L1), the
    switch pausing every talker link with `pause`."""
    nodes = {f"h{i}": {"kind": "host"} for i in range(n)} | {
        "sw": {"kind": "switch", **({"pause": pause} if pause is not None else {})}, "dst": {"kind": "host"}}
    links = [{"name": f"up{i}", "a": f"h{i}", "b": "sw", "rate": "10Gbps", "delay": "1us"} for i in range(n)]
    links.append({"name": "down", "a": "sw", "b": "dst", "rate": "10Gbps", "delay": "1us",
                  "egress": {"queue_limit": queue}})
    streams = [{"name": f"s{i}", "talker": f"h{i}", "listener": "dst", "frame_size": 1500, "rate": "10Gbps",
                "rate_layer": "l1", "paths": [[f"up{i}", "down"]]} for i in range(n)]
    return {"name": f"incast-{n}", "duration": duration, "interval": "1ms", "nodes": nodes, "links": links,
            "streams": streams}


@pytest.mark.parametrize("n", [2, 5])
def test_derived_thresholds_make_an_incast_lossless(n: int) -> None:
    result = sim.run(incast(n, {"lossless": True}))
    assert result.warnings == []
    assert (result.streams["lost"] == 0).all() and (result.streams["received"] == result.streams["sent"]).all()
    assert result.ports["drop_queue_full"].sum() == 0
    bottleneck = result.ports.set_index("port").loc["down:sw->dst"]
    assert bottleneck["max_queue_bytes"] <= 150_000
    # Every talker is paused about (n - 1)/n of the 5 ms its source runs, and not after.
    paused = result.pause.set_index("port").loc[[f"up{i}:h{i}->sw" for i in range(n)], "paused_s"]
    assert ((paused > 0.8 * (n - 1) / n * 5e-3) & (paused <= 5e-3)).all(), paused
    assert_conserved(result)


def test_the_derived_thresholds_share_the_queue_less_the_headroom() -> None:
    spec = compile_spec(parse_scenario(incast(5, {"lossless": True})))
    pauses = {p["name"]: p["pause"] for p in spec["ports"] if p["pause"] is not None and p["to"] == 5}
    # Headroom over a 10 Gbit/s link of 1 us: the crossing frame and the sender's frame in flight
    # (2 x 1500 B), plus 10 Gbit/s for the reverse wire's largest frame (nothing goes back here,
    # so 0), the 84-byte PAUSE on the wire and the delay both ways (2.0672 us: 2,584 B on the
    # wire, 2,550 B of 1500-byte frames in the buffer).
    headroom = 3000 + 2550
    for name in (f"up{i}:h{i}->sw" for i in range(5)):
        assert pauses[name]["xoff"] == 150_000 // 5 - headroom, pauses[name]
        assert pauses[name]["xon"] == pauses[name]["xoff"] // 2
        assert "lossless" not in pauses[name]


def test_default_thresholds_lose_frames_at_five_to_one_and_warn_before_the_run() -> None:
    data = incast(5, {})
    warnings = lossless.warnings(compile_spec(parse_scenario(data)))
    assert len(warnings) == 1 and "down:sw->dst class 0: its 150000 B can be filled by" in warnings[0], warnings
    result = sim.run(data)
    assert result.warnings == warnings
    assert result.ports.set_index("port").loc["down:sw->dst", "drop_queue_full"] > 0
    assert_conserved(result)


def test_a_pause_is_renewed_while_the_receiver_stays_congested() -> None:
    # 5:1 into a 100 Mbit/s egress: a talker's 18 KB between xoff and xon drain at 20 Mbit/s in
    # 7.2 ms, longer than a pause (65535 quanta, 3.36 ms at 10 Gbit/s), so the receiver renews
    # the pause halfway, every 1.68 ms, and the count never goes past xoff plus the headroom
    # (a pause allowed to run out lets another headroom in).
    data = incast(5, {"lossless": True}, duration="20ms")
    data["links"][-1]["rate"] = "100Mbps"
    spec = compile_spec(parse_scenario(data))
    bound = spec["ports"][0]["pause"]["xoff"] + 5550
    result = sim.run(data)
    talkers = result.pause[result.pause["node"].str.startswith("h")]
    assert (talkers["xoff_frames"] >= 10).all(), talkers
    assert (talkers["ingress_peak_bytes"] <= bound).all(), (talkers, bound)
    assert result.ports["drop_queue_full"].sum() == 0
    assert_conserved(result)


def test_unpaused_traffic_into_a_paused_queue_is_named() -> None:
    data = incast(3, None)
    data["links"][0]["pause"] = {}
    warnings = lossless.warnings(compile_spec(parse_scenario(data)))
    assert any("frames from up1:h1->sw, up2:h2->sw enter it without PAUSE" in w for w in warnings), warnings


def test_the_hotspot_fabric_with_derived_pause_drops_nothing_inside_the_switches() -> None:
    data = hotspot.scenario("none", pause=True, duration="80ms", onset="20ms")
    for node in data["nodes"].values():
        if "pause" in node:
            node["pause"] = {"lossless": True}
    result = sim.run(data)
    assert result.warnings == []
    switches = result.ports[result.ports["node"].isin(["e1", "e2", "core"])]
    assert switches["drop_queue_full"].sum() == 0
    assert (result.pause["paused_s"] <= 0.08).all()
    assert_conserved(result)


@pytest.mark.parametrize(("pause", "queue", "message"), [
    ({"lossless": True, "xoff": "20KB"}, "150KB", "lossless: true derives xoff and xon; give either"),
    ({"lossless": True}, "20KB", "pause lossless cannot be met: egress down:sw->dst class 0 (20000 B, 5 pausing "
                                 "ingresses) leaves 4000 B for this ingress, less than its headroom 5550 B"),
])
def test_a_lossless_configuration_that_cannot_be_met_is_refused(pause: dict, queue: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sim.run(incast(5, pause, queue=queue))


def test_a_lossless_run_s_saved_scenario_reads_back(tmp_path: Path) -> None:
    sim.run(incast(2, {"lossless": True}, duration="1ms")).save(tmp_path)
    saved = json.loads((tmp_path / "scenario.json").read_text())
    assert saved["nodes"]["sw"]["pause"] == {"xoff": None, "xon": None, "quanta": 65535, "lossless": True}
    assert parse_scenario(saved).nodes["sw"].pause.lossless


def test_a_pause_deadlock_in_a_ring_ends_the_run() -> None:
    # Three switches in a ring, each host sending at line rate two hops round it: every ring link
    # carries two flows into one, the switches pause each other in a cycle and nothing moves (a
    # PAUSE deadlock). Renewals stop once the sources have stopped and no frame moves, so the
    # pauses run out and the run ends instead of renewing them for ever.
    nodes = {f"h{i}": {"kind": "host"} for i in range(3)} | {
        f"s{i}": {"kind": "switch", "pause": {"xoff": "20KB", "xon": "10KB"}} for i in range(3)}
    links = [{"name": f"a{i}", "a": f"h{i}", "b": f"s{i}", "rate": "10Gbps", "delay": "1us",
              "egress": {"queue_limit": "1MB"}} for i in range(3)]
    links += [{"name": f"r{i}", "a": f"s{i}", "b": f"s{(i + 1) % 3}", "rate": "10Gbps", "delay": "1us",
               "egress": {"queue_limit": "1MB"}} for i in range(3)]
    streams = [{"name": f"f{i}", "talker": f"h{i}", "listener": f"h{(i + 2) % 3}", "frame_size": 1500,
                "rate": "10Gbps", "rate_layer": "l1", "paths": [[f"a{i}", f"r{i}", f"r{(i + 1) % 3}", f"a{(i + 2) % 3}"]]}
               for i in range(3)]
    result = sim.run({"name": "ring", "duration": "5ms", "interval": "1ms", "nodes": nodes, "links": links,
                      "streams": streams})
    ring = result.pause.set_index("port").loc[["r0:s0->s1", "r1:s1->s2", "r2:s2->s0"]]
    assert (ring["xon_frames"] == 0).all() and (ring["paused_s"] > 0.9 * 5e-3).all(), ring
    assert (result.streams["received"] < result.streams["sent"] / 4).all()
    assert_conserved(result)
