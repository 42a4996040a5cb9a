"""Unit strings of scenario files: rates ("1Gbps", "500 Mbit/s"), times ("10ms", "1.5us") and
sizes ("160KiB", "1518"), parsed into integers of bit/s, picoseconds and bytes. A bare number is
bit/s, seconds or bytes respectively.

Every value is bounded (docs/errors.md): rates up to 10 Tbit/s, times up to 10^6 s (the engine
adds times in 64-bit picoseconds, and a dozen such sums stay below 2^64), sizes up to 1 TiB.
"""

from __future__ import annotations

import math
import re

from pydantic import AfterValidator

from frerlab import names

_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")

RATE_UNITS = {
    "": 1, "bps": 1, "bit/s": 1,
    "k": 10**3, "kbps": 10**3, "kbit/s": 10**3,
    "m": 10**6, "mbps": 10**6, "mbit/s": 10**6,
    "g": 10**9, "gbps": 10**9, "gbit/s": 10**9,
    "t": 10**12, "tbps": 10**12, "tbit/s": 10**12,
}
TIME_UNITS_PS = {"": 10**12, "s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3, "ps": 1}
SIZE_UNITS = {
    "": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30,
    "tib": 2**40,
}

# Ethernet frames, FCS included: the 802.3 minimum and the largest jumbo frame common switches take.
MIN_FRAME_BYTES = 64
MAX_FRAME_BYTES = 9216
MAX_RATE_BPS = 10**13
MAX_TIME_PS = 10**18
MAX_SIZE_BYTES = 2**40


def _parse(value: object, units: dict[str, int], what: str, examples: str, limit: int, limit_text: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} {names.shown(value)} is not valid ({examples})")
    if isinstance(value, (int, float)):
        number, unit = value, ""
    elif isinstance(value, str) and (match := _NUMBER.match(value)):
        number, unit = float(match.group(1)), match.group(2).lower()
    else:
        raise ValueError(f"{what} {names.shown(value)} is not valid ({examples})")
    if unit not in units:
        raise ValueError(f"{what} {names.shown(value)} has an unknown unit {names.shown(unit)} ({examples})")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"{what} {names.shown(value)} is not a finite number ({examples})")
    if number < 0:
        raise ValueError(f"{what} {names.shown(value)} is negative ({examples})")
    if number > limit / units[unit]:
        raise ValueError(f"{what} {names.shown(value)} is out of range (at most {limit_text})")
    return round(number * units[unit])


def rate_bps(value: object) -> int:
    """A rate in bit/s from an int or a string like "1Gbps" or "500Mbit/s" (at most 10 Tbit/s)."""
    return _parse(value, RATE_UNITS, "rate", "e.g. 1Gbps, 500Mbps, 100kbps or a number of bit/s",
                  MAX_RATE_BPS, "10Tbps")


def time_ps(value: object) -> int:
    """A time in picoseconds from seconds or a string like "10ms", "1.5us", "100ns" (at most
    10^6 s)."""
    return _parse(value, TIME_UNITS_PS, "time", "e.g. 1s, 10ms, 1.5us, 100ns or a number of seconds",
                  MAX_TIME_PS, "1e6s")


def size_bytes(value: object) -> int:
    """A size in bytes from an int or a string like "160KiB", "64KB", "1518" (at most 1 TiB)."""
    return _parse(value, SIZE_UNITS, "size", "e.g. 1518, 64KB, 160KiB, 2MiB", MAX_SIZE_BYTES, "1TiB")


def at_most(limit_ps: int):
    """A validator of a time in picoseconds that refuses one above `limit_ps`."""
    def check(ps: int) -> int:
        if ps > limit_ps:
            raise ValueError(f"time {time_text(ps)} is out of range (at most {time_text(limit_ps)})")
        return ps
    return AfterValidator(check)


def time_text(ps: int) -> str:
    """A time in picoseconds written with the largest unit that keeps it readable ("1.5ms")."""
    for unit in ("s", "ms", "us", "ns"):
        if ps >= TIME_UNITS_PS[unit]:
            return f"{ps / TIME_UNITS_PS[unit]:g}{unit}"
    return f"{ps}ps"
