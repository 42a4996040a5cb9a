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
      - {index: 1, handle: 1, out-facing: {input-port: [up]},
         ip-stream-identification: {ip-destination: 198.18.0.2, next-protocol: udp}}
    sequence-generation: [{index: 1, stream: [1]}]
    stream-forwarding: [{stream: 1, output-port: [pa, pb]}]
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, AliasGenerator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from frerlab.dataplane import layout
from frerlab.frer import DEFAULT_HISTORY_LENGTH, default_reset_timeout_ns
from frerlab.frer import SequenceRecovery as FrerRecovery
from frerlab.names import MAX_IFNAME, pydantic_name
from frerlab.yamlfile import read_mapping, validate

#: The pseudo-port of `stream-forwarding` that hands a stream to this host (listener role).
LOCAL = "local"
#: The data plane name when the file gives none.
DEFAULT_NAME = "frerlab"
_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")
_PROTOCOLS = {"none": 0, "udp": 17, "tcp": 6, "sctp": 132}


#: An address parsed once per text (a configuration with 64k IP identities repeats a few).
_address = functools.lru_cache(maxsize=1024)(ipaddress.ip_address)


def _mac(value: str) -> str:
    if not isinstance(value, str) or not _MAC.match(value):
        raise ValueError(f"{value!r} is not a MAC address (like 02:00:00:00:00:01)")
    return value.lower().replace("-", ":")


Mac = Annotated[str, AfterValidator(_mac)]
Vid = Annotated[int, Field(ge=0, le=4095)]
Port = pydantic_name("port", MAX_IFNAME)
#: A port of the node: an interface name, not frerlab's own pseudo-port.
OwnPort = pydantic_name("port", MAX_IFNAME, reserved=(LOCAL,))
#: Longest list of ports, streams or entries in one configuration (checked before compiling).
MAX_ENTRIES = layout.MAX_STREAMS
#: A shape (layout.Shape) is hashed when at least this many identities have it: one hash
#: lookup costs about what scanning two entries does.
HASH_MIN_IDENTITIES = 2


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              alias_generator=AliasGenerator(validation_alias=lambda n: n.replace("_", "-")))


class Facing(_Model):
    """Where an identity applies, as ieee802-dot1cb-stream-identification describes it
    (9.1.1.2-9.1.1.5): out-facing `input-port`, frames coming from the port's LAN;
    in-facing `input-port`, frames coming from the system forwarding function towards the
    port (here: frames this host sends out of it, the talker end-station role); out-facing
    `output-port`, frames going to the LAN (here: only the per-port rewrite of an active
    dmac-vlan identity); in-facing `output-port`, received frames going towards the
    forwarding function, above the port's out-facing functions."""

    input_port: list[Port] = Field(default_factory=list, max_length=layout.MAX_PORTS)
    output_port: list[Port] = Field(default_factory=list, max_length=layout.MAX_PORTS)


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
    """One side of active identification (802.1CB 9.1.4): frames are this side's by their
    destination-mac, `tagged` rule and `vlan` (0 = any VID; an untagged frame's VID is its
    port's PVID), never by their priority. Frames rewritten to this side get its
    destination-mac, a VLAN tag with its `vlan` (0: a priority tag) and its `priority` (PCP);
    without one they keep their own class (their tag's PCP, or their skb priority)."""

    destination_mac: Mac
    tagged: Literal["tagged", "priority", "all"] = "tagged"
    vlan: Vid
    priority: int | None = Field(None, ge=0, le=7)


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
                _address(getattr(self, name))
            except ValueError:
                raise ValueError(f"{name.replace('_', '-')} {getattr(self, name)!r} is not an IPv4 "
                                 "or IPv6 address (0.0.0.0 or :: to ignore)") from None
        src, dst = (_address(a) for a in (self.ip_source, self.ip_destination))
        if not src.is_unspecified and not dst.is_unspecified and src.version != dst.version:
            raise ValueError(f"ip-source {src} and ip-destination {dst} are of different IP versions")
        if self.next_protocol == "none" and (self.source_port or self.destination_port):
            raise ValueError("ports need a next-protocol (udp, tcp or sctp)")
        return self


class PortSettings(_Model):
    """port-settings: what 802.1Q gives a port that identification needs (ieee802-dot1q-bridge
    bridge-port/pvid): the VLAN of the untagged and priority-tagged frames it receives."""

    port: Port
    pvid: int = Field(layout.DEFAULT_PVID, ge=1, le=4094)


class StreamIdentity(_Model):
    """stream-identity[index]: one identity of stream `handle` (exactly one of the types)."""

    index: int = Field(ge=0)
    handle: int = Field(ge=0, lt=2**32)
    in_facing: Facing = Field(default_factory=Facing)
    out_facing: Facing = Field(default_factory=Facing)
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
        where = f"stream-identity {self.index}"
        active = self.dmac_vlan_stream_identification is not None
        if self.out_facing.output_port and not active:
            raise ValueError(f"{where}: out-facing output-port {', '.join(self.out_facing.output_port)} (frames "
                             "going to the LAN, below the port's FRER functions) is implemented only for "
                             "dmac-vlan-stream-identification (it rewrites the copies sent there); identify "
                             "frames this host sends with in-facing input-port")
        if self.in_facing.input_port and active:
            raise ValueError(f"{where}: dmac-vlan-stream-identification on in-facing input-port "
                             f"{', '.join(self.in_facing.input_port)} is not implemented by the data plane; place "
                             "it out-facing: input-port (frames from the LAN, identified by the down values) or "
                             "output-port (the copies sent there get the down values)")
        if not (self.received() or self.sent() or self.out_facing.output_port):
            raise ValueError(f"{where} is placed on no port (out-facing input-port: received frames; in-facing "
                             "input-port: frames this host sends)")
        return self

    def types(self) -> list[str]:
        return [t for t in _TYPES if getattr(self, t) is not None]

    def received(self) -> list[str]:
        """The ports where this identity identifies received frames (tc ingress): out-facing
        input-port, then in-facing output-port."""
        return list(dict.fromkeys([*self.out_facing.input_port, *self.in_facing.output_port]))

    def sent(self) -> list[str]:
        """The ports where this identity identifies frames this host sends (tc egress)."""
        return list(self.in_facing.input_port)


#: The encapsulation choices of ieee802-dot1cb-frer (10.5.1.5); the data plane implements r-tag.
ENCAPSULATIONS = ("r-tag", "hsr-sequence-tag", "prp-sequence-tag", "organization-specific")
_TYPES = ("null_stream_identification", "smac_vlan_stream_identification",
          "dmac_vlan_stream_identification", "ip_stream_identification")


class SequenceGeneration(_Model):
    """sequence-generation[index]: the streams numbered here (before replication). The data
    plane numbers each frame once, where it is identified, before it is copied: the in-facing
    side (`direction-out-facing: false`, the only value it implements)."""

    index: int = Field(ge=0)
    stream: list[int] = Field(min_length=1, max_length=MAX_ENTRIES)
    direction_out_facing: bool = False

    @model_validator(mode="after")
    def _in_facing(self) -> SequenceGeneration:
        if self.direction_out_facing:
            raise ValueError(f"sequence-generation {self.index}: direction-out-facing true (out-facing) is not "
                             "implemented by the data plane, which numbers each frame once where it is identified, "
                             "before replication (in-facing); use false")
        return self


class LatentErrorDetection(_Model):
    """latent-error-detection-parameters (802.1CB 7.4.4, 10.4.1.12); periods in milliseconds,
    defaults the module's; `difference` and `paths` have none there and are required."""

    difference: int = Field(ge=0, lt=2**31)
    period: int = Field(2000, ge=1, lt=2**32)
    paths: int = Field(ge=2, le=8)
    reset_period: int = Field(30000, ge=1, lt=2**32)


class SequenceRecovery(_Model):
    """sequence-recovery[index] (802.1CB 10.4, YANG `port`): with individual-recovery, one
    individual recovery function fed by the frames of `stream` received on the ports in `port`
    (one entry per member stream); otherwise a sequence recovery function on each port in
    `port` (for the frames of `stream` received on that port and the copies sent out of it),
    or, with no `port` (frerlab), one for every frame of the stream at this node."""

    index: int = Field(ge=0)
    stream: list[int] = Field(min_length=1, max_length=MAX_ENTRIES)
    port: list[Port] = Field(default_factory=list, max_length=layout.MAX_PORTS)
    algorithm: Literal["vector", "match"] = "vector"
    history_length: int = Field(DEFAULT_HISTORY_LENGTH, ge=2, le=1024)
    reset_timeout: Annotated[int, Field(ge=1, le=2**32 - 1)] | Literal["never"] | None = Field(
        None, description="milliseconds, or never; default frerlab's (frerlab.frer.default_reset_timeout_ns)")
    take_no_sequence: bool = False
    individual_recovery: bool = False
    direction_out_facing: bool = True
    latent_error_detection: bool = False
    latent_error_detection_parameters: LatentErrorDetection | None = None
    frame_rate: float | None = Field(None, gt=0, le=1e9, description="frerlab: the most frames/s the "
                                     "stream carries, to check that individual recovery cannot lock out")

    @model_validator(mode="before")
    @classmethod
    def _zero_is_not_never(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("reset-timeout", data.get("reset_timeout")) == 0:
            raise ValueError("reset-timeout 0 is not valid: give milliseconds (1..4294967295), or "
                             "never for no timeout at all")
        if isinstance(data, dict) and isinstance(data.get("latent-error-detection"), dict):
            raise ValueError("latent-error-detection is a boolean (802.1CB 10.4.1.11): write latent-error-detection: "
                             "true and the parameters in latent-error-detection-parameters: {difference, paths, "
                             "period, reset-period}")
        params = data.get("latent-error-detection-parameters") if isinstance(data, dict) else None
        if isinstance(params, dict) and not {"difference", "paths"} <= params.keys():
            raise ValueError("the latent error detection parameters need difference and paths (neither has a "
                             "default in 802.1CB 10.4.1.12)")
        return data

    def latent(self) -> LatentErrorDetection | None:
        """The latent error detection parameters when the function runs it, else None."""
        return self.latent_error_detection_parameters if self.latent_error_detection else None

    def timeout_ns(self) -> int | None:
        """The reset timeout in nanoseconds (None: never)."""
        if self.reset_timeout == "never":
            return None
        if self.reset_timeout is None:
            return default_reset_timeout_ns(self.individual_recovery)
        return self.reset_timeout * 1_000_000

    def blackout_notes(self) -> list[str]:
        """Lines starting "warning: " where this function can black its stream out (individual
        recovery that can lock a member stream out at the stream's frame-rate, since 802.1CB
        7.4.3.4 reloads the timer on rogue discards; or no timeout at all), "note: " where it
        can only above a rate the file does not rule out."""
        where = f"sequence-recovery {self.index}"
        timeout_ns = self.timeout_ns()
        rate = FrerRecovery(self.algorithm, self.history_length, timeout_ns,
                            self.individual_recovery).lockout_free_rate
        if rate is not None:
            if timeout_ns is None:
                return [f"warning: {where}: individual recovery without a reset timeout locks a member "
                        f"stream out for good after a cut of {self.history_length - 1} frames or more; "
                        "give reset-timeout in ms"]
            if self.frame_rate is not None and self.frame_rate <= rate:
                return []
            level, at = (("warning", f"at frame-rate {self.frame_rate:g} frames/s (lock-out-free up "
                                     f"to {rate:g} frames/s)")
                         if self.frame_rate else ("note", f"above {rate:g} frames/s"))
            return [f"{level}: {where}: individual recovery on {', '.join(self.port)} can lock a member "
                    f"stream out {at}: a cut of {self.history_length - 1} frames or more that lasts less "
                    f"than reset-timeout ({timeout_ns / 1e6:g} ms) leaves only rogue frames, which reload "
                    "the timer (802.1CB 7.4.3.4); keep (history-length - 1) / reset-timeout above the "
                    "stream's frame rate"]
        if timeout_ns is None and self.algorithm == "vector":
            return [f"warning: {where}: without a reset timeout a rogue jump of the sequence numbers "
                    "(a talker restarting them) blacks the stream out for good; give reset-timeout in ms"]
        return []

    @model_validator(mode="after")
    def _valid(self) -> SequenceRecovery:
        if self.individual_recovery and not self.port:
            raise ValueError(f"sequence-recovery {self.index}: individual-recovery needs the member "
                             "ports in port")
        if self.individual_recovery and (self.latent_error_detection or self.latent_error_detection_parameters):
            raise ValueError(f"sequence-recovery {self.index}: latent-error-detection is not allowed "
                             "with individual-recovery (802.1CB 7.4.4, 10.4.1.12)")
        if self.latent_error_detection and self.latent_error_detection_parameters is None:
            raise ValueError(f"sequence-recovery {self.index}: latent-error-detection true needs "
                             "latent-error-detection-parameters with difference and paths (no default in 10.4.1.12)")
        if not self.direction_out_facing:
            raise ValueError(f"sequence-recovery {self.index}: direction-out-facing false (in-facing) is not "
                             "implemented by the data plane, whose recovery functions sit on the out-facing side "
                             "of their ports (they see a received frame first and a copy sent out of the port "
                             "last); use true")
        return self


class SequenceIdentification(_Model):
    """sequence-identification: whether `stream` leaves `port` with an R-TAG (active: the
    sequence encode function) or without (passive); out-facing, R-TAG only."""

    port: list[Port] = Field(min_length=1, max_length=layout.MAX_PORTS)
    stream: list[int] = Field(min_length=1, max_length=MAX_ENTRIES)
    active: bool = True
    encapsulation: Literal["r-tag"] = "r-tag"

    @model_validator(mode="before")
    @classmethod
    def _r_tag_only(cls, data: object) -> object:
        if isinstance(data, dict):
            value = data.get("encapsulation", "r-tag")
            if value != "r-tag":
                shown = value if value in ENCAPSULATIONS else "that value"
                raise ValueError(f"encapsulation {shown} is not implemented by the data plane (valid: r-tag; "
                                 f"the model also lists {', '.join(ENCAPSULATIONS[1:])})")
            if "path-id-lan-id" in data:
                raise ValueError("path-id-lan-id is used only with the HSR sequence tag or PRP trailer (10.5.1.6), "
                                 "which the data plane does not implement (r-tag only); remove it")
        return data


class StreamSplit(_Model):
    """stream-split: the copies of stream(s) `input-id` sent out of `port` become the member
    streams `output-id`, one copy each, with the `down` values of each member's
    dmac-vlan-stream-identification placed out-facing on that port (so one port can carry a
    copy per path, each with its own VLAN)."""

    port: Port
    input_id: list[int] = Field(min_length=1, max_length=MAX_ENTRIES)
    output_id: list[int] = Field(min_length=1, max_length=layout.MAX_OUTPUTS)


class StreamForwarding(_Model):
    """frerlab: the ports a stream's frames leave by (802.1Q forwarding, which 802.1CB leaves
    to the bridge); more than one port replicates. `local` hands it to this host."""

    stream: int
    output_port: list[Port] = Field(min_length=1, max_length=layout.MAX_OUTPUTS)


class NodeConfig(_Model):
    """A whole data plane configuration file."""

    name: pydantic_name("data plane") = DEFAULT_NAME
    netns: pydantic_name("network namespace") | None = None
    hook: Literal["tc", "xdp", "auto"] = Field("tc", description="frerlab: what runs the frames the "
                                               "node receives (docs/dataplane.md, XDP)")
    ports: list[OwnPort] = Field(min_length=1, max_length=layout.MAX_PORTS)
    bridge_ports: list[OwnPort] = Field(default_factory=list, max_length=layout.MAX_PORTS)
    port_settings: list[PortSettings] = Field(default_factory=list, max_length=layout.MAX_PORTS)
    stream_identity: list[StreamIdentity] = Field(default_factory=list, max_length=layout.MAX_POSITIONS)
    sequence_generation: list[SequenceGeneration] = Field(default_factory=list, max_length=MAX_ENTRIES)
    sequence_recovery: list[SequenceRecovery] = Field(default_factory=list, max_length=MAX_ENTRIES)
    sequence_identification: list[SequenceIdentification] = Field(default_factory=list, max_length=MAX_ENTRIES)
    stream_split: list[StreamSplit] = Field(default_factory=list, max_length=MAX_ENTRIES)
    stream_forwarding: list[StreamForwarding] = Field(default_factory=list, max_length=MAX_ENTRIES)

    _plan: NodePlan | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _consistent(self) -> NodeConfig:
        self._plan = compile_node(self)
        return self

    @property
    def plan(self) -> NodePlan:
        """The map entries of this configuration (compiled once, when it was validated)."""
        return self._plan

    def blackout_notes(self) -> list[str]:
        """Where a recovery function of this configuration can black its stream out
        (SequenceRecovery.blackout_notes), for `dataplane up` to print."""
        return [note for rec in self.sequence_recovery for note in rec.blackout_notes()]


# ---- compilation into map entries ----

@dataclass
class RecoveryPlan:
    """One recovery function: its stream, instance (0: the one for every frame of the stream;
    1 + p: the one placed on port p, or the individual one whose first port is p), the ports it
    is on (none for instance 0), its configuration, and its latent error detection if any."""

    stream: int
    instance: int
    handle: int
    config: layout.RecoveryConfig
    latent: LatentErrorDetection | None = None
    ports: list[str] = field(default_factory=list)

    @property
    def function(self) -> str:
        """"individual" or "sequence" (recovery), as the counters and messages name it."""
        return "individual" if self.config.individual_recovery else "sequence"

    @property
    def port_label(self) -> str | None:
        """Its ports comma-separated (None: the function for every frame of the stream)."""
        return ",".join(self.ports) or None


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
    identities: list[layout.Identity] = field(default_factory=list)  # in the node's order
    shapes: list[layout.Shape] = field(default_factory=list)  # of the hashed identities
    hashed: dict[bytes, bytes] = field(default_factory=dict)  # identity_hash: key -> frer_id_hit
    scanned: list[layout.Identity] = field(default_factory=list)  # the `identities` array
    streams: list[tuple[int, list[OutputPlan]]] = field(default_factory=list)  # (flags, outputs)
    recovery_ports: list[int] = field(default_factory=list)  # per stream: layout.stream rcvy_ports
    individual_feeds: list[dict[int, int]] = field(default_factory=list)  # per stream: port -> instance
    recoveries: list[RecoveryPlan] = field(default_factory=list)
    ingress_ports: list[str] = field(default_factory=list)
    egress_ports: list[str] = field(default_factory=list)
    bridge_mask: int = 0
    pvids: list[int] = field(default_factory=list)  # port index -> PVID


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
                   if i.received() or not i.dmac_vlan_stream_identification}
    handles = sorted(identifying)
    if len(handles) > layout.MAX_STREAMS:
        raise ValueError(f"{len(handles)} stream handles is out of range (1..={layout.MAX_STREAMS}, "
                         "FRER_MAX_STREAMS)")
    stream_of = {h: s for s, h in enumerate(handles)}

    def stream_index(handle: int, where: str) -> int:
        if handle not in stream_of:
            known = ", ".join(map(str, handles)) or "none"
            raise ValueError(f"{where}: stream {handle} has no stream-identity (handles: {known})")
        return stream_of[handle]

    plan = NodePlan(ports=list(ports), handles=handles,
                    bridge_mask=sum(1 << port_index(p, "bridge-ports") for p in cfg.bridge_ports),
                    pvids=_pvids(cfg, port_index))
    active_up: dict[int, DmacVlanSide] = {}  # by handle
    active_down: dict[tuple[int, str], DmacVlanSide] = {}  # by (handle, output port)
    for position, ident in enumerate(cfg.stream_identity):
        where = f"stream-identity {ident.index}"
        active = ident.dmac_vlan_stream_identification
        if active:
            for name, side in (("down", active.down), ("up", active.up)):
                _vlan_rule(side.tagged, side.vlan, f"{where} {name}")
            if ident.received():
                active_up[ident.handle] = active.up
            for p in ident.out_facing.output_port:
                active_down[(ident.handle, p)] = active.down
        if ident.handle not in identifying:
            continue
        stream = stream_index(ident.handle, where)
        _check_in_facing_output(cfg, ident)
        for direction, names in ((layout.DIR_INGRESS, ident.received()), (layout.DIR_EGRESS, ident.sent())):
            if not names:
                continue
            mask = sum(1 << port_index(p, where) for p in names)
            plan.identities.append(_identity(ident, stream, mask, direction, position))
            target = plan.ingress_ports if direction == layout.DIR_INGRESS else plan.egress_ports
            target.extend(p for p in names if p not in target)
    plan.ingress_ports.extend(p for p in cfg.bridge_ports if p not in plan.ingress_ports)

    _place_identities(plan)
    flags = [0] * len(handles)
    plan.recovery_ports = [0] * len(handles)
    plan.individual_feeds = [{} for _ in handles]
    for gen in cfg.sequence_generation:
        for handle in gen.stream:
            flags[stream_index(handle, f"sequence-generation {gen.index}")] |= layout.STREAM_GENERATE
    placed: set[tuple[int, int]] = set()  # (stream, instance) of the recovery functions so far
    for rec in cfg.sequence_recovery:
        where = f"sequence-recovery {rec.index}"
        for p in rec.port:
            port_index(p, where)
        for handle in rec.stream:
            stream = stream_index(handle, where)
            config = layout.RecoveryConfig(rec.algorithm, rec.history_length,
                                           rec.timeout_ns(),
                                           rec.individual_recovery, rec.take_no_sequence)
            if rec.individual_recovery:
                flags[stream] |= layout.STREAM_INDIVIDUAL
                instance = 1 + ports.index(rec.port[0])
                feeds = plan.individual_feeds[stream]
                for p in rec.port:
                    if ports.index(p) in feeds:
                        raise ValueError(f"{where}: port {p} already feeds an individual recovery "
                                         f"function of stream {handle} (one per member stream)")
                    feeds[ports.index(p)] = instance
                instances = [(instance, list(rec.port))]
            elif rec.port:
                plan.recovery_ports[stream] |= sum(1 << ports.index(p) for p in rec.port)
                instances = [(1 + ports.index(p), [p]) for p in rec.port]
            else:
                flags[stream] |= layout.STREAM_RECOVER
                instances = [(0, [])]
            for instance, on in instances:
                if (stream, instance) in placed:
                    what = f"on port {on[0]}" if on else "for every frame of it"
                    raise ValueError(f"{where}: stream {handle} already has a recovery function {what}")
                placed.add((stream, instance))
                plan.recoveries.append(RecoveryPlan(stream, instance, handle, config, rec.latent(), on))
    if len(plan.recoveries) > layout.MAX_RCVY:
        raise ValueError(f"{len(plan.recoveries)} recovery functions is out of range "
                         f"(0..={layout.MAX_RCVY}, FRER_MAX_RCVY)")

    encode = _encoding(cfg, flags, plan.recovery_ports, stream_index)
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
                    # without a priority the copy keeps its own class (FRER_OUT_SET_PCP unset)
                    set_pcp = 0 if side.priority is None else layout.OUT_SET_PCP
                    outputs.append(OutputPlan(p, index, flags_out | layout.OUT_SET_DMAC | layout.OUT_SET_VID
                                              | set_pcp, _mac_bytes(side.destination_mac),
                                              side.vlan, side.priority or 0))
        if len(outputs) > layout.MAX_OUTPUTS:
            raise ValueError(f"{where}: {len(outputs)} copies is out of range (1..={layout.MAX_OUTPUTS})")
        forwarded[stream] = outputs
    for handle, port in splits:
        raise ValueError(f"stream-split on port {port}: stream {handle} is not forwarded to {port}")
    sent_here = {i.stream for i in plan.identities if i.direction == layout.DIR_EGRESS}
    _check_sent_frames_pass(plan, flags)
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


def _place_identities(plan: NodePlan) -> None:
    """Which identities are hashed and which scanned (plan.shapes, hashed, scanned). The
    identities of the up to layout.MAX_SHAPES shapes that most of them share (at least
    HASH_MIN_IDENTITIES each) go into identity_hash, the rest into the scanned array. The order stays the
    standard's: the program takes, of the identities matching a frame, the one with the lowest
    position, hashed or scanned (docs/dataplane.md, identification); of hashed identities with
    equal keys (equal matchers) the first is kept, since the later can never win. ValueError
    when the scanned or hashed entries are more than the maps hold."""
    by_shape: dict[layout.Shape, list[layout.Identity]] = {}
    for ident in plan.identities:
        shape = ident.shape()
        if shape is not None:
            by_shape.setdefault(shape, []).append(ident)
    common = sorted((s for s, ids in by_shape.items() if len(ids) >= HASH_MIN_IDENTITIES),
                    key=lambda s: (-len(by_shape[s]), by_shape[s][0].position))
    plan.shapes = common[:layout.MAX_SHAPES]
    for index, shape in enumerate(plan.shapes):
        for ident in by_shape[shape]:
            plan.hashed.setdefault(ident.hash_key(index), layout.ID_HIT.pack(ident.stream, ident.position))
    plan.scanned = [i for i in plan.identities if i.shape() not in plan.shapes]
    if len(plan.hashed) > layout.MAX_HASHED:
        raise ValueError(f"{len(plan.hashed)} hashed identities is out of range (0..={layout.MAX_HASHED}, "
                         "FRER_MAX_HASHED)")
    if len(plan.scanned) > layout.MAX_IDENTITIES:
        raise ValueError(f"{len(plan.scanned)} identities to scan is out of range (0..={layout.MAX_IDENTITIES}, "
                         f"FRER_MAX_IDENTITIES): the identities of the {layout.MAX_SHAPES} shapes most of them "
                         "share (the fields they compare, their tagged rule, whether their vlan is 0, their "
                         "ports) are hashed, the others scanned; give fewer identities other "
                         "shapes")


def _check_in_facing_output(cfg: NodeConfig, ident: StreamIdentity) -> None:
    """ValueError for an in-facing output-port identity whose stream has a recovery function
    on that port: the data plane identifies received frames once, before any function of the
    port, but in the standard the port's out-facing recovery sees them before an in-facing
    identification names their stream, so it would not recover them."""
    if not ident.in_facing.output_port:
        return
    for rec in cfg.sequence_recovery:
        both = [p for p in ident.in_facing.output_port if p in rec.port]
        if ident.handle in rec.stream and both:
            raise ValueError(f"stream-identity {ident.index}: in-facing output-port {both[0]} names stream "
                             f"{ident.handle} above the port's out-facing functions, but sequence-recovery "
                             f"{rec.index} is out-facing on {both[0]} and needs the stream identified below it: "
                             f"place the identity out-facing (out-facing: {{input-port: [{both[0]}]}})")


def _check_sent_frames_pass(plan: NodePlan, flags: list[int]) -> None:
    """ValueError for a recovery function that would discard every frame this host sends: the
    host's frames carry no R-TAG, so without sequence-generation on the node the recovery
    function for every frame of their stream discards them all unless it takes frames without
    a sequence number (802.1CB 7.4.3.4, frerSeqRcvyTakeNoSequence)."""
    sent_on: dict[int, set[str]] = {}  # stream -> the ports where the host's frames are identified
    for i in plan.identities:
        if i.direction == layout.DIR_EGRESS:
            sent_on.setdefault(i.stream, set()).update(p for n, p in enumerate(plan.ports) if i.port_mask >> n & 1)
    for r in plan.recoveries:
        if (r.stream in sent_on and r.instance == 0 and not flags[r.stream] & layout.STREAM_GENERATE
                and not r.config.take_no_sequence):
            raise ValueError(f"sequence-recovery of stream {r.handle} would discard every frame this host "
                             f"sends on {', '.join(sorted(sent_on[r.stream]))} (they carry no sequence "
                             f"number): add sequence-generation for stream {r.handle}, or take-no-sequence: true")


def _encoding(cfg: NodeConfig, flags: list[int], recovery_ports: list[int], stream_index) -> list[bool]:
    """Whether each stream leaves with an R-TAG. sequence-identification decides where given
    (all of a stream's output ports alike); by default a stream keeps or gets its tag unless
    a sequence recovery function of it runs here (the eliminating node removes it)."""
    encode = [not (f & layout.STREAM_RECOVER or ports) for f, ports in zip(flags, recovery_ports)]
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


def _pvids(cfg: NodeConfig, port_index) -> list[int]:
    """The PVID of each port, by port index (layout.DEFAULT_PVID unless port-settings say)."""
    pvids = [layout.DEFAULT_PVID] * len(cfg.ports)
    seen = set()
    for entry in cfg.port_settings:
        index = port_index(entry.port, "port-settings")
        if index in seen:
            raise ValueError(f"port-settings: port {entry.port!r} is listed twice")
        seen.add(index)
        pvids[index] = entry.pvid
    return pvids


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


def _identity(ident: StreamIdentity, stream: int, mask: int, direction: int, position: int) -> layout.Identity:
    where = f"stream-identity {ident.index}"
    base = dict(stream=stream, port_mask=mask, direction=direction, position=position)
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
        mode, vid = _vlan_rule(side.tagged, side.vlan, f"{where} down")
        return layout.Identity(**base, vlan_mode=mode, vid=vid, fields=layout.MATCH_DMAC,
                               dmac=_mac_bytes(side.destination_mac))
    ip = ident.ip_stream_identification
    mode, vid = _vlan_rule(ip.tagged, ip.vlan, where)
    fields = layout.MATCH_IP
    src, dst = (_address(a) for a in (ip.ip_source, ip.ip_destination))
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
