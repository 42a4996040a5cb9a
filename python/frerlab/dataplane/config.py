"""The data plane configuration file: one FRER node (talker end-station, relay or listener) in
the vocabulary of the IEEE YANG modules ieee802-dot1cb-stream-identification and
ieee802-dot1cb-frer (stream-identity, sequence-generation, sequence-recovery,
sequence-identification), with their names and defaults, validated with pydantic: the schema
of the file. frerlab.dataplane.compiler turns a configuration into the map entries of
bpf/frer.c; validation runs it too (a configuration is valid when it compiles), and keeps
the result as `NodeConfig.plan`.

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

Per-stream filtering and policing (802.1Qci) before the FRER functions, per member path: the
`stream-filter` and `flow-meter` lists (names after ieee802-dot1q-psfp), e.g. on a listener

    stream-filter: [{index: 1, stream: [1], port: [pa], max-sdu-size: 1500, flow-meter: 1},
                    {index: 2, stream: [1], port: [pb], max-sdu-size: 1500, flow-meter: 2}]
    flow-meter: [{index: 1, committed-information-rate: 20000000, committed-burst-size: 6000},
                 {index: 2, committed-information-rate: 20000000, committed-burst-size: 6000}]
"""

from __future__ import annotations

import contextlib
import functools
import gc
import ipaddress
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import (AfterValidator, AliasGenerator, BaseModel, ConfigDict, Field, PrivateAttr,
                      ValidatorFunctionWrapHandler, model_validator)

from frerlab.dataplane import layout
from frerlab.frer import DEFAULT_HISTORY_LENGTH, default_reset_timeout_ns
from frerlab.frer import SequenceRecovery as FrerRecovery
from frerlab.names import MAX_IFNAME, pydantic_name
from frerlab.yamlfile import read_mapping, validate

if TYPE_CHECKING:
    from frerlab.dataplane.compiler import NodePlan

#: The pseudo-port of `stream-forwarding` that hands a stream to this host (listener role).
LOCAL = "local"
#: The data plane name when the file gives none.
DEFAULT_NAME = "frerlab"
_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")
#: An address parsed once per text (a configuration with 64k IP identities repeats a few).
ip_address = functools.lru_cache(maxsize=1024)(ipaddress.ip_address)


def _mac(value: str) -> str:
    if not isinstance(value, str) or not _MAC.match(value):
        raise ValueError(f"{value!r} is not a MAC address (like 02:00:00:00:00:01)")
    return value.lower().replace("-", ":")


def _distinct(what: str, advice: str) -> AfterValidator:
    """A validator refusing a list that names a value twice (the YANG leaf-lists of the
    export hold distinct values, and the data plane adds port bits, so a repeat would
    name another port)."""
    def check(values: list) -> list:
        seen = set()
        for value in values:
            if value in seen:
                raise ValueError(f"{what} {value} is listed twice; {advice}")
            seen.add(value)
        return values
    return AfterValidator(check)


Mac = Annotated[str, AfterValidator(_mac)]
Vid = Annotated[int, Field(ge=0, le=4095)]
Port = pydantic_name("port", MAX_IFNAME)
#: A port of the node: an interface name, not frerlab's own pseudo-port.
OwnPort = pydantic_name("port", MAX_IFNAME, reserved=(LOCAL,))
#: Lists of distinct ports and stream handles.
Ports = Annotated[list[Port], _distinct("port", "list each port once")]
Handles = Annotated[list[int], _distinct("stream", "list each stream once")]
#: Longest list of ports, streams or entries in one configuration (checked before compiling).
MAX_ENTRIES = layout.MAX_STREAMS


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

    input_port: Ports = Field(default_factory=list, max_length=layout.MAX_PORTS)
    output_port: Ports = Field(default_factory=list, max_length=layout.MAX_PORTS)


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
        addresses = []
        for name in ("ip_source", "ip_destination"):
            try:
                addresses.append(ip_address(getattr(self, name)))
            except ValueError:
                raise ValueError(f"{name.replace('_', '-')} {getattr(self, name)!r} is not an IPv4 "
                                 "or IPv6 address (0.0.0.0 or :: to ignore)") from None
        src, dst = addresses
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
        types = self.types()
        if len(types) != 1:
            raise ValueError(f"stream-identity {self.index} needs exactly one of "
                             f"{', '.join(t.replace('_', '-') for t in _TYPES)}; has {len(types)}")
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
        if not (self.out_facing.input_port or self.out_facing.output_port or self.in_facing.input_port
                or self.in_facing.output_port):
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
    stream: Handles = Field(min_length=1, max_length=MAX_ENTRIES)
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
        if self.frame_rate is not None and float(f"{self.frame_rate:.3f}") != self.frame_rate:
            raise ValueError(f"sequence-recovery {self.index}: frame-rate {self.frame_rate!r} has more than 3 "
                             "decimal places (frames/s to the thousandth, as the export's decimal64 holds it)")
        if not self.direction_out_facing:
            raise ValueError(f"sequence-recovery {self.index}: direction-out-facing false (in-facing) is not "
                             "implemented by the data plane, whose recovery functions sit on the out-facing side "
                             "of their ports (they see a received frame first and a copy sent out of the port "
                             "last); use true")
        return self


class SequenceIdentification(_Model):
    """sequence-identification: whether `stream` leaves `port` with an R-TAG (active: the
    sequence encode function) or without (passive); out-facing, R-TAG only."""

    port: Ports = Field(min_length=1, max_length=layout.MAX_PORTS)
    stream: Handles = Field(min_length=1, max_length=MAX_ENTRIES)
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
    input_id: Handles = Field(min_length=1, max_length=MAX_ENTRIES)
    output_id: Handles = Field(min_length=1, max_length=layout.MAX_OUTPUTS)


class StreamForwarding(_Model):
    """frerlab: the ports a stream's frames leave by (802.1Q forwarding, which 802.1CB leaves
    to the bridge), each once; more than one port replicates. `local` hands it to this host.
    Several copies out of one port are a stream split there (StreamSplit)."""

    stream: int
    output_port: Annotated[list[Port], _distinct("output-port", (
        "a stream leaves a port once, as a bridge forwards it; for a copy per path out of one port, split "
        "it there: stream-split {port, input-id: [the stream], output-id: [a member per copy]}, each member "
        "with a dmac-vlan-stream-identification out-facing on that port"))] = Field(
        min_length=1, max_length=layout.MAX_OUTPUTS)


class StreamFilter(_Model):
    """stream-filter[index] (802.1Qci 8.6.5.1, 8.6.5.3.1; ieee802-dot1q-psfp's
    stream-filter-instance-table, whose stream-filter-instance-id orders it): the frames of
    `stream` received on `port` (frerlab: none = every port; one entry per member path to
    police each path) are dropped when their SDU is above `max-sdu-size` octets (0 or none:
    any) or red at `flow-meter`, before the node's FRER functions. Of the filters matching a
    frame, the one of the lowest index applies."""

    index: int = Field(ge=0, lt=2**32)
    stream: Handles = Field(min_length=1, max_length=MAX_ENTRIES)
    port: Ports = Field(default_factory=list, max_length=layout.MAX_PORTS)
    max_sdu_size: int = Field(0, ge=0, lt=2**32, description="octets after the MACs, VLAN tags and R-TAG; 0 = any")
    flow_meter: int | None = Field(None, ge=0, lt=2**32, description="the index of a flow-meter entry")


class FlowMeter(_Model):
    """flow-meter[index] (802.1Qci 8.6.5.3; ieee802-dot1q-psfp's flow-meter-instance-table):
    a single-rate token bucket, MEF 10.3 with no excess rate and colour-blind: a frame whose
    SDU fits the tokens is green and passes, any other is red and dropped. The bucket holds
    `committed-burst-size` octets and fills at `committed-information-rate` bit/s; with no
    excess rate no frame is yellow, so `drop-on-yellow` changes nothing (kept for the model)."""

    index: int = Field(ge=0, lt=2**32)
    committed_information_rate: int = Field(ge=0, le=layout.MAX_CIR, description="bit/s")
    committed_burst_size: int = Field(ge=1, le=layout.MAX_CBS, description="octets")
    drop_on_yellow: bool = False


class NodeConfig(_Model):
    """A whole data plane configuration file."""

    name: pydantic_name("data plane") = DEFAULT_NAME
    netns: pydantic_name("network namespace") | None = None
    hook: Literal["tc", "xdp", "auto"] = Field("tc", description="frerlab: what runs the frames the "
                                               "node receives (docs/dataplane.md, XDP)")
    ports: list[OwnPort] = Field(min_length=1, max_length=layout.MAX_PORTS)
    bridge_ports: Annotated[list[OwnPort], _distinct("port", "list each port once")] = Field(
        default_factory=list, max_length=layout.MAX_PORTS)
    port_settings: list[PortSettings] = Field(default_factory=list, max_length=layout.MAX_PORTS)
    stream_identity: list[StreamIdentity] = Field(default_factory=list, max_length=layout.MAX_POSITIONS)
    sequence_generation: list[SequenceGeneration] = Field(default_factory=list, max_length=MAX_ENTRIES)
    sequence_recovery: list[SequenceRecovery] = Field(default_factory=list, max_length=MAX_ENTRIES)
    sequence_identification: list[SequenceIdentification] = Field(default_factory=list, max_length=MAX_ENTRIES)
    stream_split: list[StreamSplit] = Field(default_factory=list, max_length=MAX_ENTRIES)
    stream_forwarding: list[StreamForwarding] = Field(default_factory=list, max_length=MAX_ENTRIES)
    stream_filter: list[StreamFilter] = Field(default_factory=list, max_length=layout.MAX_FILTERS)
    flow_meter: list[FlowMeter] = Field(default_factory=list, max_length=layout.MAX_METERS)

    _plan: NodePlan | None = PrivateAttr(None)

    @model_validator(mode="wrap")
    @classmethod
    def _compiled(cls, data: object, handler: ValidatorFunctionWrapHandler) -> NodeConfig:
        """Validates the fields, then compiles (compile_node), with the garbage collector
        paused: a configuration of 65,536 streams makes some two million objects, none of them
        garbage, and with the collector on, its collections (each full one rescanning every
        object made so far) took longer than validating and compiling did (2.3 of 4.1 s)."""
        from frerlab.dataplane.compiler import compile_node  # the compiler imports this module

        with _collector_paused():
            cfg = handler(data)
            cfg._plan = compile_node(cfg)
        return cfg

    @property
    def plan(self) -> NodePlan:
        """The map entries of this configuration (compiled once, when it was validated)."""
        return self._plan

    def blackout_notes(self) -> list[str]:
        """Where a recovery function of this configuration can black its stream out
        (SequenceRecovery.blackout_notes), for `dataplane up` to print."""
        return [note for rec in self.sequence_recovery for note in rec.blackout_notes()]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The garbage collector off inside (as it was after). When what was made inside is due
    a collection, the young generations are collected on the way out: one pass takes it to the
    oldest generation, where the collector would take it in two (the youngest generation's
    pass at once, the middle one's soon after), so the call is not left owing more of the
    collector's work than building the objects with it on would."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if 0 < gc.get_threshold()[0] < gc.get_count()[0]:
                gc.collect(1)
            gc.enable()


SHAPE = "a data plane configuration is a mapping with ports, stream-identity, stream-forwarding, ..."


def parse_config(data: object, source: str = "config") -> NodeConfig:
    """A validated NodeConfig from plain data; UsageError naming each bad field otherwise."""
    return validate(NodeConfig, data, source, SHAPE)


def load_config(path: str | Path) -> NodeConfig:
    """Reads and validates a data plane configuration YAML file."""
    return parse_config(read_mapping(path, "configuration", SHAPE), str(path))
