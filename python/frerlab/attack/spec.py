"""Attacks as data: the vocabulary of what an attacker on one member path does (a pydantic model
per kind), the named attacks of the catalog (attacks.yaml beside this module) and the changes
`frerlab attack run NAME --set KEY=VALUE` makes to one.

Every attack has a `rate` (frames/s), a `start` (seconds from the stream's first frame at the
listener) and either a `count` of frames or a `duration` (seconds); setting one of the two drops
the other. What each kind sends (frerlab.attack.injector does it):

- inject-ahead: forged frames numbered `ahead` beyond the stream's newest number (inside the
  history window);
- inject-far: the same `ahead` far beyond it (outside the window: 32768 is half the number space);
- inject-after-reset: a path outage longer than the reset timeout (`outage` seconds: the
  attacker withholds its path's frames while the other path fails), then a forged frame `ahead`
  far beyond, the first frame after the outage, then forged frames numbered on from it;
- replay: the recorded frame numbered `age` behind the newest, re-sent as it was (an age near
  the number space, 65536 - k, is a replay across the wrap: the frame of one wrap ago, whose
  number the recovery function sees k ahead);
- strip-tag: the newest recorded frame re-sent without its R-TAG;
- babble: the last `depth` recorded frames, repeated round and round;
- foreign-identity: forged frames `ahead` like inject-ahead, addressed with another stream's
  identity (`identity`: `reverse`, the stream in the other direction, whose destination is the
  talker; `other-path`, the member stream of the other path, its VLAN).

A value is checked where it is read; what depends on the testbed (the history window, the reset
timeout, the stream's length) is checked by frerlab.attack.run before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, model_validator

from frerlab.errors import UsageError
from frerlab.names import shown
from frerlab.units import count, frame_rate, time_ps
from frerlab.yamlfile import read_mapping, validate

CATALOG = Path(__file__).with_name("attacks.yaml")
#: Frames the injector keeps of what it recorded (the most babbled; a replay keeps `age` + 1).
RING = 2048
#: Fastest attack, frames/s (the injector is one Python process; faster asks are sent late).
MAX_RATE = 200_000
#: Longest start, duration and outage, seconds.
MAX_SECONDS = 3600.0
MAX_COUNT = 10_000_000
SEQ_SPACE = 1 << 16
#: Fields `--set` may not change: what makes the attack the one it is.
FIXED = ("kind", "description")


def _within(low: float, high: float, unit: str = "", low_open: bool = False):
    """A pydantic validator refusing a value outside low..high (above low if `low_open`)."""
    unit = f" {unit}" if unit else ""

    def check(value: float) -> float:
        if (value <= low if low_open else value < low) or value > high:
            bound = f"more than {low:.10g}" if low_open else f"{low:.10g}"
            raise ValueError(f"{value:.10g}{unit} is out of range ({bound}..{high:.10g}{unit})")
        return value
    return AfterValidator(check)


def _seconds(value: object) -> float:
    return time_ps(value, "time") / 1e12


Rate = Annotated[float, BeforeValidator(lambda v: frame_rate(v, "rate")), _within(1, MAX_RATE, "frames/s")]
Seconds = Annotated[float, BeforeValidator(_seconds), _within(0, MAX_SECONDS, "s")]
Positive = Annotated[float, BeforeValidator(_seconds), _within(0, MAX_SECONDS, "s", low_open=True)]
Count = Annotated[int, BeforeValidator(count), _within(1, MAX_COUNT, "frames")]


def _number(low: int, high: int, what: str):
    """A whole number low..high (`what` names it in errors)."""
    return Annotated[int, BeforeValidator(lambda v: count(v, what)), _within(low, high)]


class _Attack(BaseModel):
    """What every attack has."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    rate: Rate
    start: Seconds
    count: Count | None = None
    duration: Positive | None = None

    @model_validator(mode="after")
    def _count_or_duration(self) -> _Attack:
        if (self.count is None) == (self.duration is None):
            raise ValueError("give either count (frames) or duration (seconds), not "
                             + ("both" if self.count is not None else "neither"))
        return self

    def frames(self) -> int:
        """Frames the attack sends: `count`, or those due in `duration` at `rate` (at least 1)."""
        return self.count if self.count is not None else max(1, int(self.duration * self.rate))

    def length_s(self) -> float:
        """Seconds from the attack's first frame to its last."""
        return (self.frames() - 1) / self.rate

    def end_s(self) -> float:
        """Seconds into the stream of the attack's last frame (after inject-after-reset's outage)."""
        return self.start + getattr(self, "outage", 0.0) + self.length_s()


class InjectAhead(_Attack):
    """Forged frames `ahead` numbers beyond the stream's newest one."""

    kind: Literal["inject-ahead"]
    ahead: _number(1, SEQ_SPACE - 1, "ahead")


class InjectFar(_Attack):
    """Forged frames far beyond the stream's newest number."""

    kind: Literal["inject-far"]
    ahead: _number(1, SEQ_SPACE - 1, "ahead")


class InjectAfterReset(_Attack):
    """An outage longer than the reset timeout, then forged frames from far beyond."""

    kind: Literal["inject-after-reset"]
    ahead: _number(1, SEQ_SPACE - 1, "ahead")
    outage: Positive


class Replay(_Attack):
    """Recorded frames re-sent `age` numbers after they passed (65536 - k: across the wrap)."""

    kind: Literal["replay"]
    age: _number(1, SEQ_SPACE - 1, "age")


class StripTag(_Attack):
    """Recorded frames re-sent without their R-TAG."""

    kind: Literal["strip-tag"]


class Babble(_Attack):
    """The last `depth` recorded frames, repeated."""

    kind: Literal["babble"]
    depth: _number(1, RING, "depth")


class ForeignIdentity(_Attack):
    """Forged frames `ahead` with another stream's identity."""

    kind: Literal["foreign-identity"]
    ahead: _number(1, SEQ_SPACE - 1, "ahead")
    identity: Literal["reverse", "other-path"]


Attack = InjectAhead | InjectFar | InjectAfterReset | Replay | StripTag | Babble | ForeignIdentity
KINDS: dict[str, type[_Attack]] = {"inject-ahead": InjectAhead, "inject-far": InjectFar,
                                   "inject-after-reset": InjectAfterReset, "replay": Replay, "strip-tag": StripTag,
                                   "babble": Babble, "foreign-identity": ForeignIdentity}


def catalog(path: Path = CATALOG) -> dict[str, dict[str, Any]]:
    """The named attacks of the catalog file, as written (name -> values)."""
    data = read_mapping(path, "attack catalog", "a mapping of attack names to their values")
    return {str(name): values for name, values in data.items()}


def attack(name: str, changes: dict[str, str] | None = None, path: Path = CATALOG) -> Attack:
    """Attack `name` of the catalog with `changes` (field -> value, as --set gives them);
    UsageError naming the bad name, field or value and what would be valid."""
    known = catalog(path)
    if name not in known:
        raise UsageError(f"attack {shown(name)} is not known (known: {', '.join(sorted(known))}; "
                         "frerlab attack list shows them)")
    data = dict(known[name])
    for key, value in (changes or {}).items():
        if key in FIXED:
            raise UsageError(f"--set {key}: the {key} is the attack's own; choose another attack (frerlab attack list)")
        if key in ("count", "duration"):
            data.pop("duration" if key == "count" else "count", None)
        data[key] = value
    kind = data.get("kind")
    if kind not in KINDS:
        raise UsageError(f"attack {name}: kind {shown(kind)} is not valid ({', '.join(KINDS)})")
    return validate(KINDS[kind], data, f"attack {name}", "a mapping of the attack's values")


def parse_sets(items: list[str]) -> dict[str, str]:
    """`--set KEY=VALUE` options as a mapping; UsageError for one that is not KEY=VALUE or a
    key given twice."""
    changes: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise UsageError(f"--set {shown(item)} is not KEY=VALUE (like ahead=4 or rate=100)")
        if key in changes:
            raise UsageError(f"--set {key} is given twice")
        changes[key] = value.strip()
    return changes


def describe(a: Attack) -> str:
    """The attack's values in one line, as --set would write them (kind and description left out)."""
    values = a.model_dump(exclude={"kind", "description"}, exclude_none=True)
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
