"""The report's figures, each built from stored results only (report.chart draws them in one
visual language).

Every measured point is drawn where it was measured: a mean over the valid repetitions with its
95 % interval where n >= 2 (report.measures: loss ratios quasi-binomial Clopper-Pearson, other
non-negative quantities never below 0), each repetition beside it, and every invalid unit at its
place as a downward triangle with its flags on hover (an invalid unit that gave no value sits on
the axis), every unit counted with a warning flag as a square. Loss is drawn on a symlog axis, so a loss of 0.0075 % stands clear of 0 and of 50 %;
throughput on an axis from 0, in Mbit/s when every directory ran at one line rate and in percent
of each directory's own line rate when they differ; latency on log axes, with the TSN limit.
A figure whose points are single runs says so in its caption; a figure with nothing to draw is
left out."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from frerlab.bench.metrics import goal_label
from frerlab.bench.verdict import Verdict
from frerlab.report.chart import Figure, Scale, mode_name, panel_references
from frerlab.report.measures import Key, Measure, line_rate_bps, measures, search_goals
from frerlab.report.sources import Source
from frerlab.units import L1_OVERHEAD_BYTES

if TYPE_CHECKING:
    import pandas as pd

#: Latency percentiles drawn against frame size and load (P50 and the tails the TSN verdict looks at).
PANEL_PERCENTILES = ("50", "99", "99.9")
#: Percentiles of the HDR plot and the CDF.
HDR_PERCENTILES = ("50", "90", "99", "99.9", "99.99", "99.999")
#: Frame sizes the theoretical line-rate curves are drawn at (RFC 2544 section 9 and the ends).
CURVE_FRAME_SIZES = (64, 128, 256, 512, 768, 1024, 1280, 1518)
#: Loss axis: linear below this many percent, logarithmic above (a tenth of the seeds' 0.001 %).
LOSS_LINEAR_BELOW = 1e-4
LOSS_TICKS = [0, 1e-4, 1e-3, 1e-2, 0.1, 1, 10, 100]
#: Flags that state a result rather than doubt one (a percentile too few samples support is left
#: out of the figures; a sweep that lost nothing has no threshold): not drawn as flagged units.
RESULT_FLAGS = {"percentile_unsupported", "no_loss_found", "no_overload_loss"}
#: TCP payload per frame on the wire at a 1500-byte MTU with timestamps: 1448 of 1538 bytes.
TCP_PAYLOAD, TCP_WIRE = 1448, 1538


class Context:
    """What every campaign figure needs: each directory's measures and line rate, and whether
    several are compared (then each series names its directory, drawn with its own dash)."""

    def __init__(self, sources: list[Source], line_rate: float | None):
        self.sources = [s for s in sources if s.units]
        self.several = sum(1 for s in sources if s.units or s.failovers) > 1
        self.measures = {s.label: measures(s) for s in self.sources}
        self.rates = {s.label: line_rate_bps(s, line_rate) for s in self.sources}
        known = set(self.rates.values())
        #: one line rate for every directory: rates in Mbit/s; else in percent of each one's own
        self.one_rate = next(iter(known)) if len(known) == 1 and None not in known else None
        #: rates are drawn in Mbit/s: one line rate, or none known (imports without --line-rate)
        self.in_mbps = self.one_rate is not None or known == {None}

    def campaign(self, s: Source) -> str | None:
        return s.label if self.several else None

    def each(self, keep: Callable[[Key, str], bool]) -> list[tuple[Source, Measure]]:
        """Every measure (directory, mode, point, metric) `keep` accepts, points in numeric order."""
        found = []
        for s in self.sources:
            for (_, key, name), m in self.measures[s.label].items():
                if keep(key, name):
                    found.append((s, m))
        return sorted(found, key=lambda sm: (self.sources.index(sm[0]), sm[1].key, sm[1].mode))

    def series(self, s: Source, m: Measure, what: str = "") -> str:
        parts = [f"{s.label}:"] if self.several else []
        return " ".join([*parts, mode_name(m.mode), what]).strip()


def build(sources: list[Source], line_rate_bps: float | None = None) -> list[Figure]:
    """Every figure the stored results support, in reading order."""
    ctx = Context(sources, line_rate_bps)
    found: list[Figure | None] = [throughput(ctx), loss_vs_load(ctx), latency_vs_frame_size(ctx, sources),
                                  latency_percentiles(ctx, sources), latency_cdf(ctx, sources),
                                  latency_under_load(ctx), tcp(ctx)]
    found += search_traces(ctx)
    found += sweep_traces(ctx)
    found += failover_timelines(sources, ctx)
    found += sim_figures(sources)
    found += sweep_figures(sources)
    return [f for f in found if f is not None and f.points]


def _flags(unit: dict) -> str:
    return "; ".join(f"{f['name']}: {f['detail']}" for f in unit["flags"]) or "none"


def _warned(unit: dict) -> bool:
    """Whether a valid unit was counted with a flag that doubts it (not one stating a result)."""
    return unit["valid"] and any(not f.get("invalidates") and f["name"] not in RESULT_FLAGS for f in unit["flags"])


def measured(ctx: Context, s: Source, m: Measure, x: float, series: str, scale: float = 1.0,
             missing: float | None = None, **extra: Any) -> list[dict[str, Any]]:
    """The rows of one measure at `x`: its mean with the interval (n >= 2), each repetition
    when there are several, each unit counted with a warning flag and each invalid unit as a
    trial row at its value (`missing` where an invalid unit gave none; not drawn when that is
    None)."""
    base = {"mode": mode_name(m.mode), "series": series, "campaign": ctx.campaign(s), "x": x, **extra}
    rows = []
    i = m.interval()
    if i is not None:
        bounded = i.low is not None and math.isfinite(i.high)  # a few wildly spread values: no upper bound
        rows.append({**base, "role": "mean", "y": i.estimate * scale, "n": str(i.n),
                     "lo": i.low * scale if bounded else None, "hi": i.high * scale if bounded else None,
                     "interval": (i.method if bounded else f"{i.method}: unbounded above") if i.low is not None
                     else f"n = {i.n}: no interval"})
        if i.n > 1:
            rows += [{**base, "role": "rep", "y": v * scale} for v in m.values]
    for u, v in m.units:
        if v is not None and _warned(u):
            rows.append({**base, "role": "trial", "outcome": "flagged (counted)", "y": v * scale, "flags": _flags(u),
                         "unit": u["unit"]["id"]})
        if not u["valid"] and (v is not None or missing is not None):
            # invalid units on the axis (no value, or 0) sit at one place: control's a little above FRER's
            rows.append({**base, "role": "trial", "outcome": "invalid", "y": missing if v is None else v * scale,
                         "raised": not v and m.mode == "control", "flags": _flags(u), "unit": u["unit"]["id"]})
    return rows


def _caption_counts(items: list[tuple[Source, Measure]]) -> str:
    """How many points rest on one run, and what validity flags kept out."""
    ns = [m.n for _, m in items if m.n]
    invalid = sorted({u["unit"]["id"]: u for _, m in items for u in m.invalid}.values(), key=lambda u: u["unit"]["id"])
    flags = sorted({f["name"] for _, m in items for u, _ in m.units for f in u["flags"]})
    text = (" Every point is one run (n = 1): no interval." if ns and max(ns) == 1 else
            f" n = {min(ns)}..{max(ns)} valid repetitions per point; 95 % intervals where n ≥ 2." if ns else "")
    text += (f" {len(invalid)} invalid unit(s) drawn as ▼ at their value (or on the axis when they gave none), "
             "never averaged in." if invalid else " No unit was invalid.")
    text += " ■: a unit counted with a warning flag." if any(_warned(u) for _, m in items for u, _ in m.units) else ""
    return text + (f" Flags seen: {', '.join(flags)} (hover a mark; all in the flagged-units table)." if flags else "")


def _line_rate_text(ctx: Context) -> str:
    return ", ".join(f"{s.label} {ctx.rates[s.label] / 1e6:g} Mbit/s" if ctx.rates[s.label] else f"{s.label} unknown"
                     for s in ctx.sources)


def throughput(ctx: Context) -> Figure | None:
    """RFC 2544 throughput (NDR, PDR) per frame size, imported UDP rates too: in Mbit/s L2 with
    the L1 and L2 line-rate curves when one line rate, else in percent of each directory's."""
    items = ctx.each(lambda k, n: k.kind == "throughput" and n.startswith("throughput_load_loss_")
                     or k.kind == "import" and n == "l2_mbps")
    if not items:
        return None
    rows: list[dict] = []
    for s, m in items:
        line, frame = ctx.rates[s.label], m.key.frame_size
        if m.key.kind == "import":
            panel = "UDP (imported)"
            if ctx.in_mbps:
                rows += measured(ctx, s, m, frame, ctx.series(s, m, "UDP"), panel=panel, missing=0)
            elif line:
                rows += measured(ctx, s, m, frame, ctx.series(s, m, "UDP"), 1e6 / line * 100 * (frame + L1_OVERHEAD_BYTES)
                                 / frame, panel=panel, missing=0)
            continue
        goal = float(m.name.removeprefix("throughput_load_loss_"))
        panel = goal_label(goal)
        # % of line (L1) -> Mbit/s L2: load/100 x line x size / (size + 20)
        if ctx.in_mbps and not ctx.one_rate:  # no line rate known: the L2 rate the search stored
            mbps = ctx.measures[s.label].get((m.mode, m.key, m.name.replace("_load_", "_mbps_")))
            if mbps is None:
                continue
            m, scale = mbps, 1.0
        else:
            scale = (ctx.one_rate / 100 * frame / (frame + L1_OVERHEAD_BYTES) / 1e6) if ctx.one_rate else 1.0
        new = measured(ctx, s, m, frame, ctx.series(s, m, panel), scale, missing=0, panel=panel)
        for r in new:  # the frame rate on hover: from Mbit/s L2, or from % of the L1 line rate
            fps = r["y"] * 1e6 / (frame * 8) if ctx.in_mbps else r["y"] / 100 * (line or 0) / ((frame + L1_OVERHEAD_BYTES) * 8)
            r["fps"] = f"{fps:,.0f}" if fps else ""
        if m.censored():
            new += [{**r, "role": "trial", "outcome": "censored (≥)"} for r in new if r["role"] == "mean"]
        rows += new
    panels = list(dict.fromkeys(r["panel"] for r in rows))
    if not ctx.one_rate and ctx.in_mbps:
        y_title, how = "throughput, Mbit/s L2 (frame bits incl. FCS)", (
            "in Mbit/s of frame bits (L2, FCS included); no line rate is known (give --line-rate to draw it)")
    elif ctx.one_rate:
        line = ctx.one_rate
        sizes = sorted(set(CURVE_FRAME_SIZES) | {r["x"] for r in rows})
        for p in panels:
            for f in sizes:
                rows.append({"role": "line", "panel": p, "x": f, "y": line * f / (f + L1_OVERHEAD_BYTES) / 1e6,
                             "label": "line rate, L2", "last": f == sizes[-1]})
            panel_references(rows, [p], role="rule_y", y=line / 1e6, label=f"line rate, L1 {line / 1e6:g} Mbit/s")
        y_title, how = "throughput, Mbit/s L2 (frame bits incl. FCS)", (
            f"in Mbit/s of frame bits (L2, FCS included). Grey: the line rate of {line / 1e6:g} Mbit/s at L1 and the "
            f"most it leaves at L2, rate × size / (size + {L1_OVERHEAD_BYTES}) (preamble, SFD and gap take "
            f"{L1_OVERHEAD_BYTES} B per frame)")
    else:
        panel_references(rows, panels, role="rule_y", y=100, label="line rate (100 %)")
        y_title, how = "throughput, % of line rate (L1)", (
            f"in percent of each directory's own line rate at L1 ({_line_rate_text(ctx)}), so that different rates "
            "compare")
    return Figure("throughput-vs-frame-size", "Throughput vs frame size (RFC 2544)",
                  f"Zero-loss (NDR) and partial-drop (PDR) rates the searches found per frame size, {how}; "
                  "hover a point for its frames/s. ▲ marks a rate found at the top of its search: the device may "
                  "do more (censored)." + _caption_counts(items),
                  "frame size (B)", y_title, rows, x_scale=Scale(), y_scale=Scale(zero=True),
                  tooltip={"fps": "frames/s", "flags": "flags"})


def loss_vs_load(ctx: Context) -> Figure | None:
    items = ctx.each(lambda k, n: k.kind == "loss_vs_load" and n == "loss_percent")
    if not items:
        return None
    rows: list[dict] = []
    for s, m in items:
        rows += measured(ctx, s, m, m.key.load, ctx.series(s, m, f"{m.key.frame_size:g} B"),
                         panel=f"{m.key.frame_size:g} B")
    panels = list(dict.fromkeys(r["panel"] for r in rows))
    top = max(r.get("hi") or r["y"] for r in rows)
    thresholds = sorted({t for s, _ in items for t in search_goals(s) if t > 0})
    for t in thresholds:
        panel_references(rows, panels, role="rule_y", y=t * 100, label=f"search threshold {t * 100:g} %")
    panel_references(rows, panels, role="rule_x", x=100, label="line rate")
    return Figure("loss-vs-load", "Frame loss vs offered load (RFC 2544 section 26.3)",
                  "Frame loss against the offered load in percent of the line rate, one panel per frame size, on a "
                  f"symlog axis (linear below {LOSS_LINEAR_BELOW:g} %, logarithmic above: 0 is drawn, and a small "
                  "loss stands clear of it). Means pool the repetitions' frames, with a quasi-binomial Clopper-Pearson "
                  "interval (repetitions that disagree widen it; it stays within 0..100 %)."
                  + (" Grey: the campaign's search loss threshold and the line rate." if thresholds else
                     " Grey: the line rate.") + _caption_counts(items),
                  "offered load, % of line rate (L1)", "frame loss (%)", rows,
                  y_scale=Scale("symlog", constant=LOSS_LINEAR_BELOW, domain=[0, _loss_top(top)]), y_ticks=LOSS_TICKS,
                  y_labels="datum.value == 0 ? '0' : format(datum.value, '~g') + ' %'", tooltip={"flags": "flags"})


def _loss_top(largest: float) -> float:
    """The top of a loss axis: the first tick at or above the largest loss drawn."""
    return next((t for t in LOSS_TICKS if t >= largest), LOSS_TICKS[-1])


def _tsn(sources: list[Source]) -> Verdict:
    """The TSN verdict of the first campaign whose latency step gives one (else frerlab's default)."""
    return next((x.verdict for x in sources if x.verdict), Verdict())


def _latency_items(ctx: Context, names: tuple[str, ...]) -> list[tuple[Source, Measure]]:
    wanted = {f"p{p.replace('.', '_')}_us" for p in names}
    return ctx.each(lambda k, n: k.kind in ("latency", "import") and k.frame_size >= 0 and n in wanted)


def _latency_axis(items: list[tuple[Source, Measure]]) -> str:
    """The latency axis title: what the figures are (sockperf's RTT/2, one-way)."""
    tools = {m.key.tool for _, m in items}
    rtt = {t for t in tools if t.startswith("sockperf")}  # an import's tool is its step, e.g. sockperf-pingpong
    what = []
    if rtt:
        what.append(f"{', '.join(sorted(rtt))}: RTT/2")
    if tools - rtt:
        what.append(f"{', '.join(sorted(tools - rtt))}: one-way")
    return f"latency, µs ({'; '.join(what)})"


def _how(key: Key) -> str:
    """A latency measure's tool and load, e.g. "sockperf, idle"."""
    load = "" if key.load < 0 else ("idle" if key.load == 0 else f"load {key.load:g} %")
    return ", ".join(x for x in (key.tool or ("imported" if key.kind == "import" else ""), load) if x) or "latency"


def latency_vs_frame_size(ctx: Context, sources: list[Source]) -> Figure | None:
    items = _latency_items(ctx, PANEL_PERCENTILES)
    if not items:
        return None
    rows: list[dict] = []
    for s, m in items:
        p = m.metric.label
        rows += measured(ctx, s, m, m.key.frame_size, ctx.series(s, m, f"{_how(m.key)} {p}"), panel=p,
                         row=_how(m.key))
    grid = sorted({(r["panel"], r["row"]) for r in rows})
    verdict = _tsn(sources)
    limit = f"P{verdict.percentile:g}"
    for panel, row in grid:
        if panel == limit:
            rows.append({"role": "rule_y", "panel": panel, "row": row, "y": verdict.limit_us,
                         "label": f"TSN limit {limit} < {verdict.limit_us:g} µs"})
    return Figure("latency-vs-frame-size", "Latency percentiles vs frame size",
                  "P50, P99 and P99.9 per frame size (one panel each; one row per tool and load), on a log axis; "
                  f"grey: the campaign's TSN limit ({limit} < {verdict.limit_us:g} µs) in its percentile's panel. A "
                  "percentile too few samples support is left out." + _caption_counts(items),
                  "frame size (B)", _latency_axis(items), rows, y_scale=Scale("log"), tooltip={"flags": "flags"})


def latency_percentiles(ctx: Context, sources: list[Source]) -> Figure | None:
    """HDR-style: latency against the percentile, on a 1 / (1 - p) axis so the tail spreads out."""
    return _by_percentile(ctx, sources, cdf=False)


def latency_cdf(ctx: Context, sources: list[Source]) -> Figure | None:
    """The same percentiles as a CDF per load: the fraction of frames at or below each latency."""
    return _by_percentile(ctx, sources, cdf=True)


def _by_percentile(ctx: Context, sources: list[Source], cdf: bool) -> Figure | None:
    """Each latency percentile at 1 / (1 - p): on the x axis (HDR), or on the y axis (CDF)."""
    items = _latency_items(ctx, HDR_PERCENTILES)
    if not items:
        return None
    rows = []
    for s, m in items:
        at = 1 / (1 - float(m.metric.label[1:]) / 100)
        for r in measured(ctx, s, m, at, ctx.series(s, m, _how(m.key)), panel=f"{m.key.frame_size:g} B, {_how(m.key)}",
                          percentile=m.metric.label):
            rows.append({**r, "x": r["y"], "y": at, "lo": None, "hi": None} if cdf else r)
    limit = _tsn(sources).limit_us
    panel_references(rows, list(dict.fromkeys(r["panel"] for r in rows)), role="rule_x" if cdf else "rule_y",
                     **{"x" if cdf else "y": limit}, label=f"TSN limit {limit:g} µs")
    ticks = [1 / (1 - float(p) / 100) for p in HDR_PERCENTILES]
    at_scale, at_labels = Scale("log", domain=[ticks[0], ticks[-1]]), "'P' + format(100 - 100 / datum.value, '.6~f')"
    latency = _latency_axis(items)
    if cdf:
        return Figure("latency-cdf", "Latency CDF per load",
                      "The fraction of samples at or below each latency (the percentiles' means), one panel per frame "
                      "size, tool and load; the y axis is 1 / (1 − p), so the tail is as legible as the median; grey: "
                      "the TSN limit." + _caption_counts(items), latency, "fraction at or below", rows,
                      x_scale=Scale("log"), y_scale=at_scale, y_labels=at_labels,
                      y_ticks=ticks, tooltip={"percentile": "percentile"})
    return Figure("latency-percentiles", "Latency by percentile (HDR)",
                  "Latency by percentile, one panel per frame size, tool and load: the x axis is 1 / (1 − p), so each "
                  "further nine gets the same room; grey: the TSN limit. A percentile too few samples support is left "
                  "out." + _caption_counts(items), "percentile", latency, rows, x_scale=at_scale,
                  y_scale=Scale("log"), x_labels=at_labels, x_ticks=ticks, tooltip={"percentile": "percentile"})


def latency_under_load(ctx: Context) -> Figure | None:
    """One-way latency percentiles of the loss-vs-load trials against their load."""
    rows: list[dict] = []
    items = []
    for s, m in ctx.each(lambda k, n: k.kind == "loss_vs_load" and n == "loss_percent"):
        for p in PANEL_PERCENTILES:
            latency = Measure(s, m.mode, m.key, f"p{p.replace('.', '_')}_us",
                              [(u, _percentile_us(u["detail"].get("latency_ns"), float(p))) for u, _ in m.units])
            if any(v is not None for _, v in latency.units):
                items.append((s, latency))
                rows += measured(ctx, s, latency, m.key.load, ctx.series(s, m, f"{m.key.frame_size:g} B P{p}"),
                                 panel=f"P{p}", row=f"{m.key.frame_size:g} B")
    if not items:
        return None
    return Figure("latency-under-load", "One-way latency under load",
                  "P50, P99 and P99.9 of the one-way latency of the loss-vs-load trials (frerlab's generator: software "
                  "time stamps, one host's clock) against the offered load, one row per frame size. Above the loss "
                  "onset the queues are full and the latency is their depth." + _caption_counts(items),
                  "offered load, % of line rate (L1)", "one-way latency, µs", rows, y_scale=Scale("log"),
                  tooltip={"flags": "flags"})


def _percentile_us(latency: dict | None, p: float) -> float | None:
    """Percentile `p` of a trial's latency histogram summary (latency_ns), in µs."""
    if not isinstance(latency, dict):
        return None
    for q, ns in latency.get("percentiles") or []:
        if q == p and isinstance(ns, (int, float)):
            return ns / 1000
    return None


def tcp(ctx: Context) -> Figure | None:
    items = ctx.each(lambda k, n: k.kind == "tcp" and n == "throughput_mbps")
    if not items:
        return None
    rows: list[dict] = []
    for s, m in items:
        line = ctx.rates[s.label]
        scale = 1.0 if ctx.one_rate or not line else 1e6 / line * 100
        rows += measured(ctx, s, m, m.key.duration_s, ctx.series(s, m), scale)
    if ctx.one_rate:
        line = ctx.one_rate / 1e6
        rows.append({"role": "rule_y", "y": line, "label": f"line rate, L1 {line:g} Mbit/s"})
        rows.append({"role": "rule_y", "y": line * TCP_PAYLOAD / TCP_WIRE,
                     "label": f"most TCP goodput: {TCP_PAYLOAD} B payload per {TCP_WIRE} B on the wire"})
        y_title = "TCP goodput, Mbit/s (payload)"
    else:
        rows.append({"role": "rule_y", "y": 100, "label": "line rate (100 %)"})
        rows.append({"role": "rule_y", "y": 100 * TCP_PAYLOAD / TCP_WIRE, "label": "most TCP goodput"})
        y_title = "TCP goodput, % of line rate"
    return Figure("tcp-baseline", "TCP goodput per test duration (iperf3)",
                  "iperf3's TCP goodput (payload bits) per test duration; grey: the line rate and the most TCP can "
                  f"carry over it with a 1500-byte MTU and timestamps ({TCP_PAYLOAD} of {TCP_WIRE} bytes on the wire)."
                  + _caption_counts(items), "test duration (s)", y_title, rows, y_scale=Scale(zero=True),
                  tooltip={"flags": "flags"})


def _grouped(ctx: Context, kind: str) -> dict[tuple[str, str, float], list[tuple[Source, dict]]]:
    """The units of `kind` that kept their trials, by (directory, step, frame size)."""
    found: dict[tuple[str, str, float], list[tuple[Source, dict]]] = {}
    for s in ctx.sources:
        for u in s.units:
            if u["unit"]["kind"] == kind and "trials" in u["detail"]:
                key = (s.label, u["unit"]["step"], float(u["unit"]["params"].get("frame_size", -1)))
                found.setdefault(key, []).append((s, u))
    return found


def _against_goals(t: dict, goals: list[dict]) -> str:
    """A search trial's outcome as the search judged it: it passes if its loss is within a
    goal's (a trial that lost a few frames still passes a goal that allows them)."""
    return "passes" if any(t["loss_ratio"] <= g["loss_ratio"] for g in goals) else "fails"


def _panel(u: dict, units: list[tuple[Source, dict]]) -> str | None:
    reps = {x["unit"].get("repetition", 1) for _, x in units}
    return f"repetition {u['unit'].get('repetition', 1)}" if len(reps) > 1 else None


def search_traces(ctx: Context) -> list[Figure]:
    found = []
    for (label, step, frame), units in _grouped(ctx, "throughput").items():
        rows: list[dict] = []
        for _, u in units:
            d, mode, panel = u["detail"], mode_name(u["unit"]["mode"]), _panel(u, units)
            start = 0.0
            for t in d["trials"]:
                counted = t.get("counted", t["valid"])
                rows.append({"role": "trial", "mode": mode, "campaign": None, "panel": panel, "x": round(start, 3),
                             "y": t["rate_fps"] / d["line_rate_fps"] * 100, "loss": f"{t['loss_ratio'] * 100:.6g} %",
                             "outcome": _against_goals(t, d["goals"]) if counted else "invalid",
                             "seconds": f"{t['duration_s']:g}"})
                start += t["duration_s"]
            for g in d["goals"]:
                if g.get("rate"):
                    y = g["rate"] / d["line_rate_fps"] * 100
                    rows.append({"role": "found", "mode": mode, "panel": panel, "y": y,
                                 "label": f"{mode} {goal_label(g['loss_ratio'])}: {y:.4g} %"})
        search = units[0][1]["detail"]["search"]
        total = sum(u["detail"]["total_trial_s"] for _, u in units)
        found.append(Figure(f"search-{_slug(label, step, f'{frame:g}')}",
                            f"Throughput search: {ctx.campaign(units[0][0]) + ', ' if ctx.several else ''}{step}, {frame:g} B",
                            f"Each trial of the {search} search at the trial time it started ({total:g} s of trials in "
                            "all), its rate and its outcome as the search judged it (● passes its loss goal, ✕ fails, "
                            "▼ invalid: not counted); dashed, in the mode's colour: the rates found.",
                            "trial time elapsed (s)", "trial rate, % of line rate (L1)", rows, y_scale=Scale(zero=True),
                            tooltip={"outcome": "outcome", "loss": "loss", "seconds": "trial s"}))
    return found


def sweep_traces(ctx: Context) -> list[Figure]:
    found = []
    for (label, step, frame), units in _grouped(ctx, "threshold_sweep").items():
        rows: list[dict] = []
        for _, u in units:
            mode, panel = mode_name(u["unit"]["mode"]), _panel(u, units)
            for k, t in enumerate(u["detail"]["trials"]):
                rows.append({"role": "trial", "mode": mode, "panel": panel, "x": k + 1, "y": t["load"],
                             "outcome": "invalid" if not t["valid"] else "fails" if t["lost"] else "passes",
                             "phase": t["phase"], "loss": f"{t['loss_ratio'] * 100:.6g} %",
                             "seconds": f"{t['duration_s']:g}"})
            m = u["metrics"]
            for key, name in (("zero_loss_threshold_load", "zero-loss threshold"), ("loss_onset_load", "loss onset")):
                if m.get(key) is not None:  # a threshold with no onset above it is a lower bound
                    bound = "≥" if key == "zero_loss_threshold_load" and m.get("loss_onset_load") is None else ""
                    rows.append({"role": "found", "mode": mode, "panel": panel, "y": m[key],
                                 "label": f"{mode} {name}: {bound}{m[key]:g} %"})
        found.append(Figure(f"sweep-{_slug(label, step, f'{frame:g}')}",
                            f"Threshold sweep: {ctx.campaign(units[0][0]) + ', ' if ctx.several else ''}{step}, {frame:g} B",
                            "Every trial of the adaptive sweep (seed 002 section 2.3) in the order run: ● no frame lost, "
                            "✕ frames lost, ▼ invalid (decides nothing); dashed, in the mode's colour: the verified "
                            "zero-loss load and the loss onset.", "trial", "offered load, % of line rate (L1)", rows,
                            y_scale=Scale(zero=True), tooltip={"phase": "phase", "loss": "loss", "seconds": "trial s"}))
    return found


#: Bins per series a fail-over timeline is drawn with (a 10 s capture in 1 ms bins has 10,000).
TIMELINE_POINTS = 1000
FAILOVER_SERIES = {"sent": "sent by the talker", "path_a": "path a", "path_b": "path b",
                   "after_elimination": "after elimination"}


def cut_spans(events: list[tuple[float, str, bool]], end: float) -> list[tuple[float, float, str]]:
    """(from, to, path) of every span a path was cut, from (time, path, up) events."""
    spans, open_at = [], {}
    for t, path, up in sorted(events):
        if not up:
            open_at.setdefault(path, t)
        elif path in open_at:
            spans.append((open_at.pop(path), t, path))
    return spans + [(t, end, path) for path, t in open_at.items()]


def failover_timelines(sources: list[Source], ctx: Context) -> list[Figure]:
    found = []
    for s in sources:
        for k, (mode, result, timeline) in enumerate(s.failovers):
            name = mode_name(mode)
            if timeline:
                # at most TIMELINE_POINTS bins per series: a long capture's bins are summed in groups
                longest = max((len(c) for c in timeline["series"].values()), default=0)
                group = max(1, math.ceil(longest / TIMELINE_POINTS))
                bin_ms = timeline["bin_ms"] * group
                rows = [{"role": "mean", "mode": name, "series": FAILOVER_SERIES.get(series, series),
                         "panel": FAILOVER_SERIES.get(series, series), "x": i * bin_ms,
                         "y": sum(chunk := counts[i * group:(i + 1) * group]) / (len(chunk) * timeline["bin_ms"])}
                        for series, counts in timeline["series"].items() for i in range(math.ceil(len(counts) / group))]
                events = [(e["t_ms"], e["what"].split(" ", 1)[-1], e["what"].startswith("restore"))
                          for e in timeline["events"]]
                how = (f"data frames per millisecond as sent, on each path and after elimination, one panel each ("
                       f"{bin_ms:g} ms bins, from tcpdump captures in the testbed's namespaces"
                       + ("" if timeline.get("complete") else "; a capture dropped frames, so a series may miss some")
                       + ")")
            else:  # an interval's width is the time to the next one's start (the last one's is unknown)
                intervals = result.get("intervals", [])
                rows = [{"role": "mean", "mode": name, "series": "after elimination", "panel": "after elimination",
                         "x": i["t_s"] * 1000, "y": i["received"] / ((after["t_s"] - i["t_s"]) * 1000)}
                        for i, after in zip(intervals, intervals[1:])]
                events = [(e["t_s"] * 1000, e["path"], e["up"]) for e in result.get("events", [])]
                how = "frames per millisecond after elimination per interval (this run captured no per-path timeline)"
            if not rows:
                continue
            end = max(r["x"] for r in rows)
            for start, stop, path in cut_spans(events, end):
                panel_references(rows, list(dict.fromkeys(r["panel"] for r in rows)), role="band", x=start, x2=stop,
                                 label=f"path {path} cut")
            found.append(Figure(f"failover-{_slug(s.label, mode, str(k))}",
                                f"Fail-over timeline: {ctx.campaign(s) + ', ' if ctx.several else ''}{name}",
                                f"The fail-over run's {how}; grey spans: the time each path was cut, from when the cut "
                                f"and the restore were asked for. Verdict: {result.get('verdict', '')}",
                                "time since the first frame at the listener (ms)", "frames per ms", rows, mark="line",
                                y_scale=Scale(zero=True), columns=1))
    return found


def sim_figures(sources: list[Source]) -> list[Figure]:
    found = [hotspot_queues(sources)]
    for s in (s for s in sources if s.kind == "sim"):
        series = s.tables.get("series")
        if series is not None and len(series):
            rows = [{"role": "mean", "series": r.stream, "x": r.time_s, "y": r.throughput_bps / 1e6,
                     "lost": str(r.lost)} for r in series.itertuples()]
            found.append(_series_figure(rows, f"sim-rate-{_slug(s.label)}", f"Simulator: per-flow rate ({s.label})",
                                        "Received rate of each stream per report interval (simulator run).",
                                        "received rate (Mbit/s)", tooltip={"lost": "lost in interval"}))
        rates = s.tables.get("rate_series")
        if rates is not None and len(rates):
            rows = [{"role": "mean", "series": r.stream, "x": r.time_s, "y": r.rate_mean_bps / 1e6,
                     "max": f"{r.rate_max_bps / 1e6:.4g}"} for r in rates.itertuples()]
            found.append(_series_figure(rows, f"sim-cn-{_slug(s.label)}", f"Simulator: regulated rates ({s.label})",
                                        "Each rate-controlled stream's sending rate (QCN, BCN or FECN), time-weighted "
                                        "mean per report interval (simulator run).", "sending rate (Mbit/s)",
                                        tooltip={"max": "max Mbit/s"}))
        ports = s.tables.get("port_series")
        if ports is not None and len(ports):
            busy = ports.groupby("port")["queue_max_bytes"].transform("max") > 0
            ports = ports[busy]  # idle ports (every reverse direction, say) would only add flat zero lines
            rows = [{"role": "mean", "series": r.port, "x": r.time_s, "y": r.tx_bps / 1e6} for r in ports.itertuples()]
            found.append(_series_figure(rows, f"sim-links-{_slug(s.label)}", f"Simulator: link throughput ({s.label})",
                                        "Frame bits (L2) each of those ports started sending per report interval "
                                        "(simulator run).", "throughput, Mbit/s L2"))
            rows = [{"role": "mean", "series": r.port, "panel": what, "x": r.time_s, "y": getattr(r, column) / 1024}
                    for what, column in (("maximum", "queue_max_bytes"), ("time-weighted mean", "queue_mean_bytes"))
                    for r in ports.itertuples()]
            found.append(_series_figure(rows, f"sim-queue-{_slug(s.label)}", f"Simulator: queue length ({s.label})",
                                        "Queued bytes of each egress port that ever queued a frame, per report "
                                        "interval: the maximum and the time-weighted mean (simulator run).", "queue (KiB)"))
    return [f for f in found if f]


def _series_figure(rows: list[dict], id: str, title: str, caption: str, y_title: str,
                   x_title: str = "simulated time (s)", **kwargs: Any) -> Figure | None:
    """A figure whose colours are its series (simulator streams and ports), not modes."""
    if not rows:
        return None
    return Figure(id, title, caption, x_title, y_title, rows, colour="series", mark=kwargs.pop("mark", "line"),
                  columns=kwargs.pop("columns", 2), **kwargs)


def hotspot_queues(sources: list[Source]) -> Figure | None:
    """The hotspot queue of every simulator run whose scenario has an output-generated hotspot
    (`frerlab.sim.hotspot.hotspot_of`), one series per run: mechanisms side by side."""
    runs = [s for s in sources if s.kind == "sim" and s.scenario is not None]
    if not runs:  # the simulator's modules load the native module: only a report of simulator runs needs them
        return None
    from frerlab.errors import UsageError
    from frerlab.sim.hotspot import hotspot_of
    from frerlab.sim.schema import parse_scenario

    rows = []
    for s in runs:
        try:
            found = hotspot_of(parse_scenario(s.scenario, str(s.path / "scenario.json")))
        except UsageError:  # a run stored by a frerlab whose scenario vocabulary differed
            continue
        ports = s.tables.get("port_series")
        if found is None or ports is None:
            continue
        hot = ports[ports["port"] == found[0]]
        rows += [{"role": "mean", "series": s.label, "x": r.time_s, "y": r.queue_mean_bytes / 1024}
                 for r in hot.itertuples()]
    return _series_figure(rows, "sim-hotspot-queues", "Simulator: hotspot queue of each run",
                          "Time-weighted mean queue of the egress whose service rate drops (the output-generated "
                          "hotspot), per report interval, one line per simulator run.", "hotspot queue (KiB)")


def sweep_figures(sources: list[Source]) -> list[Figure]:
    """Per simulator sweep: loss and latency percentiles of each stream against the first field
    the sweep varies (the others, if any, name the series); for a sweep of hotspot metrics
    (`summary: hotspot`), the transient response and the control overhead."""
    found = []
    for s in (s for s in sources if s.kind == "sim-sweep"):
        table = s.tables["sweep"]
        if "drain_time_s" in table:
            found += _hotspot_sweep(s, table, list(table.columns[:list(table.columns).index("drain_time_s")]))
            continue
        grid = list(table.columns[:list(table.columns).index("stream")])
        axis, others = grid[0], grid[1:]
        parsed = [_sweep_value(v) for v in table[axis]]
        if None in parsed or len({unit for _, unit in parsed}) > 1:
            continue  # not one kind of number: nothing to put on an axis
        rows = [(xv, r) for (xv, _), r in zip(parsed, table.to_dict("records"))]
        x_title = f"{axis} ({parsed[0][1]})" if parsed[0][1] else axis

        def name(r: dict, others: list[str] = others) -> str:
            return " ".join([str(r["stream"]), *(f"{o}={r[o]}" for o in others)]).strip()
        loss = [{"role": "mean", "series": name(r), "x": xv, "y": r["loss_ratio"] * 100, "value": str(r[axis])}
                for xv, r in rows]
        latency = [{"role": "mean", "series": name(r), "panel": f"P{p}", "x": xv, "y": r[f"latency_{key}_ns"] / 1000,
                    "value": str(r[axis])}
                   for p, key in (("50", "p50"), ("99", "p99"), ("99.9", "p99_9")) for xv, r in rows
                   if r.get(f"latency_{key}_ns") == r.get(f"latency_{key}_ns")]  # NaN: no frame arrived
        slug, title = _slug(s.label), f"Simulator sweep over {axis} ({s.label})"
        found.append(_series_figure(loss, f"sweep-loss-{slug}", f"{title}: loss",
                                    f"Each stream's frame loss at every point of the sweep over {axis} (one simulator "
                                    f"run per point), on a symlog axis (linear below {LOSS_LINEAR_BELOW:g} %).",
                                    "frame loss (%)", x_title=x_title, tooltip={"value": axis}, mark="line+points",
                                    y_scale=Scale("symlog", constant=LOSS_LINEAR_BELOW), y_ticks=LOSS_TICKS,
                                    y_labels="datum.value == 0 ? '0' : format(datum.value, '~g') + ' %'"))
        found.append(_series_figure(latency, f"sweep-latency-{slug}", f"{title}: latency",
                                    f"Each stream's latency percentiles at every point of the sweep over {axis}, one "
                                    "panel per percentile.", "latency (µs)", x_title=x_title, y_scale=Scale("log"),
                                    tooltip={"value": axis}, mark="line+points", columns=3))
    return [f for f in found if f]


def _hotspot_sweep(s: Source, table: pd.DataFrame, grid: list[str]) -> list[Figure]:
    """The seed 003 comparison's three metrics of every run against the first grid field that
    holds one kind of number (the other fields name the series): drain time, busiest-link control
    traffic, and the hotspot flows' loss."""
    for axis in grid:
        parsed = [_sweep_value(v) for v in table[axis]]
        if None not in parsed and len({unit for _, unit in parsed}) == 1:
            break
    else:
        return []
    others = [g for g in grid if g != axis]
    x_title = f"{axis} ({parsed[0][1]})" if parsed[0][1] else axis
    rows = [(xv, r) for (xv, _), r in zip(parsed, table.to_dict("records"))]

    def name(r: dict) -> str:
        return " ".join(f"{o}={r[o]}" for o in others) or "run"
    drain = [{"role": "mean", "series": name(r), "x": xv, "y": r["drain_time_s"] * 1000, "value": str(r[axis])}
             for xv, r in rows if r["drain_time_s"] == r["drain_time_s"]]  # NaN: never drained
    control = [{"role": "mean", "series": name(r), "x": xv, "y": r["control_bps"] / 1e6, "value": str(r[axis])}
               for xv, r in rows if r["control_bps"] > 0]
    loss = [{"role": "mean", "series": name(r), "x": xv, "y": r["hotspot_loss_ratio"] * 100, "value": str(r[axis])}
            for xv, r in rows]
    slug, title = _slug(s.label), f"Hotspot sweep over {axis} ({s.label})"
    return [f for f in (
        _series_figure(drain, f"hotspot-drain-{slug}", f"{title}: transient response",
                       "Time from the hotspot's onset until its queue, past its peak, first falls below the threshold "
                       "(frerlab.sim.hotspot.metrics). A run without a point never drained.", "drain time (ms)",
                       x_title=x_title, tooltip={"value": axis}, mark="line+points", y_scale=Scale(zero=True)),
        _series_figure(control, f"hotspot-control-{slug}", f"{title}: control overhead",
                       "Congestion-notification frames (notifications, probes and their reflections) on the link that "
                       "carried the most of them, averaged over the run.", "control traffic on the busiest link (Mbit/s)",
                       x_title=x_title, y_scale=Scale("log"), tooltip={"value": axis}, mark="line+points"),
        _series_figure(loss, f"hotspot-loss-{slug}", f"{title}: hotspot loss",
                       "Frames of the flows to the hotspot lost over the run, in % of those sent, on a symlog axis "
                       f"(linear below {LOSS_LINEAR_BELOW:g} %).", "hotspot flows' loss (%)", x_title=x_title,
                       tooltip={"value": axis}, mark="line+points", y_scale=Scale("symlog", constant=LOSS_LINEAR_BELOW),
                       y_ticks=LOSS_TICKS, y_labels="datum.value == 0 ? '0' : format(datum.value, '~g') + ' %'")) if f]


def _sweep_value(value: Any) -> tuple[float, str] | None:
    """A swept value as a number and its unit for the x axis: a plain number, or a rate (in
    Mbit/s), a time (ms) or a size (bytes) as the scenario wrote it ("100Mbps", "5ms",
    "64KiB"); None if it is none of these."""
    from frerlab.units import rate_bps, size_bytes, time_ps
    for parse, scale, unit in ((float, 1, ""), (rate_bps, 1e-6, "Mbit/s"), (time_ps, 1e-9, "ms"),
                               (size_bytes, 1, "bytes")):
        try:
            number = parse(value) * scale
        except (TypeError, ValueError):
            continue
        return (number, unit) if math.isfinite(number) else None
    return None


def _slug(*parts: str) -> str:
    return "-".join("".join(c if c.isalnum() else "-" for c in p).strip("-") for p in parts).lower()
