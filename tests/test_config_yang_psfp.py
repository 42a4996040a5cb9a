"""Issue 35: 802.1Qci stream filters and flow meters in the YANG export and import. The facts
frerlab relies on from the IEEE modules are written here as data (the modules cannot be
shipped): ieee802-dot1q-bridge (revision 2020-06-04) for the bridge and component lists, and
ieee802-dot1q-psfp's grouping psfp-parameters as ieee802-dot1q-psfp-bridge adds it to the
component (both 802.1Qcw-2023, revision 2023-10-26; its stream filter and gate leaves are
ieee802-dot1q-stream-filters-gates', 802.1Qcr-2020), so in the psfp-bridge namespace. The
export follows them, a policed testbed node comes back equal, what frerlab's single-rate,
colour-blind meters and gate-less filters cannot do is refused naming the node, and
`validate` passes the export on small modules of the same nodes written here."""

from __future__ import annotations

import copy
import json

import pytest
from test_config_yang import MAC, SHIPPED, check, container, damage, leaf, paths, refused_or_taken, ylist

from frerlab.config.yang import BRIDGES, NODE, export_yang, import_yang, validate_file
from frerlab.dataplane.config import FlowMeter, StreamFilter, load_config, parse_config
from frerlab.errors import UsageError
from frerlab.testbed import plan

BRIDGE = "ieee802-dot1q-bridge"
PSFP = "ieee802-dot1q-psfp-bridge"
UINT64 = ("pattern", r"[0-9]{1,20}")  # RFC 7951 6.1: a uint64 is a JSON string of digits
PRIORITY_SPEC = ("enum", ("zero", "one", "two", "three", "four", "five", "six", "seven", "wildcard"))
#: The nodes of the export, each with the module node / clause it comes from.
SCHEMA = container({"bridge": ylist(("name",), {
    "name": leaf(("string",), "dot1q bridge/name (dot1qtypes:name-type), 12.4"),
    "address": leaf(MAC, "dot1q bridge/address (ieee:mac-address), 12.4", mandatory=True),
    "bridge-type": leaf(("identityref",), "dot1q bridge/bridge-type (base type-of-bridge)", mandatory=True),
    "component": ylist(("name",), {
        "name": leaf(("string",), "dot1q component/name"),
        "type": leaf(("identityref",), "dot1q component/type (base type-of-component), 12.3 m)", mandatory=True),
        f"{PSFP}:stream-filters": container({"stream-filter-instance-table": ylist(("stream-filter-instance-id",), {
            "stream-filter-instance-id": leaf(("uint32",), "12.31.2.1 (the list's order)"),
            "stream-handle": leaf(("uint32",), "choice stream-handle-spec, case stream-handle, 12.31.2.2"),
            "priority-spec": leaf(PRIORITY_SPEC, "12.31.2.3 sfsg:priority-spec-type", mandatory=True),
            "max-sdu-size": leaf(("uint32",), "8.6.5.3.1 (0: any)", mandatory=True, units="octets"),
            "stream-gate-ref": leaf(("ref", "gate"), "12.31.2.4 leafref to a stream gate", mandatory=True),
            "flow-meter-enable": leaf(("boolean",), "psfp augment, 12.31.2.6 (no default)"),
            "flow-meter-ref": leaf(("ref", "meter"), "psfp augment, 8.6.5.5 leafref to a flow meter"),
        }, "sfsg stream-filters/stream-filter-instance-table, 12.31.2")}, "psfp-parameters stream-filters"),
        f"{PSFP}:stream-gates": container({"stream-gate-instance-table": ylist(("stream-gate-instance-id",), {
            "stream-gate-instance-id": leaf(("uint32",), "12.31.3"),
            "gate-enable": leaf(("boolean",), "8.6.9.4.14", default=False),
            "admin-gate-states": leaf(("enum", ("closed", "open")), "12.31.3.2.1", default="open"),
        }, "sfsg stream-gates/stream-gate-instance-table, 12.31.3")}, "psfp-parameters stream-gates"),
        f"{PSFP}:flow-meters": container({"flow-meter-instance-table": ylist(("flow-meter-instance-id",), {
            "flow-meter-instance-id": leaf(("uint32",), "8.6.5.5"),
            "committed-information-rate": leaf(UINT64, "8.6.5.5 CIR (uint64)", mandatory=True, units="bits/second"),
            "committed-burst-size": leaf(("uint32",), "8.6.5.5 CBS", mandatory=True, units="octets"),
            "excess-information-rate": leaf(UINT64, "8.6.5.5 EIR (uint64)", mandatory=True, units="bits/second"),
            "excess-burst-size": leaf(("uint32",), "8.6.5.5 EBS", mandatory=True, units="octets"),
            "coupling-flag": leaf(("enum", ("zero", "one")), "8.6.5.5 CF", mandatory=True),
            "color-mode": leaf(("enum", ("color-blind", "color-aware")), "8.6.5.5 CM (MEF 10.3)", mandatory=True),
            "drop-on-yellow": leaf(("boolean",), "8.6.5.5 DropOnYellow", mandatory=True),
        }, "psfp flow-meters/flow-meter-instance-table, 12.31.4")}, "psfp-parameters flow-meters"),
    }, "dot1q bridge/component, 12.3"),
}, "dot1q bridges/bridge, 12.4")}, "ieee802-dot1q-bridge container bridges")


def check_bridges(data):
    """Asserts the export's bridges member follows SCHEMA (and its references resolve)."""
    component = data[f"{BRIDGE}:bridges"]["bridge"][0]["component"][0]
    refs = {ref: [e[f"{kind}-instance-id"] for e in component.get(f"{PSFP}:{kind}s", {}).get(
        f"{kind}-instance-table", [])] for ref, kind in (("gate", "stream-gate"), ("meter", "flow-meter"))}
    check(SCHEMA, data[f"{BRIDGE}:bridges"], f"/{BRIDGE}:bridges", refs)
    for meter in component.get(f"{PSFP}:flow-meters", {}).get("flow-meter-instance-table", []):
        for rate in ("committed-information-rate", "excess-information-rate"):
            assert int(meter[rate]) < 2**64


def _policed(role="sw2"):
    """A testbed node policing each path (802.1Qci on both switches)."""
    return plan.node_configs("frer", recovery=plan.Recovery(police_bps=4_000_000, police_burst=24_000))[role]


def _json(cfg, notes=None):
    return json.loads(json.dumps(export_yang(cfg, notes)))


#: A listener policing each path, with a size limit, one meter dropping yellow and one filter
#: without a meter or ports (docs/dataplane.md's example, extended).
LISTENER = {
    "name": "listener", "ports": ["pa", "pb"],
    "stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["pa", "pb"]},
                         "ip-stream-identification": {"ip-destination": "198.18.0.2", "next-protocol": "udp"}},
                        {"index": 2, "handle": 2, "out-facing": {"input-port": ["pa"]},
                         "null-stream-identification": {"destination-mac": "02:00:00:00:00:02"}}],
    "sequence-recovery": [{"index": 1, "stream": [1], "reset-timeout": 100}],
    "stream-forwarding": [{"stream": 1, "output-port": ["local"]}, {"stream": 2, "output-port": ["local"]}],
    "stream-filter": [{"index": 2, "stream": [1], "port": ["pb"], "max-sdu-size": 1500, "flow-meter": 7},
                      {"index": 1, "stream": [1], "port": ["pa"], "max-sdu-size": 1500, "flow-meter": 3},
                      {"index": 5, "stream": [2]}],
    "flow-meter": [{"index": 3, "committed-information-rate": 20_000_000, "committed-burst-size": 6000},
                   {"index": 7, "committed-information-rate": 10**12, "committed-burst-size": 1,
                    "drop-on-yellow": True}],
}


def _component(data):
    return data[BRIDGES]["bridge"][0]["component"][0]


def _filters(data):
    return _component(data)[f"{PSFP}:stream-filters"]["stream-filter-instance-table"]


def _meters(data):
    return _component(data)[f"{PSFP}:flow-meters"]["flow-meter-instance-table"]


# ---- export ----

def test_the_policed_node_exports_its_filters_and_meters_where_the_modules_put_them():
    notes = []
    data = _json(_policed(), notes)
    check_bridges(data)
    bridge = data[BRIDGES]["bridge"][0]
    assert (bridge["name"], bridge["address"], bridge["bridge-type"]) == (
        "frerlab", "00-00-00-00-00-00", f"{BRIDGE}:customer-vlan-bridge")
    assert [(c["name"], c["type"]) for c in bridge["component"]] == [("frerlab", f"{BRIDGE}:c-vlan-component")]
    assert _filters(data) == [
        {"stream-filter-instance-id": i, "stream-handle": 1, "priority-spec": "wildcard", "max-sdu-size": 0,
         "stream-gate-ref": 0, "flow-meter-enable": True, "flow-meter-ref": i} for i in (11, 12)]
    assert _component(data)[f"{PSFP}:stream-gates"] == {"stream-gate-instance-table": [
        {"stream-gate-instance-id": 0, "gate-enable": False, "admin-gate-states": "open"}]}
    assert _meters(data) == [
        {"flow-meter-instance-id": i, "committed-information-rate": "4000000", "committed-burst-size": 24000,
         "excess-information-rate": "0", "excess-burst-size": 0, "coupling-flag": "zero",
         "color-mode": "color-blind", "drop-on-yellow": False} for i in (11, 12)]
    # frerlab's per-port binding, which 802.1Qci's filter has not: in frerlab's module, and said
    assert data[NODE]["stream-filter"] == [{"index": 11, "port": ["p1"]}, {"index": 12, "port": ["p2"]}]
    assert notes == [
        f"stream-filter {i}: filters stream 1 received on {p} only; 802.1Qci's stream filters have no port (one takes "
        f"every frame of its stream handle): written with {NODE}/stream-filter naming its ports; a device that does "
        "not read frerlab's module filters every frame of stream 1 (from p1, p2) with the stream's filter of the "
        "lowest stream-filter-instance-id" for i, p in ((11, "p1"), (12, "p2"))]


def test_the_values_are_written_in_the_units_the_modules_give():
    """frerlab's YAML counts in the modules' units (bit/s, octets), so values go across as
    they are: CIR as a uint64 string, the rest as numbers."""
    leaves = SCHEMA["children"]["bridge"]["children"]["component"]["children"]
    meter = leaves[f"{PSFP}:flow-meters"]["children"]["flow-meter-instance-table"]["children"]
    flt = leaves[f"{PSFP}:stream-filters"]["children"]["stream-filter-instance-table"]["children"]
    assert meter["committed-information-rate"]["units"] == "bits/second"
    assert FlowMeter.model_fields["committed_information_rate"].description == "bit/s"
    assert meter["committed-burst-size"]["units"] == FlowMeter.model_fields["committed_burst_size"].description
    assert flt["max-sdu-size"]["units"] == "octets" and \
        StreamFilter.model_fields["max_sdu_size"].description.startswith("octets")
    data = _json(parse_config(LISTENER, "listener.yaml"))
    check_bridges(data)
    assert [(m["flow-meter-instance-id"], m["committed-information-rate"], m["committed-burst-size"],
             m["drop-on-yellow"]) for m in _meters(data)] == [(3, "20000000", 6000, False), (7, "1000000000000", 1, True)]
    assert [(f["stream-filter-instance-id"], f["stream-handle"], f["max-sdu-size"], f["flow-meter-enable"],
             f.get("flow-meter-ref")) for f in _filters(data)] == [(2, 1, 1500, True, 7), (1, 1, 1500, True, 3),
                                                                   (5, 2, 0, False, None)]
    assert data[NODE]["stream-filter"] == [{"index": 2, "port": ["pb"]}, {"index": 1, "port": ["pa"]}]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_a_node_without_filters_writes_no_bridge(path):
    data = _json(load_config(path))
    assert BRIDGES not in data and "stream-filter" not in data[NODE]


def test_a_filter_of_several_streams_is_refused_naming_the_rewrite():
    data = copy.deepcopy(LISTENER)
    data["stream-filter"][2]["stream"] = [2, 1]
    with pytest.raises(UsageError, match=r"stream-filter 5: streams 2, 1 in one filter; an entry of 802.1Qci's "
                                         r"stream-filter-instance-table has one stream-handle: give one stream-filter "
                                         r"per stream \(they may share a flow-meter"):
        export_yang(parse_config(data, "listener.yaml"))


# ---- round trip ----

@pytest.mark.parametrize("cfg", [_policed(), _policed("sw1"), parse_config(LISTENER, "listener.yaml"),
                                 *(load_config(p) for p in SHIPPED)], ids=lambda c: c.name)
def test_yaml_to_yang_json_and_back_is_exact(cfg):
    data = _json(cfg)
    _, back, notes = import_yang(data, "node.json")
    assert back.model_dump() == cfg.model_dump() and notes == []
    assert _json(back) == data


def test_the_policed_node_round_trips_through_the_commands(tmp_path, capsys):
    from frerlab.cli import main

    import yaml

    def hyphens(value):
        if isinstance(value, dict):
            return {k.replace("_", "-"): hyphens(v) for k, v in value.items()}
        return [hyphens(v) for v in value] if isinstance(value, list) else value

    cfg = _policed()
    yaml_in, json_file, yaml_out = tmp_path / "sw2.yaml", tmp_path / "sw2.json", tmp_path / "back.yaml"
    yaml_in.write_text(yaml.safe_dump(hyphens(cfg.model_dump(mode="json", exclude_defaults=True))))
    assert load_config(yaml_in).model_dump() == cfg.model_dump()
    assert main(["config", "export", str(yaml_in), "--format", "yang-json", "-o", str(json_file)]) == 0
    assert capsys.readouterr().err.count("note: stream-filter 1") == 2
    assert main(["config", "import", str(json_file), "-o", str(yaml_out)]) == 0
    assert load_config(yaml_out).model_dump() == cfg.model_dump()


def test_a_plain_ieee_document_filters_every_port_of_the_stream():
    """Without frerlab's module a filter has no ports: it takes every port its stream is
    identified on, as 802.1Qci's filter takes every frame of its stream handle."""
    data = _json(_policed())
    del data[NODE]["stream-filter"]
    cfg = import_yang(data, "plain.json")[1]
    assert [(f.index, f.port) for f in cfg.stream_filter] == [(11, []), (12, [])]
    assert cfg.plan.filter_of == {(s, p): 0 for (s, p) in cfg.plan.filter_of}  # filter 11 takes both paths


def test_absent_leaves_without_a_default_are_noted():
    data = _json(_policed())
    for name in ("priority-spec", "max-sdu-size", "flow-meter-enable"):
        del _filters(data)[0][name]
    for name in ("excess-information-rate", "excess-burst-size", "coupling-flag", "color-mode", "drop-on-yellow"):
        del _meters(data)[0][name]
    _, cfg, notes = import_yang(data, "sw2.json")
    at = f"/{BRIDGES}/bridge[name=frerlab]/component[name=frerlab]/{PSFP}:"
    assert notes == [
        f"{at}stream-filters/stream-filter-instance-table[stream-filter-instance-id=11]: absent, and without a default "
        "in the model, so frerlab's value is taken: priority-spec wildcard, max-sdu-size 0, flow-meter-enable true",
        f"{at}flow-meters/flow-meter-instance-table[flow-meter-instance-id=11]: absent, and without a default in the "
        "model, so frerlab's value is taken: excess-information-rate 0, excess-burst-size 0, coupling-flag zero, "
        "color-mode color-blind, drop-on-yellow false"]
    assert cfg.model_dump() == _policed().model_dump()


# ---- refusals ----

def _gate(d):
    return _component(d)[f"{PSFP}:stream-gates"]["stream-gate-instance-table"][0]


AT = f"/{BRIDGES}/bridge[name=frerlab]/component[name=frerlab]"
FILTER = f"{AT}/{PSFP}:stream-filters/stream-filter-instance-table[stream-filter-instance-id=11]"
METER = f"{AT}/{PSFP}:flow-meters/flow-meter-instance-table[flow-meter-instance-id=11]"
GATE = f"{AT}/{PSFP}:stream-gates/stream-gate-instance-table[stream-gate-instance-id=0]"
GATES_WHY = ("stream gates (802.1Qci 8.6.5.4) is not implemented by frerlab's data plane, whose filters pass what the "
             "size check and the flow meter pass; valid: gates that stay open (gate-enable false, admin-gate-states "
             "open, admin-ipv null) and nothing else")
BAD = {
    "two-rate meter": (lambda d: _meters(d)[0].update({"excess-information-rate": "1000000"}),
                       f"{METER}/excess-information-rate: 1000000 bit/s: two-rate flow meters are not implemented by "
                       "frerlab's data plane, whose meters are single-rate (MEF 10.3 with no excess rate: a frame is "
                       "green or red); valid: \"0\""),
    "excess burst": (lambda d: _meters(d)[0].update({"excess-burst-size": 1500}),
                     f"{METER}/excess-burst-size: 1500: an excess bucket (yellow frames) is not implemented by "
                     "frerlab's data plane, whose flow meters are single-rate: a frame is green or red; valid: 0"),
    "colour-aware": (lambda d: _meters(d)[0].update({"color-mode": "color-aware"}),
                     f"{METER}/color-mode: color-aware: colour-aware metering is not implemented by frerlab's data "
                     "plane, whose flow meters ignore a frame's colour; valid: \"color-blind\""),
    "mark all frames red": (lambda d: _meters(d)[0].update({"mark-all-frames-red-enable": True}),
                            f"{METER}/mark-all-frames-red-enable: true: MarkAllFramesRed (8.6.5.5) is not implemented "
                            "by frerlab's data plane; valid: false"),
    "coupling flag": (lambda d: _meters(d)[0].update({"coupling-flag": "two"}),
                      f"{METER}/coupling-flag: valid: zero or one"),
    "CIR as a number": (lambda d: _meters(d)[0].update({"committed-information-rate": 4000000}),
                        f"{METER}/committed-information-rate: expected a uint64, which RFC 7951 (6.1) writes as a "
                        "JSON string of digits"),
    "CIR above frerlab's": (lambda d: _meters(d)[0].update({"committed-information-rate": str(10**13)}),
                            f"{METER}/committed-information-rate: 10000000000000 is valid in the model "
                            "(0..18446744073709551615) but outside frerlab's range 0..1000000000000"),
    "CBS 0": (lambda d: _meters(d)[0].update({"committed-burst-size": 0}),
              f"{METER}/committed-burst-size: 0 is valid in the model (0..4294967295) but outside frerlab's range "
              "1..1000000000: a bucket of 0 octets would pass no frame"),
    "no CIR": (lambda d: _meters(d)[0].pop("committed-information-rate"),
               f"{METER}/committed-information-rate is missing: the meter's rate and bucket have no default"),
    "closed gate": (lambda d: _gate(d).update({"admin-gate-states": "closed"}),
                    f"{GATE}/admin-gate-states: closed: {GATES_WHY}"),
    "gate enabled": (lambda d: _gate(d).update({"gate-enable": True}), f"{GATE}/gate-enable: true: {GATES_WHY}"),
    "gate IPV": (lambda d: _gate(d).update({"admin-ipv": "three"}), f"{GATE}/admin-ipv: three: {GATES_WHY}"),
    "gate schedule": (lambda d: _gate(d).update({"admin-control-list": {"gate-control-entry": []}}),
                      f"{GATE}/admin-control-list: {GATES_WHY}"),
    "wildcard stream": (lambda d: _filters(d)[0].update({"wildcard": [None]}),
                        f"{FILTER}/wildcard: a filter of every stream is not implemented by frerlab's data plane, "
                        "whose filters name their stream; give stream-handle"),
    "no stream handle": (lambda d: _filters(d)[0].pop("stream-handle"),
                         f"{FILTER}: give stream-handle (the choice stream-handle-spec has none of its cases)"),
    "priority": (lambda d: _filters(d)[0].update({"priority-spec": "three"}),
                 f"{FILTER}/priority-spec: three: per-priority stream filters are not implemented by frerlab's data "
                 "plane, whose filters take every priority of their stream; valid: \"wildcard\""),
    "blocking": (lambda d: _filters(d)[0].update({"stream-blocked-due-to-oversize-frame-enabled": True}),
                 f"{FILTER}/stream-blocked-due-to-oversize-frame-enabled: true: blocking a stream after an oversize "
                 "frame is not implemented by frerlab's data plane, which drops that frame and goes on; valid: false"),
    "meter enabled without one": (lambda d: _filters(d)[0].pop("flow-meter-ref"),
                                  f"{FILTER}/flow-meter-enable: give true with flow-meter-ref"),
    "a meter of no entry": (lambda d: _filters(d)[0].update({"flow-meter-ref": 99}),
                            "stream-filter 11: flow-meter 99 is not the index of a flow-meter entry (flow-meter "
                            "indices: 11, 12)"),
    "a counter": (lambda d: _filters(d)[0].update({"red-frames-count": "5"}),
                  f"{FILTER}/red-frames-count: is read-only state (config false)"),
    "two bridges": (lambda d: d[BRIDGES]["bridge"].append({**d[BRIDGES]["bridge"][0], "name": "other"}),
                    f"/{BRIDGES}/bridge: 2 bridges; frerlab's node is one bridge with one component"),
    "two components": (lambda d: d[BRIDGES]["bridge"][0]["component"].append({"name": "b"}),
                       f"/{BRIDGES}/bridge[name=frerlab]/component: 2 components"),
    "another bridge node": (lambda d: d[BRIDGES]["bridge"][0]["component"][0].update({"bridge-vlan": {}}),
                            f"{AT}/bridge-vlan: not a node frerlab reads (valid: name, id, type, address, "
                            f"{PSFP}:stream-filters"),
    "ports of no filter": (lambda d: d[NODE]["stream-filter"].append({"index": 40, "port": ["p1"]}),
                           f"/{NODE}/stream-filter[index=40]: names the ports of a stream filter the data does not "
                           "have"),
    "ports without filters": (lambda d: d.pop(BRIDGES),
                              f"/{NODE}/stream-filter: names the ports of stream filters, and the data has none"),
}


@pytest.mark.parametrize("name", BAD)
def test_what_frerlab_cannot_take_is_refused_naming_the_node(name):
    change, message = BAD[name]
    data = _json(_policed())
    change(data)
    with pytest.raises(UsageError) as err:
        import_yang(data, "sw2.json")
    assert message in str(err.value), str(err.value)


def test_nodes_that_change_nothing_here_are_accepted():
    """A coupling flag without an excess bucket, MarkAllFramesRed without its enable, a meter
    enable false with a reference, capability leaves: the same configuration."""
    data = _json(_policed())
    _meters(data)[0].update({"coupling-flag": "one", "mark-all-frames-red": True, "mark-all-frames-red-enable": False})
    _filters(data)[1].update({"stream-blocked-due-to-oversize-frame": False})
    _component(data)[f"{PSFP}:flow-meters"]["max-flow-meter-instances"] = 1024
    _component(data)[f"{PSFP}:stream-gates"]["supported-list-max"] = 0
    _gate(data)["admin-ipv"] = "null"
    assert import_yang(data, "sw2.json")[1].model_dump() == _policed().model_dump()
    _filters(data)[1]["flow-meter-enable"] = False
    assert import_yang(data, "sw2.json")[1].stream_filter[1].flow_meter is None


# ---- validate, with yangson, against modules of the same nodes written here ----

BRIDGE_YANG = """module ieee802-dot1q-bridge {
  yang-version 1.1;
  namespace "urn:ieee:std:802.1Q:yang:ieee802-dot1q-bridge";
  prefix dot1q;
  revision 2020-06-04;
  identity type-of-bridge;
  identity customer-vlan-bridge { base type-of-bridge; }
  identity type-of-component;
  identity c-vlan-component { base type-of-component; }
  container bridges {
    list bridge {
      key "name";
      leaf name { type string { length "0..32"; } }
      leaf address { type string { pattern '[0-9a-fA-F]{2}(-[0-9a-fA-F]{2}){5}'; } mandatory true; }
      leaf bridge-type { type identityref { base type-of-bridge; } mandatory true; }
      list component {
        key "name";
        leaf name { type string; }
        leaf type { type identityref { base type-of-component; } mandatory true; }
      }
    }
  }
}
"""
PSFP_YANG = """module ieee802-dot1q-psfp-bridge {
  yang-version 1.1;
  namespace "urn:ieee:std:802.1Q:yang:ieee802-dot1q-psfp-bridge";
  prefix psfp-bridge;
  import ieee802-dot1q-bridge { prefix dot1q; }
  revision 2023-10-26;
  augment "/dot1q:bridges/dot1q:bridge/dot1q:component" {
    container stream-filters {
      list stream-filter-instance-table {
        key "stream-filter-instance-id";
        leaf stream-filter-instance-id { type uint32; }
        choice stream-handle-spec {
          leaf wildcard { type empty; }
          leaf stream-handle { type uint32; }
        }
        leaf priority-spec {
          type enumeration { enum zero; enum one; enum two; enum three; enum four; enum five; enum six;
                             enum seven; enum wildcard; }
          mandatory true;
        }
        leaf max-sdu-size { type uint32; units "octets"; mandatory true; }
        leaf stream-gate-ref {
          type leafref { path "../../../stream-gates/stream-gate-instance-table/stream-gate-instance-id"; }
          mandatory true;
        }
        leaf flow-meter-ref {
          type leafref { path "../../../flow-meters/flow-meter-instance-table/flow-meter-instance-id"; }
        }
        leaf flow-meter-enable { type boolean; }
      }
    }
    container stream-gates {
      list stream-gate-instance-table {
        key "stream-gate-instance-id";
        leaf stream-gate-instance-id { type uint32; }
        leaf gate-enable { type boolean; default "false"; }
        leaf admin-gate-states { type enumeration { enum closed; enum open; } default "open"; }
      }
    }
    container flow-meters {
      list flow-meter-instance-table {
        key "flow-meter-instance-id";
        leaf flow-meter-instance-id { type uint32; }
        leaf committed-information-rate { type uint64; units "bits/second"; mandatory true; }
        leaf committed-burst-size { type uint32; units "octets"; mandatory true; }
        leaf excess-information-rate { type uint64; units "bits/second"; mandatory true; }
        leaf excess-burst-size { type uint32; units "octets"; mandatory true; }
        leaf coupling-flag { type enumeration { enum zero { value 0; } enum one { value 1; } } mandatory true; }
        leaf color-mode { type enumeration { enum color-blind; enum color-aware; } mandatory true; }
        leaf drop-on-yellow { type boolean; mandatory true; }
      }
    }
  }
}
"""


@pytest.fixture
def modules(tmp_path):
    d = tmp_path / "modules"
    d.mkdir()
    (d / f"{BRIDGE}.yang").write_text(BRIDGE_YANG)
    (d / f"{PSFP}@2023-10-26.yang").write_text(PSFP_YANG)
    return d


def _validate(data, tmp_path, modules):
    path = tmp_path / "psfp.json"
    path.write_text(json.dumps({BRIDGES: data[BRIDGES], NODE: data[NODE]}))
    return validate_file(path, [modules])


@pytest.mark.parametrize("cfg", [_policed(), _policed("sw1"), parse_config(LISTENER, "listener.yaml")],
                         ids=lambda c: c.name)
def test_the_export_validates_against_the_modules_nodes(cfg, tmp_path, modules):
    assert _validate(_json(cfg), tmp_path, modules) == 2


@pytest.mark.parametrize("change, message", [
    (lambda d: _meters(d)[0].update({"committed-information-rate": 4000000}),
     "flow-meter-instance-table[flow-meter-instance-id=11]/committed-information-rate: expected uint64 value"),
    (lambda d: _filters(d)[0].update({"stream-gate-ref": 3}),
     "stream-filter-instance-table[stream-filter-instance-id=11]/stream-gate-ref: instance-required"),
    (lambda d: _meters(d)[0].pop("color-mode"), "flow-meter-instance-table[flow-meter-instance-id=11]: missing-data: expected 'color-mode'"),
])
def test_the_modules_here_catch_what_they_are_for(change, message, tmp_path, modules):
    data = _json(_policed())
    change(data)
    with pytest.raises(UsageError) as err:
        _validate(data, tmp_path, modules)
    assert message in str(err.value), str(err.value)


def test_damaged_filters_and_meters_are_refused_never_crash():
    import random

    rng = random.Random(35)
    shapes = [None, True, -1, 2**70, "x", "18446744073709551616", [], {}, [{}], [[1]], {"a": {}}, 1.5]
    base = _json(_policed())
    for _ in range(600):
        data = copy.deepcopy(base)
        damage(data, rng.choice([p for p in paths(data) if p[:1] in ((BRIDGES,), (NODE,)) and len(p) > 1]),
               rng.choice(shapes))
        refused_or_taken(data)
