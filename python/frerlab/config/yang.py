"""IEEE YANG instance data (RFC 7951 JSON) of one node's FRER configuration, both ways.

`export_yang` turns a validated NodeConfig into the data of the published modules
ieee802-dot1cb-stream-identification (top-level list `stream-identity`) and
ieee802-dot1cb-frer (container `frer`: sequence-generation, sequence-recovery,
sequence-identification, stream-split), both of revision 2021-12-08, with the node's ports as
the ietf-interfaces interface list that their `if:interface-ref` leaves point into, and what
802.1CB leaves to the bridge or frerlab adds (name, forwarding, bridged ports, PVIDs, frame
rates) under frerlab's own module frerlab-dataplane (frerlab-dataplane.yang next to this file).
`import_yang` reads such data back into the YAML vocabulary and validates it as the data plane
does; a node frerlab cannot express or the data plane does not implement is refused with a
UsageError naming its path and what would be valid. `validate_file` checks instance data
against YANG modules a user has, with yangson (imported only there). docs/config.md maps
every node.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from frerlab.dataplane.config import NodeConfig, parse_config
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
#: What a member name or key of the file must look like to be shown in a message (frerlab runs as
#: root, so it never echoes other text of a file: docs/errors.md).
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
#: DSCP value meaning "ignore" (9.1.5.6); inet:dscp itself only holds 0..63, so it is omitted.
DSCP_IGNORE = 64


# ---- export ----

def _ieee_mac(mac: str) -> str:
    """A MAC address as ieee802-types:mac-address writes it (upper case, '-')."""
    return mac.upper().replace(":", "-")


def _ms(ns: int, where: str) -> int:
    if ns % 1_000_000:
        raise UsageError(f"{where}: reset timeout {ns} ns is not whole milliseconds (reset-timeout is in ms)")
    return ns // 1_000_000


def _decimal(value: float, where: str) -> str:
    """A frame rate as frerlab-dataplane's decimal64 (3 fraction digits), as RFC 7951 writes it."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    if float(text) != value:
        raise UsageError(f"{where}: frame-rate {value!r} has more than 3 decimal places")
    return text


def export_yang(cfg: NodeConfig) -> dict[str, Any]:
    """RFC 7951 instance data of `cfg` (a validated configuration)."""
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
        if not ports:  # one function for every frame of the stream: no IEEE counterpart
            every_frame.append(rec.index)
            ports = [p for p in cfg.ports if any(p in identified.get(h, []) for h in rec.stream)]
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
            rates.append({"index": rec.index, "frame-rate": _decimal(rec.frame_rate, where)})
        recoveries.append(entry)
    if recoveries:
        frer["sequence-recovery"] = recoveries
    encode: dict[str, dict[str, Any]] = {}
    for seq in cfg.sequence_identification:
        for p in seq.port:
            if p in encode:
                raise UsageError(f"sequence-identification: port {p} is listed twice; IEEE's list is keyed "
                                 "by port and direction (one entry per port): list its streams once")
            encode[p] = {"port": p, "direction-out-facing": True, "stream": list(seq.stream),
                         "active": seq.active, "encapsulation": {"r-tag": {}}}
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
    data = {INTERFACES: {"interface": [{"name": p, "type": IF_TYPE} for p in cfg.ports]}}
    if identities:
        data[SID] = identities
    if frer:
        data[FRER] = frer
    data[NODE] = node
    return data


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
    return str(value) if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**64 else "the value"


def _list(value: object, path: str) -> list:
    if not isinstance(value, list):
        raise UsageError(f"{path}: expected a JSON array (a YANG list or leaf-list)")
    return value


def _key(entry: dict, key: str, path: str) -> Any:
    """The value of list key `key` of `entry`: a uint32 for `index`, a text for `port` and `name`."""
    if key not in entry:
        raise UsageError(f"{path}: the list key {key!r} is missing")
    value = entry[key]
    if key == "index" and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32):
        raise UsageError(f"{path}: index must be a uint32 (a JSON number 0..4294967295)")
    if key in ("port", "name") and not isinstance(value, str):
        raise UsageError(f"{path}: {key} must be a JSON string (an interface name)")
    return value


_CONFIG_FALSE = "is read-only state (config false), not configuration"
_NOT_IMPLEMENTED = "is not implemented by frerlab's data plane"
#: RecovSeqSpace: the number of sequence numbers of an R-TAG (802.1CB 7.4.3.2.1).
SEQ_SPACE = 65536


def import_yang(data: object, source: str) -> tuple[dict[str, Any], NodeConfig]:
    """frerlab's YAML mapping of RFC 7951 instance data, and the NodeConfig it validates to;
    UsageError naming the first node frerlab cannot express."""
    top = _mapping(data, source, (INTERFACES, SID, FRER, NODE))
    out: dict[str, Any] = {}
    node = _mapping(top.get(NODE, {}), f"/{NODE}", ("name", "netns", "bridge-ports", "port-settings",
                                                     "stream-forwarding", "every-frame-recovery", "frame-rate"))
    for leaf in ("name", "netns"):
        if leaf in node:
            out[leaf] = node[leaf]
    if INTERFACES not in top:
        raise UsageError(f"{source}: /{INTERFACES} is missing: the node's ports are its interface list")
    interfaces = _mapping(top[INTERFACES], f"/{INTERFACES}", ("interface",))
    ports = []
    for entry in _list(interfaces.get("interface", []), f"/{INTERFACES}/interface"):
        name = _key(_mapping(entry, f"/{INTERFACES}/interface", ("name", "type", "enabled", "description")),
                    "name", f"/{INTERFACES}/interface")
        ports.append(name)
    out["ports"] = ports
    if "bridge-ports" in node:
        out["bridge-ports"] = _list(node["bridge-ports"], f"/{NODE}/bridge-ports")
    if "port-settings" in node:
        out["port-settings"] = [_mapping(s, f"/{NODE}/port-settings", ("port", "pvid"))
                                for s in _list(node["port-settings"], f"/{NODE}/port-settings")]

    if SID in top:
        out["stream-identity"] = [_identity(e, f"/{SID}") for e in _list(top[SID], f"/{SID}")]
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
        out["sequence-generation"] = [_generation(e, f"/{FRER}/sequence-generation")
                                      for e in _list(frer["sequence-generation"], f"/{FRER}/sequence-generation")]
    if "sequence-recovery" in frer:
        out["sequence-recovery"] = [_recovery(e, f"/{FRER}/sequence-recovery", every_frame, rates)
                                    for e in _list(frer["sequence-recovery"], f"/{FRER}/sequence-recovery")]
    if "sequence-identification" in frer:
        out["sequence-identification"] = _sequence_identification(
            _list(frer["sequence-identification"], f"/{FRER}/sequence-identification"))
    if "stream-split" in frer:
        out["stream-split"] = [_split(e, f"/{FRER}/stream-split")
                               for e in _list(frer["stream-split"], f"/{FRER}/stream-split")]
    if "stream-forwarding" in node:
        out["stream-forwarding"] = [_mapping(f, f"/{NODE}/stream-forwarding", ("stream", "output-port"))
                                    for f in _list(node["stream-forwarding"], f"/{NODE}/stream-forwarding")]
    return out, parse_config(out, source)


def _identity(entry: object, path: str) -> dict[str, Any]:
    types = tuple(_TYPE_LEAVES)
    entry = _mapping(entry, path, ("index", "handle", "in-facing", "out-facing", f"{FRER_MODULE}:lan-path-id",
                                   *types), {
        "mask-and-match-stream-identification": "mask-and-match identification (802.1CBdb) is in frerlab's "
        "core but " + _NOT_IMPLEMENTED + f"; use one of {', '.join(types)}",
        "organization-specific": f"organization-specific identification {_NOT_IMPLEMENTED}; use one of "
        f"{', '.join(types)}",
        f"{FRER_MODULE}:auto-configured": _CONFIG_FALSE})
    index = _key(entry, "index", path)
    path = f"{path}[index={index}]"
    lan_path_id = entry.get(f"{FRER_MODULE}:lan-path-id", -1)
    if lan_path_id != -1:
        raise UsageError(f"{path}/{FRER_MODULE}:lan-path-id: {_int_shown(lan_path_id)} matches the LanId/PathId of "
                         "HSR or PRP frames, whose encapsulation " + _NOT_IMPLEMENTED + " (r-tag only); valid: -1 "
                         "(ignore), or remove it")
    out: dict[str, Any] = {"index": index, "handle": entry.get("handle")}
    for facing in ("in-facing", "out-facing"):
        if facing in entry:
            out[facing] = _mapping(entry[facing], f"{path}/{facing}", ("input-port", "output-port"))
    for kind in types:
        if kind in entry:
            params = _mapping(entry[kind], f"{path}/{kind}", _TYPE_LEAVES[kind],
                              {"identification-type": _CONFIG_FALSE})
            if kind == "dmac-vlan-stream-identification":
                out[kind] = {side: _frerlab_macs(_mapping(params.get(side, {}), f"{path}/{kind}/{side}",
                                                          _SIDE_LEAVES)) for side in ("down", "up")}
            else:
                out[kind] = _frerlab_macs(params)
    return out


def _frerlab_macs(params: dict) -> dict[str, Any]:
    """`params` with its MAC addresses as frerlab writes them (lower case, ':')."""
    return {k: v.lower().replace("-", ":") if k in _MAC_LEAVES and isinstance(v, str) and _IEEE_MAC.fullmatch(v)
            else v for k, v in params.items()}


def _generation(entry: object, path: str) -> dict[str, Any]:
    entry = _mapping(entry, path, ("index", "stream", "direction-out-facing", "reset"))
    index = _key(entry, "index", path)
    if entry.get("reset") is True:
        raise UsageError(f"{path}[index={index}]/reset: true is an action, not configuration; reset a running "
                         "function with `frerlab dataplane reset`")
    out = {"index": index, "stream": entry.get("stream")}
    if "direction-out-facing" in entry:
        out["direction-out-facing"] = entry["direction-out-facing"]
    return out


def _recovery(entry: object, path: str, every_frame: set, rates: dict) -> dict[str, Any]:
    entry = _mapping(entry, path, (
        "index", "stream", "port", "direction-out-facing", "reset", "algorithm", "history-length", "reset-timeout",
        "invalid-sequence-value", "take-no-sequence", "individual-recovery", "latent-error-detection",
        "latent-error-detection-parameters"))
    index = _key(entry, "index", path)
    path = f"{path}[index={index}]"
    invalid = entry.get("invalid-sequence-value", SEQ_SPACE)
    if not isinstance(invalid, int) or isinstance(invalid, bool) or not SEQ_SPACE <= invalid < 2**32:
        raise UsageError(f"{path}/invalid-sequence-value: {_int_shown(invalid)} is not valid: it is read-only state "
                         f"naming a value no R-TAG can carry ({SEQ_SPACE}..4294967295; frerlab's is {SEQ_SPACE})")
    if entry.get("reset") is True:
        raise UsageError(f"{path}/reset: true is an action, not configuration; reset a running function with "
                         "`frerlab dataplane reset`")
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
    out["reset-timeout"] = entry.get("reset-timeout", "never")  # no default: absent is no timeout
    for leaf in ("direction-out-facing", "take-no-sequence", "individual-recovery", "latent-error-detection"):
        if leaf in entry:
            out[leaf] = entry[leaf]
    if "latent-error-detection-parameters" in entry:
        params = _mapping(entry["latent-error-detection-parameters"], f"{path}/latent-error-detection-parameters",
                          ("difference", "period", "paths", "reset-period"))
        if entry.get("latent-error-detection") is True:
            for leaf in ("difference", "paths"):  # no YANG default, and frerlab needs them
                if leaf not in params:
                    raise UsageError(f"{path}/latent-error-detection-parameters/{leaf} is missing: latent error "
                                     f"detection needs difference and paths (10.4.1.12)")
        out["latent-error-detection-parameters"] = dict(params)
    if index in rates:
        out["frame-rate"] = rates[index]
    return out


def _outward(entry: dict, path: str) -> None:
    if _key(entry, "direction-out-facing", path) is not True:
        raise UsageError(f"{path}/direction-out-facing: false (in-facing) is not implemented; frerlab places "
                         "this function on the out-facing side of the port (frames leaving it): use true")


def _sequence_identification(entries: list) -> list[dict[str, Any]]:
    """frerlab's entries (ports grouped by the same streams and activity) of IEEE's per-port list."""
    path = f"/{FRER}/sequence-identification"
    grouped: dict[str, dict[str, Any]] = {}
    for entry in entries:
        entry = _mapping(entry, path, ("port", "direction-out-facing", "stream", "active", "encapsulation"),
                         {"path-id-lan-id": "path-id-lan-id is used only with the HSR sequence tag or PRP "
                          "trailer (10.5.1.6), whose encapsulation " + _NOT_IMPLEMENTED + " (r-tag only); remove it"})
        port = _key(entry, "port", path)
        where = f"{path}[port={_shown(port)}]"
        _outward(entry, where)
        encapsulation = _mapping(entry.get("encapsulation", {"r-tag": {}}), f"{where}/encapsulation", ("r-tag",), {
            name: f"{name} {_NOT_IMPLEMENTED}; use r-tag" for name in
            ("hsr-sequence-tag", "prp-sequence-tag", "organization-specific")})
        if not encapsulation:
            raise UsageError(f"{where}/encapsulation: give r-tag (a YANG choice)")
        _mapping(encapsulation["r-tag"], f"{where}/encapsulation/r-tag", (),
                 {"type-number": _CONFIG_FALSE, "oui-cid": _CONFIG_FALSE})
        streams = _list(entry.get("stream"), f"{where}/stream")
        active = entry.get("active", True)
        group = grouped.setdefault(json.dumps([streams, active]), {"port": [], "stream": streams, "active": active})
        group["port"].append(port)
    return list(grouped.values())


def _split(entry: object, path: str) -> dict[str, Any]:
    entry = _mapping(entry, path, ("port", "direction-out-facing", "input-id", "output-id"))
    port = _key(entry, "port", path)
    _outward(entry, f"{path}[port={_shown(port)}]")
    return {"port": port, "input-id": entry.get("input-id"), "output-id": entry.get("output-id")}


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


def yang_library(data: Any, dirs: list[Path]) -> dict[str, Any]:
    """RFC 7895 YANG library data naming the modules `data` needs (its top-level modules, the
    modules of identities it names, and what they import), every feature enabled."""
    found = _modules_in(dirs)
    wanted = [k.split(":", 1)[0] for k in (data if isinstance(data, dict) else {})]
    stack = [data]
    while stack:  # identityref values such as "iana-if-type:ethernetCsmacd"
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and ":" in item and item.split(":", 1)[0] in found:
            wanted.append(item.split(":", 1)[0])
    modules, seen = [], set()
    while wanted:
        name = wanted.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name not in found:
            where = ", ".join(str(d) for d in dirs)
            raise UsageError(f"YANG module {name} is not in {where}: put {name}.yang (or {name}@REVISION.yang) "
                             "there (docs/config.md lists the modules the IEEE ones import)")
        _, revision, text = found[name]
        modules.append({"name": name, "revision": revision, "conformance-type": "implement",
                        "feature": sorted(set(_FEATURE.findall(text)))})
        wanted.extend(_IMPORT.findall(text))
    return {"ietf-yang-library:modules-state": {"module-set-id": "frerlab", "module": modules}}


def validate_file(path: str | Path, yang_dirs: list[Path]) -> int:
    """Validates the instance data in `path` as configuration against the YANG modules in
    `yang_dirs` (and frerlab's own module) with yangson; returns the number of top-level
    members checked; UsageError naming the first problem."""
    data = read_instance(path)
    for d in yang_dirs:
        if not Path(d).is_dir():
            raise UsageError(f"--yang-dir {str(d)!r} is not a directory")
    dirs = [*map(Path, yang_dirs), FRERLAB_YANG_DIR]
    from yangson import DataModel  # heavy: only when validating
    from yangson.enumerations import ContentType
    from yangson.exceptions import YangsonException

    library = yang_library(data, dirs)
    try:
        model = DataModel(json.dumps(library), [str(d) for d in dirs])
    except YangsonException as err:
        raise UsageError(f"the YANG modules in {', '.join(map(str, dirs))} cannot be loaded: "
                         f"{type(err).__name__}: {err}") from None
    try:
        model.from_raw(data).validate(ctype=ContentType.config)
    except YangsonException as err:
        raise UsageError(f"{path}: not valid against the YANG modules: {type(err).__name__}: "
                         f"{hide_texts(str(err), data)}") from None
    except TypeError as err:  # yangson fails so when a mandatory choice has no case in the data
        raise UsageError(f"{path}: not valid against the YANG modules: SchemaError: missing-data: a mandatory "
                         f"choice has none of its cases{_where(err, data)}") from None
    return len(data)


def _where(err: TypeError, data: Any) -> str:
    """" at JSON-POINTER" of the instance yangson was checking when it raised `err`, or ""."""
    tb, inst = err.__traceback__, None
    while tb is not None:
        inst = tb.tb_frame.f_locals.get("inst", inst)
        tb = tb.tb_next
    try:
        return f" at {hide_texts(str(inst.json_pointer()), data)}"
    except AttributeError:
        return ""
