"""Map keys and values of the eBPF data plane, packed byte for byte as bpf/frer_common.h lays
them out (little-endian host order; addresses and ports in network order where the header
says __be). Each format string is checked against the header's stated size at import."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from frerlab.frer import COUNTER_NAMES

SETTINGS = struct.Struct("<IIIII4xQ16H32s32x")
IDENTITY = struct.Struct("<IHBBHH6s6sBB2s2sH16s16s")
SHAPE = struct.Struct("<HBBI")
ID_KEY = struct.Struct("<BBBBHBB6s6s2s2s16s16s")
ID_HIT = struct.Struct("<HH")
OUTPUT = struct.Struct("<IHH6sBB")
#: struct frer_stream before its outputs: flags, n_outputs, copies, rcvy_ports, rcvy_base,
#: individual[MAX_PORTS].
STREAM_HEAD = struct.Struct("<IBxHII16s")
RCVY = struct.Struct("<IBBHQQHBBHHIIQQQ8Q16Q")
SEQGEN = struct.Struct("<IIQQ")
PORT_STATS = struct.Struct("<10Q")
STREAM_PORT_STATS = struct.Struct("<4Q")
#: struct frer_filter, struct frer_meter (lock, flags, cir, cbs, fill_ns, tokens, last_ns) and
#: struct frer_filter_stats (per CPU).
FILTER = struct.Struct("<II")
METER = struct.Struct("<IIQQQQQ")
FILTER_STATS = struct.Struct("<5Q")
U32 = struct.Struct("<I")
#: struct bpf_devmap_val (linux/bpf.h), a value of frer_xdp.c's device maps of copies: the
#: port's ifindex and the program run on each copy sent there (fd; 0 for none).
DEVMAP_VAL = struct.Struct("<Ii")
#: struct frer_port_stats, in order.
PORT_COUNTERS = ("frames", "malformed", "seq_enc_errored", "rcvy_passed", "rcvy_discarded",
                 "bridged", "to_stack", "tx_errors", "reinjected", "gso_refused")
#: struct frer_stream_port_stats, in order.
STREAM_PORT_COUNTERS = ("input", "output", "seq_enc_errored", "input_sent")
#: struct frer_filter_stats, in order (ieee802-dot1q-psfp's matching-frames-count, ...).
FILTER_COUNTERS = ("matching_frames", "passing_frames", "passing_sdu", "not_passing_sdu", "red_frames")

#: Limits of bpf/frer_common.h (FRER_MAX_*): MAX_IDENTITIES counts the scanned identities,
#: MAX_HASHED the entries of identity_hash, MAX_RCVY the recovery functions of a node (and the
#: entries of `rcvy` a node of many streams gets, frerlab.dataplane.node.map_shapes).
MAX_PORTS, MAX_OUTPUTS, RCVY_PER_STREAM, MAX_STREAMS, MAX_IDENTITIES = 16, 8, 17, 65536, 32
MAX_HASHED, MAX_SHAPES, MAX_RCVY, MAX_COPY_SETS = 65536, 4, 65536, 256
#: Stream filters and flow meters of a node (FRER_MAX_FILTERS, FRER_MAX_METERS).
MAX_FILTERS, MAX_METERS = 1024, 1024
#: Bounds of a flow meter that keep its tokens (1e-9 bit each) within 63 bits: the bucket
#: (committed-burst-size * 8e9) plus a rate's worth (struct frer_meter).
MAX_CBS, MAX_CIR = 1_000_000_000, 1_000_000_000_000
#: Tokens of one octet, and fill_ns of a meter of rate 0 (never fills).
TOKENS_PER_OCTET, NEVER_NS = 8_000_000_000, 2**63 - 1
#: Slots of the array port_of_ifindex, each a struct frer_port_slot (ifindex, port index).
PORT_SLOTS, PORT_SLOT = 64, struct.Struct("<II")
#: Identity positions are __u16: at most this many identities in a node's order.
MAX_POSITIONS = 65536
SHAPE_ANY_VID = 0x1
SETTING_FIXED_CLOCK = 0x1
DIR_INGRESS, DIR_EGRESS = 0, 1
VLAN_MODES = {"all": 0, "tagged": 1, "priority": 2}
VLAN_ALL = VLAN_MODES["all"]
(MATCH_DMAC, MATCH_SMAC, MATCH_IPV4, MATCH_IPV6, MATCH_IP_SRC, MATCH_IP_DST, MATCH_DSCP,
 MATCH_PROTO, MATCH_SPORT, MATCH_DPORT, MATCH_IP) = (1 << i for i in range(11))
#: The PVID of a port none is configured for (802.1Q: 1).
DEFAULT_PVID = 1
OUT_SET_DMAC, OUT_SET_VID, OUT_LOCAL, OUT_SET_PCP = 0x1, 0x2, 0x4, 0x8
STREAM_GENERATE, STREAM_RECOVER, STREAM_INDIVIDUAL, STREAM_ENCODE, STREAM_PER_COPY = 0x1, 0x2, 0x4, 0x8, 0x10
STREAM_COARSE_CLOCK, STREAM_FILTERED = 0x20, 0x40
METER_DROP_ON_YELLOW = 0x1
ALGORITHMS = {"vector": 0, "match": 1}
RCVY_ENABLED, RCVY_TAKE_NO_SEQUENCE, RCVY_INDIVIDUAL = 0x1, 0x2, 0x4
#: tc verdicts (linux/pkt_cls.h).
TC_ACT_OK, TC_ACT_SHOT, TC_ACT_REDIRECT = 0, 2, 7
#: XDP actions (linux/bpf.h enum xdp_action).
XDP_DROP, XDP_PASS, XDP_REDIRECT = 1, 2, 4

for _s, _size in ((SETTINGS, 128), (IDENTITY, 64), (SHAPE, 8), (ID_KEY, 56), (ID_HIT, 4), (OUTPUT, 16), (RCVY, 256), (SEQGEN, 24),
                  (PORT_STATS, 80), (STREAM_PORT_STATS, 32), (FILTER, 8), (METER, 48), (FILTER_STATS, 40)):
    assert _s.size == _size, f"{_s.format} packs {_s.size} bytes, frer_common.h says {_size}"
#: struct frer_stream: the head and MAX_OUTPUTS outputs.
STREAM_SIZE = STREAM_HEAD.size + MAX_OUTPUTS * OUTPUT.size
assert STREAM_HEAD.size == 16 + MAX_PORTS
assert STREAM_SIZE == 160, f"struct frer_stream packs {STREAM_SIZE} bytes, frer_common.h says 160"


def key(index: int) -> bytes:
    """An array map key."""
    return U32.pack(index)


@dataclass(frozen=True)
class Shape:
    """struct frer_id_shape: what the hashed identities of one shape compare (MATCH_* fields,
    VLAN rule, SHAPE_* flags) and their ports."""

    fields: int
    vlan_mode: int
    flags: int
    port_mask: int

    def pack(self) -> bytes:
        return SHAPE.pack(self.fields, self.vlan_mode, self.flags, self.port_mask)


def settings(n_identities: int, bridge_ports: int = 0, fixed_now_ns: int | None = None,
             pvids: list[int] = (), shapes: list[Shape] = (), port_stride: int = MAX_PORTS) -> bytes:
    """struct frer_settings; `n_identities` scanned identities; a `fixed_now_ns` replaces the
    kernel clock (for replays); `pvids` are the ports' PVIDs by port index (DEFAULT_PVID for
    the ports after them); `shapes` those of the hashed identities (up to MAX_SHAPES);
    `port_stride` the entries of stream_port_stats per stream (the node's ports)."""
    if len(shapes) > MAX_SHAPES:
        raise ValueError(f"{len(shapes)} identity shapes is out of range (0..={MAX_SHAPES})")
    flags = 0 if fixed_now_ns is None else SETTING_FIXED_CLOCK
    pvid = [*pvids, *[DEFAULT_PVID] * (MAX_PORTS - len(pvids))]
    packed = b"".join(s.pack() for s in shapes).ljust(MAX_SHAPES * SHAPE.size, b"\0")
    return SETTINGS.pack(n_identities, bridge_ports, flags, len(shapes), port_stride, fixed_now_ns or 0, *pvid,
                         packed)


@dataclass(frozen=True)
class Identity:
    """One normalised matcher (struct frer_identity): `fields` (MATCH_*) says which of the
    values must match; addresses and ports are in network order, an IPv4 address in the
    first 4 bytes of its 16; `position` its place in the node's order (first match wins)."""

    stream: int
    port_mask: int
    direction: int = DIR_INGRESS
    vlan_mode: int = VLAN_ALL
    vid: int = 0
    fields: int = 0
    dmac: bytes = bytes(6)
    smac: bytes = bytes(6)
    dscp: int = 0
    proto: int = 0
    sport: int = 0
    dport: int = 0
    ip_src: bytes = bytes(16)
    ip_dst: bytes = bytes(16)
    position: int = 0

    def pack(self) -> bytes:
        return IDENTITY.pack(self.port_mask, self.stream, self.direction, self.vlan_mode, self.vid,
                             self.fields, self.dmac, self.smac, self.dscp, self.proto,
                             self.sport.to_bytes(2, "big"), self.dport.to_bytes(2, "big"), self.position,
                             self.ip_src.ljust(16, b"\0"), self.ip_dst.ljust(16, b"\0"))

    def shape(self) -> Shape | None:
        """Its shape; None when it cannot be hashed (an address without its IP version)."""
        if self.fields & (MATCH_IP_SRC | MATCH_IP_DST) and not self.fields & (MATCH_IPV4 | MATCH_IPV6):
            return None
        return Shape(self.fields, self.vlan_mode, SHAPE_ANY_VID if self.vid == 0 else 0, self.port_mask)

    def hash_key(self, index: int) -> bytes:
        """Its struct frer_id_key as an identity of shape number `index` (its own shape;
        bpf/frer_common.h frame_key makes a frame's)."""
        m = self.fields
        ip = 4 if m & MATCH_IPV4 else 6 if m & MATCH_IPV6 else 0
        values = (ip, self.vid,
                  self.dscp if m & MATCH_DSCP else 0, self.proto if m & MATCH_PROTO else 0,
                  self.dmac if m & MATCH_DMAC else bytes(6), self.smac if m & MATCH_SMAC else bytes(6),
                  (self.sport if m & MATCH_SPORT else 0).to_bytes(2, "big"),
                  (self.dport if m & MATCH_DPORT else 0).to_bytes(2, "big"),
                  self.ip_src.ljust(16, b"\0") if m & MATCH_IP_SRC else bytes(16),
                  self.ip_dst.ljust(16, b"\0") if m & MATCH_IP_DST else bytes(16))
        return ID_KEY.pack(self.direction, 0, index, *values)


def match_all_identity(stream: int, port_mask: int, direction: int = DIR_INGRESS) -> bytes:
    """struct frer_identity that takes every frame on the ports of `port_mask`."""
    return Identity(stream, port_mask, direction).pack()


def stream(flags: int, outputs: list[bytes], rcvy_ports: int = 0,
           individual: dict[int, int] | None = None, copies: int = 0, rcvy_base: int = 0) -> bytes:
    """struct frer_stream with up to MAX_OUTPUTS packed outputs; `rcvy_ports` the mask of ports
    with a sequence recovery function of the stream, `individual` port -> the instance of the
    individual recovery function it feeds; `copies` its output ports' entry of xdp_copies;
    `rcvy_base` the entry of `rcvy` of its instance 0 (instance i at rcvy_base + i)."""
    if not 0 < len(outputs) <= MAX_OUTPUTS:
        raise ValueError(f"{len(outputs)} outputs is out of range (1..={MAX_OUTPUTS})")
    padding = bytes(OUTPUT.size * (MAX_OUTPUTS - len(outputs)))
    feeds = bytearray(MAX_PORTS)
    for port, instance in (individual or {}).items():
        feeds[port] = instance
    return STREAM_HEAD.pack(flags, len(outputs), copies, rcvy_ports, rcvy_base, bytes(feeds)) + b"".join(outputs) + padding


def output(ifindex: int = 0, flags: int = 0, port: int = 0, vid: int = 0, dmac: bytes = bytes(6),
           pcp: int = 0) -> bytes:
    """struct frer_output: `flags` (OUT_*) say which of dmac, vid, pcp this copy gets."""
    return OUTPUT.pack(ifindex, flags, vid, dmac, port, pcp)


@dataclass(frozen=True)
class RecoveryConfig:
    """The managed parameters of one recovery function, as the core takes them."""

    algorithm: str = "vector"
    history_length: int = 2
    reset_timeout_ns: int | None = None
    individual_recovery: bool = False
    take_no_sequence: bool = False

    def pack(self) -> bytes:
        """struct frer_rcvy in its initial state (TakeAny, empty history, zero counters)."""
        flags = (RCVY_ENABLED | (RCVY_TAKE_NO_SEQUENCE if self.take_no_sequence else 0)
                 | (RCVY_INDIVIDUAL if self.individual_recovery else 0))
        return RCVY.pack(0, ALGORITHMS[self.algorithm], flags, self.history_length, self.reset_timeout_ns or 0,
                         0, 0xFFFF, 1, 0, 0, 0, *[0] * (len(RCVY_FIELDS) - 11))


#: The fields of struct frer_rcvy in the order RCVY.unpack() gives them.
RCVY_FIELDS = ("lock", "algorithm", "flags", "history_length", "reset_timeout_ns", "last_reload_ns", "recov_seq",
               "take_any", "pad", "span", "pad2", "resets_requested", "pad3", "last_pass_ns", *COUNTER_NAMES,
               "last_rogue_ns", "pad4a", "pad4b", *(f"history{i}" for i in range(16)))
assert len(RCVY_FIELDS) == len(RCVY.unpack(bytes(RCVY.size)))
_RCVY_COUNTERS = slice(RCVY_FIELDS.index(COUNTER_NAMES[0]), RCVY_FIELDS.index(COUNTER_NAMES[-1]) + 1)
_RCVY_HISTORY = slice(RCVY_FIELDS.index("history0"), len(RCVY_FIELDS))
_RCVY_RESETS, _RCVY_LAST_PASS, _RCVY_LAST_ROGUE = (RCVY_FIELDS.index(name) for name in
                                                   ("resets", "last_pass_ns", "last_rogue_ns"))


def rcvy_counters(value: bytes) -> dict[str, int]:
    """The clause-10 counters of a struct frer_rcvy, keyed like frerlab.frer.COUNTER_NAMES."""
    return dict(zip(COUNTER_NAMES, RCVY.unpack(value)[_RCVY_COUNTERS]))


def rcvy_times(value: bytes) -> dict[str, int]:
    """When a struct frer_rcvy last passed a tagged packet and last saw a rogue one
    (nanoseconds of the kernel's monotonic clock; 0 = never)."""
    fields = RCVY.unpack(value)
    return {"last_pass_ns": fields[_RCVY_LAST_PASS], "last_rogue_ns": fields[_RCVY_LAST_ROGUE]}


def rcvy_reset(value: bytes) -> bytes:
    """The same function after a management reset (SequenceRecoveryReset)."""
    fields = list(RCVY.unpack(value))
    fields[6:11] = [0xFFFF, 1, 0, 0, 0]  # recov_seq, take_any, pad, span, pad2
    fields[_RCVY_HISTORY] = [0] * 16
    fields[_RCVY_RESETS] += 1
    return RCVY.pack(*fields)


@dataclass(frozen=True)
class Meter:
    """A flow meter's configuration (802.1Qci 8.6.5.3, EIR 0): committed-information-rate in
    bit/s, committed-burst-size in octets, drop-on-yellow (kept; no frame is yellow without an
    excess rate)."""

    cir: int
    cbs: int
    drop_on_yellow: bool = False

    def pack(self) -> bytes:
        """struct frer_meter with a full bucket; ValueError outside MAX_CIR / MAX_CBS."""
        if not 0 <= self.cir <= MAX_CIR:
            raise ValueError(f"committed-information-rate {self.cir} is out of range (0..={MAX_CIR} bit/s)")
        if not 0 <= self.cbs <= MAX_CBS:
            raise ValueError(f"committed-burst-size {self.cbs} is out of range (0..={MAX_CBS} octets)")
        bucket = self.cbs * TOKENS_PER_OCTET
        fill_ns = -(-bucket // self.cir) if self.cir else NEVER_NS
        return METER.pack(0, METER_DROP_ON_YELLOW if self.drop_on_yellow else 0, self.cir, bucket, fill_ns,
                          bucket, 0)


def meter_tokens(value: bytes) -> float:
    """The octets' worth of tokens in a struct frer_meter's bucket now."""
    return METER.unpack(value)[5] / TOKENS_PER_OCTET


def filter_entry(max_sdu: int, meter: int | None) -> bytes:
    """struct frer_filter: max-sdu-size (0 = any) and its flow meter's entry of `meters`."""
    return FILTER.pack(max_sdu, 0 if meter is None else meter + 1)
