"""Numbers with SI suffixes as users type them (`100M`, `1.5G`, `64k`, powers of 1000), frame
sizes, and the bounds of the generator's options (docs/errors.md): rates up to 10 Tbit/s and
1 to 10^10 frames/s, frames of 64..9216 bytes, runs of at most a week."""

from __future__ import annotations

from frerlab.errors import UsageError
from frerlab.names import shown
from frerlab.sim.units import MAX_FRAME_BYTES, MIN_FRAME_BYTES, MAX_RATE_BPS
from frerlab.traffic.record import L1_OVERHEAD

_SUFFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9, "t": 1e12, "T": 1e12}
FRAME_NAMES = {"min": MIN_FRAME_BYTES, "max": 1518, "jumbo": 9018}
MIN_FPS = 1
MAX_FPS = 10**10
MAX_SECONDS = 7 * 24 * 3600
MAX_COUNT = 10**12


def parse_si(text: str, what: str) -> float:
    """`text` as a positive number with an optional k/M/G/T suffix; `what` names it in errors."""
    body = text.strip()
    suffix = body[-1:] if body[-1:] in _SUFFIXES else ""
    try:
        value = float(body[: len(body) - len(suffix)]) * _SUFFIXES[suffix]
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise UsageError(f"{what} {shown(text)} is not valid (a positive number, optionally with k, M, G or T)")
    return value


def frame_bytes(text: str, what: str = "--frame-size") -> int:
    """A frame size in bytes, FCS included, from a number or min/max/jumbo."""
    name = text.strip().lower()
    if name in FRAME_NAMES:
        return FRAME_NAMES[name]
    try:
        size = int(name)
    except ValueError:
        raise UsageError(f"{what} {shown(text)} is not valid (bytes {MIN_FRAME_BYTES}..{MAX_FRAME_BYTES}, "
                         "or min, max, jumbo)") from None
    if not MIN_FRAME_BYTES <= size <= MAX_FRAME_BYTES:
        raise UsageError(f"{what} {size} is out of range ({MIN_FRAME_BYTES}..{MAX_FRAME_BYTES} bytes, FCS included: "
                         "the Ethernet minimum to the largest jumbo frame)")
    return size


def frames_per_second(option: str, text: str, frame: int) -> float:
    """The frames/s a rate option asks for (`--rate-l1`, `--rate-l2` in bit/s, `--rate-fps`),
    checked against the bounds for frames of `frame` bytes."""
    value = parse_si(text, option)
    bits = {"--rate-l1": (frame + L1_OVERHEAD) * 8, "--rate-l2": frame * 8, "--rate-fps": 1}[option]
    if bits > 1 and value > MAX_RATE_BPS:
        raise UsageError(f"{option} {shown(text)} is out of range (at most 10T bit/s)")
    fps = value / bits
    if not MIN_FPS <= fps <= MAX_FPS:
        at = f" ({fps:.3g} frames/s of {frame}-byte frames)" if bits > 1 else ""
        raise UsageError(f"{option} {shown(text)}{at} is out of range: {MIN_FPS}..{MAX_FPS:.0e} frames/s"
                         + (f", at least {bits} bit/s at this frame size" if bits > 1 else ""))
    return fps


def seconds(option: str, value: float | None, low: float = 0.0, high: float = MAX_SECONDS) -> None:
    """Raises UsageError unless `value` (when given) is a number of seconds in (low, high]."""
    if value is not None and not low < value <= high:
        raise UsageError(f"{option} {value:g} is out of range (more than {low:g} s, at most {high:g} s)")
