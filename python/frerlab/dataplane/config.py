"""The data plane configuration file: one FRER node (talker end-station, relay or listener) in
the vocabulary of the IEEE YANG modules ieee802-dot1cb-stream-identification and
ieee802-dot1cb-frer (stream-identity, sequence-generation, sequence-recovery,
sequence-identification), with their names and defaults, validated with pydantic, and compiled
into the map entries of bpf/frer.c (`compile_node`).

802.1CB leaves forwarding to the bridge (802.1Q): which ports a stream's frames leave by is
frerlab's `stream-forwarding` list, and the interfaces the node owns are its `ports`. Every
error names the field path and what would be valid. Example (the seeds' SW1, replicating):

    name: sw1
    ports: [up, pa, pb]
    stream-identity:
      - {index: 1, handle: 1, in-facing: {input-port: [up]},
         ip-stream-identification: {ip-destination: 198.18.0.2, next-protocol: udp}}
    sequence-generation: [{index: 1, stream: [1]}]
    stream-forwarding: [{stream: 1, output-port: [pa, pb]}]
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, AliasGenerator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from frerlab.dataplane import layout
from frerlab.yamlfile import read_mapping, validate

#: The pseudo-port of `stream-forwarding` that hands a stream to this host (listener role).
LOCAL = "local"
#: The data plane name when the file gives none.
DEFAULT_NAME = "frerlab"
#: frerlab's default frerSeqRcvyResetMSec (the standard leaves it to the implementation).
DEFAULT_RESET_TIMEOUT_MS = 2000
_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")
_IFNAME = re.compile(r"^[^\s/:]{1,15}$")
_PROTOCOLS = {"none": 0, "udp": 17, "tcp": 6, "sctp": 132}


def _mac(value: str) -> str:
    if not isinstance(value, str) or not _MAC.match(value):
        raise ValueError(f"{value!r} is not a MAC address (like 02:00:00:00:00:01)")
    return value.lower().replace("-", ":")


Mac = Annotated[str, AfterValidator(_mac)]
Vid = Annotated[int, Field(ge=0, le=4095)]
Port = Annotated[str, Field(pattern=_IFNAME.pattern)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              alias_generator=AliasGenerator(validation_alias=lambda n: n.replace("_", "-")))


class Facing(_Model):
    """Where an identity applies. frerlab identifies frames where they enter the node: on
    `input-port` when received (in-facing), on `output-port` when this host sends them
    (out-facing: the talker end-station role)."""

    input_port: list[Port] = Field(default_factory=list)
    output_port: list[Port] = Field(default_factory=list)


class NullId(_Model):
    """Null stream identification (type 1): destination MAC and VLAN."""

    destination_mac: Mac
    tagged: Literal["tagged", "priority", "all"] = "all"
    vlan: Vid = 0


class SmacVlanId(_Model):
    """Source MAC and VLAN stream identification (type 2)."""

    source_mac: Mac
    tagged: Literal["tagged", "priority", "all"] = "all"
    vlan: Vid = 0


class DmacVlanSide(_Model):
    """One side of active identification: the DA, VID and PCP of a VLAN-tagged frame."""

    destination_mac: Mac
    vlan: Vid
    priority: int = Field(0, ge=0, le=7)


class DmacVlanId(_Model):
    """Active destination MAC and VLAN identification (type 3). Placed in-facing on input
    ports it identifies frames by the `down` values (on the wire) and the stream leaves this
    node with the `up` values; placed out-facing on output ports, the copies sent there get
    the `down` values."""

    down: DmacVlanSide
    up: DmacVlanSide


class IpId(_Model):
    """IP stream identification (type 4), IPv4 or IPv6; 0 / 0.0.0.0 / :: / DSCP 64 ignore."""

    destination_mac: Mac | None = None
    tagged: Literal["tagged", "priority", "all"] = "all"
    vlan: Vid = 0
    ip_source: str = "0.0.0.0"
    ip_destination: str = "0.0.0.0"
    dscp: int = Field(64, ge=0, le=64)
    next_protocol: Literal["none", "udp", "tcp", "sctp"] = "none"
    source_port: int = Field(0, ge=0, le=65535)
    destination_port: int = Field(0, ge=0, le=65535)

    @model_validator(mode="after")
    def _valid(self) -> IpId:
        for name in ("ip_source", "ip_destination"):
            try:
                ipaddress.ip_address(getattr(self, name))
            except ValueError:
                raise ValueError(f"{name.replace('_', '-')} {getattr(self, name)!r} is not an IPv4 "
                                 "or IPv6 address (0.0.0.0 or :: to ignore)") from None
        src, dst = (ipaddress.ip_address(a) for a in (self.ip_source, self.ip_destination))
        if not src.is_unspecified and not dst.is_unspecified and src.version != dst.version:
            raise ValueError(f"ip-source {src} and ip-destination {dst} are of different IP versions")
        if self.next_protocol == "none" and (self.source_port or self.destination_port):
            raise ValueError("ports need a next-protocol (udp, tcp or sctp)")
        return self


class StreamIdentity(_Model):
    """stream-identity[index]: one identity of stream `handle` (exactly one of the types)."""

    index: int = Field(ge=0)
    handle: int = Field(ge=0, lt=2**32)
    in_facing: Facing = Facing()
    out_facing: Facing = Facing()
    null_stream_identification: NullId | None = None
    smac_vlan_stream_identification: SmacVlanId | None = None
    dmac_vlan_stream_identification: DmacVlanId | None = None
    ip_stream_identification: IpId | None = None

    @model_validator(mode="before")
    @classmethod
    def _known_type(cls, data: object) -> object:
        if isinstance(data, dict) and "mask-and-match-stream-identification" in data:
            raise ValueError("mask-and-match-stream-identification is supported by the core "
                             "(frerlab.frer.StreamIdentifier) but not by the eBPF data plane; use "
                             "null, smac-vlan, dmac-vlan or ip stream identification")
        return data

    @model_validator(mode="after")
    def _one_type(self) -> StreamIdentity:
        if len(self.types()) != 1:
            raise ValueError(f"stream-identity {self.index} needs exactly one of "
                             f"{', '.join(t.replace('_', '-') for t in _TYPES)}; has "
                             f"{len(self.types())}")
        if self.in_facing.output_port or self.out_facing.input_port:
            raise ValueError("frerlab identifies frames where they enter the node: use in-facing "
                             "input-port (received frames) or out-facing output-port (frames this "
                             "host sends)")
        if not (self.in_facing.input_port or self.out_facing.output_port):
            raise ValueError(f"stream-identity {self.index} is placed on no port (in-facing "
                             "input-port or out-facing output-port)")
        return self

    def types(self) -> list[str]:
        return [t for t in _TYPES if getattr(self, t) is not None]


_TYPES = ("null_stream_identification", "smac_vlan_stream_identification",
          "dmac_vlan_stream_identification", "ip_stream_identification")


class SequenceGeneration(_Model):
    """sequence-generation[index]: the streams numbered here (before replication)."""

    index: int = Field(ge=0)
    stream: list[int] = Field(min_length=1)


class LatentErrorDetection(_Model):
    """Latent error detection (802.1CB 7.4.4); periods in milliseconds."""

    difference: int = Field(ge=0)
    period: int = Field(2000, ge=1)
    paths: int = Field(2, ge=2, le=8)
    reset_period: int = Field(30000, ge=1)


class SequenceRecovery(_Model):
    """sequence-recovery[index]: a recovery function for `stream`. With individual-recovery
    one function per member port in `port`; otherwise the compound stream's function."""

    index: int = Field(ge=0)
    stream: list[int] = Field(min_length=1)
    port: list[Port] = Field(default_factory=list)
    algorithm: Literal["vector", "match"] = "vector"
    history_length: int = Field(2, ge=2, le=1024)
    reset_timeout: int = Field(DEFAULT_RESET_TIMEOUT_MS, ge=0, le=2**32 - 1,
                               description="milliseconds; 0 = never")
    take_no_sequence: bool = False
    individual_recovery: bool = False
    latent_error_detection: LatentErrorDetection | None = None

    @model_validator(mode="after")
    def _valid(self) -> SequenceRecovery:
        if self.individual_recovery and not self.port:
            raise ValueError(f"sequence-recovery {self.index}: individual-recovery needs the member "
                             "ports in port")
        if self.individual_recovery and self.latent_error_detection:
            raise ValueError(f"sequence-recovery {self.index}: latent-error-detection is not allowed "
                             "with individual-recovery (802.1CB 7.4.4)")
        return self


class SequenceIdentification(_Model):
    """sequence-identification: whether `stream` leaves `port` with an R-TAG (active: the
    sequence encode function) or without (passive)."""

    port: list[Port] = Field(min_length=1)
    stream: list[int] = Field(min_length=1)
    active: bool = True
    encapsulation: Literal["r-tag"] = "r-tag"


class StreamSplit(_Model):
    """stream-split: the copies of stream(s) `input-id` sent out of `port` become the member
    streams `output-id`, one copy each, with the `down` values of each member's
    dmac-vlan-stream-identification placed out-facing on that port (so one port can carry a
    copy per path, each with its own VLAN)."""

    port: Port
    input_id: list[int] = Field(min_length=1)
    output_id: list[int] = Field(min_length=1, max_length=layout.MAX_OUTPUTS)


class StreamForwarding(_Model):
    """frerlab: the ports a stream's frames leave by (802.1Q forwarding, which 802.1CB leaves
    to the bridge); more than one port replicates. `local` hands it to this host."""

    stream: int
    output_port: list[Port] = Field(min_length=1, max_length=layout.MAX_OUTPUTS)


class NodeConfig(_Model):
    """A whole data plane configuration file."""

    name: str = Field(DEFAULT_NAME, pattern=r"^[A-Za-z0-9_.-]{1,40}$")
    netns: str | None = None
    ports: list[Port] = Field(min_length=1, max_length=layout.MAX_PORTS)
    bridge_ports: list[Port] = Field(default_factory=list)
    stream_identity: list[StreamIdentity] = Field(default_factory=list, max_length=layout.MAX_IDENTITIES)
    sequence_generation: list[SequenceGeneration] = Field(default_factory=list)
    sequence_recovery: list[SequenceRecovery] = Field(default_factory=list)
    sequence_identification: list[SequenceIdentification] = Field(default_factory=list)
    stream_split: list[StreamSplit] = Field(default_factory=list)
    stream_forwarding: list[StreamForwarding] = Field(default_factory=list)

    _plan: NodePlan | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _consistent(self) -> NodeConfig:
        self._plan = compile_node(self)
        return self

    @property
    def plan(self) -> NodePlan:
        """The map entries of this configuration (compiled once, when it was validated)."""
        return self._plan


# ---- compilation into map entries ----

@dataclass
class RecoveryPlan:
    """One recovery function: its stream, instance (0 compound, 1 + port individual) and
    configuration, and its latent error detection if any."""

    stream: int
    instance: int
    handle: int
    config: layout.RecoveryConfig
    latent: LatentErrorDetection | None = None
    port: str | None = None


@dataclass(frozen=True)
class OutputPlan:
    """One copy of a stream: its port (name and index, or LOCAL) and any rewrite (OUT_*)."""

    port: str
    index: int = 0
    flags: int = 0
    dmac: bytes = bytes(6)
    vid: int = 0
    pcp: int = 0


@dataclass
class NodePlan:
    """What `compile_node` makes of a configuration: map entries in the node's indices."""

    ports: list[str]
    handles: list[int]  # stream index -> handle
    identities: list[layout.Identity] = field(default_factory=list)
    streams: list[tuple[int, list[OutputPlan]]] = field(default_factory=list)  # (flags, outputs)
    recoveries: list[RecoveryPlan] = field(default_factory=list)
    ingress_ports: list[str] = field(default_factory=list)
    egress_ports: list[str] = field(default_factory=list)
    bridge_mask: int = 0


def compile_node(cfg: NodeConfig) -> NodePlan:
    """The map entries of a configuration; ValueError naming the first inconsistency."""
    ports = cfg.ports
    if len(set(ports)) != len(ports):
        raise ValueError(f"ports {ports} name a port twice")

    def port_index(name: str, where: str) -> int:
        if name not in ports:
            raise ValueError(f"{where}: port {name!r} is not one of ports ({', '.join(ports)})")
        return ports.index(name)

    for kind, entries in (("stream-identity", cfg.stream_identity),
                          ("sequence-generation", cfg.sequence_generation),
                          ("sequence-recovery", cfg.sequence_recovery)):
        indices = [e.index for e in entries]
        if len(set(indices)) != len(indices):
            raise ValueError(f"{kind}: index values must be unique, got {indices}")
    # handles that only name the per-copy rewrite of a split (active identities placed
    # out-facing, nowhere identifying) are not streams of their own
    identifying = {i.handle for i in cfg.stream_identity
                   if i.in_facing.input_port or not i.dmac_vlan_stream_identification}
    handles = sorted(identifying)
    if len(handles) > layout.MAX_STREAMS:
        raise ValueError(f"{len(handles)} stream handles is out of range (1..={layout.MAX_STREAMS})")
    stream_of = {h: s for s, h in enumerate(handles)}

    def stream_index(handle: int, where: str) -> int:
        if handle not in stream_of:
            known = ", ".join(map(str, handles)) or "none"
            raise ValueError(f"{where}: stream {handle} has no stream-identity (handles: {known})")
        return stream_of[handle]

    plan = NodePlan(ports=list(ports), handles=handles,
                    bridge_mask=sum(1 << port_index(p, "bridge-ports") for p in cfg.bridge_ports))
    active_up: dict[int, DmacVlanSide] = {}  # by handle
    active_down: dict[tuple[int, str], DmacVlanSide] = {}  # by (handle, output port)
    for ident in cfg.stream_identity:
        where = f"stream-identity {ident.index}"
        active = ident.dmac_vlan_stream_identification
        if active:
            if ident.in_facing.input_port:
                active_up[ident.handle] = active.up
            for p in ident.out_facing.output_port:
                active_down[(ident.handle, p)] = active.down
        if ident.handle not in identifying:
            continue
        stream = stream_index(ident.handle, where)
        # an active identity placed out-facing rewrites the copies leaving there; it does not
        # identify frames the host sends
        sent = [] if active else ident.out_facing.output_port
        for direction, names in ((layout.DIR_INGRESS, ident.in_facing.input_port),
                                 (layout.DIR_EGRESS, sent)):
            if not names:
                continue
            mask = sum(1 << port_index(p, where) for p in names)
            plan.identities.append(_identity(ident, stream, mask, direction))
            target = plan.ingress_ports if direction == layout.DIR_INGRESS else plan.egress_ports
            target.extend(p for p in names if p not in target)
    plan.ingress_ports.extend(p for p in cfg.bridge_ports if p not in plan.ingress_ports)

    flags = [0] * len(handles)
    for gen in cfg.sequence_generation:
        for handle in gen.stream:
            flags[stream_index(handle, f"sequence-generation {gen.index}")] |= layout.STREAM_GENERATE
    for rec in cfg.sequence_recovery:
        where = f"sequence-recovery {rec.index}"
        for p in rec.port:
            port_index(p, where)
        for handle in rec.stream:
            stream = stream_index(handle, where)
            config = layout.RecoveryConfig(rec.algorithm, rec.history_length,
                                           rec.reset_timeout * 1_000_000 or None,
                                           rec.individual_recovery, rec.take_no_sequence)
            if rec.individual_recovery:
                flags[stream] |= layout.STREAM_INDIVIDUAL
                instances = [(1 + ports.index(p), p) for p in rec.port]
            else:
                flags[stream] |= layout.STREAM_RECOVER
                instances = [(0, None)]
            for instance, port in instances:
                if any(r.stream == stream and r.instance == instance for r in plan.recoveries):
                    what = f"on port {port}" if port else "of the compound stream"
                    raise ValueError(f"{where}: stream {handle} already has a recovery function {what}")
                plan.recoveries.append(RecoveryPlan(stream, instance, handle, config,
                                                    rec.latent_error_detection, port))

    encode = _encoding(cfg, flags, stream_index)
    splits = _splits(cfg, stream_index)
    forwarded = {}
    for fwd in cfg.stream_forwarding:
        where = f"stream-forwarding of stream {fwd.stream}"
        stream = stream_index(fwd.stream, where)
        if stream in forwarded:
            raise ValueError(f"{where}: stream {fwd.stream} is forwarded twice")
        if LOCAL in fwd.output_port and fwd.output_port[-1] != LOCAL:
            raise ValueError(f"{where}: {LOCAL!r} must be the last output port (the frame itself "
                             "goes up; copies go out first)")
        outputs = []
        for p in fwd.output_port:
            index = 0 if p == LOCAL else port_index(p, where)
            for member in splits.pop((fwd.stream, p), [fwd.stream]):
                side = active_down.get((member, p)) or active_up.get(fwd.stream)
                if member != fwd.stream and (member, p) not in active_down:
                    raise ValueError(f"stream-split on port {p}: output-id {member} has no "
                                     f"dmac-vlan-stream-identification out-facing on {p}")
                flags_out = layout.OUT_LOCAL if p == LOCAL else 0
                if side is None:
                    outputs.append(OutputPlan(p, index, flags_out))
                else:
                    outputs.append(OutputPlan(p, index, flags_out | layout.OUT_SET_DMAC | layout.OUT_SET_VID
                                              | layout.OUT_SET_PCP, _mac_bytes(side.destination_mac),
                                              side.vlan, side.priority))
        if len(outputs) > layout.MAX_OUTPUTS:
            raise ValueError(f"{where}: {len(outputs)} copies is out of range (1..={layout.MAX_OUTPUTS})")
        forwarded[stream] = outputs
    for handle, port in splits:
        raise ValueError(f"stream-split on port {port}: stream {handle} is not forwarded to {port}")
    sent_here = {i.stream for i in plan.identities if i.direction == layout.DIR_EGRESS}
    for stream, handle in enumerate(handles):
        if stream not in forwarded:
            raise ValueError(f"stream {handle} has no stream-forwarding entry: list the ports its "
                             f"frames leave by (or {LOCAL!r} for this host)")
        if stream in sent_here and len(forwarded[stream]) > 1 and not encode[stream]:
            raise ValueError(f"stream {handle} is identified where this host sends it and copied to "
                             "several ports, so its copies must leave with an R-TAG (else they would "
                             "be identified and copied again)")
        stream_flags = flags[stream] | (layout.STREAM_ENCODE if encode[stream] else 0)
        plan.streams.append((stream_flags, forwarded[stream]))
    return plan


def _encoding(cfg: NodeConfig, flags: list[int], stream_index) -> list[bool]:
    """Whether each stream leaves with an R-TAG. sequence-identification decides where given
    (all of a stream's output ports alike); by default a stream keeps or gets its tag unless
    the compound stream's sequence recovery runs here (the eliminating node removes it)."""
    encode = [not f & layout.STREAM_RECOVER for f in flags]
    outputs = {f.stream: [p for p in f.output_port if p != LOCAL] for f in cfg.stream_forwarding}
    decided: dict[int, bool] = {}
    for seq_id in cfg.sequence_identification:
        for handle in seq_id.stream:
            stream = stream_index(handle, "sequence-identification")
            missing = set(outputs.get(handle, [])) - set(seq_id.port)
            if missing or decided.get(stream, seq_id.active) != seq_id.active:
                raise ValueError(f"sequence-identification: stream {handle} must be encoded alike on "
                                 f"all its output ports ({', '.join(outputs.get(handle, []))})")
            decided[stream] = encode[stream] = seq_id.active
    return encode


def _splits(cfg: NodeConfig, stream_index) -> dict[tuple[int, str], list[int]]:
    """(stream handle, port) -> the member handles its copies on that port become."""
    splits: dict[tuple[int, str], list[int]] = {}
    for split in cfg.stream_split:
        for handle in split.input_id:
            stream_index(handle, f"stream-split on port {split.port}")
            if (handle, split.port) in splits:
                raise ValueError(f"stream-split: stream {handle} is split twice on port {split.port}")
            splits[(handle, split.port)] = list(split.output_id)
    return splits


def _mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def _vlan_rule(tagged: str, vid: int, where: str) -> tuple[int, int]:
    if tagged == "priority" and vid:
        raise ValueError(f"{where}: vlan {vid} with tagged: priority (priority frames have VID 0; "
                         "use tagged: tagged or all)")
    return layout.VLAN_MODES[tagged], vid


def _identity(ident: StreamIdentity, stream: int, mask: int, direction: int) -> layout.Identity:
    where = f"stream-identity {ident.index}"
    base = dict(stream=stream, port_mask=mask, direction=direction)
    if (null := ident.null_stream_identification) is not None:
        mode, vid = _vlan_rule(null.tagged, null.vlan, where)
        return layout.Identity(**base, vlan_mode=mode, vid=vid, fields=layout.MATCH_DMAC,
                               dmac=_mac_bytes(null.destination_mac))
    if (smac := ident.smac_vlan_stream_identification) is not None:
        mode, vid = _vlan_rule(smac.tagged, smac.vlan, where)
        return layout.Identity(**base, vlan_mode=mode, vid=vid, fields=layout.MATCH_SMAC,
                               smac=_mac_bytes(smac.source_mac))
    if (active := ident.dmac_vlan_stream_identification) is not None:
        side = active.down
        return layout.Identity(**base, vlan_mode=layout.VLAN_MODES["tagged"], vid=side.vlan,
                               pcp=side.priority, dmac=_mac_bytes(side.destination_mac),
                               fields=layout.MATCH_DMAC | layout.MATCH_VID_PCP)
    ip = ident.ip_stream_identification
    mode, vid = _vlan_rule(ip.tagged, ip.vlan, where)
    fields = layout.MATCH_IP
    src, dst = (ipaddress.ip_address(a) for a in (ip.ip_source, ip.ip_destination))
    for addr, flag in ((src, layout.MATCH_IP_SRC), (dst, layout.MATCH_IP_DST)):
        if not addr.is_unspecified:
            fields |= flag | (layout.MATCH_IPV4 if addr.version == 4 else layout.MATCH_IPV6)
    if ip.destination_mac:
        fields |= layout.MATCH_DMAC
    if ip.dscp != 64:
        fields |= layout.MATCH_DSCP
    if ip.next_protocol != "none":
        fields |= layout.MATCH_PROTO
    if ip.source_port:
        fields |= layout.MATCH_SPORT
    if ip.destination_port:
        fields |= layout.MATCH_DPORT
    return layout.Identity(**base, vlan_mode=mode, vid=vid, fields=fields,
                           dmac=_mac_bytes(ip.destination_mac) if ip.destination_mac else bytes(6),
                           dscp=ip.dscp % 64, proto=_PROTOCOLS[ip.next_protocol],
                           sport=ip.source_port, dport=ip.destination_port,
                           ip_src=src.packed, ip_dst=dst.packed)


SHAPE = "a data plane configuration is a mapping with ports, stream-identity, stream-forwarding, ..."


def parse_config(data: object, source: str = "config") -> NodeConfig:
    """A validated NodeConfig from plain data; UsageError naming each bad field otherwise."""
    return validate(NodeConfig, data, source, SHAPE)


def load_config(path: str | Path) -> NodeConfig:
    """Reads and validates a data plane configuration YAML file."""
    return parse_config(read_mapping(path, "configuration", SHAPE), str(path))
