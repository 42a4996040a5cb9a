"""The data plane configuration vocabulary (frerlab.dataplane.config): what each construct
compiles to (frerlab.dataplane.compiler: identities, stream flags, copies and their rewrites, recovery functions), and
the errors for bad input, which must name the field and what would be valid. No root needed."""

from __future__ import annotations

import re

import pytest

from frerlab.dataplane import hooks, layout
from frerlab.dataplane.compiler import compile_node
from frerlab.dataplane.config import LOCAL, parse_config
from frerlab.errors import UsageError

L_MAC = "02:fe:00:00:00:02"


def node(**parts) -> dict:
    return {"ports": ["eth0", "p1", "p2"], **parts}


def ip_identity(index: int, handle: int, **placement) -> dict:
    return {"index": index, "handle": handle, **placement,
            "ip-stream-identification": {"ip-destination": "198.18.0.2"}}


def member(index: int, handle: int, port: str, vid: int) -> dict:
    return {"index": index, "handle": handle, "out-facing": {"output-port": [port]},
            "dmac-vlan-stream-identification": {"down": {"destination-mac": L_MAC, "vlan": vid},
                                                "up": {"destination-mac": L_MAC, "vlan": 0}}}


def test_a_talker_splits_one_port_into_a_copy_per_path_each_with_its_vlan():
    plan = compile_node(parse_config(node(
        **{"stream-identity": [ip_identity(1, 1, **{"in-facing": {"input-port": ["eth0"]}}),
                               member(2, 11, "eth0", 10), member(3, 12, "eth0", 20)],
           "sequence-generation": [{"index": 1, "stream": [1]}],
           "stream-split": [{"port": "eth0", "input-id": [1], "output-id": [11, 12]}],
           "stream-forwarding": [{"stream": 1, "output-port": ["eth0"]}]})))
    assert plan.handles == [1], "the member handles only name rewrites"
    assert plan.egress_ports == ["eth0"] and plan.ingress_ports == []
    (flags, copies), = plan.streams
    assert flags == layout.STREAM_GENERATE | layout.STREAM_ENCODE
    assert [(c.port, c.vid) for c in copies] == [("eth0", 10), ("eth0", 20)]
    assert all(c.flags & layout.OUT_SET_VID and c.dmac == bytes.fromhex("02fe00000002") for c in copies)


def test_an_eliminating_node_pops_the_tag_and_restores_the_up_values_for_the_host():
    plan = compile_node(parse_config(node(
        **{"stream-identity": [{"index": i, "handle": 1, "out-facing": {"input-port": [p]},
                                "dmac-vlan-stream-identification": {
                                    "down": {"destination-mac": L_MAC, "vlan": vid},
                                    "up": {"destination-mac": L_MAC, "vlan": 0}}}
                               for i, (p, vid) in enumerate([("p1", 10), ("p2", 20)])],
           "sequence-recovery": [{"index": 1, "stream": [1], "history-length": 32}],
           "stream-forwarding": [{"stream": 1, "output-port": [LOCAL]}]})))
    (flags, (copy,)), = plan.streams
    assert flags == layout.STREAM_RECOVER, "recovery here: no R-TAG on the way out"
    assert copy.flags == layout.OUT_LOCAL | layout.OUT_SET_DMAC | layout.OUT_SET_VID, \
        "no up priority: the frame keeps its own PCP"
    assert copy.vid == 0
    assert [(i.port_mask, i.vid, i.fields) for i in plan.identities] == [
        (0b010, 10, layout.MATCH_DMAC), (0b100, 20, layout.MATCH_DMAC)]
    (rcvy,) = plan.recoveries
    assert (rcvy.instance, rcvy.config.history_length, rcvy.config.reset_timeout_ns) == (0, 32, 100_000_000)


def test_an_individual_recovery_entry_is_one_function_fed_by_its_ports():
    """YANG sequence-recovery `port`: "from which received packets are to be fed to a single
    instance of the Individual recovery function"; one entry per member stream."""
    plan = compile_node(parse_config(node(
        **{"stream-identity": [ip_identity(1, 7, **{"out-facing": {"input-port": ["p1", "p2"]}})],
           "sequence-recovery": [{"index": 1, "stream": [7], "port": ["p1"], "individual-recovery": True},
                                 {"index": 2, "stream": [7], "port": ["p2", "eth0"], "individual-recovery": True}],
           "stream-forwarding": [{"stream": 7, "output-port": ["eth0"]}]})))
    assert [(r.instance, r.ports, r.config.individual_recovery) for r in plan.recoveries] == \
        [(2, ["p1"], True), (3, ["p2", "eth0"], True)]
    assert plan.individual_feeds == [{1: 2, 2: 3, 0: 3}]
    assert plan.streams[0][0] == layout.STREAM_INDIVIDUAL | layout.STREAM_ENCODE, "individual only: tag kept"


def test_sequence_recovery_on_ports_is_one_function_on_each_port():
    """YANG sequence-recovery `port`: "the ports on each of which the system is to instantiate
    the Sequence recovery function"; without a port (frerlab) one for every frame."""
    plan = compile_node(parse_config(node(
        **{"stream-identity": [ip_identity(1, 7, **{"out-facing": {"input-port": ["p1", "p2"]}})],
           "sequence-recovery": [{"index": 1, "stream": [7], "port": ["eth0", "p1"]}],
           "stream-forwarding": [{"stream": 7, "output-port": ["eth0"]}]})))
    assert [(r.instance, r.ports) for r in plan.recoveries] == [(1, ["eth0"]), (2, ["p1"])]
    assert plan.recovery_ports == [0b011]
    assert not plan.streams[0][0] & layout.STREAM_RECOVER


def test_placements_mean_what_the_yang_descriptions_say():
    """ieee802-dot1cb-stream-identification 9.1.1.2-9.1.1.5: out-facing input-port is "coming
    from the physical interface" (received: tc ingress), in-facing input-port "coming from the
    system forwarding function" (this host's frames: tc egress); in-facing output-port, received
    frames on their way to the forwarding function, is identified where they enter as well."""
    def identities(placement):
        plan = compile_node(parse_config(node(**{"stream-identity": [ip_identity(1, 7, **placement)],
                                                 "stream-forwarding": [{"stream": 7, "output-port": ["p2"]}]})))
        return [(i.direction, i.port_mask) for i in plan.identities]

    assert identities({"out-facing": {"input-port": ["p1"]}}) == [(layout.DIR_INGRESS, 0b010)]
    assert identities({"in-facing": {"output-port": ["p1"]}}) == [(layout.DIR_INGRESS, 0b010)]
    assert identities({"in-facing": {"input-port": ["eth0"]}}) == [(layout.DIR_EGRESS, 0b001)]


def test_defaults_cannot_black_a_stream_out_and_zero_is_not_never():
    def recovery(**fields):
        cfg = parse_config(node(**{"stream-identity": [ip_identity(1, 7, **{"out-facing": {"input-port": ["p1"]}})],
                                   "sequence-recovery": [{"index": 1, "stream": [7], **fields}],
                                   "stream-forwarding": [{"stream": 7, "output-port": ["eth0"]}]}))
        (r,) = cfg.plan.recoveries
        return cfg, r.config

    cfg, sequence = recovery()
    assert (sequence.history_length, sequence.reset_timeout_ns) == (32, 100_000_000)
    assert cfg.blackout_notes() == []
    cfg, individual = recovery(port=["p1"], **{"individual-recovery": True})
    assert (individual.history_length, individual.reset_timeout_ns) == (32, 1_000_000)
    assert cfg.blackout_notes() == [
        "note: sequence-recovery 1: individual recovery on p1 can lock a member stream out above 31000 "
        "frames/s: a cut of 31 frames or more that lasts less than reset-timeout (1 ms) leaves only rogue "
        "frames, which reload the timer (802.1CB 7.4.3.4); keep (history-length - 1) / reset-timeout above "
        "the stream's frame rate"]
    cfg, _ = recovery(port=["p1"], **{"individual-recovery": True, "frame-rate": 30000})
    assert cfg.blackout_notes() == []
    cfg, never = recovery(**{"reset-timeout": "never"})
    assert never.reset_timeout_ns is None
    assert cfg.blackout_notes()[0].startswith("warning: sequence-recovery 1: without a reset timeout a rogue jump")
    with pytest.raises(UsageError, match="reset-timeout 0 is not valid: give milliseconds"):
        recovery(**{"reset-timeout": 0})


@pytest.mark.parametrize("change, message", [
    ({"sequence-recovery": [{"index": 1, "stream": [1], "history-length": 0}]},
     "sequence-recovery.0.history-length: Input should be greater than or equal to 2 (got 0)"),
    ({"stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["p9"]},
                           "null-stream-identification": {"destination-mac": L_MAC}}]},
     "port 'p9' is not one of ports (eth0, p1, p2)"),
    ({"stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["p1"]},
                           "null-stream-identification": {"destination-mac": "02:fe"}}]},
     "'02:fe' is not a MAC address"),
    ({"stream-identity": [ip_identity(1, 1, **{"out-facing": {"input-port": ["p1"]}})]},
     "stream 1 has no stream-forwarding entry"),
    ({"sequence-generation": [{"index": 1, "stream": [4]}]}, "stream 4 has no stream-identity (handles: none)"),
    ({"stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["p1"]},
                           "ip-stream-identification": {"ip-source": "198.18.0.1", "ip-destination": "2001:db8::2"}}]},
     "of different IP versions"),
    ({"stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["p1"]},
                           "ip-stream-identification": {"destination-port": 5001}}]},
     "ports need a next-protocol (udp, tcp or sctp)"),
    ({"sequence-recovery": [{"index": 1, "stream": [1], "port": ["p1"], "individual-recovery": True,
                             "latent-error-detection": True,
                             "latent-error-detection-parameters": {"difference": 5, "paths": 2}}]},
     "latent-error-detection is not allowed with individual-recovery"),
    ({"sequence-recovery": [{"index": 1, "stream": [1], "latent-error-detection": {"difference": 5}}]},
     "latent-error-detection is a boolean (802.1CB 10.4.1.11): write latent-error-detection: true and the "
     "parameters in latent-error-detection-parameters"),
    ({"sequence-recovery": [{"index": 1, "stream": [1], "latent-error-detection": True}]},
     "latent-error-detection true needs latent-error-detection-parameters with difference and paths"),
    ({"sequence-recovery": [{"index": 1, "stream": [1], "latent-error-detection": True,
                             "latent-error-detection-parameters": {"difference": 5}}]},
     "sequence-recovery.0: the latent error detection parameters need difference and paths"),
    ({"sequence-recovery": [{"index": 1, "stream": [1], "latent-error-detection": True,
                             "latent-error-detection-parameters": {"difference": -1, "paths": 2}}]},
     "sequence-recovery.0.latent-error-detection-parameters.difference: Input should be greater than or equal to 0"),
    ({"sequence-generation": [{"index": 1, "stream": [1], "direction-out-facing": True}]},
     "sequence-generation 1: direction-out-facing true (out-facing) is not implemented by the data plane"),
    ({"sequence-recovery": [{"index": 1, "stream": [1], "direction-out-facing": False}]},
     "sequence-recovery 1: direction-out-facing false (in-facing) is not implemented by the data plane"),
    ({"sequence-identification": [{"port": ["p1"], "stream": [1], "encapsulation": "hsr-sequence-tag"}]},
     "encapsulation hsr-sequence-tag is not implemented by the data plane (valid: r-tag; the model also lists "
     "hsr-sequence-tag, prp-sequence-tag, organization-specific)"),
    ({"sequence-identification": [{"port": ["p1"], "stream": [1], "path-id-lan-id": 1}]},
     "path-id-lan-id is used only with the HSR sequence tag or PRP trailer"),
    ({"stream-identity": [ip_identity(1, 1, **{"out-facing": {"output-port": ["p1"]}})]},
     "stream-identity 1: out-facing output-port p1 (frames going to the LAN, below the port's FRER functions) is "
     "implemented only for dmac-vlan-stream-identification"),
    ({"stream-identity": [{**member(1, 1, "p1", 10), "in-facing": {"input-port": ["p2"]}}]},
     "stream-identity 1: dmac-vlan-stream-identification on in-facing input-port p2 is not implemented"),
    ({"stream-identity": [ip_identity(1, 1, **{"in-facing": {"output-port": ["p1"]}})],
      "sequence-recovery": [{"index": 1, "stream": [1], "port": ["p1"]}],
      "stream-forwarding": [{"stream": 1, "output-port": ["p2"]}]},
     "stream-identity 1: in-facing output-port p1 names stream 1 above the port's out-facing functions, but "
     "sequence-recovery 1 is out-facing on p1"),
    ({"stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["p1"]},
                           "mask-and-match-stream-identification": {}}]},
     "not by the eBPF data plane"),
    ({"stream-identity": [ip_identity(1, 1, **{"out-facing": {"input-port": ["p1"]}})],
      "stream-forwarding": [{"stream": 1, "output-port": [LOCAL, "p2"]}]},
     "'local' must be the last output port"),
    ({"stream-identity": [ip_identity(1, 1, **{"in-facing": {"input-port": ["eth0"]}})],
      "sequence-identification": [{"port": ["p1", "p2"], "stream": [1], "active": False}],
      "stream-forwarding": [{"stream": 1, "output-port": ["p1", "p2"]}]},
     "must leave with an R-TAG"),
    ({"stream-identity": [ip_identity(1, 1, **{"out-facing": {"input-port": ["p1"]}})],
      "stream-split": [{"port": "p2", "input-id": [1], "output-id": [11]}],
      "stream-forwarding": [{"stream": 1, "output-port": ["p2"]}]},
     "output-id 11 has no dmac-vlan-stream-identification out-facing on p2"),
    ({"port-settings": [{"port": "p1", "pvid": 0}]},
     "port-settings.0.pvid: Input should be greater than or equal to 1 (got 0)"),
    ({"port-settings": [{"port": "p9", "pvid": 10}]}, "port-settings: port 'p9' is not one of ports"),
    ({"stream-identity": [{**member(1, 1, "p1", 10), "out-facing": {"input-port": ["p1"]},
                           "dmac-vlan-stream-identification": {
                               "down": {"destination-mac": L_MAC, "vlan": 10},
                               "up": {"destination-mac": L_MAC, "tagged": "priority", "vlan": 5}}}]},
     "stream-identity 1 up: vlan 5 with tagged: priority"),
    ({"unknown-thing": 1}, "unknown field 'unknown-thing' (valid: name, netns, hook, ports, "),
])
def test_bad_configurations_are_refused_naming_the_field(change, message):
    with pytest.raises(UsageError) as err:
        parse_config(node(**change), "node.yaml")
    assert message in str(err.value)
    assert str(err.value).startswith("node.yaml")


def test_identities_left_to_the_scan_are_limited_naming_the_count_and_range():
    """Identities of shapes no other identity shares are scanned: 33 of them (each on its own
    subset of the ports) exceed the scan's 32."""
    ports = [f"p{i}" for i in range(6)]
    subsets = [[p for bit, p in enumerate(ports) if mask >> bit & 1] for mask in range(1, 34)]
    data = {"ports": ports, "stream-identity": [
        {"index": i, "handle": i, "out-facing": {"input-port": on},
         "null-stream-identification": {"destination-mac": f"02:00:00:00:00:{i:02x}"}} for i, on in enumerate(subsets)],
        "stream-forwarding": [{"stream": i, "output-port": ["local"]} for i in range(33)]}
    with pytest.raises(UsageError, match=r"33 identities to scan is out of range \(0\.\.=32, FRER_MAX_IDENTITIES\)"):
        parse_config(data)
    data["stream-identity"][0]["out-facing"]["input-port"] = subsets[1]  # two share a shape: hashed
    plan = parse_config(data).plan
    assert len(plan.scanned) == 31 and len(plan.hashed) == 2


def test_xdp_runs_copies_rewritten_per_port_and_refuses_what_only_tc_does():
    """hooks.choose: a stream whose copies differ per port (an out-facing dmac-vlan identity on
    p2 only) runs on XDP; one that also goes to this host, or through a recovery function on
    an output port, is refused under `xdp` naming the stream, and left to tc under `auto`."""
    def relay(output_ports: list[str], extra: dict | None = None):
        return compile_node(parse_config(node(
            **{"stream-identity": [ip_identity(1, 7, **{"out-facing": {"input-port": ["eth0"]}}),
                                   member(2, 7, "p2", 20)],
               "sequence-generation": [{"index": 1, "stream": [7]}],
               "stream-forwarding": [{"stream": 7, "output-port": output_ports}], **(extra or {})})))

    per_port = relay(["p1", "p2"])
    assert len({(o.dmac, o.vid) for o in per_port.streams[0][1]}) == 2, "the copies differ"
    assert hooks.choose("xdp", per_port, None) == ({"eth0": "native"}, None)
    for plan, reason in ((relay(["p1", LOCAL]), "stream 7 is copied to ports and to this host (local)"),
                         (relay(["p1", "p2"], {"sequence-recovery": [{"index": 1, "stream": [7], "port": ["p1"]}]}),
                          "stream 7 has a sequence recovery function on an output port")):
        with pytest.raises(UsageError, match=f"hook xdp cannot run this node: {re.escape(reason)} "
                                             r"\(use hook tc or auto\)"):
            hooks.choose("xdp", plan, None)
        assert hooks.choose("auto", plan, None) == ({}, f"tc, as XDP cannot: {reason}")
