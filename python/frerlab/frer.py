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
from typing import Literal

from frerlab import _native

__all__ = [
    "SequenceRecovery",
    "SequenceGenerator",
    "LatentErrorDetector",
    "LatentError",
    "push_rtag",
    "pop_rtag",
    "COUNTER_NAMES",
    "DEFAULT_HISTORY_LENGTH",
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

#: The YANG default of frerSeqRcvyHistoryLength (ieee802-dot1cb-frer `history-length`).
DEFAULT_HISTORY_LENGTH = 2


class SequenceRecovery:
    """One sequence recovery (or, with `individual_recovery=True`, individual recovery)
    function, 802.1CB 7.4.3 / 7.5.

    `receive(seq, now_ns)` returns True when the packet passes; `seq=None` is a packet without
    a sequence number. Time is a parameter in nanoseconds: the reset timeout counts from the
    last packet that reloaded the timer (every passed packet; under individual recovery also
    every discarded one), as the standard's RemainingTicks does. `last_verdict` says why the
    last packet was dropped ("duplicate", "rogue" or "tagless") or "pass".
    """

    def __init__(
        self,
        algorithm: Literal["vector", "match"] = "vector",
        history_length: int = DEFAULT_HISTORY_LENGTH,
        reset_timeout_ns: int | None = None,
        individual_recovery: bool = False,
        take_no_sequence: bool = False,
    ) -> None:
        _check_int("history_length", history_length)
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

    def receive(self, seq: int | None, now_ns: int) -> bool:
        """Processes one packet arriving at `now_ns`; True if it passes."""
        if seq is not None:
            _check_int("seq", seq)
        _check_int("now_ns", now_ns)
        self.last_verdict = self._fn.receive(seq, now_ns)
        return self.last_verdict == "pass"

    def advance(self, now_ns: int) -> None:
        """Lets time pass without a packet: fires the reset timeout if it is due."""
        _check_int("now_ns", now_ns)
        self._fn.advance(now_ns)

    def reset(self) -> None:
        """Management reset (SequenceRecoveryReset): counts `resets`, takes any next number."""
        self._fn.reset()

    @property
    def counters(self) -> Mapping[str, int]:
        """A snapshot of the clause-10 counters, keyed by `COUNTER_NAMES`."""
        return dict(self._fn.counters())

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

    def poll(self, now_ns: int, passed_packets: int, discarded_packets: int) -> LatentError | None:
        """Runs what is due at `now_ns` on these counter values; the error if the test fired."""
        fired = self._fn.poll(now_ns, passed_packets, discarded_packets)
        return None if fired is None else LatentError(*fired)

    @property
    def latent_error_resets(self) -> int:
        """frerCpsSeqRcvyLatentErrorResets."""
        return self._fn.latent_error_resets()


def push_rtag(frame: bytes, seq: int) -> bytes:
    """The frame with an R-TAG carrying `seq` inserted after the MAC addresses and any VLAN
    tags. Raises ValueError for a frame too short to hold them or one already R-tagged."""
    _check_int("seq", seq)
    return _native.push_rtag(bytes(frame), seq)


def pop_rtag(frame: bytes) -> tuple[int, bytes]:
    """(sequence number, frame without its R-TAG). Raises ValueError, saying what is wrong,
    for a frame without a valid R-TAG (absent, truncated, or reserved field not 0)."""
    return _native.pop_rtag(bytes(frame))


def _check_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__} ({value!r})")
