"""Issue 32, YANG interop: every configuration the YAML accepts exports data that follows the
IEEE modules (the facts of test_config_yang.SCHEMA) and frerlab's own module (yangson); the
validator loads augmenting modules, reads module-qualified names and turns any failure of
yangson into one line with a path of module names and list keys; a plain IEEE document (no
frerlab-dataplane:node) comes in; recovery of every frame is placed where the standard's
per-port functions see every copy; import says where a value is frerlab's limit rather than the
model's, and which leaves without a default in the model it filled in. The IEEE modules cannot
be shipped: the documents and the small modules `validate` is run on are written here."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path

import pytest
from test_config_yang import FRER, ROOT, SHIPPED, SID, check_export

from frerlab.cli import main
from frerlab.config.yang import FRER_MODULE, INTERFACES, NODE, SID_MODULE, export_yang, import_yang, validate_file
from frerlab.dataplane.config import load_config, parse_config
from frerlab.errors import UsageError
from frerlab.testbed.plan import ELIMINATE_AT, REPLICATE_AT, node_configs


def _sw2():
    return json.loads(json.dumps(export_yang(load_config(ROOT / "configs/dataplane/sw2-eliminate.yaml"))))


def _node_is_valid(data: dict, tmp_path: Path) -> None:
    """frerlab's own member of `data` validates against frerlab-dataplane.yang with yangson."""
    empty = tmp_path / "no-modules"
    empty.mkdir(exist_ok=True)
    path = tmp_path / "node.json"
    path.write_text(json.dumps({NODE: data[NODE]}))
    validate_file(path, [empty])


#: A talker with one NIC sending a copy per path, each with its own VLAN: the way to send two
#: copies out of one port (docs/dataplane.md, stream-split).
TALKER = {
    "name": "talker", "ports": ["t0"],
    "stream-identity": [
        {"index": 1, "handle": 1, "in-facing": {"input-port": ["t0"]},
         "ip-stream-identification": {"ip-destination": "198.18.0.2", "next-protocol": "udp"}},
        *({"index": 10 + i, "handle": 10 + i, "out-facing": {"output-port": ["t0"]},
           "dmac-vlan-stream-identification": {"down": {"destination-mac": "02:fe:00:00:00:02", "vlan": 10 * i},
                                               "up": {"destination-mac": "02:fe:00:00:00:02", "vlan": 0}}}
          for i in (1, 2))],
    "sequence-generation": [{"index": 1, "stream": [1]}],
    "sequence-identification": [{"port": ["t0"], "stream": [1]}],
    "stream-split": [{"port": "t0", "input-id": [1], "output-id": [11, 12]}],
    "stream-forwarding": [{"stream": 1, "output-port": ["t0"]}],
}


# ---- 1. every configuration the YAML accepts exports valid data ----

def test_two_copies_out_of_one_port_are_refused_naming_the_split(tmp_path):
    """Why: `output-port: [t0, t0]` was accepted and exported as a repeated leaf-list value,
    which `config validate` rejected (repeated-leaf-list-value)."""
    data = copy.deepcopy(TALKER)
    del data["stream-split"]
    data["stream-forwarding"] = [{"stream": 1, "output-port": ["t0", "t0"]}]
    with pytest.raises(UsageError, match=r"stream-forwarding\.0\.output-port: output-port t0 is listed twice; a stream "
                                         r"leaves a port once.*split it there: stream-split"):
        parse_config(data, "talker.yaml")
    exported = json.loads(json.dumps(export_yang(parse_config(TALKER, "talker.yaml"))))
    check_export(exported)  # the split: one port, one copy per member
    _node_is_valid(exported, tmp_path)
    assert exported[NODE]["stream-forwarding"] == [{"stream": 1, "output-port": ["t0"]}]


#: Lists the export writes as YANG leaf-lists, each given a repeated value (a repeated port also
#: set the wrong port's bit: the data plane adds 1 << port).
REPEATS = {
    "bridge-ports": lambda d: d.update({"bridge-ports": ["t0", "t0"]}),
    "in-facing input-port": lambda d: d["stream-identity"][0]["in-facing"].update({"input-port": ["t0", "t0"]}),
    "sequence-generation stream": lambda d: d["sequence-generation"][0].update({"stream": [1, 1]}),
    "sequence-identification stream": lambda d: d["sequence-identification"][0].update({"stream": [1, 1]}),
    "sequence-identification port": lambda d: d["sequence-identification"][0].update({"port": ["t0", "t0"]}),
    "stream-split output-id": lambda d: d["stream-split"][0].update({"output-id": [11, 11]}),
}


@pytest.mark.parametrize("name", REPEATS)
def test_a_value_repeated_in_a_list_is_refused_naming_it(name):
    data = copy.deepcopy(TALKER)
    REPEATS[name](data)
    with pytest.raises(UsageError, match=r"(port t0|stream 1|stream 11) is listed twice; list each (port|stream) once"):
        parse_config(data, "talker.yaml")


def test_sequence_identification_entries_of_one_port_become_its_one_entry():
    data = copy.deepcopy(TALKER)
    data["stream-identity"].append({**copy.deepcopy(data["stream-identity"][0]), "index": 2, "handle": 2})
    data["stream-identity"][-1]["ip-stream-identification"]["destination-port"] = 5
    data["sequence-generation"][0]["stream"] = [1, 2]
    data["sequence-identification"].append({"port": ["t0"], "stream": [2, 1]})
    data["stream-forwarding"].append({"stream": 2, "output-port": ["t0"]})
    exported = json.loads(json.dumps(export_yang(parse_config(data, "talker.yaml"))))
    check_export(exported)
    assert exported[f"{FRER}:frer"]["sequence-identification"] == [
        {"port": "t0", "direction-out-facing": True, "stream": [1, 2], "active": True, "encapsulation": {"r-tag": {}}}]
    data["sequence-identification"][-1] = {"port": ["t0"], "stream": [2], "active": False}
    cfg = parse_config(data, "talker.yaml")  # the data plane encodes per stream
    with pytest.raises(UsageError, match=r"sequence-identification: port t0 encodes streams \[1\] with active true and "
                                         r"\[2\] with active false; IEEE's list has one entry per port and direction"):
        export_yang(cfg)


def test_a_frame_rate_finer_than_the_export_holds_is_refused_by_the_yaml():
    data = json.loads(json.dumps(TALKER))
    data["sequence-recovery"] = [{"index": 1, "stream": [1], "take-no-sequence": True, "frame-rate": 0.0004}]
    with pytest.raises(UsageError, match=r"frame-rate 0.0004 has more than 3 decimal places"):
        parse_config(data, "talker.yaml")
    data["sequence-recovery"][0]["frame-rate"] = 1234.5
    assert export_yang(parse_config(data, "talker.yaml"))[NODE]["frame-rate"] == [{"index": 1, "frame-rate": "1234.5"}]


def _leaf_lists(data, path=()):
    """Paths of the lists of names or numbers in a configuration (the YAML of leaf-lists)."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        if isinstance(value, list) and value and all(isinstance(v, (int, str)) for v in value):
            yield (*path, key)
        else:
            yield from _leaf_lists(value, (*path, key))


def test_every_configuration_the_yaml_accepts_exports_valid_data_or_is_refused_by_name(tmp_path):
    """Configurations changed at random (a value repeated in a list, one more entry of a
    port's sequence identification, a finer frame rate): whatever the YAML accepts exports
    data that follows the modules and frerlab's own, or is refused naming what IEEE's lists
    cannot hold."""
    import yaml

    rng = random.Random(32)
    bases = [yaml.safe_load(p.read_text()) for p in SHIPPED] + [TALKER]
    checked = 0
    for _ in range(120):
        data = copy.deepcopy(rng.choice(bases))
        change = rng.randrange(3)
        if change == 0:
            *parent, last = rng.choice(list(_leaf_lists(data)))
            target = data
            for key in parent:
                target = target[key]
            target[last] = [*target[last], rng.choice(target[last])]
        elif change == 1 and data.get("stream-identity"):
            handle = rng.choice(data["stream-identity"])["handle"]
            data.setdefault("sequence-identification", []).append(
                {"port": [rng.choice(data["ports"])], "stream": [handle], "active": rng.random() < 0.5})
        else:
            for rec in data.get("sequence-recovery", []):
                rec["frame-rate"] = rng.choice([0.0004, 1 / 3, 12.5, 200000])
        try:
            cfg = parse_config(data, "random.yaml")
        except UsageError:
            continue
        try:
            exported = json.loads(json.dumps(export_yang(cfg)))
        except UsageError as err:
            assert "IEEE's list has one entry per port and direction" in str(err), err
            continue
        check_export(exported)
        _node_is_valid(exported, tmp_path)
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("replicate", REPLICATE_AT)
@pytest.mark.parametrize("eliminate", ELIMINATE_AT)
def test_the_testbeds_configurations_export_valid_data(replicate, eliminate, tmp_path):
    for mode in ("frer", "control"):
        for role, cfg in node_configs(mode, replicate, eliminate).items():
            exported = json.loads(json.dumps(export_yang(cfg)))
            check_export(exported)
            _node_is_valid(exported, tmp_path)
            assert import_yang(exported, role)[1].model_dump() == cfg.model_dump()


# ---- 2. the validator: augmenting modules, qualified names, every failure, readable paths ----

LONG = "example-stream-identification-for-tests"  # longer than the 32 characters a message shows of a text
AUGMENT = "example-mask-and-match-augmentation"
BASE_MODULE = f"""module {LONG} {{
  yang-version 1.1;
  namespace "urn:example:sid";
  prefix sid;
  revision 2026-01-01;
  list stream-identity {{
    key "index";
    leaf index {{ type uint32; }}
    leaf handle {{ type uint32; mandatory true; }}
    choice parameters {{
      mandatory true;
      container null-stream-identification {{ leaf vlan {{ type uint16 {{ range "0..4095"; }} }} }}
      container smac-vlan-stream-identification {{ leaf vlan {{ type uint16 {{ range "0..4095"; }} }} }}
    }}
  }}
}}
"""
AUGMENTING_MODULE = f"""module {AUGMENT} {{
  yang-version 1.1;
  namespace "urn:example:mm";
  prefix mm;
  import {LONG} {{ prefix sid; }}
  revision 2026-01-02;
  augment "/sid:stream-identity/sid:parameters" {{
    container mask-and-match-stream-identification {{
      leaf msdu-mask-length {{ type uint16 {{ range "2..1024"; }} mandatory true; }}
    }}
  }}
}}
"""


def _mask_and_match(**params):
    """Two identities: 7 of the augmenting module's mask-and-match kind, 8 of the base's null kind."""
    return {f"{LONG}:stream-identity": [
        {"index": 7, "handle": 1, f"{AUGMENT}:mask-and-match-stream-identification": {"msdu-mask-length": 4, **params}},
        {"index": 8, "handle": 1, "null-stream-identification": {"vlan": 10}}]}


@pytest.fixture
def modules(tmp_path):
    d = tmp_path / "modules"
    d.mkdir()
    (d / f"{LONG}@2026-01-01.yang").write_text(BASE_MODULE)
    (d / f"{AUGMENT}.yang").write_text(AUGMENTING_MODULE)
    return d


def _validate(tmp_path, data, modules, capsys):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data))
    rc = main(["config", "validate", str(path), "--yang-dir", str(modules)])
    out = capsys.readouterr()
    assert out.err.count("\n") == (rc != 0), out.err
    return rc, out


def test_validate_loads_the_module_that_augments_and_reads_its_qualified_names(tmp_path, modules, capsys):
    """Why: a valid mask-and-match document was rejected (RawMemberError): the YANG library
    held no module that augments another."""
    rc, out = _validate(tmp_path, _mask_and_match(), modules, capsys)
    assert rc == 0, out.err
    rc, out = _validate(tmp_path, _mask_and_match(**{"msdu-mask-length": 1}), modules, capsys)
    assert rc == 2 and (f"not valid against the YANG modules: /{LONG}:stream-identity[index=7]/{AUGMENT}:"
                        "mask-and-match-stream-identification/msdu-mask-length: invalid-type: not in range "
                        "(YangTypeError)") in out.err, out.err


@pytest.mark.parametrize("index, change, where, what", [
    (8, lambda e: e.pop("null-stream-identification"), "",
     "missing-data: the mandatory choice parameters has none of its cases (null-stream-identification, "
     f"smac-vlan-stream-identification, {AUGMENT}:mask-and-match-stream-identification) (TypeError in yangson)"),
    (7, lambda e: e.update({"handle": "one"}), "/handle", "expected uint32 value (RawTypeError)"),
    (8, lambda e: e.update({"bogus": 1}), "/bogus", "no node of the loaded modules has this name (RawMemberError)"),
    (7, lambda e: e.update({"s3cret" * 20: 1}), "/(a name that is not a YANG identifier)",
     "no node of the loaded modules has this name (RawMemberError)"),
])
def test_validate_names_the_node_by_module_names_and_list_keys(tmp_path, modules, capsys, index, change, where, what):
    """Why: a missing identification kind ended in yangson's TypeError, and paths showed
    "(a text of 52 characters)" where a module name belongs."""
    data = _mask_and_match()
    change(data[f"{LONG}:stream-identity"][index - 7])
    rc, out = _validate(tmp_path, data, modules, capsys)
    assert rc == 2 and f"/{LONG}:stream-identity[index={index}]{where}: {what}" in out.err, out.err
    assert "(a text of" not in out.err and "s3cret" not in out.err


def test_validate_turns_any_failure_of_yangson_into_one_line(tmp_path, modules, capsys, monkeypatch):
    import yangson
    from yangson.instance import InstanceNode

    def fail(self, *args, **kwargs):
        raise RuntimeError("yangson broke")

    monkeypatch.setattr(InstanceNode, "validate", fail)
    rc, out = _validate(tmp_path, _mask_and_match(), modules, capsys)
    assert rc == 2 and "not valid against the YANG modules: /: yangson could not check this node (RuntimeError in " \
                       "yangson)" in out.err, out.err
    monkeypatch.setattr(yangson, "DataModel", lambda *args: fail(None))
    rc, out = _validate(tmp_path, _mask_and_match(), modules, capsys)
    assert rc == 2 and "cannot be loaded: RuntimeError: yangson broke" in out.err


def test_validate_names_a_module_that_a_qualified_member_needs(tmp_path, modules, capsys):
    (modules / f"{AUGMENT}.yang").unlink()
    rc, out = _validate(tmp_path, _mask_and_match(), modules, capsys)
    assert rc == 2 and f"YANG module {AUGMENT} is not in {modules}" in out.err


def _qualified(value, module):
    """`value` with every member name qualified by its module (allowed by yangson; RFC 7951
    writes only names whose module changes so)."""
    if isinstance(value, list):
        return [_qualified(v, module) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for name, item in value.items():
        mod, _, local = name.rpartition(":")
        out[f"{mod or module}:{local}"] = _qualified(item, mod or module)
    return out


def test_import_reads_module_qualified_names():
    data = _sw2()
    assert import_yang(_qualified(data, None), "q.json")[1].model_dump() == import_yang(data, "s.json")[1].model_dump()
    data[f"{SID}:stream-identity"][0]["handle"] = 1
    data[f"{SID}:stream-identity"][0][f"{SID}:handle"] = 1
    with pytest.raises(UsageError, match="/handle: given twice"):
        import_yang(data, "twice.json")


def test_a_qualified_mask_and_match_identity_is_refused_naming_its_entry():
    """Why: written as RFC 7951 requires, with the name of the module that adds it, it was
    refused as "not a node frerlab reads", without the entry's index."""
    data = _sw2()
    ident = data[f"{SID}:stream-identity"][0]
    del ident["dmac-vlan-stream-identification"]
    ident["ieee802-dot1cb-mask-and-match:mask-and-match-stream-identification"] = {"msdu-mask-length": 2}
    with pytest.raises(UsageError) as err:
        import_yang(data, "mm.json")
    assert str(err.value).startswith(
        f"/{SID}:stream-identity[index=1]/ieee802-dot1cb-mask-and-match:mask-and-match-stream-identification: "
        "mask-and-match identification (802.1CBdb) is in frerlab's core but is not implemented by frerlab's data plane; "
        "use one of null-stream-identification")


# ---- 3. a plain IEEE document ----

#: A relay eliminating the two copies of stream 1 towards `down`, as a switch's configuration
#: read over NETCONF holds it: ieee802-dot1cb-stream-identification, ieee802-dot1cb-frer and the
#: interfaces they refer to, no frerlab-dataplane:node; leaves without a default left out where
#: a device may leave them out.
PLAIN = {
    INTERFACES: {"interface": [{"name": p, "type": "iana-if-type:ethernetCsmacd"} for p in ("pa", "pb", "down")]},
    f"{SID_MODULE}:stream-identity": [
        {"index": 1, "handle": 1, "out-facing": {"input-port": ["pb"]},
         "dmac-vlan-stream-identification": {
             "down": {"destination-mac": "02-FE-00-00-00-0B", "tagged": "tagged", "vlan": 20},
             "up": {"destination-mac": "02-FE-00-00-00-02", "vlan": 0}}},
        {"index": 2, "handle": 1, "out-facing": {"input-port": ["pa"]},
         "ip-stream-identification": {"ip-destination": "198.18.0.2", "next-protocol": "udp"}}],
    f"{FRER_MODULE}:frer": {"sequence-recovery": [
        {"index": 1, "stream": [1], "port": ["down"], "algorithm": {"vector": {}}, "history-length": 32,
         "reset-timeout": 100, "latent-error-detection": False}]},
}


def test_a_plain_ieee_document_asks_for_the_forwarding_it_lacks():
    """Why: a document without frerlab's node member could not be imported at all ("no
    stream-forwarding entry"), without saying how to give it."""
    with pytest.raises(UsageError, match=r"plain.json: stream 1 is not forwarded: 802.1CB leaves forwarding to the bridge "
                                         r"and the data has no /frerlab-dataplane:node/stream-forwarding entry for it; "
                                         r"give the ports its frames leave by with --forward 1=PORT\[,PORT...\]"):
        import_yang(copy.deepcopy(PLAIN), "plain.json")


def test_a_plain_ieee_document_comes_in_with_forward(tmp_path, capsys):
    path, out = tmp_path / "plain.json", tmp_path / "node.yaml"
    path.write_text(json.dumps(PLAIN))
    assert main(["config", "import", str(path), "--forward", "1=down", "-o", str(out)]) == 0
    notes = capsys.readouterr().err
    cfg = load_config(out)
    assert [(i.index, i.handle, i.types()) for i in cfg.stream_identity] == [
        (1, 1, ["dmac_vlan_stream_identification"]), (2, 1, ["ip_stream_identification"])]
    rec = cfg.sequence_recovery[0]
    assert (rec.port, rec.history_length, rec.reset_timeout, rec.direction_out_facing) == (["down"], 32, 100, True)
    assert [(f.stream, f.output_port) for f in cfg.stream_forwarding] == [(1, ["down"])]
    # what the model leaves open and frerlab filled in is said, once per node
    for where, taken in [
        (f"/{SID}:stream-identity[index=1]/dmac-vlan-stream-identification/up", "tagged tagged"),
        (f"/{SID}:stream-identity[index=2]/ip-stream-identification", "tagged all, ip-source 0.0.0.0"),
        (f"/{FRER}:frer/sequence-recovery[index=1]", "direction-out-facing true, individual-recovery false"),
    ]:
        assert f"note: {where}: absent, and without a default in the model, so frerlab's value is taken: {taken}" \
            in notes, notes
    assert notes.count("note: ") == 3


@pytest.mark.parametrize("forward, message", [
    (["1"], "--forward '1' is not STREAM=PORT[,PORT...]"),
    (["1=down,"], "--forward '1=down,' is not STREAM=PORT[,PORT...]"),
    (["1=down", "1=pa"], "--forward: stream 1 is given twice"),
])
def test_forward_is_checked(tmp_path, capsys, forward, message):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(PLAIN))
    assert main(["config", "import", str(path), *(f"--forward={f}" for f in forward)]) == 2
    assert message in capsys.readouterr().err


def test_forward_does_not_override_the_documents_forwarding():
    with pytest.raises(UsageError, match=r"--forward 1=pa: sw2.json already forwards stream 1"):
        import_yang(_sw2(), "sw2.json", {1: ["pa"]})


# ---- 4. placement, vlan 0, frerlab's limits, defaults ----

def test_recovery_of_every_frame_is_placed_on_the_ports_the_stream_leaves_by():
    """Why: it was exported on the ingress ports (sw2: pa, pb), where a standard device's
    function on each port sees one path and eliminates nothing. Placed on the output port,
    each function sees every copy sent there (10.4.1.2); imported without frerlab's module
    it is the data plane's recovery function on that port, which does the same."""
    data = _sw2()
    assert data[f"{FRER}:frer"]["sequence-recovery"][0]["port"] == ["down"]
    assert data[NODE]["every-frame-recovery"] == [1]
    assert import_yang(data, "sw2.json")[1].sequence_recovery[0].port == []  # frerlab's module: one function
    del data[NODE]
    cfg = import_yang(data, "sw2.json", {1: ["down"]})[1]
    assert cfg.sequence_recovery[0].port == ["down"]
    assert [(r.instance, r.ports) for r in cfg.plan.recoveries] == [(1 + cfg.ports.index("down"), ["down"])]


def test_recovery_of_every_frame_delivered_to_this_host_is_noted(tmp_path, capsys):
    path = ROOT / "configs/dataplane/listener-two-nics.yaml"
    notes = []
    data = export_yang(load_config(path), notes)
    assert data[f"{FRER}:frer"]["sequence-recovery"][2]["port"] == ["l0a", "l0b"]
    assert notes == [
        "sequence-recovery 3: one function for every frame of stream 1 delivered to this host has no place on one port "
        "in 802.1CB (10.4.1.2); written on the ports that identify it (l0a, l0b), with "
        "frerlab-dataplane:node/every-frame-recovery naming it: a device that does not read frerlab's module places "
        "one function on each of them, which eliminates nothing across them"]
    assert main(["config", "export", str(path), "--format", "yang-json", "-o", str(tmp_path / "l.json")]) == 0
    assert capsys.readouterr().err == f"note: {notes[0]}\n"


def _ip(data):
    return data[f"{SID}:stream-identity"][1]["ip-stream-identification"]


def test_vlan_0_of_ip_identification_is_written_only_where_it_means_no_vlan_tag():
    """Why: IP identification was exported with `vlan 0` and `tagged: all`; the module
    defines vlan 0 of this type as "the frame is not to have a VLAN tag" (9.1.5.3)."""
    data = _sw2()
    assert "vlan" not in _ip(data) and _ip(data)["tagged"] == "all"  # frerlab's 0: any VID
    assert import_yang(data, "sw2.json")[1].stream_identity[1].ip_stream_identification.vlan == 0
    yaml_data = {"ports": ["p0"], "stream-identity": [
        {"index": 1, "handle": 1, "out-facing": {"input-port": ["p0"]},
         "ip-stream-identification": {"ip-destination": "198.18.0.2", "tagged": "priority", "vlan": 0}}],
        "stream-forwarding": [{"stream": 1, "output-port": ["local"]}]}
    exported = export_yang(parse_config(yaml_data, "untagged.yaml"))
    assert exported[f"{SID}:stream-identity"][0]["ip-stream-identification"]["vlan"] == 0  # no VLAN tag
    _ip(data).update({"vlan": 0})
    _, cfg, notes = import_yang(data, "sw2.json")
    ip = cfg.stream_identity[1].ip_stream_identification
    assert (ip.tagged, ip.vlan) == ("priority", 0)
    assert notes == [f"/{SID}:stream-identity[index=2]/ip-stream-identification/vlan: 0 means the frame is not to have "
                     "a VLAN tag (9.1.5.3): read as tagged: priority (untagged or priority-tagged frames); leave vlan "
                     "out to ignore the VID"]
    _ip(data).update({"tagged": "tagged"})
    with pytest.raises(UsageError, match=r"ip-stream-identification/vlan: 0 means the frame is not to have a VLAN tag "
                                         r"\(9.1.5.3\), and tagged: tagged that it must have one, so no frame matches"):
        import_yang(data, "sw2.json")


def _rec(data):
    return data[f"{FRER}:frer"]["sequence-recovery"][0]


@pytest.mark.parametrize("leaf, value, message", [
    ("difference", -1, "latent-error-detection-parameters/difference: -1 is valid in the model (-2147483648.."
                       "2147483647) but outside frerlab's range 0..2147483647"),
    ("paths", 1, "latent-error-detection-parameters/paths: 1 is valid in the model (0..65535) but outside frerlab's "
                 "range 2..8"),
    ("paths", 9, "paths: 9 is valid in the model (0..65535) but outside frerlab's range 2..8"),
    ("period", 0, "period: 0 is valid in the model (0..4294967295) but outside frerlab's range 1..4294967295"),
    ("reset-timeout", 0, "sequence-recovery[index=1]/reset-timeout: 0 is valid in the model (0..4294967295) but "
                         "outside frerlab's range 1..4294967295: frerlab refuses a timeout of 0 ms"),
    ("history-length", 2000, "sequence-recovery[index=1]/history-length: 2000 is valid in the model (2..4294967295) "
                             "but outside frerlab's range 2..1024: the longest history"),
])
def test_values_the_model_allows_are_refused_as_frerlabs_limit(leaf, value, message):
    """Why: import refused a negative latent difference, paths outside 2..8, reset-timeout 0
    and history-length above 1024 as if the model did not allow them."""
    data = _sw2()
    target = _rec(data) if leaf in ("reset-timeout", "history-length") else _rec(data)["latent-error-detection-parameters"]
    target[leaf] = value
    with pytest.raises(UsageError) as err:
        import_yang(data, "sw2.json")
    assert message in str(err.value)


#: The leaves of each exported node that the modules leave without a default (their absence
#: says nothing a device must assume): always written.
NO_DEFAULT = {
    "sequence-recovery": ("direction-out-facing", "individual-recovery", "latent-error-detection"),
    "sequence-generation": ("direction-out-facing",),
    "sequence-identification": ("direction-out-facing", "active", "encapsulation"),
    "stream-split": ("direction-out-facing",),
    "null-stream-identification": ("tagged", "vlan"),
    "smac-vlan-stream-identification": ("tagged", "vlan"),
    "ip-stream-identification": ("tagged", "ip-source", "ip-destination", "next-protocol", "source-port",
                                 "destination-port"),
    "down": ("tagged", "vlan"),
    "up": ("tagged", "vlan"),
}


def _nodes(data, name=None):
    if isinstance(data, dict):
        if name in NO_DEFAULT:
            yield name, data
        for key, value in data.items():
            yield from _nodes(value, key)
    elif isinstance(data, list):
        for item in data:
            yield from _nodes(item, name)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_export_writes_what_the_model_leaves_open_and_its_import_notes_nothing(path):
    data = json.loads(json.dumps(export_yang(load_config(path))))
    for name, node in _nodes(data):
        assert set(NO_DEFAULT[name]) <= set(node), (name, node)
    assert import_yang(data, path.name)[2] == []


def test_an_absent_leaf_without_a_default_is_reported_not_silently_assumed():
    """Why: an absent `direction-out-facing` was read as frerlab's fixed value without saying so."""
    data = _sw2()
    del _rec(data)["direction-out-facing"]
    data[f"{FRER}:frer"]["sequence-identification"] = [{"port": "down", "direction-out-facing": True, "stream": [1]}]
    _, cfg, notes = import_yang(data, "sw2.json")
    assert notes == [
        f"/{FRER}:frer/sequence-recovery[index=1]: absent, and without a default in the model, so frerlab's value is "
        "taken: direction-out-facing true",
        f"/{FRER}:frer/sequence-identification[port=down]/encapsulation: absent, and the choice has no default in "
        "the model: r-tag, the only one frerlab implements",
        f"/{FRER}:frer/sequence-identification[port=down]: absent, and without a default in the model, so frerlab's "
        "value is taken: active true"]
    assert cfg.sequence_recovery[0].direction_out_facing is True and cfg.sequence_identification[0].active is True
    talker = json.loads(json.dumps(export_yang(parse_config(TALKER, "talker.yaml"))))
    del talker[f"{FRER}:frer"]["sequence-generation"][0]["direction-out-facing"]
    assert import_yang(talker, "talker.json")[2] == [
        f"/{FRER}:frer/sequence-generation[index=1]: absent, and without a default in the model, so frerlab's value "
        "is taken: direction-out-facing false"]


# ---- 5. docs/config.md: the module set a user downloads, by the documented command ----

#: What `validate` needs for an export: the modules it names (ietf-interfaces,
#: iana-if-type, the two IEEE modules) and what they import (read from the published modules:
#: sid imports ieee802-types, ieee802-dot1q-types, ietf-inet-types, ietf-interfaces and the
#: sid types; frer also ieee802-dot1cb-frer-types; dot1q-types and ietf-interfaces import
#: ietf-yang-types; iana-if-type imports ietf-interfaces), each under the name it is published
#: by (standard/ieee/published/802.1 and 802, standard/ietf/RFC of the YangModels repository).
MODULE_FILES = {
    "ieee802-dot1cb-frer.yang", "ieee802-dot1cb-frer-types.yang", "ieee802-dot1cb-stream-identification.yang",
    "ieee802-dot1cb-stream-identification-types.yang", "ieee802-dot1q-types.yang", "ieee802-types.yang",
    "ietf-interfaces@2018-02-20.yang", "ietf-inet-types@2013-07-15.yang", "ietf-yang-types@2013-07-15.yang",
    "iana-if-type@2014-05-08.yang",
}


def _section(text: str, title: str) -> str:
    """The part of markdown `text` under heading `title`, down to the next heading of its level or above."""
    start = text.index(title)
    level = len(title) - len(title.lstrip("#"))
    end = re.compile(rf"\n#{{1,{level}}} ").search(text, start + len(title))
    return text[start:end.start() if end else None]


def test_the_documented_commands_fetch_the_modules_an_export_needs_by_their_published_names():
    """Why: docs/config.md named iana-if-type.yang (published as iana-if-type@2014-05-08.yang)
    and called ieee802-dot1cb-frer-types missing."""
    text = (ROOT / "docs/config.md").read_text()
    section = _section(text, "### Validating against the real IEEE modules")
    copied = {Path(name).name for line in section.splitlines() if line.strip().startswith("cp ")
              for name in re.findall(r"[\w./@-]+\.yang", line)}
    assert copied == MODULE_FILES
    assert "frerlab config validate sw2.json --yang-dir ieee-yang" in section
    assert "was not in the snapshot" not in section


def test_the_lan966x_mapping_says_which_identities_become_is1_rules():
    """Why: docs/config.md said in-facing input-port identities become IS1 ingress rules; the
    code (rightly) takes the out-facing input-port ones, and refuses in-facing input-port."""
    section = _section((ROOT / "docs/config.md").read_text(), "## Microchip LAN966x")
    row = next(line for line in section.splitlines() if "one IS1 rule per input port" in line)
    assert "`out-facing: {input-port: [...]}`" in row and "in-facing: {input-port" not in row
