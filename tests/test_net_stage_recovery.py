"""Recovery at every stage in the simulator's scenario vocabulary (frerlab.sim.schema,
frerlab.sim.compile): a sequence recovery function with `keep_tag` passes frames on with their
R-TAG (802.1CB 7.6: a relay that recovers and replicates again), so a recovery further on sees
them numbered; the paths between two such nodes are one member stream (one copy), where
before it each path from the generation carried its own copy; scenarios without keep_tag
compile as before."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from frerlab.errors import UsageError
from frerlab.sim import api
from frerlab.sim.compile import compile_spec

ROOT = Path(__file__).resolve().parent.parent


def ladder(keep_tag: bool = True, **sw2) -> dict:
    """talker -> sw1 -> {A1, B1} -> sw2 -> {A2, B2} -> sw3 -> listener, every combination of
    the two stages as a path, recovery at sw2 (keep_tag) and at sw3."""
    nodes = {n: {"kind": "switch"} for n in ("sw1", "sw2", "sw3")} | {
        "talker": {"kind": "host"}, "listener": {"kind": "host"}}
    links = [{"name": n, "a": a, "b": b, "rate": "1Gbps"} for n, a, b in [
        ("t", "talker", "sw1"), ("A1", "sw1", "sw2"), ("B1", "sw1", "sw2"), ("A2", "sw2", "sw3"),
        ("B2", "sw2", "sw3"), ("l", "sw3", "listener")]]
    paths = [["t", x, y, "l"] for x in ("A1", "B1") for y in ("A2", "B2")]
    recovery = [{"node": "sw2", "keep_tag": keep_tag, **sw2}, {"node": "sw3"}]
    return {"name": "ladder", "duration": "10ms", "nodes": nodes, "links": links,
            "streams": [{"name": "s", "talker": "talker", "listener": "listener", "rate": "100Mbps",
                         "frame_size": 512, "paths": paths,
                         "frer": {"sequence_generation": "sw1", "sequence_recovery": recovery}}]}


def hops_over(spec: dict, port_name: str) -> int:
    index = next(i for i, p in enumerate(spec["ports"]) if p["name"] == port_name)
    return sum(1 for hop in spec["streams"][0]["hops"] if hop["port"] == index)


def test_a_recovery_that_keeps_the_tag_is_followed_by_one_that_sees_numbered_frames():
    spec = compile_spec(api.prepare(ladder()))
    assert [r["keep_tag"] for r in spec["streams"][0]["recovery"]] == [True, False]
    # One copy per stage-1 link (four paths share each), one per stage-2 link under each copy
    # sw2 may pass, one per path to the listener (sw3 passes one of them).
    assert [hops_over(spec, f"{link}:sw1->sw2") for link in ("A1", "B1")] == [1, 1]
    assert [hops_over(spec, f"{link}:sw2->sw3") for link in ("A2", "B2")] == [2, 2]
    assert hops_over(spec, "l:sw3->listener") == 4


def test_without_keep_tag_the_second_recovery_is_refused_as_before():
    with pytest.raises(UsageError, match="sequence_recovery at 'sw3' would discard every frame.*keep_tag: true"):
        api.prepare(ladder(keep_tag=False))


def test_keep_tag_is_for_a_sequence_recovery_function():
    with pytest.raises(UsageError, match="keep_tag true with individual_recovery true: an individual recovery "
                                         "function always leaves the R-TAG on"):
        api.prepare(ladder(individual_recovery=True, ingress="A1"))


def test_the_ladder_runs_with_one_copy_per_link_and_every_frame_delivered():
    result = api.run(ladder())
    s = result.streams.iloc[0]
    assert s["sent"] > 100 and (s["received"], s["lost"], s["duplicates"]) == (s["sent"], 0, 0)
    tx = result.ports.set_index("port")["tx_frames"]
    assert all(tx[f"{link}:{a}->{b}"] == s["sent"] for link, a, b in [
        ("A1", "sw1", "sw2"), ("B1", "sw1", "sw2"), ("A2", "sw2", "sw3"), ("B2", "sw2", "sw3"), ("l", "sw3", "listener")])
    frer = result.frer
    assert list(frer["keep_tag"]) == [True, False]
    assert list(frer["passed_packets"]) == [s["sent"]] * 2 and list(frer["tagless_packets"]) == [0, 0]


@pytest.mark.parametrize("scenario", sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml")))
def test_a_scenario_without_keep_tag_compiles_to_one_copy_per_path_after_the_generation(scenario):
    """The rule before keep_tag: from the generation node on, each path has hops of its own."""
    data = yaml.safe_load((ROOT / "scenarios" / scenario).read_text())
    data.pop("sweep", None)
    spec = compile_spec(api.prepare(data))
    for s, stream in zip(spec["streams"], data["streams"]):
        paths = stream.get("paths")
        if not paths or not stream.get("frer"):
            continue
        gen = stream["frer"]["sequence_generation"]
        links = {link["name"]: (link["a"], link["b"]) for link in data["links"]}
        expected = set()
        for number, path in enumerate(paths):
            at, prefix, split = stream["talker"], [], False
            for link in path:
                split = split or at == gen
                prefix.append(link)
                expected.add((tuple(prefix), number if split else None))
                a, b = links[link]
                at = b if at == a else a
        assert len(s["hops"]) == len(expected)
