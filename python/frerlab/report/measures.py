"""What the stored units measured, as a report compares and draws it.

A unit is matched by what it measured (`Key`: kind, frame size, load in percent of the line
rate, tool, duration), never by the name of the step that ran it, so that a campaign built to
repeat a part of another (another step name, another line rate) meets it. A metric's kind of
quantity (frerlab.bench.metrics) decides its interval: a loss ratio gets a quasi-binomial
Clopper-Pearson interval of its frames; a count, a rate or a latency one that never goes below
0; any interval only where n >= 2. A throughput found at the top of its search, or a sweep's
zero-loss load above which it never saw loss, is censored ("≥ 100 %"), and the width of the last bracket a search or sweep left is the set-point resolution below which a difference between
two of them means nothing (`Measure`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from frerlab.bench import stats
from frerlab.bench.metrics import COUNT, LOSS, SIGNED, Metric, metric
from frerlab.report.sources import Source
from frerlab.units import L1_OVERHEAD_BYTES, rate_bps

@dataclass(frozen=True, order=True)
class Key:
    """What a unit measured: its kind and the point of its step, loads in percent of the line
    rate. Steps of another name that measured the same thing have the same key."""

    kind: str
    frame_size: float = -1.0
    load: float = -1.0
    tool: str = ""
    duration_s: float = -1.0

    @staticmethod
    def of(unit: dict[str, Any]) -> Key:
        p = unit["params"]

        def number(name: str) -> float:
            return float(p[name]) if isinstance(p.get(name), (int, float)) else -1.0
        # an import's step names the tool and test it read (iperf3-udp, sockperf-pingpong)
        tool = p.get("tool") or (unit["step"] if unit["kind"] == "import" else "")
        return Key(unit["kind"], number("frame_size"), number("load"), str(tool), number("duration_s"))

    def text(self) -> str:
        """The point as a person reads it, e.g. "1518 B, load 60 %"."""
        parts = [f"{self.frame_size:g} B"] if self.frame_size >= 0 else []
        if self.tool:
            parts.append(self.tool)
        if self.load >= 0:
            parts.append(f"load {self.load:g} %" if self.load else "idle")
        if self.duration_s >= 0:
            parts.append(f"{self.duration_s:g} s")
        return ", ".join(parts) or self.kind


@dataclass
class Measure:
    """One metric of one mode at one point of one results directory, over its units."""

    source: Source
    mode: str
    key: Key
    name: str
    #: every unit that gave the metric a value (or was meant to): (unit, value or None)
    units: list[tuple[dict, float | None]] = field(default_factory=list)

    @property
    def metric(self) -> Metric:
        return metric(self.name, self.key.kind)

    @property
    def values(self) -> list[float]:
        """The valid repetitions' values."""
        return [v for u, v in self.units if u["valid"] and v is not None]

    @property
    def invalid(self) -> list[dict]:
        """The units no statistic counts: invalid ones (each with its flags)."""
        return [u for u, _ in self.units if not u["valid"]]

    def why_none(self) -> str:
        """Why the measure has no value: its invalid units' flags, or (a valid unit that found
        no value, e.g. a sweep that lost nothing up to its last load) its units' warnings."""
        if self.invalid:
            flags = sorted({f["name"] for u in self.invalid for f in u["flags"] if f.get("invalidates")})
            return f"no valid unit ({len(self.invalid)} invalid: {', '.join(flags) or 'no value'})"
        notes = sorted({f"{f['name']}: {f['detail']}" for u, _ in self.units for f in u["flags"]
                        if not f.get("invalidates")})
        return f"no value ({'; '.join(notes) or 'the unit gave none'})"

    @property
    def n(self) -> int:
        return len(self.values)

    def interval(self) -> stats.Interval | None:
        """The estimate with its 95 % interval as this kind of quantity gets it; None without a
        valid value."""
        values = self.values
        if not values:
            return None
        q = self.metric.quantity
        if q == LOSS:
            pairs = [(u["detail"].get("lost"), u["detail"].get("sent")) for u, v in self.units
                     if u["valid"] and v is not None]
            if all(isinstance(lost, int) and isinstance(sent, int) and 0 <= lost <= sent and sent > 0
                   for lost, sent in pairs):
                i = stats.loss_interval([lost for lost, _ in pairs], [sent for _, sent in pairs])
                return replace(i, estimate=i.estimate * 100, low=None if i.low is None else i.low * 100,
                               high=None if i.high is None else i.high * 100)
        if q != SIGNED and min(values) >= 0:
            return stats.nonnegative_interval(values, count=q == COUNT)
        s = stats.summarize(values)
        return stats.Interval(n=s.n, estimate=s.mean, confidence=s.confidence, low=s.low, high=s.high,
                              method="t" if s.n > 1 else "n = 1: no interval")

    def censored(self) -> str | None:
        """"≥" when the value is only a lower bound: a search found its rate at the top of what
        it tried, or a sweep verified a zero-loss load but never found where loss starts above
        it (the device may do more); else None."""
        for u, v in self.units:
            if v is None:
                continue
            if self.key.kind == "threshold_sweep" and self.name == "zero_loss_threshold_load" \
                    and u["metrics"].get("loss_onset_load") is None:
                return "≥"
            if self.key.kind == "throughput" and self.name.startswith("throughput_"):
                trials = u["detail"].get("trials") or []
                top = max((t["rate_fps"] for t in trials if t.get("counted", t["valid"])), default=None)
                found = u["metrics"].get(self.name.replace("_load_", "_fps_").replace("_mbps_", "_fps_"))
                if top is not None and found is not None and found >= top * (1 - 1e-9):
                    return "≥"
        return None

    def resolution(self) -> float | None:
        """The set-point resolution of the metric, in its unit: the widest last bracket of the
        units' searches (a passing rate and the failing one above it) or sweeps (the zero-loss
        threshold and the loss onset); None where the value is not a set-point found by a
        search."""
        widths = []
        for u, _ in self.units:
            d, m = u["detail"], u["metrics"]
            if self.key.kind == "threshold_sweep" and m.get("loss_onset_load") is not None \
                    and m.get("zero_loss_threshold_load") is not None:
                widths.append(m["loss_onset_load"] - m["zero_loss_threshold_load"])
            elif self.key.kind == "throughput" and self.name.startswith("throughput_load_loss_") and d.get("trials"):
                goal = float(self.name.removeprefix("throughput_load_loss_"))
                found = m.get(self.name)
                fails = [t["rate_fps"] / d["line_rate_fps"] * 100 for t in d["trials"]
                         if t.get("counted", t["valid"]) and t["loss_ratio"] > goal]
                above = [f - found for f in fails if found is not None and f > found]
                if above:
                    widths.append(min(above))
        return max(widths) if widths else None


def measures(source: Source) -> dict[tuple[str, Key, str], Measure]:
    """Every (mode, key, metric) of a results directory's units, in unit order; a unit that
    gave no metric (its tool failed) counts as an invalid unit of each metric its kind gives
    (those of its kind's other units; for a search none of which finished, the rates of the
    goals it searched for)."""
    names_of_kind: dict[str, dict[str, None]] = {}
    for u in source.units:
        names_of_kind.setdefault(u["unit"]["kind"], {}).update(dict.fromkeys(u["metrics"]))
    found: dict[tuple[str, Key, str], Measure] = {}
    for u in source.units:
        unit = u["unit"]
        key = Key.of(unit)
        names = u["metrics"] or names_of_kind[unit["kind"]]
        if not names and unit["kind"] == "throughput":
            goals = [g["loss_ratio"] for g in u["detail"].get("goals") or []] or search_goals(source)
            names = [f"throughput_load_loss_{g:g}" for g in goals]
        for name in names:
            m = found.setdefault((unit["mode"], key, name), Measure(source, unit["mode"], key, name))
            m.units.append((u, u["metrics"].get(name)))
    return found


def search_goals(source: Source) -> list[float]:
    """The loss ratios the campaign's throughput searches searched for (its campaign file)."""
    found = []
    for step in (source.campaign or {}).get("steps") or []:
        search = step.get("search") if isinstance(step, dict) else None
        if isinstance(search, dict):
            if search.get("kind", "binary") == "binary":
                found.append(float(search.get("loss_threshold", 1e-5)))
            found += [float(g["loss_ratio"]) for g in search.get("goals") or []
                      if isinstance(g, dict) and isinstance(g.get("loss_ratio"), (int, float))]
    return sorted(set(found))


def line_rate_bps(source: Source, given: float | None = None) -> float | None:
    """The L1 line rate the directory's loads are percent of: the campaign's `system.rate`,
    else a throughput unit's line_rate_fps at its frame size, else `given` (--line-rate)."""
    system = (source.campaign or {}).get("system")
    if isinstance(system, dict) and isinstance(system.get("rate"), str):
        try:
            return rate_bps(system["rate"])
        except ValueError:
            pass
    for u in source.units:
        d = u["detail"]
        if u["unit"]["kind"] == "throughput" and d.get("line_rate_fps"):
            return d["line_rate_fps"] * (u["unit"]["params"]["frame_size"] + L1_OVERHEAD_BYTES) * 8
    return given


def l1_l2_mbps(fps: float, frame_size: float) -> tuple[float, float]:
    """A frame rate in Mbit/s at L1 (with preamble, SFD and gap) and at L2 (frame bits)."""
    return fps * (frame_size + L1_OVERHEAD_BYTES) * 8 / 1e6, fps * frame_size * 8 / 1e6


def system_text(source: Source) -> str:
    """The system a directory's results were measured on, as the campaign file gives it."""
    system = (source.campaign or {}).get("system")
    if not isinstance(system, dict):
        return "system not recorded"
    keys = ("kind", "topology", "set", "stream", "rate", "path_rate", "queue_limit", "replicate_at", "eliminate_at",
            "history_length", "impair")
    return ", ".join(f"{k} {system[k]}" for k in keys if system.get(k) not in (None, {}, []))
