"""The Python face of frerlab's IEEE 802.1CB core (crates/frer), for notebooks, tests and
outside checks.

Everything here runs the Rust implementation; this module only gives it Pythonic names and
types. Bad arguments raise `ValueError` naming the value and the valid range.

    >>> rcvy = SequenceRecovery(algorithm="vector", history_length=32)
    >>> [rcvy.receive(s, now_ns=0) for s in (0, 0, 1)]
    [True, False, True]
    >>> rcvy.counters["discarded_packets"]
    1
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import EllipsisType
from typing import Literal

from frerlab import _native
from frerlab.names import shown

__all__ = [
    "SequenceRecovery",
    "SequenceGenerator",
    "SequenceDecoder",
    "LatentErrorDetector",
    "LatentError",
    "StreamIdentifier",
    "push_rtag",
    "pop_rtag",
    "COUNTER_NAMES",
    "DEFAULT_HISTORY_LENGTH",
    "default_reset_timeout_ns",
]

#: The recovery counters, in the order the core reports them (802.1CB clause 10 names in
#: snake_case: passed_packets is frerCpsSeqRcvyPassedPackets, and so on).
COUNTER_NAMES = (
    "passed_packets",
    "discarded_packets",
    "out_of_order_packets",
    "rogue_packets",
    "lost_packets",
    "tagless_packets",
    "resets",
)

#: frerlab's default frerSeqRcvyHistoryLength (YANG's is 2; crates/frer says why 32).
DEFAULT_HISTORY_LENGTH: int = _native.DEFAULT_HISTORY_LENGTH


def default_reset_timeout_ns(individual_recovery: bool) -> int:
    """frerlab's default frerSeqRcvyResetMSec in nanoseconds (YANG gives none): 100 ms for
    sequence recovery, 1 ms for individual recovery, whose discards reload the timer and so
    can lock a member stream out above `(history_length - 1) / timeout` frames per second."""
    return (_native.DEFAULT_INDIVIDUAL_RESET_TIMEOUT_NS if individual_recovery
            else _native.DEFAULT_RESET_TIMEOUT_NS)


class SequenceRecovery:
    """One sequence recovery (or, with `individual_recovery=True`, individual recovery)
    function, 802.1CB 7.4.3 / 7.5.

    `receive(seq, now_ns)` returns True when the packet passes; `seq=None` is a packet without
    a sequence number. Time is a parameter in nanoseconds: the reset timeout counts from the
    last packet that reloaded the timer (every passed packet; under individual recovery also
    every discarded one), as the standard's RemainingTicks does. `last_verdict` says why the
    last packet was dropped ("duplicate", "rogue" or "tagless") or "pass".

    Defaults are frerlab's, chosen so that nothing blacks out for good: history length 32 and
    `default_reset_timeout_ns(individual_recovery)`; `reset_timeout_ns=None` means no timeout
    at all, which the caller must ask for.
    """

    def __init__(
        self,
        algorithm: Literal["vector", "match"] = "vector",
        history_length: int = DEFAULT_HISTORY_LENGTH,
        reset_timeout_ns: int | None | EllipsisType = ...,
        individual_recovery: bool = False,
        take_no_sequence: bool = False,
    ) -> None:
        _check_int("history_length", history_length)
        _check_bool("individual_recovery", individual_recovery)
        _check_bool("take_no_sequence", take_no_sequence)
        if reset_timeout_ns is ...:
            reset_timeout_ns = default_reset_timeout_ns(bool(individual_recovery))
        if reset_timeout_ns is not None:
            _check_int("reset_timeout_ns", reset_timeout_ns)
        self._fn = _native.SequenceRecovery(
            algorithm, history_length, reset_timeout_ns, bool(individual_recovery),
            bool(take_no_sequence),
        )
        self.algorithm = algorithm
        self.history_length = history_length
        self.reset_timeout_ns = reset_timeout_ns
        self.individual_recovery = bool(individual_recovery)
        self.take_no_sequence = bool(take_no_sequence)
        self.last_verdict: str | None = None
        self._now_ns: int | None = None

    def receive(self, seq: int | None, now_ns: int) -> bool:
        """Processes one packet arriving at `now_ns` (not before an earlier call's time);
        True if it passes."""
        if seq is not None:
            _check_int("seq", seq)
        _check_time(now_ns, self._now_ns)
        self.last_verdict = self._fn.receive(seq, now_ns)
        self._now_ns = now_ns
        return self.last_verdict == "pass"

    def advance(self, now_ns: int) -> None:
        """Lets time pass without a packet: fires the reset timeout if it is due."""
        _check_time(now_ns, self._now_ns)
        self._fn.advance(now_ns)
        self._now_ns = now_ns

    def reset(self) -> None:
        """Management reset (SequenceRecoveryReset): counts `resets`, takes any next number."""
        self._fn.reset()

    @property
    def counters(self) -> Mapping[str, int]:
        """A snapshot of the clause-10 counters, keyed by `COUNTER_NAMES`."""
        return dict(self._fn.counters())

    @property
    def lockout_free_rate(self) -> float | None:
        """The highest frame rate (frames/s) at which this function cannot lock a member
        stream out after a path cut, or None when it never can (only individual recovery with
        the vector algorithm can: its rogue discards reload the timer, 802.1CB 7.4.3.4)."""
        return self._fn.lockout_free_rate()

    def __repr__(self) -> str:
        return (f"SequenceRecovery(algorithm={self.algorithm!r}, "
                f"history_length={self.history_length}, "
                f"reset_timeout_ns={self.reset_timeout_ns}, "
                f"individual_recovery={self.individual_recovery}, "
                f"take_no_sequence={self.take_no_sequence})")


class SequenceGenerator:
    """The sequence generation function (802.1CB 7.4.1): 0, 1, ..., 65535, 0, ..."""

    def __init__(self) -> None:
        self._fn = _native.SequenceGenerator()

    def next(self) -> int:
        """The number for the next frame."""
        return self._fn.next_seq()

    def reset(self) -> None:
        """SequenceGenerationReset: the next number is 0; counts `resets`."""
        self._fn.reset()

    @property
    def resets(self) -> int:
        """frerCpsSeqGenResets."""
        return self._fn.resets()


class SequenceDecoder:
    """The sequence decode function (802.1CB 7.6): the number an R-tagged frame carries.

    `decode(frame)` returns the sequence number, or None for a frame without an R-TAG (an
    untagged frame for the recovery function). A frame whose R-TAG is cut short raises
    ValueError and counts in `seq_enc_errored_packets` (frerCpsSeqEncErroredPackets); a runt
    frame raises ValueError without counting. The tag's reserved field is ignored on receipt.
    """

    def __init__(self) -> None:
        self._fn = _native.SequenceDecoder()

    def decode(self, frame: bytes) -> int | None:
        """The frame's sequence number, or None if it has no R-TAG."""
        return self._fn.decode(_frame_bytes(frame))

    @property
    def seq_enc_errored_packets(self) -> int:
        """frerCpsSeqEncErroredPackets."""
        return self._fn.seq_enc_errored_packets()


@dataclass(frozen=True)
class LatentError:
    """A latent error signalled by one test (802.1CB 7.4.4)."""

    condition: Literal["missing-copies", "excess-copies"]
    difference: int
    at_ns: int


class LatentErrorDetector:
    """Latent error detection over a sequence recovery function's counters (802.1CB 7.4.4).

    `poll(now_ns, passed_packets, discarded_packets)` runs the test every `period_ns` and the
    re-basing every `reset_period_ns`; it returns a `LatentError` when
    |CurBaseDifference - (passed * (paths - 1) - discarded)| exceeds `difference`:
    "missing-copies" (a path delivers nothing) or "excess-copies" (more copies than paths).
    """

    def __init__(
        self,
        difference: int,
        period_ns: int = 2_000_000_000,
        paths: int = 2,
        reset_period_ns: int = 30_000_000_000,
        *,
        start_ns: int = 0,
        passed_packets: int = 0,
        discarded_packets: int = 0,
    ) -> None:
        for name, value in [("difference", difference), ("period_ns", period_ns),
                            ("paths", paths), ("reset_period_ns", reset_period_ns),
                            ("start_ns", start_ns)]:
            _check_int(name, value)
        self._fn = _native.LatentErrorDetector(
            difference, period_ns, paths, reset_period_ns, start_ns, passed_packets,
            discarded_packets,
        )
        self._now_ns = start_ns

    def poll(self, now_ns: int, passed_packets: int, discarded_packets: int) -> LatentError | None:
        """Runs what is due at `now_ns` (not before start_ns or an earlier poll's time) on
        these counter values; the error if the test fired."""
        _check_time(now_ns, self._now_ns)
        fired = self._fn.poll(now_ns, passed_packets, discarded_packets)
        self._now_ns = now_ns
        return None if fired is None else LatentError(*fired)

    @property
    def latent_error_resets(self) -> int:
        """frerCpsSeqRcvyLatentErrorResets."""
        return self._fn.latent_error_resets()


class StreamIdentifier:
    """A table of stream identities (802.1CB clause 6; mask-and-match from 802.1CBdb).

    `identify(frame, pvid)` returns the handle of the first identity the frame matches, or None.
    Parameters take the standard's "ignore" values by default: VID 0, DSCP 64, port 0,
    address 0.0.0.0 (or ::). `tagged` is "tagged", "priority" or "all"; the VLAN matched is the
    outermost tag's, or for an untagged or priority-tagged frame the PVID of the port it arrived
    on (default 1); the PCP is never matched; identification looks through an R-TAG. What
    frerlab decided where the standard is open is in docs/8021cb-decisions.md.

        >>> ids = StreamIdentifier()
        >>> ids.add_ip(7, dst_ip="198.18.0.2", next_protocol="udp", dst_port=5001)
    """

    def __init__(self) -> None:
        self._table = _native.StreamIdentifier()

    def add_null(self, handle: int, dst_mac: str, tagged: str = "all", vid: int = 0) -> None:
        """Null stream identification (type 1): destination MAC and VLAN."""
        self._table.add_null(handle, dst_mac, tagged, vid)

    def add_source_mac_vlan(self, handle: int, src_mac: str, tagged: str = "all",
                            vid: int = 0) -> None:
        """Source MAC and VLAN stream identification (type 2)."""
        self._table.add_source_mac_vlan(handle, src_mac, tagged, vid)

    def add_active_dest_mac_vlan(self, handle: int, down: Mapping[str, object],
                                 up: Mapping[str, object]) -> None:
        """Active destination MAC and VLAN identification (type 3). `down` and `up` are
        {"mac": str, "tagged": str, "vid": int, "priority": int | None}: the values on the wire,
        and those above it. Frames are recognised by mac, tagged (default "tagged") and vid (0 =
        any); priority is the PCP a rewrite gives them (None, the default: their own)."""
        sides = []
        for name, side in (("down", down), ("up", up)):
            unknown = set(side) - {"mac", "tagged", "vid", "priority"}
            if unknown or "mac" not in side:
                raise ValueError(f"{name} {dict(side)!r} is not valid (keys mac, tagged, vid, "
                                 "priority; mac required)")
            sides.append((side["mac"], side.get("tagged", "tagged"), side.get("vid", 0),
                          side.get("priority")))
        self._table.add_active_dest_mac_vlan(handle, *sides)

    def add_ip(self, handle: int, *, dst_mac: str | None = None, tagged: str = "all",
               vid: int = 0, src_ip: str = "0.0.0.0", dst_ip: str = "0.0.0.0", dscp: int = 64,
               next_protocol: str = "none", src_port: int = 0, dst_port: int = 0) -> None:
        """IP stream identification (type 4), IPv4 or IPv6."""
        self._table.add_ip(handle, dst_mac, tagged, vid, src_ip, dst_ip, dscp, next_protocol,
                           src_port, dst_port)

    def add_mask_and_match(self, handle: int, *, msdu_match: bytes, msdu_mask: bytes,
                           dst_mac: str = "00:00:00:00:00:00",
                           dst_mac_mask: str = "00:00:00:00:00:00",
                           src_mac: str = "00:00:00:00:00:00",
                           src_mac_mask: str = "00:00:00:00:00:00") -> None:
        """Mask-and-match identification (type 5): masked MACs and the first 2..1024 bytes of
        the MSDU (from the EtherType after any VLAN tags and R-TAG)."""
        self._table.add_mask_and_match(handle, dst_mac, dst_mac_mask, src_mac, src_mac_mask,
                                       _frame_bytes(msdu_match, "msdu_match"), _frame_bytes(msdu_mask, "msdu_mask"))

    def identify(self, frame: bytes, pvid: int = 1) -> int | None:
        """The handle of the first identity matching the frame received on a port with
        `pvid` (1..4094); ValueError for a frame too short for its Ethernet and VLAN headers."""
        return self._table.identify(_frame_bytes(frame), pvid)

    def rewrite(self, handle: int, frame: bytes, direction: Literal["down", "up"],
                pvid: int = 1) -> bytes | None:
        """The frame rewritten by active identity `handle` toward the wire ("down") or up
        from it, or None when the frame does not carry the other side's MAC and VLAN."""
        return self._table.rewrite(handle, _frame_bytes(frame), direction, pvid)


def push_rtag(frame: bytes, seq: int) -> bytes:
    """The frame with an R-TAG carrying `seq` inserted after the MAC addresses and any VLAN
    tags. Raises ValueError for a frame too short to hold them or one already R-tagged."""
    _check_int("seq", seq)
    return _native.push_rtag(_frame_bytes(frame), seq)


def pop_rtag(frame: bytes) -> tuple[int, bytes]:
    """(sequence number, frame without its R-TAG). Raises ValueError, saying what is wrong,
    for a frame without an R-TAG or with one cut short; the reserved field is ignored."""
    return _native.pop_rtag(_frame_bytes(frame))


def _check_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__} ({shown(value)})")


def _check_time(now_ns: object, previous: int | None) -> None:
    """Checks that `now_ns` is an int not before `previous` (a function's last time): time
    does not run backwards. A negative time is left to the core's range check."""
    _check_int("now_ns", now_ns)
    if previous is not None and 0 <= now_ns < previous:
        raise ValueError(f"now_ns {now_ns} is before the previous call's {previous}: "
                         "time cannot run backwards (give non-decreasing times)")


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__} ({shown(value)})")


def _frame_bytes(value: object, name: str = "frame") -> bytes:
    """`value` as bytes; TypeError for anything not bytes-like (bytes(5) would be five zero
    bytes, not a frame)."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, not {type(value).__name__} ({shown(value)})")
    return bytes(value)

