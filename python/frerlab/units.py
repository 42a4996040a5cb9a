"""The one grammar of quantities frerlab reads (rates, frame rates, counts, sizes, durations) and
their bounds: every quantity of a scenario file, every rate of any file or command-line option,
and the sizes and counts of the command line (docs/errors.md lists the options).

A quantity is a number (`1518`, `1.5`, `1e9`; in files also a YAML number), optional spaces,
then an optional unit: an optional prefix followed by an optional base unit.

- rate, bit/s: prefix k, M, G, T (powers of 1000, any case), base `bps` or `bit/s`:
  `1G`, `1Gbps`, `1 Gbit/s`, `500mbps`, `1e9`.
- frame rate, frames/s: prefix k, M, G, T, base `fps` or `frames/s`: `100k`, `1Mfps`, `5000`.
- count: prefix k, M, G, T: `100k`, `1e6`; a whole number.
- size, bytes: prefix k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024), any
  case, base `B`: `1518`, `64KB`, `64k`, `160KiB`.
- duration: `s`, `ms`, `us`, `ns`, `ps` (any case); a bare number is seconds: `10ms`, `1.5us`, `2`.

Rates, sizes, counts and times become integers (bit/s, bytes, picoseconds, rounded); frame
rates stay fractional. Every quantity is bounded (docs/errors.md): rates at most 10 Tbit/s,
frame rates at most 10^10 frames/s, counts at most 10^12, times at most 10^6 s (the engine adds
times in 64-bit picoseconds, and a dozen such sums stay below 2^64), sizes at most 1 TiB. A
refusal is a ValueError naming the value and what would be valid; command-line parsers here
(option_value, frame_bytes, frames_per_second, seconds) raise UsageError.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TypeVar

from pydantic import AfterValidator

from frerlab.errors import UsageError
from frerlab.names import shown

T = TypeVar("T")

_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")
_DECIMAL = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}

#: Unit (lower case) -> its factor, for each kind of quantity.
RATE_UNITS = {prefix + base: f for prefix, f in _DECIMAL.items() for base in ("", "bps", "bit/s")}
FRAME_RATE_UNITS = {prefix + base: f for prefix, f in _DECIMAL.items() for base in ("", "fps", "frames/s")}
COUNT_UNITS = dict(_DECIMAL)
SIZE_UNITS = {prefix + base: f for prefix, f in (_DECIMAL | _BINARY).items() for base in ("", "b")}
TIME_UNITS_PS = {"": 10**12, "s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3, "ps": 1}

# Ethernet frames, FCS included: the 802.3 minimum and the largest jumbo frame common switches take.
MIN_FRAME_BYTES = 64
MAX_FRAME_BYTES = 9216
FRAME_NAMES = {"min": MIN_FRAME_BYTES, "max": 1518, "jumbo": 9018}
# Ethernet preamble + SFD + minimum inter-frame gap (IEEE 802.3), counted by L1 rates.
L1_OVERHEAD_BYTES = 20
MAX_RATE_BPS = 10**13
MAX_FPS = 10**10
MIN_FPS = 1
MAX_COUNT = 10**12
MAX_TIME_PS = 10**18
MAX_SIZE_BYTES = 2**40
# The longest run the generator and receiver take: a week.
MAX_SECONDS = 7 * 24 * 3600


def _parse(value: object, units: dict[str, int], what: str, examples: str, limit: int, limit_text: str) -> int | float:
    """`value` times its unit's factor: exact for an int with an int factor, else a float."""
    if isinstance(value, bool):
        raise ValueError(f"{what} {shown(value)} is not valid ({examples})")
    if isinstance(value, (int, float)):
        number, unit = value, ""
    elif isinstance(value, str) and (match := _NUMBER.match(value)):
        number, unit = float(match.group(1)), match.group(2).lower()
    else:
        raise ValueError(f"{what} {shown(value)} is not valid ({examples})")
    if unit not in units:
        raise ValueError(f"{what} {shown(value)} has an unknown unit {shown(unit)} ({examples})")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"{what} {shown(value)} is not a finite number ({examples})")
    if number < 0:
        raise ValueError(f"{what} {shown(value)} is negative ({examples})")
    if number > limit / units[unit]:
        raise ValueError(f"{what} {shown(value)} is out of range (at most {limit_text})")
    return number * units[unit]


def rate_bps(value: object, what: str = "rate") -> int:
    """A rate in whole bit/s from a number or a string like "1G", "1Gbps", "500 Mbit/s" (at
    most 10 Tbit/s); `what` names it in errors."""
    return round(_parse(value, RATE_UNITS, what, "e.g. 1Gbps, 1 Gbit/s, 500M, 100kbps or a number of bit/s",
                        MAX_RATE_BPS, "10Tbps"))


def frame_rate(value: object, what: str = "frame rate") -> float:
    """A rate in frames/s from a number or a string like "100k", "1Mfps" (at most 10^10)."""
    return float(_parse(value, FRAME_RATE_UNITS, what, "e.g. 5000, 100k, 1M or 1Mfps frames/s", MAX_FPS,
                        "1e10 frames/s"))


def count(value: object, what: str = "count") -> int:
    """A whole number from a number or a string like "100k", "1e6" (at most 10^12)."""
    number = _parse(value, COUNT_UNITS, what, "a whole number, e.g. 1000, 100k, 1e6", MAX_COUNT, "1e12")
    if number != int(number):
        raise ValueError(f"{what} {shown(value)} is not a whole number (e.g. 1000, 100k, 1e6)")
    return int(number)


def time_ps(value: object, what: str = "time") -> int:
    """A time in picoseconds from seconds or a string like "10ms", "1.5us", "100ns" (at most
    10^6 s)."""
    return round(_parse(value, TIME_UNITS_PS, what, "e.g. 1s, 10ms, 1.5us, 100ns or a number of seconds",
                        MAX_TIME_PS, "1e6s"))


def size_bytes(value: object, what: str = "size") -> int:
    """A size in bytes from a number or a string like "160KiB", "64KB", "1518" (at most 1 TiB)."""
    return round(_parse(value, SIZE_UNITS, what, "e.g. 1518, 64KB, 160KiB, 2MiB", MAX_SIZE_BYTES, "1TiB"))


def at_most(limit_ps: int):
    """A pydantic validator of a time in picoseconds that refuses one above `limit_ps`."""
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


def frame_bytes(text: str, what: str = "--frame-size") -> int:
    """A frame size in bytes, FCS included, from a size or min/max/jumbo; UsageError outside
    64..9216 bytes."""
    name = text.strip().lower()
    if name in FRAME_NAMES:
        return FRAME_NAMES[name]
    try:
        size = size_bytes(text, what)
    except ValueError:
        raise UsageError(f"{what} {shown(text)} is not valid (bytes {MIN_FRAME_BYTES}..{MAX_FRAME_BYTES}, "
                         "or min, max, jumbo)") from None
    if not MIN_FRAME_BYTES <= size <= MAX_FRAME_BYTES:
        raise UsageError(f"{what} {size} is out of range ({MIN_FRAME_BYTES}..{MAX_FRAME_BYTES} bytes, FCS included: "
                         "the Ethernet minimum to the largest jumbo frame)")
    return size


def option_value(parse: Callable[[object, str], T], text: object, option: str) -> T:
    """`parse(text, option)` for a command-line option: UsageError instead of ValueError."""
    try:
        return parse(text, option)
    except ValueError as err:
        raise UsageError(str(err)) from None


def generator_rate(option: str, text: str) -> int | float:
    """The value of a generator rate option: `--rate-l1`/`--rate-l2` in bit/s, `--rate-fps`
    in frames/s; UsageError naming the option otherwise."""
    return option_value(frame_rate if option == "--rate-fps" else rate_bps, text, option)


def frames_per_second(option: str, text: str, frame: int) -> float:
    """The frames/s a generator rate option asks for, checked against the generator's bounds
    (1..10^10 frames/s) for frames of `frame` bytes; UsageError otherwise."""
    value = generator_rate(option, text)
    bits = {"--rate-l1": (frame + L1_OVERHEAD_BYTES) * 8, "--rate-l2": frame * 8, "--rate-fps": 1}[option]
    fps = value / bits
    if not MIN_FPS <= fps <= MAX_FPS:
        at = f" ({fps:.3g} frames/s of {frame}-byte frames)" if bits > 1 else ""
        raise UsageError(f"{option} {shown(text)}{at} is out of range: {MIN_FPS}..{MAX_FPS:.0e} frames/s"
                         + (f", at least {bits} bit/s at this frame size" if bits > 1 else ""))
    return fps


def seconds(option: str, value: float | None, low: float = 0.0, high: float = MAX_SECONDS) -> None:
    """UsageError unless `value` (when given) is a number of seconds in (low, high]."""
    if value is not None and not low < value <= high:
        raise UsageError(f"{option} {value:g} is out of range (more than {low:g} s, at most {high:g} s)")
