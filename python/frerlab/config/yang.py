"""IEEE YANG instance data (RFC 7951 JSON) of one node's FRER configuration, both ways.

`export_yang` turns a validated NodeConfig into the data of the published modules
ieee802-dot1cb-stream-identification (top-level list `stream-identity`) and
ieee802-dot1cb-frer (container `frer`: sequence-generation, sequence-recovery,
sequence-identification, stream-split), both of revision 2021-12-08, with the node's ports as
the ietf-interfaces interface list that their `if:interface-ref` leaves point into, and what
802.1CB leaves to the bridge or frerlab adds (name, forwarding, bridged ports, PVIDs, frame
rates) under frerlab's own module frerlab-dataplane (frerlab-dataplane.yang next to this file).
802.1Qci's stream filters and flow meters go where ieee802-dot1q-psfp-bridge puts them, on a
bridge component of ieee802-dot1q-bridge (one bridge, one component, one always-open stream
gate), with the ports of a filter, which 802.1Qci's filters do not have, in frerlab-dataplane.
`import_yang` reads such data back into the YAML vocabulary and validates it as the data plane
does, also a plain IEEE document without frerlab's module (forwarding, which 802.1CB leaves to
the bridge, is then given by the caller); a node frerlab cannot express or the data plane does
not implement is refused with a UsageError naming its path and what would be valid, and a leaf
the model leaves without a default that frerlab fills in is reported in a note.
`validate_file` checks instance data against YANG modules a user has, with yangson (imported
only there), naming the first problem by a path with module names and list keys.
docs/config.md maps every node.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import annotated_types

from frerlab.dataplane.config import (LOCAL, DmacVlanSide, FlowMeter, IpId, LatentErrorDetection, NodeConfig,
                                      NullId, SequenceGeneration, SequenceIdentification, SequenceRecovery, SmacVlanId,
                                      parse_config)
from frerlab.errors import UsageError
from frerlab.yamlfile import hide_texts, read_text

SID_MODULE = "ieee802-dot1cb-stream-identification"
FRER_MODULE = "ieee802-dot1cb-frer"
IF_MODULE = "ietf-interfaces"
FRERLAB_MODULE = "frerlab-dataplane"
#: The top-level members of the instance data frerlab writes and reads.
SID, FRER = f"{SID_MODULE}:stream-identity", f"{FRER_MODULE}:frer"
INTERFACES, NODE = f"{IF_MODULE}:interfaces", f"{FRERLAB_MODULE}:node"
#: The interface type frerlab gives its ports (ietf-interfaces' `type` is mandatory).
IF_TYPE = "iana-if-type:ethernetCsmacd"
#: Where frerlab's own module lives (added to every `validate` search path).
FRERLAB_YANG_DIR = Path(__file__).parent
#: The identification types frerlab reads (their leaves), after 9.1.2-9.1.5.
_TYPE_LEAVES = {
    "null-stream-identification": ("destination-mac", "tagged", "vlan"),
    "smac-vlan-stream-identification": ("source-mac", "tagged", "vlan"),
    "dmac-vlan-stream-identification": ("down", "up"),
    "ip-stream-identification": ("destination-mac", "tagged", "vlan", "ip-source", "ip-destination",
                                 "dscp", "next-protocol", "source-port", "destination-port"),
}
_SIDE_LEAVES = ("destination-mac", "tagged", "vlan", "priority")
_MAC_LEAVES = ("destination-mac", "source-mac")
_IEEE_MAC = re.compile(r"[0-9a-fA-F]{2}(-[0-9a-fA-F]{2}){5}")  # ieee802-types:mac-address
#: What a member name (module-qualified too) or key of the file must look like to be shown in a
#: message (frerlab runs as root, so it never echoes other text of a file: docs/errors.md).
_NAME = re.compile(r"(?:[A-Za-z0-9_.-]{1,64}:)?[A-Za-z0-9_.-]{1,64}")
#: DSCP value meaning "ignore" (9.1.5.6); inet:dscp itself only holds 0..63, so it is omitted.
DSCP_IGNORE = 64
#: The member of the 802.1CBdb module that augments stream-identity's `parameters` choice.
MASK_AND_MATCH = "mask-and-match-stream-identification"
#: 802.1Qci's stream filters and flow meters: ieee802-dot1q-psfp's grouping psfp-parameters,
#: which ieee802-dot1q-psfp-bridge (both 802.1Qcw-2023, revision 2023-10-26) adds to
#: ieee802-dot1q-bridge's bridge component, so its nodes are in the psfp-bridge module's
#: namespace (RFC 7950 7.13).
BRIDGE_MODULE, PSFP_MODULE = "ieee802-dot1q-bridge", "ieee802-dot1q-psfp-bridge"
BRIDGES = f"{BRIDGE_MODULE}:bridges"
FILTERS, GATES, METERS = (f"{PSFP_MODULE}:{name}" for name in ("stream-filters", "stream-gates", "flow-meters"))
#: What the bridge list needs (its key and mandatory leaves), which frerlab's node does not
#: have: a name of local significance for the bridge and its one component, a placeholder
#: address (no spanning tree runs here), and the types of a VLAN-aware bridge (identification
#: and PVIDs use VIDs), which has one C-VLAN component (12.3).
BRIDGE_NAME, BRIDGE_ADDRESS = "frerlab", "00-00-00-00-00-00"
BRIDGE_TYPE, COMPONENT_TYPE = f"{BRIDGE_MODULE}:customer-vlan-bridge", f"{BRIDGE_MODULE}:c-vlan-component"
#: The stream gate every exported filter refers to: always open (frerlab has no gates).
OPEN_GATE = 0
#: The mandatory leaves of a flow meter that make it frerlab's: single rate, colour-blind
#: (MEF 10.3 with no excess bucket, so no frame is yellow).
SINGLE_RATE = {"excess-information-rate": "0", "excess-burst-size": 0, "coupling-flag": "zero",
               "color-mode": "color-blind"}


# ---- export ----

def _ieee_mac(mac: str) -> str:
    """A MAC address as ieee802-types:mac-address writes it (upper case, '-')."""
    return mac.upper().replace(":", "-")


def _ms(ns: int, where: str) -> int:
    if ns % 1_000_000:
        raise UsageError(f"{where}: reset timeout {ns} ns is not whole milliseconds (reset-timeout is in ms)")
    return ns // 1_000_000


def _decimal(value: float) -> str:
    """A frame rate (validated to 3 decimal places) as frerlab-dataplane's decimal64, as RFC
    7951 writes it."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def export_yang(cfg: NodeConfig, notes: list[str] | None = None) -> dict[str, Any]:
    """RFC 7951 instance data of `cfg` (a validated configuration); what a device that does
    not read frerlab's module would make of it differently is appended to `notes`."""
    identified: dict[int, list[str]] = {}  # handle -> ports where the node identifies it
    identities = []
    for ident in cfg.stream_identity:
        entry: dict[str, Any] = {"index": ident.index, "handle": ident.handle}
        for facing in ("in_facing", "out_facing"):
            ports = getattr(ident, facing)
            lists = {name: list(getattr(ports, attr)) for name, attr in
                     (("input-port", "input_port"), ("output-port", "output_port")) if getattr(ports, attr)}
            if lists:
                entry[facing.replace("_", "-")] = lists
            for p in [*ports.input_port, *ports.output_port]:
                identified.setdefault(ident.handle, [])
                if p not in identified[ident.handle]:
                    identified[ident.handle].append(p)
        kind = ident.types()[0]
        params = getattr(ident, kind).model_dump(by_alias=False)
        if kind == "dmac_vlan_stream_identification":
            entry[kind.replace("_", "-")] = {side: _plain(params[side], _SIDE_LEAVES) for side in ("down", "up")}
        else:
            values = _plain(params, _TYPE_LEAVES[kind.replace("_", "-")])
            if values.get("dscp") == DSCP_IGNORE:
                del values["dscp"]
            if kind == "ip_stream_identification" and values["vlan"] == 0 and values["tagged"] != "priority":
                del values["vlan"]  # 9.1.5.3: 0 means "no VLAN tag"; frerlab's 0 is "any VID"
            entry[kind.replace("_", "-")] = values
        identities.append(entry)

    frer: dict[str, Any] = {}
    if cfg.sequence_generation:
        frer["sequence-generation"] = [{"index": g.index, "stream": list(g.stream),
                                        "direction-out-facing": g.direction_out_facing}
                                       for g in cfg.sequence_generation]
    every_frame, rates, recoveries = [], [], []
    for rec in cfg.sequence_recovery:
        where = f"sequence-recovery {rec.index}"
        ports = list(rec.port)
        if not ports:  # one function for every frame of the stream
            every_frame.append(rec.index)
            ports, to_host = _every_frame_ports(cfg, rec.stream, identified)
            if to_host and len(ports) > 1 and notes is not None:
                streams = ", ".join(map(str, rec.stream))
                notes.append(f"{where}: one function for every frame of stream{'s' if len(rec.stream) > 1 else ''} "
                             f"{streams} delivered to this host has no place on one port in 802.1CB (10.4.1.2); "
                             "written on the ports that "
                             f"identify it ({', '.join(ports)}), with {NODE}/every-frame-recovery naming it: a "
                             "device that does not read frerlab's module places one function on each of them, "
                             "which eliminates nothing across them")
        entry = {"index": rec.index, "stream": list(rec.stream), "port": ports,
                 "direction-out-facing": rec.direction_out_facing, "algorithm": {rec.algorithm: {}},
                 "history-length": rec.history_length}
        timeout = rec.timeout_ns()
        if timeout is not None:  # `never`: the leaf has no default, absent = no timeout
            entry["reset-timeout"] = _ms(timeout, where)
        entry.update({"take-no-sequence": rec.take_no_sequence, "individual-recovery": rec.individual_recovery,
                      "latent-error-detection": rec.latent_error_detection})
        if rec.latent_error_detection_parameters is not None:
            entry["latent-error-detection-parameters"] = {
                k.replace("_", "-"): v for k, v in rec.latent_error_detection_parameters.model_dump().items()}
        if rec.frame_rate is not None:
            rates.append({"index": rec.index, "frame-rate": _decimal(rec.frame_rate)})
        recoveries.append(entry)
    if recoveries:
        frer["sequence-recovery"] = recoveries
    encode: dict[str, dict[str, Any]] = {}  # port -> its one entry (the list is keyed by port and direction)
    for seq in cfg.sequence_identification:
        for p in seq.port:
            entry = encode.setdefault(p, {"port": p, "direction-out-facing": True, "stream": [],
                                          "active": seq.active, "encapsulation": {"r-tag": {}}})
            if entry["active"] != seq.active:
                raise UsageError(f"sequence-identification: port {p} encodes streams {entry['stream']} with active "
                                 f"{str(entry['active']).lower()} and {list(seq.stream)} with active "
                                 f"{str(seq.active).lower()}; IEEE's list has one entry per port and direction "
                                 "(10.5), active or passive for all its streams: give the port one active value")
            entry["stream"] += [h for h in seq.stream if h not in entry["stream"]]
    if encode:
        frer["sequence-identification"] = list(encode.values())
    splits = {}
    for split in cfg.stream_split:
        if split.port in splits:
            raise UsageError(f"stream-split: port {split.port} is listed twice; IEEE's list is keyed by port "
                             "and direction: give one entry per port")
        splits[split.port] = {"port": split.port, "direction-out-facing": True,
                              "input-id": list(split.input_id), "output-id": list(split.output_id)}
    if splits:
        frer["stream-split"] = list(splits.values())

    node: dict[str, Any] = {"name": cfg.name}
    if cfg.netns:
        node["netns"] = cfg.netns
    if cfg.bridge_ports:
        node["bridge-ports"] = list(cfg.bridge_ports)
    if cfg.port_settings:
        node["port-settings"] = [{"port": s.port, "pvid": s.pvid} for s in cfg.port_settings]
    if cfg.stream_forwarding:
        node["stream-forwarding"] = [{"stream": f.stream, "output-port": list(f.output_port)}
                                     for f in cfg.stream_forwarding]
    if every_frame:
        node["every-frame-recovery"] = every_frame
    if rates:
        node["frame-rate"] = rates
    if any(f.port for f in cfg.stream_filter):
        node["stream-filter"] = [{"index": f.index, "port": list(f.port)} for f in cfg.stream_filter if f.port]
    data = {INTERFACES: {"interface": [{"name": p, "type": IF_TYPE} for p in cfg.ports]}}
    if identities:
        data[SID] = identities
    if frer:
        data[FRER] = frer
    if cfg.stream_filter or cfg.flow_meter:
        data[BRIDGES] = _bridges(cfg, notes)
    data[NODE] = node
    return data


def _bridges(cfg: NodeConfig, notes: list[str] | None) -> dict[str, Any]:
    """ieee802-dot1q-bridge's `bridges`: one bridge of one component holding the node's stream
    filters and flow meters (ieee802-dot1q-psfp-bridge), and the always-open stream gate that
    every filter must refer to (`stream-gate-ref` is mandatory). A filter of several streams is
    refused (802.1Qci's has one stream handle); one on some ports only is noted, since only
    frerlab's module holds its ports."""
    received: dict[int, set[str]] = {}
    for ident in cfg.stream_identity:
        received.setdefault(ident.handle, set()).update(ident.received())
    filters = []
    for flt in cfg.stream_filter:
        where = f"stream-filter {flt.index}"
        if len(flt.stream) > 1:
            raise UsageError(f"{where}: streams {', '.join(map(str, flt.stream))} in one filter; an entry of "
                             "802.1Qci's stream-filter-instance-table has one stream-handle: give one stream-filter "
                             "per stream (they may share a flow-meter, which then meters them together, as here)")
        handle = flt.stream[0]
        entry: dict[str, Any] = {"stream-filter-instance-id": flt.index, "stream-handle": handle,
                                 "priority-spec": "wildcard", "max-sdu-size": flt.max_sdu_size,
                                 "stream-gate-ref": OPEN_GATE, "flow-meter-enable": flt.flow_meter is not None}
        if flt.flow_meter is not None:
            entry["flow-meter-ref"] = flt.flow_meter
        filters.append(entry)
        everywhere = [p for p in cfg.ports if p in received.get(handle, set())]
        if flt.port and set(everywhere) - set(flt.port) and notes is not None:
            notes.append(f"{where}: filters stream {handle} received on {', '.join(flt.port)} only; 802.1Qci's "
                         "stream filters have no port (one takes every frame of its stream handle): written with "
                         f"{NODE}/stream-filter naming its ports; a device that does not read frerlab's module "
                         f"filters every frame of stream {handle} (from {', '.join(everywhere)}) with the stream's "
                         "filter of the lowest stream-filter-instance-id")
    component: dict[str, Any] = {"name": BRIDGE_NAME, "type": COMPONENT_TYPE}
    if filters:
        component[FILTERS] = {"stream-filter-instance-table": filters}
        component[GATES] = {"stream-gate-instance-table": [
            {"stream-gate-instance-id": OPEN_GATE, "gate-enable": False, "admin-gate-states": "open"}]}
    if cfg.flow_meter:
        component[METERS] = {"flow-meter-instance-table": [
            {"flow-meter-instance-id": m.index, "committed-information-rate": str(m.committed_information_rate),
             "committed-burst-size": m.committed_burst_size, **SINGLE_RATE, "drop-on-yellow": m.drop_on_yellow}
            for m in cfg.flow_meter]}
    return {"bridge": [{"name": BRIDGE_NAME, "address": BRIDGE_ADDRESS, "bridge-type": BRIDGE_TYPE,
                        "component": [component]}]}


def _every_frame_ports(cfg: NodeConfig, streams: list[int],
                       identified: dict[int, list[str]]) -> tuple[list[str], bool]:
    """The `port` list of a recovery function for every frame of `streams`, and whether they
    are delivered to this host. Where the standard places one function that sees them all: the
    ports they are forwarded to (a function on an output port sees every copy sent there,
    10.4.1.2); for streams delivered to this host, which no port of 802.1CB's model stands
    for, the ports where the node identifies them."""
    outputs = {p for f in cfg.stream_forwarding if f.stream in streams for p in f.output_port}
    if LOCAL in outputs:
        return [p for p in cfg.ports if any(p in identified.get(h, []) for h in streams)], True
    return [p for p in cfg.ports if p in outputs], False


def _plain(params: dict[str, Any], leaves: tuple[str, ...]) -> dict[str, Any]:
    """The leaves of one parameter container, named as YANG names them, without unset ones."""
    out = {}
    for leaf in leaves:
        value = params.get(leaf.replace("-", "_"))
        if value is None:
            continue
        out[leaf] = _ieee_mac(value) if leaf in _MAC_LEAVES else value
    return out


def dumps(data: dict[str, Any]) -> str:
    """Instance data as the JSON text frerlab writes."""
    return json.dumps(data, indent=2) + "\n"


# ---- import ----

def _shown(name: object) -> str:
    """A member name or key from the file as a message shows it."""
    return name if isinstance(name, str) and _NAME.fullmatch(name) else "(a name that is not a YANG identifier)"


def _shown_value(value: object) -> str:
    """A key or leaf value from the file as a message shows it (numbers and names only)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int) and abs(value) < 2**64:
        return str(value)
    return value if isinstance(value, str) and _NAME.fullmatch(value) else "(a value)"


def _simple_names(value: object, module: str | None, path: str = "") -> object:
    """`value` with every member name qualified by the module of its parent node written in
    the simple form (RFC 7951 4: a name is qualified at the top and where the module
    changes; a redundant qualification is read as the simple name); names of other modules,
    such as augmenting ones, stay qualified. UsageError for a member given in both forms."""
    if isinstance(value, list):
        return [_simple_names(item, module, path) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict = {}
    for name, item in value.items():
        child_module = module
        if isinstance(name, str) and ":" in name:
            child_module, _, local = name.partition(":")
            name = local if child_module == module else name
        if name in out:
            raise UsageError(f"{path}/{_shown(name)}: given twice (simple and module-qualified)")
        out[name] = _simple_names(item, child_module, f"{path}/{_shown(name)}")
    return out


def _mapping(value: object, path: str, allowed: tuple[str, ...], why: dict[str, str] | None = None) -> dict:
    """`value` as a JSON object whose members are all in `allowed`; UsageError naming the path
    of the first other member and what would be valid (`why` explains known refusals)."""
    if not isinstance(value, dict):
        raise UsageError(f"{path}: expected a JSON object (members: {', '.join(allowed)})")
    for key in value:
        if key not in allowed:
            reason = (why or {}).get(key) or f"not a node frerlab reads (valid: {', '.join(allowed)})"
            raise UsageError(f"{path}/{_shown(key)}: {reason}")
    return value


def _int_shown(value: object) -> str:
    """A number from the file as a message shows it (anything else is only named)."""
    return str(value) if _is_int(value) and abs(value) < 2**64 else "the value"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list(value: object, path: str) -> list:
    if not isinstance(value, list):
        raise UsageError(f"{path}: expected a JSON array (a YANG list or leaf-list)")
    return value


def _key(entry: dict, key: str, path: str) -> Any:
    """The value of list key `key` of `entry`: a uint32 for `index` and the psfp lists'
    `...-instance-id`, a text for `port` and `name`."""
    if key not in entry:
        raise UsageError(f"{path}: the list key {key!r} is missing")
    value = entry[key]
    if (key == "index" or key.endswith("-instance-id")) and (
            not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32):
        raise UsageError(f"{path}: {key} must be a uint32 (a JSON number 0..4294967295)")
    if key in ("port", "name") and not isinstance(value, str):
        raise UsageError(f"{path}: {key} must be a JSON string (an interface name)")
    return value


def _entry(value: object, path: str, key: str) -> tuple[dict, str]:
    """A list entry as a JSON object and its path with its key (`[index=3]`, `[port=pa]`)."""
    if not isinstance(value, dict):
        raise UsageError(f"{path}: expected a JSON object (an entry of the list)")
    return value, f"{path}[{key}={_shown_value(_key(value, key, path))}]"


_CONFIG_FALSE = "is read-only state (config false), not configuration"
_NOT_IMPLEMENTED = "is not implemented by frerlab's data plane"
#: RecovSeqSpace: the number of sequence numbers of an R-TAG (802.1CB 7.4.3.2.1).
SEQ_SPACE = 65536
#: Leaves whose value the model allows but frerlab does not: leaf -> (the YAML model and field
#: that hold frerlab's range, the model's range, why frerlab's is narrower).
_FRERLAB_LIMITS = {
    "history-length": (SequenceRecovery, "history_length", (2, 2**32 - 1),
                       "the longest history frerlab's recovery functions keep (10.4.1.6 leaves the maximum to "
                       "the implementation)"),
    "reset-timeout": (SequenceRecovery, "reset_timeout", (0, 2**32 - 1),
                      "frerlab refuses a timeout of 0 ms (docs/8021cb-decisions.md, Defaults); for no timeout "
                      "leave the leaf out"),
    "difference": (LatentErrorDetection, "difference", (-2**31, 2**31 - 1),
                   "frerlab's latent error test compares the size of the difference with it, so a negative one "
                   "would report an error at every test"),
    "paths": (LatentErrorDetection, "paths", (0, 65535),
              "the number of paths frerlab's latent error detection checks"),
    "period": (LatentErrorDetection, "period", (0, 2**32 - 1), "a period of 0 ms would test without pause"),
    "reset-period": (LatentErrorDetection, "reset_period", (0, 2**32 - 1),
                     "a reset period of 0 ms would re-base without pause"),
    "committed-information-rate": (FlowMeter, "committed_information_rate", (0, 2**64 - 1),
                                   "the highest rate frerlab's meters count (bit/s)"),
    "committed-burst-size": (FlowMeter, "committed_burst_size", (0, 2**32 - 1),
                             "a bucket of 0 octets would pass no frame, and frerlab's holds at most 10^9"),
}


def _frerlab_range(model: type, field: str) -> tuple[int, int]:
    """The bounds frerlab's YAML model gives an integer field (its ge/gt/le/lt constraints)."""
    info = model.model_fields[field]
    metadata = list(info.metadata)
    for arg in get_args(info.annotation):  # a union member such as Annotated[int, Field(ge=1)]
        if get_origin(arg) is Annotated:
            for extra in get_args(arg)[1:]:
                metadata.extend(getattr(extra, "metadata", [extra]))
    lo, hi = -2**63, 2**63
    for m in metadata:
        if isinstance(m, annotated_types.Ge):
            lo = max(lo, m.ge)
        elif isinstance(m, annotated_types.Gt):
            lo = max(lo, m.gt + 1)
        elif isinstance(m, annotated_types.Le):
            hi = min(hi, m.le)
        elif isinstance(m, annotated_types.Lt):
            hi = min(hi, m.lt - 1)
    return lo, hi


def _within_frerlab(values: dict, path: str) -> None:
    """UsageError for a leaf of `values` that the model allows but frerlab does not, saying so."""
    for leaf, value in values.items():
        if leaf not in _FRERLAB_LIMITS or not _is_int(value):
            continue
        model, field, (model_lo, model_hi), why = _FRERLAB_LIMITS[leaf]
        lo, hi = _frerlab_range(model, field)
        if model_lo <= value <= model_hi and not lo <= value <= hi:
            raise UsageError(f"{path}/{leaf}: {value} is valid in the model ({model_lo}..{model_hi}) but outside "
                             f"frerlab's range {lo}..{hi}: {why}")


def _absent(params: dict, leaves: dict[str, object], path: str, notes: list[str]) -> dict:
    """`params` with each of `leaves` (name -> frerlab's value) that it lacks filled in, and a
    note naming them: the model gives those leaves no default, so the value is frerlab's."""
    missing = {leaf: value for leaf, value in leaves.items() if leaf not in params}
    if missing:
        taken = ", ".join(f"{leaf} {json.dumps(value) if isinstance(value, bool) else value}"
                          for leaf, value in missing.items())
        notes.append(f"{path}: absent, and without a default in the model, so frerlab's value is taken: {taken}")
    return {**params, **missing}


def _yaml_defaults(model: type, leaves: tuple[str, ...]) -> dict[str, object]:
    """The YAML model's defaults of `leaves` (YANG names) that have one other than None."""
    fields = model.model_fields
    return {leaf: fields[leaf.replace("-", "_")].default for leaf in leaves
            if fields[leaf.replace("-", "_")].default is not None}


def import_yang(data: object, source: str, forwarding: dict[int, list[str]] | None = None
                ) -> tuple[dict[str, Any], NodeConfig, list[str]]:
    """frerlab's YAML mapping of RFC 7951 instance data, the NodeConfig it validates to, and
    notes on the leaves without a default in the model that frerlab filled in. `forwarding`
    (stream handle -> output ports) forwards streams the data does not (a plain IEEE document
    has no frerlab-dataplane:node). UsageError naming the first node frerlab cannot express."""
    try:
        data = _simple_names(data, None)
    except RecursionError:
        raise UsageError(f"{source}: nested too deeply") from None
    notes: list[str] = []
    top = _mapping(data, source, (INTERFACES, SID, FRER, NODE, BRIDGES))
    out: dict[str, Any] = {}
    node = _mapping(top.get(NODE, {}), f"/{NODE}", ("name", "netns", "bridge-ports", "port-settings",
                                                     "stream-forwarding", "every-frame-recovery", "frame-rate",
                                                     "stream-filter"))
    for leaf in ("name", "netns"):
        if leaf in node:
            out[leaf] = node[leaf]
    if INTERFACES not in top:
        raise UsageError(f"{source}: /{INTERFACES} is missing: the node's ports are its interface list")
    interfaces = _mapping(top[INTERFACES], f"/{INTERFACES}", ("interface",))
    ports = []
    for entry in _list(interfaces.get("interface", []), f"/{INTERFACES}/interface"):
        entry, where = _entry(entry, f"/{INTERFACES}/interface", "name")
        ports.append(_mapping(entry, where, ("name", "type", "enabled", "description"))["name"])
    out["ports"] = ports
    if "bridge-ports" in node:
        out["bridge-ports"] = _list(node["bridge-ports"], f"/{NODE}/bridge-ports")
    if "port-settings" in node:
        out["port-settings"] = [_mapping(s, f"/{NODE}/port-settings", ("port", "pvid"))
                                for s in _list(node["port-settings"], f"/{NODE}/port-settings")]

    if SID in top:
        out["stream-identity"] = [_identity(e, f"/{SID}", notes) for e in _list(top[SID], f"/{SID}")]
    every_frame = {_key({"index": i}, "index", f"/{NODE}/every-frame-recovery")
                   for i in _list(node.get("every-frame-recovery", []), f"/{NODE}/every-frame-recovery")}
    rates = {}
    for r in _list(node.get("frame-rate", []), f"/{NODE}/frame-rate"):
        r = _mapping(r, f"/{NODE}/frame-rate", ("index", "frame-rate"))
        try:
            rates[_key(r, "index", f"/{NODE}/frame-rate")] = float(r.get("frame-rate"))
        except (TypeError, ValueError):
            raise UsageError(f"/{NODE}/frame-rate: frame-rate must be a decimal64 string such as \"200000\"") from None
    frer = _mapping(top.get(FRER, {}), f"/{FRER}", (
        "sequence-generation", "sequence-recovery", "sequence-identification", "stream-split"),
        {"autoconfiguration": "autoconfiguration (10.7) " + _NOT_IMPLEMENTED})
    if "sequence-generation" in frer:
        out["sequence-generation"] = [_generation(e, f"/{FRER}/sequence-generation", notes)
                                      for e in _list(frer["sequence-generation"], f"/{FRER}/sequence-generation")]
    if "sequence-recovery" in frer:
        out["sequence-recovery"] = [_recovery(e, f"/{FRER}/sequence-recovery", every_frame, rates, notes)
                                    for e in _list(frer["sequence-recovery"], f"/{FRER}/sequence-recovery")]
    if "sequence-identification" in frer:
        out["sequence-identification"] = _sequence_identification(
            _list(frer["sequence-identification"], f"/{FRER}/sequence-identification"), notes)
    if "stream-split" in frer:
        out["stream-split"] = [_split(e, f"/{FRER}/stream-split")
                               for e in _list(frer["stream-split"], f"/{FRER}/stream-split")]
    out["stream-forwarding"] = _forwarding(node, out.get("stream-identity", []), forwarding or {}, source)
    if BRIDGES in top:
        out.update(_psfp(top[BRIDGES], node, notes))
    elif "stream-filter" in node:
        raise UsageError(f"/{NODE}/stream-filter: names the ports of stream filters, and the data has none "
                         f"(/{BRIDGES}): remove it, or give the filters")
    return out, parse_config(out, source), notes


_GATE_WHY = ("stream gates (802.1Qci 8.6.5.4) " + _NOT_IMPLEMENTED + ", whose filters pass what the size check "
             "and the flow meter pass; valid: gates that stay open (gate-enable false, admin-gate-states open, "
             "admin-ipv null) and nothing else")
#: Members of a stream gate entry that schedule or close it (ieee802-dot1q-stream-filters-gates
#: and ieee802-dot1q-psfp's augment of it).
_GATE_MEMBERS = ("admin-control-list", "admin-cycle-time", "admin-cycle-time-extension", "admin-base-time",
                 "config-change", "gate-closed-due-to-invalid-rx-enable", "gate-closed-due-to-invalid-rx",
                 "gate-closed-due-octets-exceeded-enable", "gate-closed-due-octets-exceeded", "oper-ipv")
#: Read-only counters of a stream filter (ieee802-dot1q-psfp's augment).
_FILTER_COUNTERS = ("matching-frames-count", "passing-frames-count", "not-passing-frames-count", "red-frames-count",
                    "passing-sdu-count", "not-passing-sdu-count")
#: Leaves of a stream filter or flow meter frerlab does not implement: leaf -> (the only value
#: it takes, why).
_PSFP_ONLY = {
    "priority-spec": ("wildcard", "per-priority stream filters are " + _NOT_IMPLEMENTED.removeprefix("is ")
                      + ", whose filters take every priority of their stream"),
    "stream-blocked-due-to-oversize-frame-enabled": (False, "blocking a stream after an oversize frame "
                                                     + _NOT_IMPLEMENTED + ", which drops that frame and goes on"),
    "stream-blocked-due-to-oversize-frame": (False, "blocking a stream after an oversize frame " + _NOT_IMPLEMENTED
                                             + ", which drops that frame and goes on"),
    "excess-burst-size": (0, "an excess bucket (yellow frames) " + _NOT_IMPLEMENTED + ", whose flow meters are "
                          "single-rate: a frame is green or red"),
    "color-mode": ("color-blind", "colour-aware metering " + _NOT_IMPLEMENTED + ", whose flow meters ignore a "
                   "frame's colour"),
    "mark-all-frames-red-enable": (False, "MarkAllFramesRed (8.6.5.5) " + _NOT_IMPLEMENTED),
}


def _only(entry: dict, leaves: tuple[str, ...], path: str) -> None:
    """UsageError for a leaf of `leaves` in `entry` whose value frerlab does not implement (_PSFP_ONLY)."""
    for leaf in leaves:
        valid, why = _PSFP_ONLY[leaf]
        if leaf in entry and json.dumps(entry[leaf]) != json.dumps(valid):
            raise UsageError(f"{path}/{leaf}: {_shown_value(entry[leaf])}: {why}; valid: {json.dumps(valid)}")


def _uint64(entry: dict, leaf: str, path: str) -> int:
    """A uint64 leaf, which RFC 7951 (6.1) writes as a JSON string of digits."""
    value = entry[leaf]
    if not isinstance(value, str) or not value.isascii() or not value.isdigit() or int(value) >= 2**64:
        raise UsageError(f"{path}/{leaf}: expected a uint64, which RFC 7951 (6.1) writes as a JSON string of "
                         "digits, such as \"4000000\"")
    return int(value)


def _component(value: object) -> tuple[dict, str]:
    """The one bridge component of `bridges` and its path; UsageError unless there is exactly one."""
    path = f"/{BRIDGES}/bridge"
    bridges = _list(_mapping(value, f"/{BRIDGES}", ("bridge",)).get("bridge"), path)
    if len(bridges) != 1:
        raise UsageError(f"{path}: {len(bridges)} bridges; frerlab's node is one bridge with one component "
                         "(its stream filters and flow meters): give one")
    bridge, path = _entry(bridges[0], path, "name")
    bridge = _mapping(bridge, path, ("name", "address", "bridge-type", "component"))
    components = _list(bridge.get("component"), f"{path}/component")
    if len(components) != 1:
        raise UsageError(f"{path}/component: {len(components)} components; frerlab's node is one bridge with one "
                         "component (its stream filters and flow meters): give one")
    component, path = _entry(components[0], f"{path}/component", "name")
    return _mapping(component, path, ("name", "id", "type", "address", FILTERS, GATES, METERS)), path


def _psfp(value: object, node: dict, notes: list[str]) -> dict[str, list]:
    """frerlab's `stream-filter` and `flow-meter` lists of `bridges` (one component, its
    filters, always-open gates and single-rate, colour-blind meters) and frerlab-dataplane's
    ports of the filters; UsageError naming the first node frerlab cannot take."""
    component, path = _component(value)
    gates = _mapping(component.get(GATES, {}), f"{path}/{GATES}", (
        "stream-gate-instance-table", "supported-list-max", "supported-cycle-max", "supported-interval-max"))
    where = f"{path}/{GATES}/stream-gate-instance-table"
    for gate in _list(gates.get("stream-gate-instance-table", []), where):
        gate, at = _entry(gate, where, "stream-gate-instance-id")
        gate = _mapping(gate, at, ("stream-gate-instance-id", "gate-enable", "admin-gate-states", "admin-ipv"),
                        dict.fromkeys(_GATE_MEMBERS, _GATE_WHY))
        for leaf, valid in (("gate-enable", False), ("admin-gate-states", "open"), ("admin-ipv", "null")):
            if json.dumps(gate.get(leaf, valid)) != json.dumps(valid):
                raise UsageError(f"{at}/{leaf}: {_shown_value(gate[leaf])}: {_GATE_WHY}")

    ports: dict[int, list] = {}
    for entry in _list(node.get("stream-filter", []), f"/{NODE}/stream-filter"):
        entry, at = _entry(entry, f"/{NODE}/stream-filter", "index")
        ports[entry["index"]] = _mapping(entry, at, ("index", "port")).get("port")
    filters = []
    where = f"{path}/{FILTERS}/stream-filter-instance-table"
    table = _mapping(component.get(FILTERS, {}), f"{path}/{FILTERS}", ("stream-filter-instance-table",),
                     {"max-stream-filter-instances": _CONFIG_FALSE}).get("stream-filter-instance-table", [])
    for entry in _list(table, where):
        entry, at = _entry(entry, where, "stream-filter-instance-id")
        entry = _mapping(entry, at, (
            "stream-filter-instance-id", "stream-handle", "priority-spec", "max-sdu-size",
            "stream-blocked-due-to-oversize-frame-enabled", "stream-blocked-due-to-oversize-frame",
            "stream-gate-ref", "flow-meter-enable", "flow-meter-ref"), {
            "wildcard": "a filter of every stream " + _NOT_IMPLEMENTED + ", whose filters name their stream; "
            "give stream-handle", **dict.fromkeys(_FILTER_COUNTERS, _CONFIG_FALSE)})
        if "stream-handle" not in entry:
            raise UsageError(f"{at}: give stream-handle (the choice stream-handle-spec has none of its cases)")
        _only(entry, ("priority-spec", "stream-blocked-due-to-oversize-frame-enabled",
                      "stream-blocked-due-to-oversize-frame"), at)
        entry = _absent(entry, {"priority-spec": "wildcard", "max-sdu-size": 0,
                                "flow-meter-enable": "flow-meter-ref" in entry}, at, notes)
        enable = entry["flow-meter-enable"]
        if not isinstance(enable, bool) or (enable and "flow-meter-ref" not in entry):
            raise UsageError(f"{at}/flow-meter-enable: give true with flow-meter-ref (the meter's "
                             "flow-meter-instance-id), or false for no meter")
        index = entry["stream-filter-instance-id"]
        flt = {"index": index, "stream": [entry["stream-handle"]], "max-sdu-size": entry["max-sdu-size"]}
        if index in ports:
            flt["port"] = ports.pop(index)
        if enable:
            flt["flow-meter"] = entry["flow-meter-ref"]
        filters.append(flt)
    if ports:
        raise UsageError(f"/{NODE}/stream-filter[index={min(ports)}]: names the ports of a stream filter the data "
                         f"does not have ({where}): give the filter, or remove the entry")

    meters = []
    where = f"{path}/{METERS}/flow-meter-instance-table"
    table = _mapping(component.get(METERS, {}), f"{path}/{METERS}", (
        "flow-meter-instance-table", "max-flow-meter-instances")).get("flow-meter-instance-table", [])
    for entry in _list(table, where):
        entry, at = _entry(entry, where, "flow-meter-instance-id")
        entry = _mapping(entry, at, ("flow-meter-instance-id", "committed-information-rate", "committed-burst-size",
                                     *SINGLE_RATE, "drop-on-yellow", "mark-all-frames-red-enable",
                                     "mark-all-frames-red"))
        for leaf in ("committed-information-rate", "committed-burst-size"):
            if leaf not in entry:
                raise UsageError(f"{at}/{leaf} is missing: the meter's rate and bucket have no default (8.6.5.5)")
        rate = _uint64(entry, "committed-information-rate", at)
        if "excess-information-rate" in entry and _uint64(entry, "excess-information-rate", at):
            raise UsageError(f"{at}/excess-information-rate: {entry['excess-information-rate']} bit/s: two-rate flow "
                             f"meters are {_NOT_IMPLEMENTED.removeprefix('is ')}, whose meters are single-rate (MEF "
                             "10.3 with no excess rate: a frame is green or red); valid: \"0\"")
        _only(entry, ("excess-burst-size", "color-mode", "mark-all-frames-red-enable"), at)
        if entry.get("coupling-flag", "zero") not in ("zero", "one"):
            raise UsageError(f"{at}/coupling-flag: valid: zero or one (with no excess bucket either changes nothing)")
        _within_frerlab({"committed-information-rate": rate, "committed-burst-size": entry["committed-burst-size"]}, at)
        entry = _absent(entry, {**SINGLE_RATE, "drop-on-yellow": False}, at, notes)
        meters.append({"index": entry["flow-meter-instance-id"], "committed-information-rate": rate,
                       "committed-burst-size": entry["committed-burst-size"], "drop-on-yellow": entry["drop-on-yellow"]})
    return {"stream-filter": filters, "flow-meter": meters}


def _forwarding(node: dict, identities: list[dict], given: dict[int, list[str]], source: str) -> list[dict]:
    """The stream-forwarding entries of the data and `given`; UsageError naming the streams
    neither forwards (each stream identified on an input port needs one)."""
    entries = [_mapping(f, f"/{NODE}/stream-forwarding", ("stream", "output-port"))
               for f in _list(node.get("stream-forwarding", []), f"/{NODE}/stream-forwarding")]
    forwarded = {f.get("stream") for f in entries if _is_int(f.get("stream"))}
    for handle, ports in given.items():
        if handle in forwarded:
            raise UsageError(f"--forward {handle}={','.join(ports)}: {source} already forwards stream {handle} "
                             f"(/{NODE}/stream-forwarding); give --forward only for streams it does not forward")
        entries.append({"stream": handle, "output-port": list(ports)})
        forwarded.add(handle)
    needed = {i.get("handle") for i in identities if _is_int(i.get("handle")) and (
        i.get("in-facing", {}).get("input-port") or i.get("in-facing", {}).get("output-port")
        or i.get("out-facing", {}).get("input-port"))}
    missing = sorted(needed - forwarded)
    if missing:
        raise UsageError(
            f"{source}: stream{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
            f"{'are' if len(missing) > 1 else 'is'} not forwarded: 802.1CB leaves forwarding to the bridge and the "
            f"data has no /{NODE}/stream-forwarding entry for {'them' if len(missing) > 1 else 'it'}; give the "
            f"ports its frames leave by with --forward {missing[0]}=PORT[,PORT...] ({missing[0]}=local: to this "
            "host), once per stream")
    return entries


#: The leaves of each identification type that the model leaves without a default and frerlab
#: fills in when absent (its YAML defaults). The IP type's vlan and dscp are not among them:
#: their "ignore" cannot be written (9.1.5.3 makes vlan 0 "no VLAN tag", 64 is outside
#: inet:dscp), so absent is how the export writes it.
_FILLED = {
    "null-stream-identification": _yaml_defaults(NullId, ("tagged", "vlan")),
    "smac-vlan-stream-identification": _yaml_defaults(SmacVlanId, ("tagged", "vlan")),
    "ip-stream-identification": _yaml_defaults(IpId, ("tagged", "ip-source", "ip-destination", "next-protocol",
                                                      "source-port", "destination-port")),
}
_SIDE_FILLED = _yaml_defaults(DmacVlanSide, ("tagged",))


def _identity(entry: object, path: str, notes: list[str]) -> dict[str, Any]:
    types = tuple(_TYPE_LEAVES)
    entry, path = _entry(entry, path, "index")
    for key in entry:
        if key.rpartition(":")[2] == MASK_AND_MATCH:  # the 802.1CBdb module's, qualified or not
            raise UsageError(f"{path}/{_shown(key)}: mask-and-match identification (802.1CBdb) is in frerlab's core "
                             f"but {_NOT_IMPLEMENTED}; use one of {', '.join(types)}")
    entry = _mapping(entry, path, ("index", "handle", "in-facing", "out-facing", f"{FRER_MODULE}:lan-path-id",
                                   *types), {
        "organization-specific": f"organization-specific identification {_NOT_IMPLEMENTED}; use one of "
        f"{', '.join(types)}",
        f"{FRER_MODULE}:auto-configured": _CONFIG_FALSE})
    lan_path_id = entry.get(f"{FRER_MODULE}:lan-path-id", -1)
    if lan_path_id != -1:
        raise UsageError(f"{path}/{FRER_MODULE}:lan-path-id: {_int_shown(lan_path_id)} matches the LanId/PathId of "
                         "HSR or PRP frames, whose encapsulation " + _NOT_IMPLEMENTED + " (r-tag only); valid: -1 "
                         "(ignore), or remove it")
    out: dict[str, Any] = {"index": entry["index"], "handle": entry.get("handle")}
    for facing in ("in-facing", "out-facing"):
        if facing in entry:
            out[facing] = _mapping(entry[facing], f"{path}/{facing}", ("input-port", "output-port"))
    for kind in types:
        if kind in entry:
            where = f"{path}/{kind}"
            params = _mapping(entry[kind], where, _TYPE_LEAVES[kind], {"identification-type": _CONFIG_FALSE})
            if kind == "dmac-vlan-stream-identification":
                out[kind] = {side: _frerlab_macs(_absent(
                    _mapping(params.get(side, {}), f"{where}/{side}", _SIDE_LEAVES), _SIDE_FILLED,
                    f"{where}/{side}", notes)) for side in ("down", "up")}
                continue
            if kind == "ip-stream-identification":
                params = _ip_vlan(params, where, notes)
            out[kind] = _frerlab_macs(_absent(params, _FILLED[kind], where, notes))
    return out


def _ip_vlan(params: dict, path: str, notes: list[str]) -> dict:
    """IP identification parameters with `vlan: 0` read as the model defines it for this type,
    "the frame is not to have a VLAN tag" (9.1.5.3): frerlab's `tagged: priority` (untagged or
    priority-tagged frames; frerlab's vlan 0 of the other types is "any VID")."""
    if params.get("vlan") != 0 or isinstance(params.get("vlan"), bool) or params.get("tagged") == "priority":
        return params
    if params.get("tagged") == "tagged":
        raise UsageError(f"{path}/vlan: 0 means the frame is not to have a VLAN tag (9.1.5.3), and tagged: tagged "
                         "that it must have one, so no frame matches; use tagged: priority for frames without a "
                         "VLAN tag, or leave vlan out to ignore the VID")
    notes.append(f"{path}/vlan: 0 means the frame is not to have a VLAN tag (9.1.5.3): read as tagged: priority "
                 "(untagged or priority-tagged frames); leave vlan out to ignore the VID")
    return {**params, "tagged": "priority"}


def _frerlab_macs(params: dict) -> dict[str, Any]:
    """`params` with its MAC addresses as frerlab writes them (lower case, ':')."""
    return {k: v.lower().replace("-", ":") if k in _MAC_LEAVES and isinstance(v, str) and _IEEE_MAC.fullmatch(v)
            else v for k, v in params.items()}


def _generation(entry: object, path: str, notes: list[str]) -> dict[str, Any]:
    entry, path = _entry(entry, path, "index")
    entry = _mapping(entry, path, ("index", "stream", "direction-out-facing", "reset"))
    if entry.get("reset") is True:
        raise UsageError(f"{path}/reset: true is an action, not configuration; reset a running function with "
                         "`frerlab dataplane reset`")
    return _absent({"index": entry["index"], "stream": entry.get("stream"),
                    **{k: entry[k] for k in ("direction-out-facing",) if k in entry}},
                   _yaml_defaults(SequenceGeneration, ("direction-out-facing",)), path, notes)


def _recovery(entry: object, path: str, every_frame: set, rates: dict, notes: list[str]) -> dict[str, Any]:
    entry, path = _entry(entry, path, "index")
    entry = _mapping(entry, path, (
        "index", "stream", "port", "direction-out-facing", "reset", "algorithm", "history-length", "reset-timeout",
        "invalid-sequence-value", "take-no-sequence", "individual-recovery", "latent-error-detection",
        "latent-error-detection-parameters"))
    index = entry["index"]
    invalid = entry.get("invalid-sequence-value", SEQ_SPACE)
    if not isinstance(invalid, int) or isinstance(invalid, bool) or not SEQ_SPACE <= invalid < 2**32:
        raise UsageError(f"{path}/invalid-sequence-value: {_int_shown(invalid)} is not valid: it is read-only state "
                         f"naming a value no R-TAG can carry ({SEQ_SPACE}..4294967295; frerlab's is {SEQ_SPACE})")
    if entry.get("reset") is True:
        raise UsageError(f"{path}/reset: true is an action, not configuration; reset a running function with "
                         "`frerlab dataplane reset`")
    _within_frerlab(entry, path)
    out: dict[str, Any] = {"index": index, "stream": entry.get("stream")}
    if index not in every_frame:
        out["port"] = entry.get("port")
    algorithm = _mapping(entry.get("algorithm", {"vector": {}}), f"{path}/algorithm", ("vector", "match"), {
        "organization-specific": "an organization-specific algorithm " + _NOT_IMPLEMENTED + "; use vector or match"})
    if len(algorithm) != 1:
        raise UsageError(f"{path}/algorithm: give exactly one of vector, match (a YANG choice)")
    (name, value), = algorithm.items()
    _mapping(value, f"{path}/algorithm/{name}", (), {"type-number": _CONFIG_FALSE, "oui-cid": _CONFIG_FALSE})
    out["algorithm"] = name
    out["history-length"] = entry.get("history-length", 2)  # the YANG default (10.4.1.6)
    if "reset-timeout" not in entry:
        notes.append(f"{path}/reset-timeout: absent, and without a default in the model: no timeout (`dataplane up` "
                     "warns where that can black the stream out)")
    out["reset-timeout"] = entry.get("reset-timeout", "never")
    for leaf in ("take-no-sequence", "direction-out-facing", "individual-recovery", "latent-error-detection"):
        if leaf in entry:
            out[leaf] = entry[leaf]
    out = _absent(out, _yaml_defaults(SequenceRecovery, ("direction-out-facing", "individual-recovery",
                                                         "latent-error-detection")), path, notes)
    if "latent-error-detection-parameters" in entry:
        where = f"{path}/latent-error-detection-parameters"
        params = _mapping(entry["latent-error-detection-parameters"], where,
                          ("difference", "period", "paths", "reset-period"))
        if entry.get("latent-error-detection") is True:
            for leaf in ("difference", "paths"):  # no YANG default, and frerlab needs them
                if leaf not in params:
                    raise UsageError(f"{where}/{leaf} is missing: latent error detection needs difference and paths "
                                     "(10.4.1.12)")
        _within_frerlab(params, where)
        out["latent-error-detection-parameters"] = dict(params)
    if index in rates:
        out["frame-rate"] = rates[index]
    return out


def _outward(entry: dict, path: str) -> None:
    if _key(entry, "direction-out-facing", path) is not True:
        raise UsageError(f"{path}/direction-out-facing: false (in-facing) is not implemented; frerlab places "
                         "this function on the out-facing side of the port (frames leaving it): use true")


def _sequence_identification(entries: list, notes: list[str]) -> list[dict[str, Any]]:
    """frerlab's entries (ports grouped by the same streams and activity) of IEEE's per-port list."""
    path = f"/{FRER}/sequence-identification"
    grouped: dict[str, dict[str, Any]] = {}
    for entry in entries:
        entry, where = _entry(entry, path, "port")
        entry = _mapping(entry, where, ("port", "direction-out-facing", "stream", "active", "encapsulation"),
                         {"path-id-lan-id": "path-id-lan-id is used only with the HSR sequence tag or PRP "
                          "trailer (10.5.1.6), whose encapsulation " + _NOT_IMPLEMENTED + " (r-tag only); remove it"})
        _outward(entry, where)
        if "encapsulation" not in entry:
            notes.append(f"{where}/encapsulation: absent, and the choice has no default in the model: r-tag, the "
                         "only one frerlab implements")
        encapsulation = _mapping(entry.get("encapsulation", {"r-tag": {}}), f"{where}/encapsulation", ("r-tag",), {
            name: f"{name} {_NOT_IMPLEMENTED}; use r-tag" for name in
            ("hsr-sequence-tag", "prp-sequence-tag", "organization-specific")})
        if not encapsulation:
            raise UsageError(f"{where}/encapsulation: give r-tag (a YANG choice)")
        _mapping(encapsulation["r-tag"], f"{where}/encapsulation/r-tag", (),
                 {"type-number": _CONFIG_FALSE, "oui-cid": _CONFIG_FALSE})
        streams = _list(entry.get("stream"), f"{where}/stream")
        active = _absent({k: entry[k] for k in ("active",) if k in entry},
                         _yaml_defaults(SequenceIdentification, ("active",)), where, notes)["active"]
        group = grouped.setdefault(json.dumps([streams, active]), {"port": [], "stream": streams, "active": active})
        group["port"].append(entry["port"])
    return list(grouped.values())


def _split(entry: object, path: str) -> dict[str, Any]:
    entry, where = _entry(entry, path, "port")
    entry = _mapping(entry, where, ("port", "direction-out-facing", "input-id", "output-id"))
    _outward(entry, where)
    return {"port": entry["port"], "input-id": entry.get("input-id"), "output-id": entry.get("output-id")}


def read_instance(path: str | Path) -> Any:
    """The JSON of an instance data file; UsageError when it is not a bounded JSON text file."""
    text = read_text(path, "YANG instance data")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{path}: not JSON (RFC 7951 instance data) at line {err.lineno}, column "
                         f"{err.colno}: {err.msg}") from None
    except (RecursionError, ValueError):  # nested too deeply; a number too long to convert
        raise UsageError(f"{path}: not instance data frerlab can read (nested too deeply or a number too "
                         "long)") from None


# ---- validation against YANG modules ----

_MODULE = re.compile(r"^\s*(?:module|submodule)\s+([A-Za-z_][\w.-]*)", re.M)
_REVISION = re.compile(r"^\s*revision\s+\"?(\d{4}-\d{2}-\d{2})", re.M)
_IMPORT = re.compile(r"^\s*import\s+([A-Za-z_][\w.-]*)", re.M)
_FEATURE = re.compile(r"^\s*feature\s+([A-Za-z_][\w.-]*)", re.M)


def _modules_in(dirs: list[Path]) -> dict[str, tuple[Path, str, str]]:
    """Module name -> (directory, latest revision or "", text) of every module file in `dirs` (first wins)."""
    found: dict[str, tuple[Path, str]] = {}
    for d in dirs:
        for f in sorted(d.glob("*.yang")):
            text = f.read_text(encoding="utf-8", errors="replace")
            m = _MODULE.search(text)
            if m and m.group(1) not in found:
                revisions = _REVISION.findall(text)
                found[m.group(1)] = (d, max(revisions) if revisions else "", text)
    return found


def _named_modules(data: Any, found: dict) -> list[str]:
    """The modules `data` names: those qualifying a member name at any depth (its top-level
    members, and members that augmenting modules add, RFC 7951 4), and those of identities its
    values name ("iana-if-type:ethernetCsmacd")."""
    names, stack = [], [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            names.extend(k.split(":", 1)[0] for k in item if isinstance(k, str) and ":" in k)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and ":" in item and item.split(":", 1)[0] in found:
            names.append(item.split(":", 1)[0])
    return names


def yang_library(data: Any, dirs: list[Path]) -> dict[str, Any]:
    """RFC 7895 YANG library data naming the modules `data` needs (those it names, see
    _named_modules, and what they import), every feature enabled."""
    found = _modules_in(dirs)
    wanted = _named_modules(data, found)
    modules, seen = [], set()
    while wanted:
        name = wanted.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name not in found:
            where = ", ".join(str(d) for d in dirs)
            shown = _shown(name)
            raise UsageError(f"YANG module {shown} is not in {where}: put {shown}.yang (or {shown}@REVISION.yang) "
                             "there (docs/config.md lists the modules the IEEE ones import)")
        _, revision, text = found[name]
        modules.append({"name": name, "revision": revision, "conformance-type": "implement",
                        "feature": sorted(set(_FEATURE.findall(text)))})
        wanted.extend(_IMPORT.findall(text))
    return {"ietf-yang-library:modules-state": {"module-set-id": "frerlab", "module": modules}}


def validate_file(path: str | Path, yang_dirs: list[Path]) -> int:
    """Validates the instance data in `path` as configuration against the YANG modules in
    `yang_dirs` (and frerlab's own module) with yangson; returns the number of top-level
    members checked; UsageError naming the first problem, at a path with module names and list
    keys, whatever yangson raised."""
    data = read_instance(path)
    for d in yang_dirs:
        if not Path(d).is_dir():
            raise UsageError(f"--yang-dir {str(d)!r} is not a directory")
    dirs = [*map(Path, yang_dirs), FRERLAB_YANG_DIR]
    from yangson import DataModel  # heavy: only when validating
    from yangson.enumerations import ContentType
    from yangson.exceptions import RawDataError, RawTypeError, ValidationError

    library = yang_library(data, dirs)
    try:
        model = DataModel(json.dumps(library), [str(d) for d in dirs])
    except Exception as err:  # any failure of yangson on the modules is the modules'
        raise UsageError(f"the YANG modules in {', '.join(map(str, dirs))} cannot be loaded: "
                         f"{type(err).__name__}: {err}") from None
    invalid = f"{path}: not valid against the YANG modules"
    try:
        instance = model.from_raw(data)
    except RawDataError as err:
        what = err.message if isinstance(err, RawTypeError) else "no node of the loaded modules has this name"
        raise UsageError(f"{invalid}: {_raw_route(model.schema, data, err.path)}: {what} "
                         f"({type(err).__name__})") from None
    except Exception as err:  # a failure of yangson itself: name where it was
        raise UsageError(f"{invalid}: {_failed_at(err, model.schema, data)}: yangson failed on this node "
                         f"({type(err).__name__})") from None
    try:
        instance.validate(ctype=ContentType.config)
    except ValidationError as err:
        detail = f": {hide_texts(str(err.message), data)}" if err.message else ""
        raise UsageError(f"{invalid}: {_instance_route(err.instance)}: {err.tag}{detail} "
                         f"({type(err).__name__})") from None
    except Exception as err:  # yangson fails so on some invalid data (a mandatory choice)
        raise UsageError(f"{invalid}: {_failed_at(err, model.schema, data)}: {_why_failed(err)} "
                         f"({type(err).__name__} in yangson)") from None
    return len(data)


def _instance_route(inst: Any) -> str:
    """The path of a yangson instance: member names (module-qualified where the module
    changes) and list entries by their keys, `[index=1]`."""
    from yangson.schemanode import ListNode

    parts = []
    while inst.parinst is not None:
        step = inst.path[-1]
        if not isinstance(step, int):
            parts.append(f"/{step}")
        elif isinstance(inst.schema_node, ListNode) and inst.schema_node.keys:
            parts.append("[" + ",".join(f"{name}={_shown_value(inst.value.get(name))}"
                                        for name, _ in inst.schema_node.keys) + "]")
        else:
            parts.append(f"[.={_shown_value(inst.value)}]")
        inst = inst.parinst
    return "".join(reversed(parts)) or "/"


def _raw_route(node: Any, value: Any, target: str, pointer: str = "", route: str = "") -> str | None:
    """The readable path of the JSON pointer `target` that yangson built while reading `value`
    with schema `node` (member names as yangson writes them, a list entry as `=KEYS` or
    `/POSITION`): module-qualified names where the module changes and `[key=value]` entries;
    a placeholder when it cannot be followed."""
    from yangson.schemanode import InternalNode, ListNode, SequenceNode

    if pointer == target:
        return route or "/"
    if isinstance(value, list) and isinstance(node, SequenceNode):
        for i, entry in enumerate(value):
            if isinstance(node, ListNode) and isinstance(entry, dict):
                step = "=" + ",".join(str(entry.get(k, "<missing>")) for k, _ in node.keys)
                label = "[" + ",".join(f"{k}={_shown_value(entry.get(k))}" for k, _ in node.keys) + "]"
            else:
                step = f"/{i}"  # a leaf-list entry, or a list entry that is not an object
                label = f"[position {i + 1}]" if isinstance(node, ListNode) else f"[.={_shown_value(entry)}]"
            if target.startswith(pointer + step):
                found = _raw_route(node, entry, target, pointer + step, route + label)
                if found is not None:
                    return found
    elif isinstance(value, dict) and isinstance(node, InternalNode):
        for name, member in value.items():
            step = f"{pointer}/{name}"
            if not isinstance(name, str) or not target.startswith(step):
                continue
            module, _, local = name.rpartition(":")
            child = node.get_data_child(local, module or node.ns)
            label = _shown(name) if child is None else (
                f"{child.ns}:{child.name}" if pointer == "" or child.ns != node.ns else child.name)
            found = _raw_route(child, member, target, step, f"{route}/{label}") if child is not None else (
                f"{route}/{label}" if step == target else None)
            if found is not None:
                return found
    return None if pointer else "(a node whose path cannot be shown)"


def _failed_at(err: BaseException, schema: Any, data: Any) -> str:
    """Where yangson was when it raised `err`: the instance or JSON pointer of its innermost
    frame that has one."""
    from yangson.instance import InstanceNode

    inst = pointer = None
    tb = err.__traceback__
    while tb is not None:
        local = tb.tb_frame.f_locals
        if isinstance(local.get("inst"), InstanceNode):
            inst = local["inst"]
        for name in ("npath", "jptr"):
            if isinstance(local.get(name), str):
                pointer = local[name]
        tb = tb.tb_next
    if inst is not None:
        return _instance_route(inst)
    return _raw_route(schema, data, pointer) if pointer is not None else "/"


def _why_failed(err: BaseException) -> str:
    """What the data lacks where yangson failed with `err`: the mandatory choice with none of
    its cases (yangson 1.7 fails with a TypeError there), else that it could not check it."""
    from yangson.instance import InstanceNode
    from yangson.schemanode import ChoiceNode

    tb = err.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    node, inst = tb.tb_frame.f_locals.get("self"), tb.tb_frame.f_locals.get("inst")
    if isinstance(inst, InstanceNode) and isinstance(inst.value, dict):
        for choice in getattr(node, "children", []):
            if isinstance(choice, ChoiceNode) and choice.mandatory:
                cases = [data.iname() for case in choice.children for data in case.data_children()]
                if not any(name in inst.value for name in cases):
                    return (f"missing-data: the mandatory choice {choice.name} has none of its cases "
                            f"({', '.join(cases)})")
    return "yangson could not check this node"
