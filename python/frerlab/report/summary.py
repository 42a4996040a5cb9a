"""The verdicts a report opens with: one table per results directory, by frame size, in the
form NFVbench and FD.io CSIT report switch benchmarks: NDR and PDR (percent of line rate,
frames/s, Mbit/s at L1 and L2), the zero-loss threshold and loss onset of a sweep, the first load
of the loss-vs-load grid that lost frames, TCP goodput, latency P50/P99/P99.9 with the
campaign's TSN verdict (PASS, FAIL or not supported, with why), fail-over loss and duplicates;
FRER and control side by side with the difference and its interval, or why there is none.

Every figure is the estimate report.measures gives (the mean of the valid repetitions, which is
summary.json's mean), shown with its n."""

from __future__ import annotations

from collections.abc import Callable

from frerlab.bench.verdict import Verdict
from frerlab.report.chart import mode_name
from frerlab.bench.metrics import goal_label
from frerlab.report.measures import Key, Measure, l1_l2_mbps, line_rate_bps, measures, system_text
from frerlab.report.sources import Source
from frerlab.report.tables import Cell, Table, compare
from frerlab.units import L1_OVERHEAD_BYTES

MODES = ("frer", "control")


def build(sources: list[Source], line_rate: float | None = None) -> list[Table]:
    """One verdict table per campaign or import directory that holds units."""
    return [t for t in (verdicts(s, line_rate) for s in sources if s.units) if t.rows]


def _number(x: float) -> str:
    """One format for every figure of the summary: four significant digits, thousands separated."""
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def _estimate(m: Measure | None, scale: float = 1.0, unit: str = "",
              also: Callable[[float], str] | None = None) -> Cell:
    """A mode's figure: estimate [interval] (n), the same in other units where `also` gives
    them, or why there is none."""
    if m is None:
        return Cell(None, "not measured")
    i = m.interval()
    invalid = m.invalid
    if i is None:
        return Cell(None, m.why_none(), "; ".join(f"{u['unit']['id']}: " + "; ".join(f["detail"] for f in u["flags"])
                                                  for u, _ in m.units))
    sign = m.censored() or ""
    text = f"{sign}{_number(i.estimate * scale)}{unit}"
    if i.low is not None:
        text += f" [{_number(i.low * scale)}, {_number(i.high * scale)}]"
    if also:
        text += f"; {sign}{also(i.estimate * scale)}"
    text += f" (n={i.n}" + (f", {len(invalid)} invalid" if invalid else "") + ")"
    return Cell(i.estimate * scale, text, i.method)


def _difference(frer: Measure | None, control: Measure | None, scale: float = 1.0) -> list[Cell]:
    if frer is None or control is None:
        return [Cell(None, ""), Cell(None, ""), Cell(None, "one mode only")]
    d = compare(frer, control, scale, scale)
    interval = Cell(d.low, f"[{_number(d.low)}, {_number(d.high)}]") if d.low is not None else Cell(None, "")
    why = d.why if not d.significant else f"{'significant' if d.significant == 'yes' else 'not significant'}: {d.why}"
    return [Cell(d.difference, "" if d.difference is None else _number(d.difference)), interval, Cell(None, why)]


def _tsn_verdict(m: Measure | None, verdict: Verdict) -> str:
    """PASS if every valid repetition's percentile (the measure) stays below the limit, FAIL
    if one does not, not supported (with why) when no repetition had samples enough for it."""
    if m is None:
        return ""
    name = mode_name(m.mode)
    judged = [v for u, v in m.units if u["valid"] and v is not None]
    if not judged:
        why = sorted({f["detail"] for u, _ in m.units for f in u["flags"] if f["name"] == "percentile_unsupported"})
        return f"{name}: not supported ({why[0] if why else 'no valid repetition'})"
    failed = sum(1 for v in judged if v >= verdict.limit_us)
    limit = f"P{verdict.percentile:g} < {verdict.limit_us:g} µs"
    if failed:
        return f"{name}: FAIL ({limit} missed in {failed} of {len(judged)} runs)"
    return f"{name}: PASS ({limit} in all {len(judged)} runs)"


def verdicts(s: Source, line_rate: float | None = None) -> Table:
    found = measures(s)
    modes = [m for m in MODES if any(k[0] == m for k in found)] or sorted({k[0] for k in found})
    both = modes == list(MODES)
    line = line_rate_bps(s, line_rate)
    rows: list[list] = []

    def row(size: str, measure: str, unit: str, key: Key, name: str, scale: float = 1.0, verdict: str = "",
            also: Callable[[float], str] | None = None) -> None:
        ms = [found.get((mode, key, name)) for mode in modes]
        if all(m is None for m in ms):
            return
        cells = [size, measure, unit, *(_estimate(m, scale, also=also) for m in ms)]
        rows.append(cells + (_difference(*ms, scale) if both else []) + [verdict])

    keys = sorted({k for (_, k, _) in found})
    for key in [k for k in keys if k.kind == "throughput"]:
        goals = sorted({float(n.removeprefix("throughput_load_loss_")) for (_, k, n) in found
                        if k == key and n.startswith("throughput_load_loss_")})
        line_fps = line / ((key.frame_size + L1_OVERHEAD_BYTES) * 8) if line else None

        def rates(load: float, size: float = key.frame_size, line_fps: float | None = line_fps) -> str:
            """A load in % of the L1 line rate as frames/s and Mbit/s at L2 and L1."""
            if not line_fps:
                return "line rate unknown"
            fps = load / 100 * line_fps
            l1, l2 = l1_l2_mbps(fps, size)
            return f"{_number(fps)} frames/s, {_number(l2)} Mbit/s L2, {_number(l1)} Mbit/s L1"
        for g in goals:
            row(f"{key.frame_size:g} B", goal_label(g), "% of line rate; frames/s; Mbit/s", key,
                f"throughput_load_loss_{g:g}", also=rates)
    for key in [k for k in keys if k.kind == "threshold_sweep"]:
        size = f"{key.frame_size:g} B"
        row(size, "zero-loss threshold (sweep)", "% of line rate", key, "zero_loss_threshold_load")
        row(size, "loss onset (sweep)", "% of line rate", key, "loss_onset_load")
    for size in sorted({k.frame_size for k in keys if k.kind == "loss_vs_load"}):
        cells = [f"{size:g} B", "first load with loss (loss vs load)", "% of line rate"]
        cells += [_first_loss(found, mode, size) for mode in modes]
        rows.append(cells + ([Cell(None, ""), Cell(None, ""), Cell(None, "grid points, not an estimate")] if both else [])
                    + [""])
    for key in [k for k in keys if k.kind == "import"]:
        size = f"{key.frame_size:g} B" if key.frame_size >= 0 else "all"
        row(size, f"UDP throughput ({key.tool})", "Mbit/s L2", key, "l2_mbps",
            also=(lambda mbps, f=key.frame_size, line=line: f"{_number(mbps * 1e6 * (f + L1_OVERHEAD_BYTES) / f / line * 100)}"
                  " % of line rate") if line and key.frame_size > 0 else None)
        row(size, f"frame loss ({key.tool})", "%", key, "loss_percent")
    verdict = s.verdict or Verdict()
    latency = [k for k in keys if k.kind in ("latency", "import") and any(
        (mode, k, "p50_us") in found for mode in modes)]
    for key in latency:
        size = f"{key.frame_size:g} B" if key.frame_size >= 0 else "all"
        how = key.tool if key.load < 0 else f"{key.tool}, {'idle' if key.load == 0 else f'load {key.load:g} %'}"
        unit = "µs (RTT/2)" if key.tool.startswith("sockperf") else "µs (one-way)"
        for p in ("50", "99", "99.9"):
            name = f"p{p.replace('.', '_')}_us"
            judged = f"{verdict.percentile:g}" == p
            text = "; ".join(_tsn_verdict(found.get((mode, key, name)), verdict) for mode in modes) if judged else ""
            row(size, f"latency P{p} ({how})", unit, key, name, verdict=text)
    for key in [k for k in keys if k.kind == "tcp"]:
        row("TCP", f"goodput ({key.duration_s:g} s)", "Mbit/s; % of line rate", key, "throughput_mbps",
            also=(lambda mbps, line=line: f"{_number(mbps * 1e6 / line * 100)} % of line rate") if line else None)
    for key in [k for k in keys if k.kind == "failover"]:
        row("fail-over", f"frames lost ({key.text()})", "frames", key, "lost")
        row("fail-over", f"duplicates delivered ({key.text()})", "frames", key, "duplicates")
    columns = ["frame size", "measure", "unit", *(mode_name(m) for m in modes)]
    if both:
        columns += ["FRER − control", "95 % interval", "why no interval / significance"]
    if latency:
        columns.append(f"TSN verdict (P{verdict.percentile:g} < {verdict.limit_us:g} µs)")
    else:  # no latency measured: no verdict column
        rows = [r[:-1] for r in rows]
    rate = f"{line / 1e6:g} Mbit/s" if line else "unknown"
    return Table(f"verdicts-{_slug(s.label)}", f"Verdicts: {s.label}",
                 f"{s.kind.capitalize()} {s.label}, measured on: {system_text(s)} (line rate {rate}). Each figure is "
                 "the mean of the valid repetitions with its 95 % interval in brackets where n ≥ 2 and its n; ≥ marks a "
                 "lower bound (censored): a rate found at the top of its search, or a sweep's zero-loss load above "
                 "which it never lost a frame. FRER − control is a difference of means with Welch's "
                 "interval (in the first unit given), or the reason there is none.", columns, rows)


def _first_loss(found: dict, mode: str, size: float) -> Cell:
    """The lowest load of the loss-vs-load grid whose valid repetitions lost frames."""
    points = sorted((k.load, m) for (md, k, n), m in found.items()
                    if md == mode and n == "loss_percent" and k.kind == "loss_vs_load" and k.frame_size == size)
    if not points:
        return Cell(None, "not measured")
    invalid_below = []
    for load, m in points:
        i = m.interval()
        if i is None:
            invalid_below.append(load)
            continue
        if i.estimate > 0:
            note = f"; {_loads(invalid_below)} below invalid" if invalid_below else ""
            return Cell(load, f"{load:g} % (loss {_number(i.estimate)} %{note})")
    if len(invalid_below) == len(points):
        return Cell(None, "every load invalid")
    return Cell(None, f"none up to {points[-1][0]:g} %" + (f" ({_loads(invalid_below)} invalid)" if invalid_below else ""))


def _loads(loads: list[float]) -> str:
    return f"load{'s' if len(loads) > 1 else ''} {', '.join(f'{x:g}' for x in loads)} %"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()
