"""The reliability analysis of topology files (frerlab.net.analyse) against formulas derived by
hand: two paths (1 - p_a p_b between the switches), the ladder with recovery at every stage
((1 - (1 - q^2)^2)^3) and end to end (1 - (1 - q^6)^2), the expected copies on each link, cuts
as unavailability and at their times; the series-parallel reduction against exact enumeration
of link states, also on route sets that are not series-parallel; and per-stage recovery beating
end-to-end recovery at every loss probability, as the formulas say it must."""

from __future__ import annotations

import copy
import itertools
import random
from pathlib import Path

import pytest
import yaml

from frerlab.net.analyse import analyse, exact_reliability, reliability
from frerlab.net.topology import parse_topology

NETWORKS = Path(__file__).resolve().parent.parent / "networks"
STAGE_LINKS = ["sw0-a1", "a1-sw1", "sw0-b1", "b1-sw1", "sw1-a2", "a2-sw2", "sw1-b2", "b2-sw2",
               "sw2-a3", "a3-sw3", "sw2-b3", "b3-sw3"]


def network(name: str, loss: dict[str, float] | None = None, faults: list | None = None, **stream):
    """A shipped network with link losses, faults and fields of its first stream set."""
    data = yaml.safe_load((NETWORKS / f"{name}.yaml").read_text())
    for link in data["links"]:
        if loss and link["name"] in loss:
            link["loss"] = loss[link["name"]]
    if faults is not None:
        data["faults"] = faults
    data["streams"][0].update(stream)
    return parse_topology(copy.deepcopy(data), name)


def both(topo, faults="independent"):
    """The analysis by reduction and by enumeration."""
    return analyse(topo, "reduction", faults), analyse(topo, "exact", faults)


def copies_of(result, stream: str) -> dict[str, float]:
    return {row["link"]: row["copies_per_frame"] for row in result["links"] if row["stream"] == stream}


@pytest.mark.parametrize("pa, pb", [(0.1, 0.2), (0.5, 0.5), (0.0, 0.3), (1.0, 0.25)])
def test_two_paths_deliver_unless_both_lose(pa, pb):
    for result in both(network("seed_two_path", {"A": pa, "B": pb})):
        assert result["streams"]["udp"]["delivery"] == pytest.approx(1 - pa * pb, abs=1e-12)
        # One copy on each path, one after the merge only when one arrived.
        assert copies_of(result, "udp") == pytest.approx({"talker-sw1": 1, "A": 1, "B": 1, "sw2-listener": 1 - pa * pb})


def test_loss_before_the_generation_and_after_the_recovery_is_in_series():
    for result in both(network("seed_two_path", {"talker-sw1": 0.1, "A": 0.2, "B": 0.3, "sw2-listener": 0.05})):
        assert result["streams"]["udp"]["delivery"] == pytest.approx(0.9 * (1 - 0.06) * 0.95, abs=1e-12)
        assert copies_of(result, "udp")["A"] == pytest.approx(0.9)


def per_stage(q: float) -> float:
    return (1 - (1 - q * q) ** 2) ** 3


def end_to_end(q: float) -> float:
    return 1 - (1 - q ** 6) ** 2


@pytest.mark.parametrize("p", [0.01, 0.1, 0.3])
def test_the_ladder_matches_the_hand_derived_formulas(p):
    q, loss = 1 - p, dict.fromkeys(STAGE_LINKS, p)
    for result in both(network("ladder_per_stage", loss)):
        assert result["streams"]["control"]["delivery"] == pytest.approx(per_stage(q), abs=1e-12)
        stage = 1 - (1 - q * q) ** 2
        copies = copies_of(result, "control")
        # A stage's first link carries a copy whenever the frame crossed the stages before.
        assert copies["sw0-a1"] == pytest.approx(1)
        assert copies["a1-sw1"] == pytest.approx(q)
        assert copies["sw1-a2"] == pytest.approx(stage)
        assert copies["a2-sw2"] == pytest.approx(stage * q)
        assert copies["sw2-b3"] == pytest.approx(stage ** 2)
        assert copies["sw3-listener"] == pytest.approx(stage ** 3)
    for result in both(network("ladder_end_to_end", loss)):
        assert result["streams"]["control"]["delivery"] == pytest.approx(end_to_end(q), abs=1e-12)
        copies = copies_of(result, "control")
        assert copies["sw1-a2"] == pytest.approx(q ** 2) and copies["b3-sw3"] == pytest.approx(q ** 5)


def test_per_stage_recovery_beats_end_to_end_wherever_a_link_can_fail():
    """(1 - (1 - q^2)^2)^3 > 1 - (1 - q^6)^2 for every 0 < q < 1: end to end, one loss on each
    row loses the frame; per stage, only two in the same stage do. The analysis says so too."""
    for p in [i / 20 for i in range(1, 20)]:
        q = 1 - p
        assert per_stage(q) > end_to_end(q)
        loss = dict.fromkeys(STAGE_LINKS, p)
        staged = analyse(network("ladder_per_stage", loss))["streams"]["control"]["delivery"]
        e2e = analyse(network("ladder_end_to_end", loss))["streams"]["control"]["delivery"]
        assert staged > e2e
    # At small p the loss is about 3 (2p)^2 against (6p)^2: three times less.
    p = 1e-3
    assert (1 - end_to_end(1 - p)) / (1 - per_stage(1 - p)) == pytest.approx(3, rel=0.02)


def test_a_cut_is_unavailability_over_the_run_and_overlapping_cuts_count_at_their_times():
    cut_a = {"cut": "A", "down": "200ms", "up": "400ms"}
    cut_b = {"cut": "B", "down": "300ms", "up": "500ms"}
    one = network("seed_two_path", {"B": 0.1}, [cut_a])
    for faults in ("independent", "schedule"):  # one cut: the same either way
        assert analyse(one, faults=faults)["streams"]["udp"]["delivery"] == pytest.approx(1 - 0.2 * 0.1)
    two = network("seed_two_path", faults=[cut_a, cut_b])
    assert analyse(two)["streams"]["udp"]["delivery"] == pytest.approx(1 - 0.2 * 0.2)
    # At their times both paths are down together from 300 to 400 ms.
    assert analyse(two, faults="schedule")["streams"]["udp"]["delivery"] == pytest.approx(0.9)
    assert analyse(two, "exact", "schedule")["streams"]["udp"]["delivery"] == pytest.approx(0.9)


def test_a_cut_outside_the_sending_time_does_not_count_and_a_burst_scales_with_its_length():
    late = network("seed_two_path", faults=[{"cut": "A", "down": "0s", "up": "500ms"},
                                            {"cut": "B", "down": "0s", "up": "500ms"}], start="500ms")
    assert analyse(late)["streams"]["udp"]["delivery"] == pytest.approx(1)
    burst = network("seed_two_path", {"B": 0.5}, [{"burst": "A", "start": "0s", "end": "250ms", "p": 0.4}])
    assert analyse(burst)["streams"]["udp"]["delivery"] == pytest.approx(1 - 0.25 * 0.4 * 0.5)
    assert analyse(burst, faults="schedule")["streams"]["udp"]["delivery"] == pytest.approx(1 - 0.25 * 0.4 * 0.5)


def test_two_streams_load_the_shared_link_with_both_their_copies():
    result = analyse(network("shared_bottleneck"))
    port = next(p for p in result["ports"] if p["link"] == "br-sw2")
    # 2 x 40 Mbit/s of 1000-byte frames, each with a 6-byte R-TAG.
    assert port["load_bps"] == pytest.approx(2 * 40e6 * 1006 / 1000)
    assert port["utilisation"] == pytest.approx(0.8048)


WHEATSTONE = [("a", "d"), ("b", "e"), ("a", "c", "e"), ("b", "c", "d")]


@pytest.mark.parametrize("seed", range(12))
def test_the_reduction_equals_enumeration_on_route_sets_that_are_not_series_parallel(seed):
    rng = random.Random(seed)
    links = [f"l{i}" for i in range(9)]
    q = {link: rng.choice([0.0, 1.0, rng.random()]) for link in links}
    routes = [tuple(rng.sample(links, rng.randint(1, 5))) for _ in range(rng.randint(1, 7))]
    assert reliability(routes, q) == pytest.approx(exact_reliability(routes, q), abs=1e-12)
    bridge = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.95, **q}
    assert reliability(WHEATSTONE, bridge) == pytest.approx(exact_reliability(WHEATSTONE, bridge), abs=1e-12)


def test_the_wheatstone_bridge_matches_its_textbook_formula():
    """Factoring on the bridge link c: q_c (1 - p_a p_b)(1 - p_d p_e) + p_c (1 - (1 - q_a q_d)(1 - q_b q_e))."""
    q = dict(zip("abcde", [0.9, 0.8, 0.7, 0.6, 0.95]))
    p = {k: 1 - v for k, v in q.items()}
    expected = (q["c"] * (1 - p["a"] * p["b"]) * (1 - p["d"] * p["e"])
                + p["c"] * (1 - (1 - q["a"] * q["d"]) * (1 - q["b"] * q["e"])))
    assert reliability(WHEATSTONE, q) == pytest.approx(expected, abs=1e-12)


def test_stages_of_member_paths_of_different_lengths_multiply():
    """Two member paths that meet at m and z, each stage with a long and a short segment:
    recovery at m and z, four routes, the product of the two stages' parallel pairs."""
    data = {
        "name": "shared-stages", "duration": "1s",
        "nodes": {n: {"kind": "bridge"} for n in ("g", "m", "x", "y", "z")} | {
            "t": {"kind": "end_station"}, "l": {"kind": "end_station"}},
        "links": [{"name": n, "a": a, "b": b, "rate": "1Gbps", "loss": p} for n, a, b, p in [
            ("t-g", "t", "g", 0.0), ("g-x", "g", "x", 0.1), ("x-m", "x", "m", 0.2), ("g-m", "g", "m", 0.3),
            ("m-y", "m", "y", 0.15), ("y-z", "y", "z", 0.05), ("m-z", "m", "z", 0.25), ("z-l", "z", "l", 0.0)]],
        "streams": [{"name": "s", "talker": "t", "listeners": ["l"], "rate": "1Mbps", "frame_size": 100,
                     "paths": [["t-g", "g-x", "x-m", "m-y", "y-z", "z-l"], ["t-g", "g-m", "m-z", "z-l"]],
                     "frer": {"recovery": "per_stage"}}],
    }
    topo = parse_topology(data, "shared-stages")
    assert topo.plans["s"].recovery == ("m", "z") and topo.plans["s"].route_count == 4
    reduced, exact = both(topo)
    assert reduced["streams"]["s"]["delivery"] == pytest.approx(exact["streams"]["s"]["delivery"], abs=1e-12)
    stage1 = 1 - (1 - 0.9 * 0.8) * 0.3
    stage2 = 1 - (1 - 0.85 * 0.95) * 0.25
    assert reduced["streams"]["s"]["delivery"] == pytest.approx(stage1 * stage2)
    for a, b in zip(reduced["links"], exact["links"]):
        assert a["copies_per_frame"] == pytest.approx(b["copies_per_frame"], abs=1e-12)


@pytest.mark.parametrize("name", ["seed_two_path", "ladder_per_stage", "ladder_end_to_end", "ring",
                                  "shared_bottleneck"])
def test_reduction_and_enumeration_agree_on_every_shipped_network_with_random_loss(name):
    data = yaml.safe_load((NETWORKS / f"{name}.yaml").read_text())
    rng = random.Random(name)
    loss = {link["name"]: round(rng.uniform(0, 0.4), 3) for link in data["links"]}
    for faults in ("independent", "schedule"):
        reduced, exact = both(network(name, loss), faults)
        for stream in reduced["streams"]:
            assert reduced["streams"][stream]["delivery"] == pytest.approx(exact["streams"][stream]["delivery"], abs=1e-12)
        for a, b in itertools.zip_longest(reduced["links"], exact["links"]):
            assert (a["stream"], a["link"], a["from"]) == (b["stream"], b["link"], b["from"])
            assert a["copies_per_frame"] == pytest.approx(b["copies_per_frame"], abs=1e-12)
