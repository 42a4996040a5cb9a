"""`frerlab config export --format yang-json | import | validate`: the export against a compact
schema of the facts frerlab relies on from the IEEE modules, exact round trips of every shipped
configuration, clear refusals of instance data frerlab cannot express, and `validate` through
yangson on a YANG module built here (the IEEE modules cannot be fetched on the test machine)."""

from __future__ import annotations

import copy
import ipaddress
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from frerlab.cli import main
from frerlab.config.yang import export_yang, import_yang
from frerlab.dataplane.config import load_config
from frerlab.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "configs" / "dataplane").glob("*.yaml"))
SID = "ieee802-dot1cb-stream-identification"
FRER = "ieee802-dot1cb-frer"


# ---- the facts, as data: each node with the module node / clause it comes from ----

def leaf(type_, frm, **facts):
    return {"kind": "leaf", "type": type_, "from": frm, **facts}


def leaf_list(type_, frm, **facts):
    return {"kind": "leaf-list", "type": type_, "from": frm, **facts}


def container(children, frm, **facts):
    return {"kind": "container", "children": children, "from": frm, **facts}


def ylist(key, children, frm, **facts):
    return {"kind": "list", "key": key, "children": children, "from": frm, **facts}


def presence(frm):
    return {"kind": "container", "children": {}, "from": frm}


VLAN_TAGGED = ("enum", ("tagged", "priority", "all"))  # sid vlan-tag-identification-type
VID = ("uint16", 0, 4095)  # sid vlan-identifier-type
MAC = ("pattern", r"[0-9a-fA-F]{2}(-[0-9a-fA-F]{2}){5}")  # ieee802-types mac-address
IF_REF = ("ref", "interface")  # ietf-interfaces interface-ref (leafref to interface/name)
HANDLE_REF = ("ref", "handle")  # leafref to /dot1cb-sid:stream-identity/dot1cb-sid:handle
DIRECTION = ("boolean",)  # dot1cb-sid-types:direction (boolean)

SIDE = lambda frm: container({  # noqa: E731  dmac-vlan down/up (9.1.4)
    "destination-mac": leaf(MAC, f"{frm}/destination-mac"),
    "tagged": leaf(VLAN_TAGGED, f"{frm}/tagged"),
    "vlan": leaf(VID, f"{frm}/vlan"),
    "priority": leaf(("uint8", 0, 7), f"{frm}/priority (dot1qtypes:priority-type)"),
}, frm)

SCHEMA = {
    "ietf-interfaces:interfaces": container({
        "interface": ylist(("name",), {
            "name": leaf(("string",), "ietf-interfaces interface/name"),
            "type": leaf(("identityref",), "ietf-interfaces interface/type", mandatory=True),
        }, "ietf-interfaces interfaces/interface (RFC 8343)"),
    }, "ietf-interfaces (the target of if:interface-ref)"),
    f"{SID}:stream-identity": ylist(("index",), {
        "index": leaf(("uint32",), "sid stream-identity/index"),
        "handle": leaf(("uint32",), "sid stream-identity/handle, 9.1.1.1", mandatory=True),
        "in-facing": container({
            "input-port": leaf_list(IF_REF, "sid in-facing/input-port, 9.1.1.4"),
            "output-port": leaf_list(IF_REF, "sid in-facing/output-port, 9.1.1.2"),
        }, "sid stream-identity/in-facing"),
        "out-facing": container({
            "input-port": leaf_list(IF_REF, "sid out-facing/input-port, 9.1.1.5"),
            "output-port": leaf_list(IF_REF, "sid out-facing/output-port, 9.1.1.3"),
        }, "sid stream-identity/out-facing"),
        "null-stream-identification": container({
            "destination-mac": leaf(MAC, "9.1.2.1"), "tagged": leaf(VLAN_TAGGED, "9.1.2.2"),
            "vlan": leaf(VID, "9.1.2.3")}, "sid choice parameters, 9.1.2"),
        "smac-vlan-stream-identification": container({
            "source-mac": leaf(MAC, "9.1.3.1"), "tagged": leaf(VLAN_TAGGED, "9.1.3.2"),
            "vlan": leaf(VID, "9.1.3.3")}, "sid choice parameters, 9.1.3"),
        "dmac-vlan-stream-identification": container({
            "down": SIDE("9.1.4.1-9.1.4.4 down"), "up": SIDE("9.1.4.5-9.1.4.8 up")}, "sid choice parameters, 9.1.4"),
        "ip-stream-identification": container({
            "destination-mac": leaf(MAC, "9.1.5.1"), "tagged": leaf(VLAN_TAGGED, "9.1.5.2"),
            "vlan": leaf(VID, "9.1.5.3 (0: no VLAN tag)"), "ip-source": leaf(("ip",), "9.1.5.4 inet:ip-address"),
            "ip-destination": leaf(("ip",), "9.1.5.5 inet:ip-address"),
            "dscp": leaf(("uint8", 0, 63), "9.1.5.6 inet:dscp (64 = ignore cannot be written: omitted)"),
            "next-protocol": leaf(("enum", ("none", "udp", "tcp", "sctp")), "9.1.5.7"),
            "source-port": leaf(("uint16", 0, 65535), "9.1.5.8 inet:port-number"),
            "destination-port": leaf(("uint16", 0, 65535), "9.1.5.9 inet:port-number"),
        }, "sid choice parameters, 9.1.5"),
    }, "ieee802-dot1cb-stream-identification stream-identity, 9.1", one_of=(
        "null-stream-identification", "smac-vlan-stream-identification", "dmac-vlan-stream-identification",
        "ip-stream-identification")),
    f"{FRER}:frer": container({
        "sequence-generation": ylist(("index",), {
            "index": leaf(("uint32",), "frer sequence-generation/index"),
            "stream": leaf_list(HANDLE_REF, "10.3.1.1", min_elements=1),
            "direction-out-facing": leaf(DIRECTION, "10.3.1.2"),
            "reset": leaf(("boolean",), "10.3.1.3"),
        }, "frer sequence-generation, 10.3"),
        "sequence-recovery": ylist(("index",), {
            "index": leaf(("uint32",), "frer sequence-recovery/index"),
            "stream": leaf_list(HANDLE_REF, "10.4.1.1", min_elements=1),
            "port": leaf_list(IF_REF, "10.4.1.2", min_elements=1),
            "direction-out-facing": leaf(DIRECTION, "10.4.1.3"),
            "reset": leaf(("boolean",), "10.4.1.4", default=False),
            "algorithm": container({"vector": presence("10.4.1.5 vector"), "match": presence("10.4.1.5 match")},
                                   "10.4.1.5 (choice; default Vector_Alg)", one_of=("vector", "match")),
            "history-length": leaf(("uint32", 2, 2**32 - 1), "10.4.1.6 sequence-history-length", default=2),
            "reset-timeout": leaf(("uint32", 0, 2**32 - 1), "10.4.1.7 (ms, no default)"),
            "take-no-sequence": leaf(("boolean",), "10.4.1.9", default=False),
            "individual-recovery": leaf(("boolean",), "10.4.1.10"),
            "latent-error-detection": leaf(("boolean",), "10.4.1.11"),
            "latent-error-detection-parameters": container({
                "difference": leaf(("int32", -2**31, 2**31 - 1), "10.4.1.12.1"),
                "period": leaf(("uint32", 0, 2**32 - 1), "10.4.1.12.2 (ms)", default=2000),
                "paths": leaf(("uint16", 0, 65535), "10.4.1.12.3"),
                "reset-period": leaf(("uint32", 0, 2**32 - 1), "10.4.1.12.4 (ms)", default=30000),
            }, "10.4.1.12"),
        }, "frer sequence-recovery, 10.4"),
        "sequence-identification": ylist(("port", "direction-out-facing"), {
            "stream": leaf_list(HANDLE_REF, "10.5.1.1", min_elements=1),
            "port": leaf(IF_REF, "10.5.1.2"),
            "direction-out-facing": leaf(DIRECTION, "10.5.1.3"),
            "active": leaf(("boolean",), "10.5.1.4"),
            "encapsulation": container({"r-tag": presence("10.5.1.5 r-tag, 7.8")}, "10.5.1.5",
                                       one_of=("r-tag",)),
        }, "frer sequence-identification, 10.5"),
        "stream-split": ylist(("port", "direction-out-facing"), {
            "port": leaf(IF_REF, "10.6.1.1"), "direction-out-facing": leaf(DIRECTION, "10.6.1.2"),
            "input-id": leaf_list(HANDLE_REF, "10.6.1.3", min_elements=1),
            "output-id": leaf_list(HANDLE_REF, "10.6.1.4", min_elements=1),
        }, "frer stream-split, 10.6"),
    }, "ieee802-dot1cb-frer container frer, clause 10"),
}
#: frerlab's own module (frerlab-dataplane.yang): only that its member is there and an object.
FRERLAB_NODE = "frerlab-dataplane:node"


def _check_leaf(type_, value, path, refs):
    kind = type_[0]
    if kind in ("uint8", "uint16", "uint32", "int32"):
        lo, hi = type_[1:] if len(type_) == 3 else {"uint8": (0, 255), "uint16": (0, 65535),
                                                      "uint32": (0, 2**32 - 1), "int32": (-2**31, 2**31 - 1)}[kind]
        assert isinstance(value, int) and not isinstance(value, bool), f"{path}: {value!r} is not a JSON number"
        assert lo <= value <= hi, f"{path}: {value} out of {lo}..{hi}"
    elif kind == "boolean":
        assert isinstance(value, bool), f"{path}: {value!r} is not a JSON boolean"
    elif kind == "enum":
        assert value in type_[1], f"{path}: {value!r} not in {type_[1]}"
    elif kind == "pattern":
        assert isinstance(value, str) and re.fullmatch(type_[1], value), f"{path}: {value!r} !~ {type_[1]}"
    elif kind == "ip":
        ipaddress.ip_address(value)
    elif kind == "identityref":
        assert isinstance(value, str) and ":" in value, f"{path}: {value!r} is not module:identity"
    elif kind == "string":
        assert isinstance(value, str)
    elif kind == "ref":
        assert value in refs[type_[1]], f"{path}: {value!r} refers to no {type_[1]} ({sorted(refs[type_[1]])})"


def check(schema, value, path, refs):
    """Asserts `value` follows `schema` (names, keys, types, ranges, choices, references)."""
    kind = schema["kind"]
    if kind == "leaf":
        _check_leaf(schema["type"], value, path, refs)
    elif kind == "leaf-list":
        assert isinstance(value, list) and len(value) >= schema.get("min_elements", 0), f"{path}: {value!r}"
        assert len(set(map(json.dumps, value))) == len(value), \
            f"{path}: {value!r} repeats a value (RFC 7950 7.7: a configuration leaf-list's values are unique)"
        for item in value:
            _check_leaf(schema["type"], item, path, refs)
    elif kind == "container":
        assert isinstance(value, dict), f"{path}: not an object"
        unknown = set(value) - set(schema["children"])
        assert not unknown, f"{path}: {sorted(unknown)} are not nodes of {schema['from']}"
        if "one_of" in schema:
            assert len(set(value) & set(schema["one_of"])) == 1, f"{path}: exactly one of {schema['one_of']}"
        for name, child in schema["children"].items():
            if child.get("mandatory"):
                assert name in value, f"{path}/{name} is mandatory ({child['from']})"
            if name in value:
                check(child, value[name], f"{path}/{name}", refs)
    elif kind == "list":
        assert isinstance(value, list), f"{path}: not an array"
        keys = [tuple(entry.get(k) for k in schema["key"]) for entry in value]
        assert None not in {k for key in keys for k in key}, f"{path}: an entry lacks its key {schema['key']}"
        assert len(set(keys)) == len(keys), f"{path}: key {schema['key']} not unique: {keys}"
        for entry, key in zip(value, keys):
            check({**schema, "kind": "container"}, entry, f"{path}[{key}]", refs)


def check_export(data):
    refs = {"interface": {i["name"] for i in data["ietf-interfaces:interfaces"]["interface"]},
            "handle": {i["handle"] for i in data.get(f"{SID}:stream-identity", [])}}
    assert set(data) <= {*SCHEMA, FRERLAB_NODE}, f"unknown top-level members {set(data) - {*SCHEMA, FRERLAB_NODE}}"
    for name, value in data.items():
        if name in SCHEMA:
            check(SCHEMA[name], value, f"/{name}", refs)
        else:
            assert isinstance(value, dict)


def _exported(path):
    return json.loads(json.dumps(export_yang(load_config(path))))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_export_follows_the_ieee_modules_names_keys_types_and_ranges(path):
    data = _exported(path)
    check_export(data)
    # frerlab's defaults differ from the modules' (history length 32 vs 2): always written
    for rec in data.get(f"{FRER}:frer", {}).get("sequence-recovery", []):
        assert "history-length" in rec and "algorithm" in rec


def test_the_schema_check_catches_what_it_is_for():
    data = _exported(ROOT / "configs/dataplane/sw2-eliminate.yaml")
    for change, message in [
        (lambda d: d[f"{SID}:stream-identity"][0]["dmac-vlan-stream-identification"]["down"].update(
            {"destination-mac": "02:fe:00:00:00:0b"}), "!~"),
        (lambda d: d[f"{FRER}:frer"]["sequence-recovery"][0].update({"history-length": 1}), "out of 2"),
        (lambda d: d[f"{SID}:stream-identity"][1]["ip-stream-identification"].update({"dscp": 64}), "out of 0..63"),
        (lambda d: d[f"{SID}:stream-identity"][1].update({"index": 1}), "not unique"),
        (lambda d: d[f"{FRER}:frer"]["sequence-recovery"][0].update({"stream": [9]}), "refers to no handle"),
        (lambda d: d[f"{FRER}:frer"]["sequence-recovery"][0].update({"history_length": 3}), "are not nodes"),
        (lambda d: d[f"{FRER}:frer"]["sequence-recovery"][0].update({"port": ["down", "down"]}), "repeats a value"),
    ]:
        bad = copy.deepcopy(data)
        change(bad)
        with pytest.raises(AssertionError, match=message):
            check_export(bad)


def test_absent_leaves_take_the_modules_defaults_on_import():
    data = _exported(ROOT / "configs/dataplane/sw2-eliminate.yaml")
    rec = data[f"{FRER}:frer"]["sequence-recovery"][0]
    rec_schema = SCHEMA[f"{FRER}:frer"]["children"]["sequence-recovery"]["children"]
    for name in ("history-length", "take-no-sequence", "algorithm", "reset-timeout"):
        del rec[name]
    for name in ("period", "reset-period"):
        del rec["latent-error-detection-parameters"][name]
    _, cfg, notes = import_yang(data, "test")
    assert any("reset-timeout: absent" in n and "no timeout" in n for n in notes), notes
    got = cfg.sequence_recovery[0]
    assert got.history_length == rec_schema["history-length"]["default"] == 2
    assert got.take_no_sequence is rec_schema["take-no-sequence"]["default"] is False
    assert got.algorithm == "vector"  # 10.4.1.5: the default is Vector_Alg
    assert got.reset_timeout == "never"  # 10.4.1.7 has no default: no timeout
    params = rec_schema["latent-error-detection-parameters"]["children"]
    assert got.latent_error_detection is True
    assert got.latent_error_detection_parameters.period == params["period"]["default"]
    assert got.latent_error_detection_parameters.reset_period == params["reset-period"]["default"]
    ident = data[f"{SID}:stream-identity"][1]["ip-stream-identification"]
    assert "dscp" not in ident  # 64 (ignore) is outside inet:dscp
    assert import_yang(data, "test")[1].stream_identity[1].ip_stream_identification.dscp == 64


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_yaml_to_yang_json_to_yaml_is_exact(path, tmp_path, capsys):
    json_file, yaml_file = tmp_path / "node.json", tmp_path / "node.yaml"
    assert main(["config", "export", str(path), "--format", "yang-json", "-o", str(json_file)]) == 0
    assert main(["config", "import", str(json_file), "-o", str(yaml_file)]) == 0
    assert load_config(yaml_file).model_dump() == load_config(path).model_dump()
    # and the export of what was imported is the same instance data
    assert _exported(yaml_file) == json.loads(json_file.read_text())


def _sw2():
    return _exported(ROOT / "configs/dataplane/sw2-eliminate.yaml")


def _rec(d):
    return d[f"{FRER}:frer"]["sequence-recovery"][0]


BAD = {
    "organization-specific algorithm": (
        lambda d: _rec(d).update({"algorithm": {"organization-specific": {"type-number": 300, "oui-cid": "00-00-01"}}}),
        f"/{FRER}:frer/sequence-recovery[index=1]/algorithm/organization-specific: an organization-specific "
        "algorithm is not implemented by frerlab's data plane; use vector or match"),
    "two algorithms": (lambda d: _rec(d).update({"algorithm": {"vector": {}, "match": {}}}),
                       "sequence-recovery[index=1]/algorithm: give exactly one of vector, match"),
    "in-facing recovery": (lambda d: _rec(d).update({"direction-out-facing": False}),
                           "sequence-recovery 1: direction-out-facing false (in-facing) is not implemented by the "
                           "data plane"),
    "out-facing generation": (
        lambda d: d[f"{FRER}:frer"].update({"sequence-generation": [
            {"index": 1, "stream": [1], "direction-out-facing": True}]}),
        "sequence-generation 1: direction-out-facing true (out-facing) is not implemented by the data plane"),
    "invalid sequence value in range": (
        lambda d: _rec(d).update({"invalid-sequence-value": 5}),
        "sequence-recovery[index=1]/invalid-sequence-value: 5 is not valid: it is read-only state naming a value no "
        "R-TAG can carry (65536..4294967295; frerlab's is 65536)"),
    "read-only leaf": (lambda d: _rec(d)["algorithm"]["vector"].update({"type-number": "vector"}),
                       "algorithm/vector/type-number: is read-only state (config false)"),
    "reset action": (lambda d: _rec(d).update({"reset": True}),
                     "sequence-recovery[index=1]/reset: true is an action"),
    "latent without difference": (lambda d: _rec(d)["latent-error-detection-parameters"].pop("difference"),
                                  "latent-error-detection-parameters/difference is missing"),
    "history length 1": (lambda d: _rec(d).update({"history-length": 1}),
                         "sequence-recovery.0.history-length: Input should be greater than or equal to 2"),
    "hsr encapsulation": (
        lambda d: d[f"{FRER}:frer"].update({"sequence-identification": [
            {"port": "down", "direction-out-facing": True, "stream": [1], "active": True,
             "encapsulation": {"hsr-sequence-tag": {}}}]}),
        "sequence-identification[port=down]/encapsulation/hsr-sequence-tag: hsr-sequence-tag is not implemented "
        "by frerlab's data plane; use r-tag"),
    "in-facing split": (
        lambda d: d[f"{FRER}:frer"].update({"stream-split": [
            {"port": "down", "direction-out-facing": False, "input-id": [1], "output-id": [1]}]}),
        "stream-split[port=down]/direction-out-facing: false (in-facing) is not implemented"),
    "mask-and-match": (
        lambda d: d[f"{SID}:stream-identity"][0].update({"mask-and-match-stream-identification": {}}),
        "stream-identity[index=1]/mask-and-match-stream-identification: mask-and-match identification (802.1CBdb) "
        "is in frerlab's core but is not implemented by frerlab's data plane"),
    "lan-path-id": (lambda d: d[f"{SID}:stream-identity"][0].update({f"{FRER}:lan-path-id": 1}),
                    f"stream-identity[index=1]/{FRER}:lan-path-id: 1 matches the LanId/PathId of HSR or PRP frames, "
                    "whose encapsulation is not implemented by frerlab's data plane (r-tag only); valid: -1"),
    "path-id-lan-id": (
        lambda d: d[f"{FRER}:frer"].update({"sequence-identification": [
            {"port": "down", "direction-out-facing": True, "stream": [1], "active": True, "path-id-lan-id": 1}]}),
        "sequence-identification[port=down]/path-id-lan-id: path-id-lan-id is used only with the HSR sequence tag "
        "or PRP trailer (10.5.1.6)"),
    "unknown leaf": (lambda d: d[f"{SID}:stream-identity"][1]["ip-stream-identification"].update({"ttl": 1}),
                     "stream-identity[index=2]/ip-stream-identification/ttl: not a node frerlab reads (valid: "
                     "destination-mac, tagged"),
    "unknown module": (lambda d: d.update({"ieee802-dot1ab-lldp:lldp": {}}),
                       "/ieee802-dot1ab-lldp:lldp: not a node frerlab reads (valid: ietf-interfaces:interfaces"),
    "a long key is not echoed": (lambda d: d.update({"s3cret" * 20: {}}),
                                 "/(a name that is not a YANG identifier): not a node frerlab reads"),
    "no interfaces": (lambda d: d.pop("ietf-interfaces:interfaces"),
                      "/ietf-interfaces:interfaces is missing: the node's ports are its interface list"),
    "bad mac": (lambda d: d[f"{SID}:stream-identity"][0]["dmac-vlan-stream-identification"]["down"].update(
        {"destination-mac": "02-FE-00"}), "stream-identity.0.dmac-vlan-stream-identification.down.destination-mac: '02-FE-00' is not a MAC address"),
    "missing key": (lambda d: _rec(d).pop("index"), "sequence-recovery: the list key 'index' is missing"),
}


def test_nodes_that_change_nothing_here_are_accepted():
    """lan-path-id -1 (ignore), invalid-sequence-value at or above RecovSeqSpace (state that
    names frerlab's own), reset false (no effect) and the directions the data plane implements."""
    data = _sw2()
    data[f"{SID}:stream-identity"][0][f"{FRER}:lan-path-id"] = -1
    _rec(data).update({"invalid-sequence-value": 65536, "reset": False, "direction-out-facing": True})
    assert import_yang(data, "test")[1].model_dump() == import_yang(_sw2(), "test")[1].model_dump()


@pytest.mark.parametrize("name", BAD)
def test_instance_data_frerlab_cannot_express_is_refused_naming_the_node(name):
    change, message = BAD[name]
    data = _sw2()
    change(data)
    with pytest.raises(UsageError) as err:
        import_yang(data, "bad.json")
    assert message in str(err.value)


def test_the_command_prints_one_line_and_exits_2(tmp_path, capsys):
    data = _sw2()
    _rec(data)["algorithm"] = {"organization-specific": {}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    assert main(["config", "import", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "algorithm/organization-specific" in err
    path.write_text("{not json")
    assert main(["config", "import", str(path)]) == 2
    assert "not JSON (RFC 7951 instance data) at line 1" in capsys.readouterr().err


# ---- validate, with yangson, against modules the test builds ----

TINY = """module tiny-frer {
  yang-version 1.1;
  namespace "urn:example:tiny-frer";
  prefix tf;
  import tiny-types { prefix tt; }
  revision 2026-01-01;
  identity alg-base;
  identity vector { base alg-base; }
  list sequence-recovery {
    key "index";
    leaf index { type uint32; }
    leaf-list stream { type leafref { path "/tf:stream/tf:handle"; } min-elements 1; }
    leaf history-length { type tt:history; default 2; }
    leaf algorithm { type identityref { base alg-base; } }
  }
  list stream { key "handle"; leaf handle { type uint32; } }
}
"""
TINY_TYPES = """module tiny-types {
  namespace "urn:example:tiny-types";
  prefix tt;
  revision 2025-12-31;
  revision 2025-01-01;
  typedef history { type uint32 { range "2..max"; } }
}
"""
GOOD = {"tiny-frer:stream": [{"handle": 1}],
        "tiny-frer:sequence-recovery": [{"index": 1, "stream": [1], "history-length": 32,
                                         "algorithm": "tiny-frer:vector"}]}


@pytest.fixture
def yang_dir(tmp_path):
    d = tmp_path / "yang"
    d.mkdir()
    (d / "tiny-frer@2026-01-01.yang").write_text(TINY)
    (d / "tiny-types.yang").write_text(TINY_TYPES)
    return d


def _validate(tmp_path, data, yang_dir, capsys):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data))
    rc = main(["config", "validate", str(path), "--yang-dir", str(yang_dir)])
    return rc, capsys.readouterr()


def test_validate_accepts_good_data_and_rejects_bad_data_with_yangson(tmp_path, yang_dir, capsys):
    rc, out = _validate(tmp_path, GOOD, yang_dir, capsys)
    assert rc == 0 and "valid configuration data (2 top-level members)" in out.out
    for change, message in [
        (lambda d: d["tiny-frer:sequence-recovery"][0].update({"history-length": 1}), "not in range"),
        (lambda d: d["tiny-frer:sequence-recovery"][0].update({"stream": [7]}), "SemanticError"),
        (lambda d: d["tiny-frer:sequence-recovery"][0].update({"history": 3}), "history"),
        (lambda d: d["tiny-frer:sequence-recovery"][0].update({"algorithm": "tiny-frer:match"}), "YangTypeError"),
        (lambda d: d["tiny-frer:sequence-recovery"][0].update({"stream": []}), "too-few-elements"),
    ]:
        bad = copy.deepcopy(GOOD)
        change(bad)
        rc, out = _validate(tmp_path, bad, yang_dir, capsys)
        assert rc == 2 and message in out.err and out.err.count("\n") == 1, (message, out.err)


def test_validate_checks_frerlabs_own_module_and_names_a_missing_one(tmp_path, yang_dir, capsys):
    node = {"frerlab-dataplane:node": _sw2()["frerlab-dataplane:node"]}
    rc, out = _validate(tmp_path, node, yang_dir, capsys)
    assert rc == 0, out.err
    node["frerlab-dataplane:node"]["port-settings"] = [{"port": "pa", "pvid": 5000}]
    rc, out = _validate(tmp_path, node, yang_dir, capsys)
    assert rc == 2 and "/frerlab-dataplane:node/port-settings[port=pa]/pvid: invalid-type: not in range" in out.err
    rc, out = _validate(tmp_path, _sw2(), yang_dir, capsys)
    assert rc == 2 and "YANG module ietf-interfaces is not in" in out.err
    rc = main(["config", "validate", str(tmp_path / "data.json"), "--yang-dir", str(tmp_path / "none")])
    assert rc == 2 and "is not a directory" in capsys.readouterr().err


def test_registering_the_config_verbs_loads_no_yang_library():
    code = ("import sys; from frerlab.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('yangson', 'frerlab.config.yang', 'frerlab.config.lan966x') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def paths(data, path=()):
    """Every path of members and list positions in `data`, `()` (the whole) first."""
    yield path
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from paths(value, (*path, key))


def damage(data, path: tuple, shape) -> None:
    """Replaces the member of `data` at `path` with a copy of `shape`."""
    *parent, last = path
    for key in parent:
        data = data[key]
    data[last] = copy.deepcopy(shape)


def refused_or_taken(data) -> None:
    """Imports `data`: a UsageError is the only failure allowed."""
    try:
        import_yang(data, "damaged.json")
    except UsageError:
        pass


def test_damaged_instance_data_is_refused_never_crashes():
    import random

    rng = random.Random(15)
    shapes = [None, True, -1, 2**40, "x", [], {}, [{}], [[1]], {"a": {}}, 1.5, "02-FE", [{"index": []}]]
    bases = [_exported(p) for p in SHIPPED]
    for _ in range(1500):
        data = copy.deepcopy(rng.choice(bases))
        for _ in range(rng.randint(1, 2)):
            damage(data, rng.choice(list(paths(data))[1:]), rng.choice(shapes))
        refused_or_taken(data)


def test_identification_split_pvids_ipv6_and_dscp_round_trip_and_follow_the_schema(tmp_path):
    from frerlab.dataplane.config import parse_config

    data = {"name": "talker1", "ports": ["up", "pa", "pb"], "port-settings": [{"port": "up", "pvid": 5}],
            "stream-identity": [
                {"index": 1, "handle": 1, "out-facing": {"input-port": ["up"]},
                 "ip-stream-identification": {"ip-destination": "2001:db8::2", "next-protocol": "udp", "dscp": 46}},
                *({"index": i, "handle": i, "out-facing": {"output-port": ["pa"]},
                   "dmac-vlan-stream-identification": {
                       "down": {"destination-mac": f"02:00:00:00:00:0{i}", "vlan": 10 * i},
                       "up": {"destination-mac": "02:00:00:00:00:01", "vlan": 0}}} for i in (2, 3))],
            "sequence-generation": [{"index": 1, "stream": [1]}],
            "sequence-identification": [{"port": ["pa", "pb"], "stream": [1], "active": True}],
            "stream-split": [{"port": "pa", "input-id": [1], "output-id": [2, 3]}],
            "stream-forwarding": [{"stream": 1, "output-port": ["pa", "pb"]}]}
    cfg = parse_config(data, "test")
    exported = json.loads(json.dumps(export_yang(cfg)))
    check_export(exported)
    assert [e["port"] for e in exported[f"{FRER}:frer"]["sequence-identification"]] == ["pa", "pb"]
    assert import_yang(exported, "test")[1].model_dump() == cfg.model_dump()
