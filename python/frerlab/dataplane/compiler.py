"""The compiler of a data plane configuration (frerlab.dataplane.config, the schema) into
what a node loads: `compile_node` makes a NodePlan, the map entries of bpf/frer.c in the
node's own indices (ports and streams numbered from 0, identities hashed or scanned, one
RecoveryPlan per recovery function, one OutputPlan per copy of a stream), packed with
frerlab.dataplane.layout; frerlab.dataplane.node writes a plan into the maps. It checks what
the schema cannot see field by field (names that must refer to each other, limits of the
maps, placements the data plane does not implement) and raises ValueError naming the entry
and what would be valid; NodeConfig's validation calls it, so a configuration file that
validates always compiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from frerlab.dataplane import layout
from frerlab.dataplane.config import (LOCAL, DmacVlanSide, LatentErrorDetection, NodeConfig, StreamIdentity,
                                      ip_address)

#: The IP protocol numbers of the next-protocol values.
_PROTOCOLS = {"none": 0, "udp": 17, "tcp": 6, "sctp": 132}
#: A shape (layout.Shape) is hashed when at least this many identities have it: one hash
#: lookup costs about what scanning two entries does.
HASH_MIN_IDENTITIES = 2


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


@dataclass(frozen=True)
class FilterPlan:
    """One stream filter (802.1Qci): its index, streams (handles) and ports (none: every
    port), max-sdu-size (0: any) and its flow meter's index and entry of `meters` (None: none)."""

    index: int
    handles: tuple[int, ...]
    ports: tuple[str, ...]
    max_sdu: int = 0
    meter_index: int | None = None
    meter: int | None = None

    def pack(self) -> bytes:
        """struct frer_filter."""
        return layout.filter_entry(self.max_sdu, self.meter)


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
    filters: list[FilterPlan] = field(default_factory=list)  # the `filters` entries, by index
    meters: list[tuple[int, layout.Meter]] = field(default_factory=list)  # (index, meter), `meters` entries
    filter_of: dict[tuple[int, int], int] = field(default_factory=dict)  # (stream, port) -> entry of `filters`


def compile_node(cfg: NodeConfig) -> NodePlan:
    """The map entries of a configuration; ValueError naming the first inconsistency."""
    ports = cfg.ports
    if len(set(ports)) != len(ports):
        raise ValueError(f"ports {ports} name a port twice")

    port_of = {name: index for index, name in enumerate(ports)}

    def port_index(name: str, where: str) -> int:
        if name not in port_of:
            raise ValueError(f"{where}: port {name!r} is not one of ports ({', '.join(ports)})")
        return port_of[name]

    def port_mask(names: list[str], where: str) -> int:
        mask = 0
        for name in names:
            mask |= 1 << port_index(name, where)
        return mask

    for kind, entries in (("stream-identity", cfg.stream_identity),
                          ("sequence-generation", cfg.sequence_generation),
                          ("sequence-recovery", cfg.sequence_recovery),
                          ("stream-filter", cfg.stream_filter), ("flow-meter", cfg.flow_meter)):
        indices = [e.index for e in entries]
        if len(set(indices)) != len(indices):
            raise ValueError(f"{kind}: index values must be unique, got {indices}")
    # handles that only name the per-copy rewrite of a split (active identities placed
    # out-facing, nowhere identifying) are not streams of their own
    received = [i.received() for i in cfg.stream_identity]  # the ports of each, in order
    identifying = {i.handle for i, on in zip(cfg.stream_identity, received)
                   if on or not i.dmac_vlan_stream_identification}
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
                    bridge_mask=port_mask(cfg.bridge_ports, "bridge-ports"),
                    pvids=_pvids(cfg, port_index))
    active_up: dict[int, DmacVlanSide] = {}  # by handle
    active_down: dict[tuple[int, str], DmacVlanSide] = {}  # by (handle, output port)
    for position, (ident, received_on) in enumerate(zip(cfg.stream_identity, received)):
        where = f"stream-identity {ident.index}"
        active = ident.dmac_vlan_stream_identification
        if active:
            for name, side in (("down", active.down), ("up", active.up)):
                _vlan_rule(side.tagged, side.vlan, f"{where} {name}")
            if received_on:
                active_up[ident.handle] = active.up
            for p in ident.out_facing.output_port:
                active_down[(ident.handle, p)] = active.down
        if ident.handle not in identifying:
            continue
        stream = stream_index(ident.handle, where)
        _check_in_facing_output(cfg, ident)
        for direction, names, hooked in ((layout.DIR_INGRESS, received_on, plan.ingress_ports),
                                         (layout.DIR_EGRESS, ident.sent(), plan.egress_ports)):
            if names:
                plan.identities.append(_identity(ident, stream, port_mask(names, where), direction, position))
                hooked.extend(p for p in names if p not in hooked)
    plan.ingress_ports.extend(p for p in cfg.bridge_ports if p not in plan.ingress_ports)

    _place_identities(plan)
    flags = [0] * len(handles)
    plan.recovery_ports = [0] * len(handles)
    plan.individual_feeds = [{} for _ in handles]
    for gen in cfg.sequence_generation:
        where = f"sequence-generation {gen.index}"
        for handle in gen.stream:
            flags[stream_index(handle, where)] |= layout.STREAM_GENERATE
    placed: set[tuple[int, int]] = set()  # (stream, instance) of the recovery functions so far
    for rec in cfg.sequence_recovery:
        where = f"sequence-recovery {rec.index}"
        indices = [port_index(p, where) for p in rec.port]
        # one configuration for the functions of all its streams (frozen: they can share it)
        config = layout.RecoveryConfig(rec.algorithm, rec.history_length, rec.timeout_ns(),
                                       rec.individual_recovery, rec.take_no_sequence)
        latent = rec.latent()
        for handle in rec.stream:
            stream = stream_index(handle, where)
            if rec.individual_recovery:
                flags[stream] |= layout.STREAM_INDIVIDUAL
                instance = 1 + indices[0]
                feeds = plan.individual_feeds[stream]
                for p, index in zip(rec.port, indices):
                    if index in feeds:
                        raise ValueError(f"{where}: port {p} already feeds an individual recovery "
                                         f"function of stream {handle} (one per member stream)")
                    feeds[index] = instance
                instances = [(instance, list(rec.port))]
            elif rec.port:
                plan.recovery_ports[stream] |= port_mask(rec.port, where)
                instances = [(1 + index, [p]) for p, index in zip(rec.port, indices)]
            else:
                flags[stream] |= layout.STREAM_RECOVER
                instances = [(0, [])]
            for instance, on in instances:
                if (stream, instance) in placed:
                    what = f"on port {on[0]}" if on else "for every frame of it"
                    raise ValueError(f"{where}: stream {handle} already has a recovery function {what}")
                placed.add((stream, instance))
                plan.recoveries.append(RecoveryPlan(stream, instance, handle, config, latent, on))
    if len(plan.recoveries) > layout.MAX_RCVY:
        raise ValueError(f"{len(plan.recoveries)} recovery functions is out of range "
                         f"(0..={layout.MAX_RCVY}, layout.MAX_RCVY)")

    _filters(cfg, plan, flags, stream_index, port_index)
    encode = _encoding(cfg, flags, plan.recovery_ports, stream_index)
    splits = _splits(cfg, stream_index)
    # a copy that rewrites nothing is the same (frozen) value for every stream sent to that port
    unchanged = {p: OutputPlan(p, index) for p, index in port_of.items()}
    unchanged[LOCAL] = OutputPlan(LOCAL, 0, layout.OUT_LOCAL)
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
                if side is None:
                    outputs.append(unchanged[p])
                else:
                    flags_out = layout.OUT_LOCAL if p == LOCAL else 0
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
    shapes = [ident.shape() for ident in plan.identities]
    by_shape: dict[layout.Shape, list[layout.Identity]] = {}
    for ident, shape in zip(plan.identities, shapes):
        if shape is not None:
            by_shape.setdefault(shape, []).append(ident)
    common = sorted((s for s, ids in by_shape.items() if len(ids) >= HASH_MIN_IDENTITIES),
                    key=lambda s: (-len(by_shape[s]), by_shape[s][0].position))
    plan.shapes = common[:layout.MAX_SHAPES]
    for index, shape in enumerate(plan.shapes):
        for ident in by_shape[shape]:
            plan.hashed.setdefault(ident.hash_key(index), layout.ID_HIT.pack(ident.stream, ident.position))
    hashed_shapes = set(plan.shapes)
    plan.scanned = [ident for ident, shape in zip(plan.identities, shapes) if shape not in hashed_shapes]
    if len(plan.hashed) > layout.MAX_HASHED:
        raise ValueError(f"{len(plan.hashed)} hashed identities is out of range (0..={layout.MAX_HASHED}, "
                         "FRER_MAX_HASHED)")
    if len(plan.scanned) > layout.MAX_IDENTITIES:
        raise ValueError(f"{len(plan.scanned)} identities to scan is out of range (0..={layout.MAX_IDENTITIES}, "
                         f"FRER_MAX_IDENTITIES): the identities of the {layout.MAX_SHAPES} shapes most of them "
                         "share (the fields they compare, their tagged rule, whether their vlan is 0, their "
                         "ports) are hashed, the others scanned; give fewer identities other "
                         "shapes")


def _filters(cfg: NodeConfig, plan: NodePlan, flags: list[int], stream_index, port_index) -> None:
    """The stream filters and flow meters (plan.filters, meters, filter_of; STREAM_FILTERED on
    the streams filtered somewhere), each in the order of its index. A filter applies to
    received frames, so each of its ports must be one where its streams are identified on
    receipt; of the filters of a stream on a port, the one of the lowest index is taken (the
    stream-filter-instance-table's order). ValueError naming the entry otherwise."""
    meters = sorted(cfg.flow_meter, key=lambda m: m.index)
    meter_of = {m.index: entry for entry, m in enumerate(meters)}
    plan.meters = [(m.index, layout.Meter(m.committed_information_rate, m.committed_burst_size, m.drop_on_yellow))
                   for m in meters]
    received: dict[int, int] = {}  # stream -> mask of the ports where it is identified on receipt
    for ident in plan.identities:
        if ident.direction == layout.DIR_INGRESS:
            received[ident.stream] = received.get(ident.stream, 0) | ident.port_mask
    for entry, flt in enumerate(sorted(cfg.stream_filter, key=lambda f: f.index)):
        where = f"stream-filter {flt.index}"
        if flt.flow_meter is not None and flt.flow_meter not in meter_of:
            known = ", ".join(str(m.index) for m in meters) or "none"
            raise ValueError(f"{where}: flow-meter {flt.flow_meter} is not the index of a flow-meter entry "
                             f"(flow-meter indices: {known})")
        ports = [port_index(p, where) for p in flt.port]
        for handle in flt.stream:
            stream = stream_index(handle, where)
            mask = received.get(stream, 0)
            if not mask:
                raise ValueError(f"{where}: stream {handle} is identified on no received frames (a stream filter "
                                 "sees frames received on a port: give the stream an out-facing input-port)")
            for p in ports or [p for p in range(len(plan.ports)) if mask >> p & 1]:
                if not mask >> p & 1:
                    where_known = ", ".join(n for i, n in enumerate(plan.ports) if mask >> i & 1)
                    raise ValueError(f"{where}: stream {handle} is not identified on frames received on port "
                                     f"{plan.ports[p]} (it is on {where_known}), so the filter would never see it there")
                plan.filter_of.setdefault((stream, p), entry)
            flags[stream] |= layout.STREAM_FILTERED
        plan.filters.append(FilterPlan(flt.index, tuple(flt.stream), tuple(flt.port), flt.max_sdu_size,
                                       flt.flow_meter, meter_of.get(flt.flow_meter)))


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
    if not cfg.sequence_identification:
        return encode
    forwarded_to = {f.stream: f.output_port for f in cfg.stream_forwarding}
    decided: dict[int, bool] = {}
    for seq_id in cfg.sequence_identification:
        for handle in seq_id.stream:
            stream = stream_index(handle, "sequence-identification")
            outputs = [p for p in forwarded_to.get(handle, []) if p != LOCAL]
            if set(outputs) - set(seq_id.port) or decided.get(stream, seq_id.active) != seq_id.active:
                raise ValueError(f"sequence-identification: stream {handle} must be encoded alike on "
                                 f"all its output ports ({', '.join(outputs)})")
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
    """The matcher of `ident` (its one type) for `stream` on the ports of `mask`."""
    where = f"stream-identity {ident.index}"
    if (null := ident.null_stream_identification) is not None:
        mode, vid = _vlan_rule(null.tagged, null.vlan, where)
        return layout.Identity(stream=stream, port_mask=mask, direction=direction, position=position,
                               vlan_mode=mode, vid=vid, fields=layout.MATCH_DMAC,
                               dmac=_mac_bytes(null.destination_mac))
    if (smac := ident.smac_vlan_stream_identification) is not None:
        mode, vid = _vlan_rule(smac.tagged, smac.vlan, where)
        return layout.Identity(stream=stream, port_mask=mask, direction=direction, position=position,
                               vlan_mode=mode, vid=vid, fields=layout.MATCH_SMAC,
                               smac=_mac_bytes(smac.source_mac))
    if (active := ident.dmac_vlan_stream_identification) is not None:
        side = active.down
        mode, vid = _vlan_rule(side.tagged, side.vlan, f"{where} down")
        return layout.Identity(stream=stream, port_mask=mask, direction=direction, position=position,
                               vlan_mode=mode, vid=vid, fields=layout.MATCH_DMAC,
                               dmac=_mac_bytes(side.destination_mac))
    ip = ident.ip_stream_identification
    mode, vid = _vlan_rule(ip.tagged, ip.vlan, where)
    fields = layout.MATCH_IP
    src, dst = ip_address(ip.ip_source), ip_address(ip.ip_destination)
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
    return layout.Identity(stream=stream, port_mask=mask, direction=direction, position=position,
                           vlan_mode=mode, vid=vid, fields=fields,
                           dmac=_mac_bytes(ip.destination_mac) if ip.destination_mac else bytes(6),
                           dscp=ip.dscp % 64, proto=_PROTOCOLS[ip.next_protocol],
                           sport=ip.source_port, dport=ip.destination_port,
                           ip_src=src.packed, ip_dst=dst.packed)
