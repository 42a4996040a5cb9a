"""Numbers with SI suffixes as users type them: `100M`, `1.5G`, `64k` (powers of 1000)."""

from __future__ import annotations

from frerlab.errors import UsageError

_SUFFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9, "t": 1e12, "T": 1e12}


def parse_si(text: str, what: str) -> float:
    """`text` as a positive number with an optional k/M/G/T suffix; `what` names it in errors."""
    body = text.strip()
    suffix = body[-1:] if body[-1:] in _SUFFIXES else ""
    try:
        value = float(body[: len(body) - len(suffix)]) * _SUFFIXES[suffix]
    except ValueError:
        raise UsageError(f"{what} {text!r} is not valid (a positive number, optionally with k, M, G or T)") from None
    if not value > 0 or value == float("inf"):
        raise UsageError(f"{what} {text!r} is not valid (a positive number, optionally with k, M, G or T)")
    return value
