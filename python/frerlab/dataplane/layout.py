"""Map keys and values of the eBPF data plane, packed byte for byte as bpf/frer_common.h lays
them out (little-endian host order; addresses and ports in network order where the header
says __be). Each format string is checked against the header's stated size at import."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from frerlab.frer import COUNTER_NAMES

SETTINGS = struct.Struct("<IIIIQ")
IDENTITY = struct.Struct("<IHBBHH6s6sBB2s2sH16s16s")
OUTPUT = struct.Struct("<IHH6sBB")
STREAM_HEAD = struct.Struct("<IB3x")
RCVY = struct.Struct("<IBBHQQHBBHH16Q7Q")
U32 = struct.Struct("<I")

MAX_PORTS, MAX_OUTPUTS, RCVY_PER_STREAM = 16, 8, 17
SETTING_FIXED_CLOCK = 0x1
DIR_INGRESS = 0
VLAN_ALL = 0
OUT_LOCAL = 0x4
STREAM_GENERATE, STREAM_RECOVER, STREAM_ENCODE = 0x1, 0x2, 0x8
ALGORITHMS = {"vector": 0, "match": 1}
RCVY_ENABLED, RCVY_TAKE_NO_SEQUENCE, RCVY_INDIVIDUAL = 0x1, 0x2, 0x4
#: tc verdicts (linux/pkt_cls.h).
TC_ACT_OK, TC_ACT_SHOT = 0, 2

for _s, _size in ((SETTINGS, 24), (IDENTITY, 64), (OUTPUT, 16), (RCVY, 216)):
    assert _s.size == _size, f"{_s.format} packs {_s.size} bytes, frer_common.h says {_size}"
#: struct frer_stream: the head and MAX_OUTPUTS outputs.
STREAM_SIZE = STREAM_HEAD.size + MAX_OUTPUTS * OUTPUT.size
assert STREAM_SIZE == 136, f"struct frer_stream packs {STREAM_SIZE} bytes, frer_common.h says 136"


def key(index: int) -> bytes:
    """An array map key."""
    return U32.pack(index)


def settings(n_identities: int, bridge_ports: int = 0, fixed_now_ns: int | None = None) -> bytes:
    """struct frer_settings; a `fixed_now_ns` replaces the kernel clock (for replays)."""
    flags = 0 if fixed_now_ns is None else SETTING_FIXED_CLOCK
    return SETTINGS.pack(n_identities, bridge_ports, flags, 0, fixed_now_ns or 0)


def match_all_identity(stream: int, port_mask: int, direction: int = DIR_INGRESS) -> bytes:
    """struct frer_identity that takes every frame on the ports of `port_mask`."""
    return IDENTITY.pack(port_mask, stream, direction, VLAN_ALL, 0, 0, bytes(6), bytes(6), 0, 0,
                         bytes(2), bytes(2), 0, bytes(16), bytes(16))


def stream(flags: int, outputs: list[bytes]) -> bytes:
    """struct frer_stream with up to MAX_OUTPUTS packed outputs."""
    if not 0 < len(outputs) <= MAX_OUTPUTS:
        raise ValueError(f"{len(outputs)} outputs is out of range (1..={MAX_OUTPUTS})")
    padding = bytes(OUTPUT.size * (MAX_OUTPUTS - len(outputs)))
    return STREAM_HEAD.pack(flags, len(outputs)) + b"".join(outputs) + padding


def output(ifindex: int = 0, flags: int = 0, port: int = 0) -> bytes:
    """struct frer_output without rewriting."""
    return OUTPUT.pack(ifindex, flags, 0, bytes(6), port, 0)


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
        return RCVY.pack(0, ALGORITHMS[self.algorithm], flags, self.history_length,
                         self.reset_timeout_ns or 0, 0, 0xFFFF, 1, 0, 0, 0, *[0] * 16, *[0] * 7)


def rcvy_counters(value: bytes) -> dict[str, int]:
    """The clause-10 counters of a struct frer_rcvy, keyed like frerlab.frer.COUNTER_NAMES."""
    fields = RCVY.unpack(value)
    return dict(zip(COUNTER_NAMES, fields[-7:]))


def rcvy_reset(value: bytes) -> bytes:
    """The same function after a management reset (SequenceRecoveryReset)."""
    fields = list(RCVY.unpack(value))
    fields[6:11] = [0xFFFF, 1, 0, 0, 0]  # recov_seq, take_any, pad, span, pad2
    fields[11:27] = [0] * 16  # history
    fields[-1] += 1  # resets
    return RCVY.pack(*fields)
