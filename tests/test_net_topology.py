"""The topology file (frerlab.net.topology, frerlab.net.plan, frerlab.net.nodes): every way a
file can be wrong is refused with one message naming the bad value and what would be valid;
the shipped networks resolve into the member paths, recovery nodes and routes their comments
describe; each node's FRER functions are those the streams ask of it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from frerlab.cli import main
from frerlab.errors import UsageError
from frerlab.net.nodes import node_functions
from frerlab.net.topology import MAX_ROUTES, load_topology, parse_topology

NETWORKS = Path(__file__).resolve().parent.parent / "networks"
SEED = yaml.safe_load((NETWORKS / "seed_two_path.yaml").read_text())
TWO_PATHS = [["talker-sw1", "A", "sw2-listener"], ["talker-sw1", "B", "sw2-listener"]]


def link(i: int, **fields):
    return lambda d: d["links"][i].update(fields)


def stream(**fields):
    return lambda d: d["streams"][0].update(fields)


def frer(**fields):
    return lambda d: d["streams"][0]["frer"].update(fields)


def faults(*items):
    return lambda d: d.update(faults=list(items))


REFUSED = [
    ("loss above 1", link(1, loss=1.5), "links.1.loss.number: Input should be less than or equal to 1 (got 1.5)"),
    ("loss not a probability", link(1, loss="high"),
     "links.1.loss: loss is a probability 0..1 (Bernoulli) or {model: bernoulli, p: P} (got 'high')"),
    ("loss model", link(1, loss={"model": "gilbert", "p": 0.1}), "Input should be 'bernoulli' (got 'gilbert')"),
    ("unknown end", link(1, b="sw9"), "link A: node 'sw9' is not defined (defined: listener, sw1, sw2, talker)"),
    ("link to itself", link(1, b="sw1"), "link A: joins 'sw1' to itself (a and b must differ)"),
    ("link name twice", link(2, name="A"), "link name 'A' is used twice"),
    ("link name too long", link(1, name="a-very-long-link-name"),
     "link name 'a-very-long-link-name' is not valid: use 1-15 letters"),
    ("unknown field", link(2, rat="1Gbps"), "links.2: unknown field 'rat' (valid: name, a, b, rate, delay, queue, loss)"),
    ("rate", link(0, rate="fast"), "links.0.rate: rate 'fast' is not valid"),
    ("node kind", lambda d: d["nodes"].update(x={"kind": "router"}),
     "nodes.x.kind: Input should be 'end_station' or 'bridge' (got 'router')"),
    ("node name", lambda d: d["nodes"].update({"bad name": {"kind": "bridge"}}), "node name 'bad name' is not valid"),
    ("cut of an unknown link", faults({"cut": "C", "down": "1ms", "up": "2ms"}),
     "faults: cut link 'C' is not defined (defined: A, B, sw2-listener, talker-sw1)"),
    ("cut ends before it starts", faults({"cut": "A", "down": "2ms", "up": "1ms"}),
     "cut of A: up 1ms is not after down 2ms"),
    ("burst of p 0", faults({"burst": "A", "start": "1ms", "end": "2ms", "p": 0}),
     "faults.0.burst.p: Input should be greater than 0 (got 0)"),
    ("neither cut nor burst", faults({"cutt": "A", "down": "1ms", "up": "2ms"}),
     "faults.0: a fault is {cut: LINK, down: TIME, up: TIME} or {burst: LINK, start: TIME, end: TIME, p: P}"),
    ("two listeners", stream(listeners=["listener", "sw2"]),
     "listeners: 2 listeners given (listener, sw2): a stream has one listener for now"),
    ("no listener", stream(listeners=[]), "streams.0.listeners: List should have at least 1 item"),
    ("unknown talker", stream(talker="tk"), "stream udp: talker node 'tk' is not defined"),
    ("talker is listener", stream(talker="listener"), "stream udp: talker and listener are both 'listener'"),
    ("frame size", stream(frame_size=20), "streams.0.frame_size: Input should be greater than or equal to 64 (got 20)"),
    ("start after the end", stream(start="2s"), "stream udp: start 2s is not before the end of the duration 1s"),
    ("stream name twice", lambda d: d["streams"].append(copy.deepcopy(d["streams"][0])),
     "stream name 'udp' is used twice"),
    ("path over a link that does not touch", stream(paths=[["talker-sw1", "sw2-listener"], TWO_PATHS[0]]),
     "stream udp: path ['talker-sw1', 'sw2-listener']: link sw2-listener does not touch 'sw1' (it joins sw2 and listener)"),
    ("path over an unknown link", stream(paths=[["talker-sw1", "X", "sw2-listener"]]),
     "path ['talker-sw1', 'X', 'sw2-listener']: link 'X' is not defined (defined: A, B, sw2-listener, talker-sw1)"),
    ("path ending elsewhere", stream(paths=[["talker-sw1", "A"], TWO_PATHS[1]]),
     "path ['talker-sw1', 'A'] ends at 'sw2', not at the listener 'listener'"),
    ("path with a loop", stream(paths=[["talker-sw1", "A", "B", "A", "sw2-listener"], TWO_PATHS[1]]),
     "visits 'sw1' twice (a member path is a simple path)"),
    ("path given twice", stream(paths=[TWO_PATHS[0], TWO_PATHS[0]]), "path ['talker-sw1', 'A', 'sw2-listener'] is given twice"),
    ("paths without frer", lambda d: (d["streams"][0].update(paths=TWO_PATHS), d["streams"][0].pop("frer")),
     "paths: 2 paths without frer would deliver every frame 2 times; add frer"),
    ("disjoint without frer", lambda d: d["streams"][0].pop("frer"),
     "paths: disjoint needs frer (a stream without it takes one path)"),
    ("unknown generation", frer(generation="swx"), "frer.generation node 'swx' is not defined"),
    ("generation at the listener", frer(generation="listener"), "frer.generation is the listener 'listener'"),
    ("one disjoint path", frer(generation="talker"),
     "paths: disjoint found 1 path(s) between the generation node 'talker' and 'sw2'"),
    ("recovery off a path", frer(recovery=["sw1"]),
     "frer.recovery node 'sw1' is not on every member path after the generation node 'sw1' (valid: sw2, listener)"),
    ("unknown recovery node", frer(recovery=["zz"]), "frer.recovery node 'zz' is not defined"),
    ("no recovery node", frer(recovery=[]), "frer.recovery is an empty list: give nodes, or end_to_end, or per_stage"),
    ("recovery node twice", frer(recovery=["sw2", "sw2"]), "frer.recovery names 'sw2' twice"),
    ("recovery word", frer(recovery="everywhere"), "recovery 'everywhere' is not valid (end_to_end, per_stage, or a list"),
    ("reset timeout 0", frer(reset_timeout=0), "reset_timeout 0 is not valid: give a time (e.g. 100ms), or never"),
    ("history length", frer(history_length=1), "history_length: Input should be greater than or equal to 2 (got 1)"),
    ("latent paths", frer(latent_error_detection={"difference": 2, "paths": 9}),
     "latent_error_detection.paths: Input should be less than or equal to 8 (got 9)"),
]


@pytest.mark.parametrize("case, change, expected", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_bad_topology_is_refused_naming_the_value(case, change, expected):
    data = copy.deepcopy(SEED)
    change(data)
    with pytest.raises(UsageError) as err:
        parse_topology(data, "net.yaml")
    assert expected in str(err.value)
    assert str(err.value).startswith("net.yaml: ") and "Traceback" not in str(err.value)


def test_a_generation_node_off_a_member_path_and_paths_that_part_after_the_recovery_are_refused():
    data = copy.deepcopy(SEED)
    data["links"].append({"name": "C", "a": "talker", "b": "sw2", "rate": "1Gbps"})
    data["streams"][0].update(paths=[TWO_PATHS[0], ["C", "sw2-listener"]])
    data["streams"][0]["frer"] = {"generation": "sw1"}
    with pytest.raises(UsageError, match=r"frer.generation 'sw1' is not on member path \['C', 'sw2-listener'\]"):
        parse_topology(data, "net.yaml")
    data["streams"][0]["frer"] = {"generation": "talker"}
    data["streams"][0].update(paths=[TWO_PATHS[0], ["C", "sw2-listener"]])
    with pytest.raises(UsageError, match="over different links"):  # talker-sw1 and A, or C
        parse_topology({**data, "streams": [{**data["streams"][0], "frer": {"generation": "sw2"}}]}, "net.yaml")
    data["links"].append({"name": "D", "a": "sw2", "b": "listener", "rate": "1Gbps"})
    data["streams"][0].update(paths=[["talker-sw1", "A", "sw2-listener"], ["C", "D"]])
    data["streams"][0]["frer"] = {"generation": "talker", "recovery": ["sw2"]}
    with pytest.raises(UsageError, match="part again after the last recovery node 'sw2'.*at last \\('listener'\\)"):
        parse_topology(data, "net.yaml")


def test_too_many_routes_are_refused_naming_the_count():
    stages = 13  # 2^13 routes
    nodes = {"t": {"kind": "end_station"}, "l": {"kind": "end_station"},
             **{f"m{i}": {"kind": "bridge"} for i in range(stages + 1)}}
    links = [{"name": "t-m0", "a": "t", "b": "m0", "rate": "1Gbps"},
             {"name": f"m{stages}-l", "a": f"m{stages}", "b": "l", "rate": "1Gbps"}]
    for i in range(stages):
        links += [{"name": f"x{i}", "a": f"m{i}", "b": f"m{i + 1}", "rate": "1Gbps"},
                  {"name": f"y{i}", "a": f"m{i}", "b": f"m{i + 1}", "rate": "1Gbps"}]
    data = {"name": "deep", "duration": "1s", "nodes": nodes, "links": links,
            "streams": [{"name": "s", "talker": "t", "listeners": ["l"], "rate": "1Mbps",
                         "frer": {"recovery": "per_stage"}}]}
    with pytest.raises(UsageError, match=f"stream s: 8192 routes .* is out of range \\(at most {MAX_ROUTES}\\)"):
        parse_topology(data, "deep.yaml")
    data["streams"][0]["frer"]["recovery"] = "end_to_end"
    assert parse_topology(data, "deep.yaml").plans["s"].route_count == 2


def test_a_bad_file_is_one_line_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    data = copy.deepcopy(SEED)
    data["streams"][0]["frer"]["recovery"] = ["sw1"]
    path.write_text(yaml.safe_dump(data))
    for verb in ("analyse", "sim", "scenario", "nodes"):
        assert main(["net", verb, str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "frer.recovery node 'sw1'" in err and str(path) in err
    assert main(["net", "analyse", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def plan(name: str):
    topo = load_topology(NETWORKS / f"{name}.yaml")
    return topo, topo.plans[topo.streams[0].name]


def test_the_seed_network_parts_at_sw1_and_merges_at_sw2():
    topo, p = plan("seed_two_path")
    assert p.member_paths == (tuple(TWO_PATHS[0]), tuple(TWO_PATHS[1]))
    assert (p.generation, p.recovery, p.route_count) == ("sw1", ("sw2",), 2)
    data = copy.deepcopy(SEED)
    data["streams"][0]["frer"] = {}  # the defaults find the same: where the paths part and merge
    assert parse_topology(data, "seed").plans["udp"] == p


def test_the_ladders_are_two_rows_recovered_at_every_stage_or_at_the_end():
    _, staged = plan("ladder_per_stage")
    _, e2e = plan("ladder_end_to_end")
    rows = (("talker-sw0", "sw0-a1", "a1-sw1", "sw1-a2", "a2-sw2", "sw2-a3", "a3-sw3", "sw3-listener"),
            ("talker-sw0", "sw0-b1", "b1-sw1", "sw1-b2", "b2-sw2", "sw2-b3", "b3-sw3", "sw3-listener"))
    assert staged.member_paths == e2e.member_paths == rows
    assert (staged.recovery, staged.route_count) == (("sw1", "sw2", "sw3"), 8)
    assert staged.stages[2] == (("sw1-a2", "a2-sw2"), ("sw1-b2", "b2-sw2"))
    assert (e2e.recovery, e2e.routes) == (("sw3",), rows)


def test_the_ring_goes_both_ways_round():
    _, p = plan("ring")
    assert p.member_paths == (("talker-r0", "r0-r1", "r1-r2", "r2-r3", "r3-listener"),
                              ("talker-r0", "r5-r0", "r4-r5", "r3-r4", "r3-listener"))
    assert (p.generation, p.recovery) == ("r0", ("r3",))


def test_explicit_recovery_nodes_and_the_listener_as_end_station_recovery():
    data = copy.deepcopy(SEED)
    data["streams"][0]["frer"] = {"recovery": ["listener"]}
    p = parse_topology(data, "seed").plans["udp"]
    assert p.recovery == ("listener",) and p.stages[1] == (("A", "sw2-listener"), ("B", "sw2-listener"))


def test_each_node_gets_the_functions_of_its_streams():
    data = copy.deepcopy(yaml.safe_load((NETWORKS / "ladder_per_stage.yaml").read_text()))
    data["streams"][0]["frer"].update(individual_recovery=True, history_length=64, reset_timeout="20ms",
                                      latent_error_detection={"difference": 4})
    nodes = node_functions(parse_topology(data, "ladder"))
    assert nodes["sw0"].generation == ["control"] and nodes["talker"].talks == ["control"]
    assert nodes["listener"].listens == ["control"]
    sw1 = nodes["sw1"]
    assert [(r.ingress, r.individual_recovery, r.keep_tag) for r in sw1.recovery] == [
        (("a1-sw1",), True, False), (("b1-sw1",), True, False), ((), False, True)]
    sequence = sw1.recovery[-1]
    assert (sequence.history_length, sequence.reset_timeout, sequence.latent_error_detection.paths) == (
        64, 20 * 10**9, 2)
    assert sw1.recovery[0].reset_timeout is None  # frerlab's default for individual recovery (1 ms)
    assert not nodes["sw3"].recovery[-1].keep_tag
    assert [(f.output, f.tagged) for f in nodes["sw3"].forwarding] == [(("sw3-listener",), False)]
    assert [(f.output, f.tagged) for f in nodes["a2"].forwarding] == [(("a2-sw2",), True)]
    data = sw1.to_data()
    assert data["recovery"][-1]["latent_error_detection"] == {"difference": 4, "period": "2s", "paths": 2,
                                                              "reset_period": "30s"}
    assert data["recovery"][-1]["reset_timeout"] == "20ms"
    yaml.safe_dump(data)  # plain data
