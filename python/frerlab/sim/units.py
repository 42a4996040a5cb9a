"""Unit strings of scenario files: rates ("1Gbps", "500 Mbit/s"), times ("10ms", "1.5us") and
sizes ("160KiB", "1518"), parsed into integers of bit/s, picoseconds and bytes. A bare number is
bit/s, seconds or bytes respectively."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")

RATE_UNITS = {
    "": 1, "bps": 1, "bit/s": 1,
    "k": 10**3, "kbps": 10**3, "kbit/s": 10**3,
    "m": 10**6, "mbps": 10**6, "mbit/s": 10**6,
    "g": 10**9, "gbps": 10**9, "gbit/s": 10**9,
}
TIME_UNITS_PS = {"": 10**12, "s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3, "ps": 1}
SIZE_UNITS = {
    "": 1, "b": 1, "kb": 10**3, "mb": 10**6, "kib": 2**10, "mib": 2**20,
}


def _parse(value: object, units: dict[str, int], what: str, examples: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} {value!r} is not valid ({examples})")
    if isinstance(value, (int, float)):
        number, unit = float(value), ""
    elif isinstance(value, str) and (match := _NUMBER.match(value)):
        number, unit = float(match.group(1)), match.group(2).lower()
    else:
        raise ValueError(f"{what} {value!r} is not valid ({examples})")
    if unit not in units:
        raise ValueError(f"{what} {value!r} has an unknown unit {unit!r} ({examples})")
    if number < 0:
        raise ValueError(f"{what} {value!r} is negative ({examples})")
    return round(number * units[unit])


def rate_bps(value: object) -> int:
    """A rate in bit/s from an int or a string like "1Gbps" or "500Mbit/s"."""
    return _parse(value, RATE_UNITS, "rate", "e.g. 1Gbps, 500Mbps, 100kbps or a number of bit/s")


def time_ps(value: object) -> int:
    """A time in picoseconds from seconds or a string like "10ms", "1.5us", "100ns"."""
    return _parse(value, TIME_UNITS_PS, "time", "e.g. 1s, 10ms, 1.5us, 100ns or a number of seconds")


def size_bytes(value: object) -> int:
    """A size in bytes from an int or a string like "160KiB", "64KB", "1518"."""
    return _parse(value, SIZE_UNITS, "size", "e.g. 1518, 64KB, 160KiB, 2MiB")
