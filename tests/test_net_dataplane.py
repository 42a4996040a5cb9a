"""Each node of a topology as a data plane configuration (frerlab.net.dataplane): the shipped
networks' nodes all compile, and what each does with a stream in the data plane's terms (numbers
and copies it, passes it on tagged, recovers it and re-tags it for the next stage, recovers it and
removes the tag) is what the topology's FRER functions ask of it; an end station that numbers
its own stream and one that recovers it get configurations of their own; `net export` writes
them as data plane files, as YANG that follows the IEEE modules, and for LAN966x, naming the
nodes a LAN966x cannot be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_config_yang import check_export

from frerlab.cli import main
from frerlab.config.yang import import_yang
from frerlab.dataplane import layout
from frerlab.dataplane.config import LOCAL, load_config
from frerlab.net.dataplane import STREAM_PORT_BASE, addresses, node_configs
from frerlab.net.topology import load_topology, parse_topology

NETWORKS = Path(__file__).resolve().parent.parent / "networks"
GEN, REC, ENC = layout.STREAM_GENERATE, layout.STREAM_RECOVER, layout.STREAM_ENCODE


def roles(configs) -> dict[str, list[tuple[int, list[str]]]]:
    """Per node: per stream, its FRER flags (generate, recover, encode) and output ports."""
    return {name: [(flags & (GEN | REC | ENC), [o.port for o in outputs]) for flags, outputs in cfg.plan.streams]
            for name, cfg in configs.items()}


@pytest.mark.parametrize("network", sorted(p.stem for p in NETWORKS.glob("*.yaml")))
def test_every_shipped_network_s_nodes_compile_with_their_links_as_ports(network):
    topo = load_topology(NETWORKS / f"{network}.yaml")
    configs = node_configs(topo)
    assert configs, "some node acts on a stream"
    for name, cfg in configs.items():
        assert cfg.plan.ports == [link.name for link in topo.links if name in (link.a, link.b)]
    for i, s in enumerate(topo.streams):
        plan = topo.plans[s.name]
        generation = configs[plan.generation].plan
        flags, copies = generation.streams[generation.handles.index(i + 1)]
        assert flags & GEN and len(copies) == len(plan.stages[1]), "one copy per member path, numbered"


def test_the_ladder_recovers_and_retags_at_every_stage_and_removes_the_tag_at_the_last():
    topo = load_topology(NETWORKS / "ladder_per_stage.yaml")
    got = roles(node_configs(topo))
    assert got["sw0"] == [(GEN | ENC, ["sw0-a1", "sw0-b1"])]
    assert got["a1"] == [(ENC, ["a1-sw1"])]  # a relay passes the tag on
    assert got["sw1"] == [(REC | ENC, ["sw1-a2", "sw1-b2"])]
    assert got["sw2"] == [(REC | ENC, ["sw2-a3", "sw2-b3"])]
    assert got["sw3"] == [(REC, ["sw3-listener"])]
    assert "talker" not in got and "listener" not in got, "plain end stations"
    end_to_end = node_configs(load_topology(NETWORKS / "ladder_end_to_end.yaml"))
    assert roles(end_to_end)["sw1"] == [(ENC, ["sw1-a2"]), (ENC, ["sw1-b2"])], "no recovery in the middle end to end"


def test_a_relay_on_two_member_paths_sends_each_member_on_along_its_own_path():
    sw1 = node_configs(load_topology(NETWORKS / "ladder_end_to_end.yaml"))["sw1"].plan
    ports = [sw1.ports.index(link) for link in ("a1-sw1", "b1-sw1")]
    assert [(i.stream, i.port_mask) for i in sw1.identities] == [(0, 1 << ports[0]), (1, 1 << ports[1])]
    assert sw1.handles == [1, 2], "the second member is a stream of its own, after the topology's one stream"
    assert [[o.port for o in copies] for _, copies in sw1.streams] == [["sw1-a2"], ["sw1-b2"]]


def test_streams_are_identified_by_their_listener_s_address_and_a_port_of_their_own():
    topo = load_topology(NETWORKS / "shared_bottleneck.yaml")
    configs = node_configs(topo)
    address = addresses(topo)
    identities = configs["sw2"].plan.identities
    assert [(i.stream, i.proto, i.dport) for i in identities] == [(0, 17, STREAM_PORT_BASE), (1, 17, STREAM_PORT_BASE + 1)]
    listeners = [topo.plans[s.name].listener for s in topo.streams]
    assert [bytes(i.ip_dst[:4]) for i in identities] == [bytes(map(int, address[n].split("."))) for n in listeners]
    assert len(set(address.values())) == len(address) and all(a.startswith("198.18.") for a in address.values())


TWO_NICS = {
    "name": "two-nics", "duration": "10ms",
    "nodes": {"talker": {"kind": "end_station"}, "listener": {"kind": "end_station"}},
    "links": [{"name": "na", "a": "talker", "b": "listener", "rate": "1Gbps"},
              {"name": "nb", "a": "talker", "b": "listener", "rate": "1Gbps"}],
    "streams": [{"name": "s", "talker": "talker", "listeners": ["listener"], "rate": "10Mbps",
                 "frer": {"individual_recovery": True, "reset_timeout": "1500us",
                          "latent_error_detection": {"difference": 50, "period": "500ms"}}}],
}


def test_end_stations_that_number_and_recover_their_own_stream():
    configs = node_configs(parse_topology(TWO_NICS, "two-nics.yaml"))
    talker, listener = configs["talker"].plan, configs["listener"].plan
    assert roles(configs)["talker"] == [(GEN | ENC, ["na", "nb"])]
    (sent,) = talker.identities
    assert sent.direction == layout.DIR_EGRESS and sent.port_mask == 0b01, "what its host sends out of na"
    (received,) = listener.identities
    assert received.direction == layout.DIR_INGRESS and received.port_mask == 0b11
    assert listener.streams[0][1][0].port == LOCAL
    functions = {(r.function, r.port_label): r.config for r in listener.recoveries}
    assert set(functions) == {("individual", "na"), ("individual", "nb"), ("sequence", None)}
    assert functions["sequence", None].reset_timeout_ns == 2_000_000, "1.5 ms rounded up to whole ms"
    (latent,) = [r.latent for r in listener.recoveries if r.latent]
    assert (latent.difference, latent.period, latent.paths) == (50, 500, 2)


@pytest.mark.parametrize("network", sorted(p.stem for p in NETWORKS.glob("*.yaml")))
def test_net_export_writes_each_node_s_data_plane_file_and_valid_yang(network, tmp_path, capsys):
    topo = load_topology(NETWORKS / f"{network}.yaml")
    configs = node_configs(topo)
    for fmt in ("dataplane", "yang-json"):
        out = tmp_path / fmt
        assert main(["net", "export", str(NETWORKS / f"{network}.yaml"), "--format", fmt, "-o", str(out), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert list(report["written"]) == list(configs) and not report["refused"]
    for name, cfg in configs.items():
        assert load_config(tmp_path / "dataplane" / f"{name}.yaml").model_dump() == cfg.model_dump()
        exported = json.loads((tmp_path / "yang-json" / f"{name}.json").read_text())
        check_export(exported)
        assert import_yang(exported, name)[1].plan == cfg.plan  # (import spells out default timeouts)


def test_net_export_to_lan966x_names_the_nodes_a_switch_cannot_configure(tmp_path, capsys):
    ladder = str(NETWORKS / "ladder_per_stage.yaml")
    assert main(["net", "export", ladder, "--format", "lan966x", "-o", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "sw1: not exported: a stream recovered here and passed on with its R-TAG" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{n}.lan966x.sh" for n in ("sw0", "a1", "b1", "a2", "b2", "a3", "b3", "sw3"))
    assert main(["net", "export", ladder, "--format", "lan966x", "-o", "/proc/x"]) == 2
    assert "-o/--output" in capsys.readouterr().err
