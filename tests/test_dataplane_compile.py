"""What frerlab.dataplane.compiler makes of whole configurations, and the paths compile_node
takes for many streams (issue 33: a 65,536-stream configuration in under 2 s): every shipped
configuration and the two-path bench's spread configurations compile to what they did before
that work (the spread ones checked field by field against a plan worked out here from their
definition; the 65,536-stream pair only in benches/dataplane_compile.py, which times it), and
the cases those paths must keep: repeated handles and ports, errors naming the entry, the
order of identities, which are hashed and which scanned, recovery functions sharing their
entry's configuration, copies that rewrite nothing shared across streams, and the garbage
collector left as it was. No root needed."""

from __future__ import annotations

import gc

import pytest
from conftest import ROOT

from frerlab.dataplane import layout, twopath
from frerlab.dataplane.compiler import HASH_MIN_IDENTITIES, NodePlan, OutputPlan, RecoveryPlan, compile_node
from frerlab.dataplane.config import LOCAL, load_config, parse_config
from frerlab.errors import UsageError

CONFIGS = sorted((ROOT / "configs").rglob("*.yaml"))
L_MAC = "02:fe:00:00:00:02"
#: The fields of an IP identity with an IPv4 destination and a protocol (and a destination port).
IP4_DST_PROTO = layout.MATCH_IP | layout.MATCH_IPV4 | layout.MATCH_IP_DST | layout.MATCH_PROTO
IP4_DST_PROTO_DPORT = IP4_DST_PROTO | layout.MATCH_DPORT
GENERATE_ENCODE = layout.STREAM_GENERATE | layout.STREAM_ENCODE
REWRITE = layout.OUT_SET_DMAC | layout.OUT_SET_VID
#: What each shipped configuration compiled to before issue 33's work on the compiler: identities
#: (stream, direction, port mask, fields, position), the positions of the scanned ones, streams
#: (flags, copies (port, flags, vid, pcp)), recovery functions (instance, ports, history length,
#: reset timeout ns), individual feeds and the hooked ports (ingress, egress, bridge mask).
SHIPPED = {
    "lan966x-sw1.yaml": {
        "identities": [(0, layout.DIR_INGRESS, 0b001, IP4_DST_PROTO_DPORT, 0)], "scanned": [0],
        "streams": [(GENERATE_ENCODE, [("eth1", 0, 0, 0), ("eth2", 0, 0, 0)])], "recoveries": [], "feeds": [{}],
        "hooked": (["eth0", "eth1"], [], 0b011)},
    "lan966x-sw2.yaml": {
        "identities": [(0, layout.DIR_INGRESS, 0b110, IP4_DST_PROTO_DPORT, 0)], "scanned": [0],
        "streams": [(layout.STREAM_RECOVER | layout.STREAM_INDIVIDUAL, [("eth0", 0, 0, 0)])],
        "recoveries": [(2, ["eth1"], 32, 1_000_000), (3, ["eth2"], 32, 1_000_000), (0, [], 32, 100_000_000)],
        "feeds": [{1: 2, 2: 3}], "hooked": (["eth1", "eth2", "eth0"], [], 0b011)},
    "listener-two-nics.yaml": {
        "identities": [(0, layout.DIR_INGRESS, 0b11, IP4_DST_PROTO_DPORT, 0)], "scanned": [0],
        "streams": [(layout.STREAM_RECOVER | layout.STREAM_INDIVIDUAL, [(LOCAL, layout.OUT_LOCAL, 0, 0)])],
        "recoveries": [(1, ["l0a"], 1024, 1_000_000), (2, ["l0b"], 1024, 1_000_000), (0, [], 64, 100_000_000)],
        "feeds": [{0: 1, 1: 2}], "hooked": (["l0a", "l0b"], [], 0)},
    "sw1-replicate.yaml": {
        "identities": [(0, layout.DIR_INGRESS, 0b001, IP4_DST_PROTO, 0)], "scanned": [0],
        "streams": [(GENERATE_ENCODE, [("pa", 0, 0, 0), ("pb", REWRITE | layout.OUT_SET_PCP, 20, 5)])],
        "recoveries": [], "feeds": [{}], "hooked": (["up", "pa"], [], 0b011)},
    "sw2-eliminate.yaml": {
        "identities": [(0, layout.DIR_INGRESS, 0b010, layout.MATCH_DMAC, 0),
                       (0, layout.DIR_INGRESS, 0b001, IP4_DST_PROTO, 1)], "scanned": [0, 1],
        "streams": [(layout.STREAM_RECOVER, [("down", REWRITE, 0, 0)])],
        "recoveries": [(0, [], 32, 1_000_000_000)], "feeds": [{}], "hooked": (["pb", "pa", "down"], [], 0b101)},
    "talker-two-nics.yaml": {
        "identities": [(0, layout.DIR_EGRESS, 0b01, IP4_DST_PROTO_DPORT, 0)], "scanned": [0],
        "streams": [(GENERATE_ENCODE, [("t0b", 0, 0, 0), ("t0a", 0, 0, 0)])], "recoveries": [], "feeds": [{}],
        "hooked": ([], ["t0a"], 0)},
}


def summary(plan: NodePlan) -> dict:
    """The parts of a plan SHIPPED lists."""
    return {"identities": [(i.stream, i.direction, i.port_mask, i.fields, i.position) for i in plan.identities],
            "scanned": [i.position for i in plan.scanned],
            "streams": [(flags, [(o.port, o.flags, o.vid, o.pcp) for o in copies]) for flags, copies in plan.streams],
            "recoveries": [(r.instance, r.ports, r.config.history_length, r.config.reset_timeout_ns)
                           for r in plan.recoveries],
            "feeds": plan.individual_feeds, "hooked": (plan.ingress_ports, plan.egress_ports, plan.bridge_mask)}


def placement(identities: list[layout.Identity]) -> tuple[list[layout.Shape], dict[bytes, bytes], list[int]]:
    """(shapes, hashed, positions of the scanned identities) as docs/dataplane.md states the rule:
    the up to MAX_SHAPES shapes most identities share (at least HASH_MIN_IDENTITIES; ties to the
    one seen first) are hashed, the first identity of equal keys kept; the rest scanned, in order."""
    counts: dict[layout.Shape, int] = {}
    for ident in identities:
        counts[ident.shape()] = counts.get(ident.shape(), 0) + 1
    first = {shape: min(i.position for i in identities if i.shape() == shape) for shape in counts}
    common = [s for s in counts if s is not None and counts[s] >= HASH_MIN_IDENTITIES]
    shapes = sorted(common, key=lambda s: (-counts[s], first[s]))[:layout.MAX_SHAPES]
    hashed: dict[bytes, bytes] = {}
    for index, shape in enumerate(shapes):
        for ident in identities:
            if ident.shape() == shape and ident.hash_key(index) not in hashed:
                hashed[ident.hash_key(index)] = layout.ID_HIT.pack(ident.stream, ident.position)
    return shapes, hashed, [i.position for i in identities if i.shape() not in shapes]


def spread_plan(role: str, streams: int) -> NodePlan:
    """What twopath.spread_config(role, streams, 32, ...) compiles to, from its definition: stream
    s (handle s) identified by its UDP ports on the host port (sw1) or both paths (sw2), each a
    hashed identity of one shape (scanned when alone); sw1 numbers it and copies it to both
    paths with its R-TAG, sw2 recovers it (history 32, reset timeout 1 s) and sends it to the
    host port without."""
    ports = twopath.SWITCH_PORTS[role]
    on = [twopath.SWITCH_HOST_PORT] if role == "sw1" else [twopath.PATH_A, twopath.PATH_B]
    mask = sum(1 << ports.index(p) for p in on)
    fields = layout.MATCH_IP | layout.MATCH_PROTO | layout.MATCH_SPORT | layout.MATCH_DPORT
    identities = [layout.Identity(s, mask, fields=fields, proto=17, sport=twopath.stream_ports(s)[0],
                                  dport=twopath.stream_ports(s)[1], ip_src=bytes(4), ip_dst=bytes(4), position=s)
                  for s in range(streams)]
    hashed = streams >= HASH_MIN_IDENTITIES
    keys = {i.hash_key(0): layout.ID_HIT.pack(i.stream, i.position) for i in identities}
    plan = NodePlan(ports=ports, handles=list(range(streams)), identities=identities,
                    shapes=[identities[0].shape()] if hashed else [], hashed=keys if hashed else {},
                    scanned=[] if hashed else identities, recovery_ports=[0] * streams,
                    individual_feeds=[{} for _ in range(streams)], ingress_ports=on, pvids=[layout.DEFAULT_PVID] * 3)
    if role == "sw1":
        copies = [OutputPlan(p, ports.index(p)) for p in (twopath.PATH_A, twopath.PATH_B)]
        plan.streams = [(GENERATE_ENCODE, copies) for _ in range(streams)]
    else:
        host = OutputPlan(twopath.SWITCH_HOST_PORT, ports.index(twopath.SWITCH_HOST_PORT))
        plan.streams = [(layout.STREAM_RECOVER, [host]) for _ in range(streams)]
        config = layout.RecoveryConfig("vector", 32, 1_000_000_000)
        plan.recoveries = [RecoveryPlan(s, 0, s, config) for s in range(streams)]
    return plan


def node(**parts) -> dict:
    return {"ports": ["eth0", "p1", "p2"], **parts}


def ip_identity(index: int, handle: int, port: str = "p1", **ip) -> dict:
    return {"index": index, "handle": handle, "out-facing": {"input-port": [port]},
            "ip-stream-identification": {"ip-destination": "198.18.0.2", **ip}}


def forwarding(*handles: int, to: tuple[str, ...] = ("eth0",)) -> list[dict]:
    return [{"stream": h, "output-port": list(to)} for h in handles]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_shipped_configuration_compiles_as_it_did(path):
    plan = load_config(path).plan
    shapes, hashed, scanned = placement(plan.identities)
    assert (plan.shapes, plan.hashed, [i.position for i in plan.scanned]) == (shapes, hashed, scanned)
    if path.name in SHIPPED:  # a configuration added since has no recorded plan, only the rule above
        assert summary(plan) == SHIPPED[path.name]


@pytest.mark.parametrize("streams", [1, 1000])
@pytest.mark.parametrize("role", ["sw1", "sw2"])
def test_spread_configurations_compile_to_what_they_define(role, streams):
    cfg = twopath.spread_config(role, streams, 32, "t")
    assert cfg.plan == spread_plan(role, streams)
    assert compile_node(cfg) == cfg.plan, "compiling again gives the same plan"


def test_identities_keep_the_order_of_their_entries_and_placements():
    """One stream per handle, however many identities name it; each entry's identities at its
    position (one per direction); the hooked ports in the order they first appear."""
    plan = parse_config(node(**{
        "stream-identity": [ip_identity(5, 2, "p2"),
                            {"index": 3, "handle": 1, "out-facing": {"input-port": ["p1"]},
                             "in-facing": {"input-port": ["eth0"], "output-port": ["p2", "eth0"]},
                             "null-stream-identification": {"destination-mac": L_MAC}},
                            ip_identity(9, 2, "eth0", **{"next-protocol": "udp"})],
        "sequence-generation": [{"index": 1, "stream": [1]}],
        "stream-forwarding": forwarding(1, 2)})).plan
    assert plan.handles == [1, 2]
    assert [(i.position, i.stream, i.direction, i.port_mask) for i in plan.identities] == [
        (0, 1, layout.DIR_INGRESS, 0b100), (1, 0, layout.DIR_INGRESS, 0b111), (1, 0, layout.DIR_EGRESS, 0b001),
        (2, 1, layout.DIR_INGRESS, 0b001)]
    assert (plan.ingress_ports, plan.egress_ports) == (["p2", "p1", "eth0"], ["eth0"])


def test_the_most_shared_shapes_are_hashed_the_rest_scanned_in_order():
    """Five shapes (here: five sets of ports) shared by 3, 2, 3, 2 and 2 identities, and one
    identity of its own shape: the four most shared (ties to the shape seen first) are hashed,
    the fifth and the lone one scanned; of two identities with equal matchers the first is kept."""
    entries = []
    for ports, count in ((["p1"], 3), (["p2"], 2), (["eth0"], 3), (["p1", "p2"], 2), (["eth0", "p1"], 2)):
        for _ in range(count):
            i = len(entries)
            entries.append({"index": i, "handle": i, "out-facing": {"input-port": ports},
                            "null-stream-identification": {"destination-mac": f"02:00:00:00:00:{i:02x}"}})
    entries.append({"index": 12, "handle": 12, "out-facing": {"input-port": ["p1"]},
                    "smac-vlan-stream-identification": {"source-mac": L_MAC}})
    entries.append({**entries[0], "index": 13, "handle": 13})  # the matcher of entry 0, later
    plan = parse_config(node(**{"stream-identity": entries, "stream-forwarding": forwarding(*range(14))})).plan
    shapes, hashed, scanned = placement(plan.identities)
    assert (plan.shapes, plan.hashed, [i.position for i in plan.scanned]) == (shapes, hashed, scanned)
    assert [s.port_mask for s in plan.shapes] == [0b010, 0b001, 0b100, 0b110]
    assert scanned == [10, 11, 12], "the fifth shape's two identities and the lone one"
    assert len(plan.hashed) == 10 and layout.ID_HIT.pack(0, 0) in plan.hashed.values()
    assert layout.ID_HIT.pack(13, 13) not in plan.hashed.values(), "an equal later matcher never wins"


def test_a_recovery_entry_gives_each_of_its_streams_a_function_with_its_configuration():
    plan = parse_config(node(**{
        "stream-identity": [ip_identity(i, h, **{"next-protocol": "udp", "destination-port": h})
                            for i, h in enumerate([4, 5, 6])],
        "sequence-recovery": [{"index": 1, "stream": [4, 6], "history-length": 8},
                              {"index": 2, "stream": [5], "port": ["p2", "eth0"], "reset-timeout": "never"}],
        "stream-forwarding": forwarding(4, 5, 6)})).plan
    assert [(r.handle, r.stream, r.instance, r.ports) for r in plan.recoveries] == [
        (4, 0, 0, []), (6, 2, 0, []), (5, 1, 3, ["p2"]), (5, 1, 1, ["eth0"])]
    every, _, on_p2, on_eth0 = (r.config for r in plan.recoveries)
    assert every == plan.recoveries[1].config == layout.RecoveryConfig("vector", 8, 100_000_000)
    assert on_p2 == on_eth0 == layout.RecoveryConfig("vector", 32, None)
    assert plan.recovery_ports == [0, 0b101, 0]
    assert [flags for flags, _ in plan.streams] == [layout.STREAM_RECOVER, 0, layout.STREAM_RECOVER], \
        "recovered here, on every frame or on ports: no R-TAG on the way out"
    assert plan.recoveries[0].ports is not plan.recoveries[1].ports, "each function its own list of ports"


def test_copies_that_rewrite_nothing_are_alike_and_rewrites_stay_with_their_stream():
    """Streams 1 and 2 go to p1 and this host; stream 2 is also identified by an active identity
    whose up values its copies get; stream 3 is split on p2 into a member with its own VLAN."""
    member = {"index": 9, "handle": 31, "out-facing": {"output-port": ["p2"]},
              "dmac-vlan-stream-identification": {"down": {"destination-mac": L_MAC, "vlan": 30},
                                                  "up": {"destination-mac": L_MAC, "vlan": 0}}}
    plan = parse_config(node(**{
        "stream-identity": [ip_identity(1, 1, **{"next-protocol": "udp"}), ip_identity(2, 3, "eth0"),
                            {**member, "index": 3, "handle": 2, "out-facing": {"input-port": ["p2"]},
                             "dmac-vlan-stream-identification": {
                                 "down": {"destination-mac": L_MAC, "vlan": 20},
                                 "up": {"destination-mac": L_MAC, "vlan": 7, "priority": 3}}}, member],
        "stream-split": [{"port": "p2", "input-id": [3], "output-id": [31]}],
        "stream-forwarding": [*forwarding(1, 2, to=("p1", LOCAL)), *forwarding(3, to=("p2",))]})).plan
    (_, first), (_, second), (_, split) = plan.streams
    assert first == [OutputPlan("p1", 1), OutputPlan(LOCAL, 0, layout.OUT_LOCAL)]
    up = dict(dmac=bytes.fromhex("02fe00000002"), vid=7, pcp=3)
    assert second == [OutputPlan("p1", 1, REWRITE | layout.OUT_SET_PCP, **up),
                      OutputPlan(LOCAL, 0, layout.OUT_LOCAL | REWRITE | layout.OUT_SET_PCP, **up)]
    assert split == [OutputPlan("p2", 2, REWRITE, bytes.fromhex("02fe00000002"), 30)]


@pytest.mark.parametrize("change, message", [
    ({"stream-identity": [ip_identity(1, 1), ip_identity(2, 1, "p2")],
      "sequence-recovery": [{"index": 1, "stream": [1]}, {"index": 2, "stream": [1]}]},
     "sequence-recovery 2: stream 1 already has a recovery function for every frame of it"),
    ({"stream-identity": [ip_identity(1, 1)], "sequence-recovery": [{"index": 1, "stream": [1, 1]}]},
     "sequence-recovery 1: stream 1 already has a recovery function for every frame of it"),
    ({"stream-identity": [ip_identity(1, 1)], "sequence-recovery": [{"index": 1, "stream": [1], "port": ["p1", "p1"]}]},
     "sequence-recovery 1: stream 1 already has a recovery function on port p1"),
    ({"stream-identity": [ip_identity(1, 1)],
      "sequence-recovery": [{"index": 1, "stream": [1], "port": ["p1"], "individual-recovery": True},
                            {"index": 2, "stream": [1], "port": ["p2", "p1"], "individual-recovery": True}]},
     "sequence-recovery 2: port p1 already feeds an individual recovery function of stream 1 (one per member stream)"),
    ({"stream-identity": [ip_identity(1, 1)], "sequence-recovery": [{"index": 7, "stream": [1], "port": ["p1", "p9"]}]},
     "sequence-recovery 7: port 'p9' is not one of ports (eth0, p1, p2)"),
    ({"stream-identity": [ip_identity(1, 1), ip_identity(2, 2)], "sequence-recovery": [{"index": 3, "stream": [2, 9]}]},
     "sequence-recovery 3: stream 9 has no stream-identity (handles: 1, 2)"),
    ({"stream-identity": [ip_identity(1, 1)], "sequence-generation": [{"index": 4, "stream": [1, 1]}]},
     "sequence-generation.0.stream: stream 1 is listed twice; list each stream once"),
    ({"stream-identity": [ip_identity(1, 1)], "sequence-generation": [{"index": 4, "stream": [1, 8]}]},
     "sequence-generation 4: stream 8 has no stream-identity (handles: 1)"),
    ({"stream-identity": [ip_identity(1, 1), ip_identity(1, 2)]},
     "stream-identity: index values must be unique, got [1, 1]"),
    ({"stream-identity": [ip_identity(1, 1), ip_identity(2, 1, "p9")]},
     "stream-identity 2: port 'p9' is not one of ports (eth0, p1, p2)"),
    ({"stream-identity": [{"index": 1, "handle": 1, "ip-stream-identification": {}}]},
     "stream-identity.0: stream-identity 1 is placed on no port (out-facing input-port: received frames; "
     "in-facing input-port: frames this host sends)"),
    ({"stream-identity": [ip_identity(1, 1, **{"ip-source": "198.18.0.300"})]},
     "stream-identity.0.ip-stream-identification: ip-source '198.18.0.300' is not an IPv4 or IPv6 address"),
    ({"bridge-ports": ["p1", "p7"]}, "bridge-ports: port 'p7' is not one of ports (eth0, p1, p2)"),
    ({"stream-identity": [ip_identity(1, 1)],
      "stream-forwarding": [*forwarding(1, to=("p1",)), *forwarding(1, to=("p2",))]},
     "stream-forwarding of stream 1: stream 1 is forwarded twice"),
    ({"stream-identity": [ip_identity(1, 1)], "stream-forwarding": forwarding(1, to=("p1", "p8"))},
     "stream-forwarding of stream 1: port 'p8' is not one of ports (eth0, p1, p2)"),
    ({"stream-identity": [ip_identity(1, 1, "eth0")],
      "sequence-identification": [{"port": ["p1"], "stream": [1]}],
      "stream-forwarding": forwarding(1, to=("p1", "p2", LOCAL))},
     "sequence-identification: stream 1 must be encoded alike on all its output ports (p1, p2)"),
    ({"stream-identity": [ip_identity(1, 1, "eth0")],
      "sequence-identification": [{"port": ["p1"], "stream": [1]}, {"port": ["p1"], "stream": [1], "active": False}],
      "stream-forwarding": forwarding(1, to=("p1",))},
     "sequence-identification: stream 1 must be encoded alike on all its output ports (p1)"),
])
def test_errors_name_the_entry(change, message):
    data = node(**{"stream-forwarding": forwarding(1, 2), **change})
    with pytest.raises(UsageError) as err:
        parse_config(data, "node.yaml")
    assert str(err.value).startswith(f"node.yaml: {message}")


def test_the_garbage_collector_is_left_as_it_was():
    """Validation pauses the collector (config.NodeConfig._compiled) and must restore it, also
    when the configuration is refused, and leave it off when it was off."""
    good = node(**{"stream-identity": [ip_identity(1, 1)], "stream-forwarding": forwarding(1)})
    assert gc.isenabled()
    parse_config(good)
    assert gc.isenabled()
    with pytest.raises(UsageError):
        parse_config(node(**{"stream-identity": [ip_identity(1, 1)]}))
    assert gc.isenabled()
    gc.disable()
    try:
        parse_config(good)
        assert not gc.isenabled()
    finally:
        gc.enable()
