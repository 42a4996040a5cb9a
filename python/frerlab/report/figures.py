"""The report's figures, each built from stored results only, as one Vega-Lite specification
(Altair) that the HTML page draws interactively and vl-convert renders to PNG and SVG: the same
data and the same drawing in all three.

Every figure has the same shape so that a reader (and the browser test) knows what to expect:
a `points` data set (the measured values: one row per point, `series` naming its line, `lo` and
`hi` its 95 % interval where there is one, drawn as error bars), and optionally `lines`
(reference curves such as the line rate, or dense time series drawn as lines) and `rules`
(thresholds and events: a horizontal rule at `y` or a vertical one at `x`). The legend toggles
series, the mouse wheel and drag zoom and pan, hovering shows the values. Invalid units are
never averaged in: points come from the summaries, which use valid repetitions only, and each
caption says how many units a flag excluded."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import altair as alt

from frerlab.bench.verdict import Verdict
from frerlab.report.sources import Source
from frerlab.units import L1_OVERHEAD_BYTES

if TYPE_CHECKING:
    import pandas as pd

#: Latency percentiles drawn against frame size (P50 and the tails the TSN verdict looks at).
FRAME_SIZE_PERCENTILES = ("50", "99", "99.9")
#: Percentiles of an HDR-style plot, in the order of the x axis.
HDR_PERCENTILES = ("50", "90", "99", "99.9", "99.99", "99.999")
#: Frame sizes the theoretical line-rate curve is drawn at (RFC 2544 section 9 and the ends).
CURVE_FRAME_SIZES = (64, 128, 256, 512, 768, 1024, 1280, 1518)


@dataclass
class Figure:
    """One figure: its data and how to draw it."""

    id: str
    title: str
    caption: str
    x_title: str
    y_title: str
    points: list[dict[str, Any]]
    lines: list[dict[str, Any]] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    x_log: bool = False
    y_log: bool = False
    #: extra point fields shown on hover, name -> title
    tooltip: dict[str, str] = field(default_factory=dict)
    #: a Vega expression labelling the x axis, and the x values to label (the HDR plot's percentiles)
    x_labels: str | None = None
    x_ticks: list[float] | None = None
    #: how points are drawn: "line+points", "line" (dense time series) or "points" (a scatter)
    mark: str = "line+points"

    @property
    def series(self) -> list[str]:
        """Every series the legend lists, in order of first appearance."""
        return list(dict.fromkeys(r["series"] for r in self.points + self.lines + self.rules))

    def spec(self) -> dict[str, Any]:
        """The Vega-Lite specification (data sets named points, lines, rules)."""
        pick = alt.selection_point(fields=["series"], bind="legend", name="legend_pick")
        zoom = alt.selection_interval(bind="scales", name="zoom")
        color = alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=2, labelLimit=420),
                          sort=self.series)
        opacity = alt.condition(pick, alt.value(1.0), alt.value(0.12))
        x_axis = alt.Axis(title=self.x_title, labelExpr=self.x_labels or alt.Undefined, values=self.x_ticks or alt.Undefined)
        x_scale = alt.Scale(type="log", domain=[min(self.x_ticks), max(self.x_ticks)] if self.x_ticks else alt.Undefined) \
            if self.x_log else alt.Scale(zero=False)
        x = alt.X("x:Q", axis=x_axis, scale=x_scale)
        y_scale = alt.Scale(type="log") if self.y_log else alt.Scale(zero=False)
        y = alt.Y("y:Q", title=self.y_title, scale=y_scale)
        tips = [alt.Tooltip("series:N"), alt.Tooltip("x:Q", title=self.x_title),
                alt.Tooltip("y:Q", title=self.y_title, format=".4~g")]
        tips += [alt.Tooltip(f"{k}:{'Q' if isinstance(self.points[0].get(k), (int, float)) else 'N'}", title=v)
                 for k, v in self.tooltip.items()]
        base = alt.Chart(alt.NamedData("points"))
        marks = {"line+points": lambda: base.mark_line(point=True), "line": base.mark_line,
                 "points": lambda: base.mark_point(filled=True, size=60)}
        layers = [marks[self.mark]().encode(x=x, y=y, color=color, opacity=opacity, tooltip=tips).add_params(pick, zoom)]
        if any(r.get("lo") is not None for r in self.points):
            layers.append(base.mark_rule().encode(x=x, y=alt.Y("lo:Q", scale=y_scale), y2="hi:Q", color=color,
                                                  opacity=opacity))
        if self.lines:
            layers.append(alt.Chart(alt.NamedData("lines")).mark_line(strokeDash=[6, 3]).encode(
                x=x, y=y, color=color, opacity=opacity, tooltip=[alt.Tooltip("series:N"), alt.Tooltip("y:Q", format=".4~g")]))
        if any("y" in r for r in self.rules):
            layers.append(alt.Chart(alt.NamedData("rules")).transform_filter("isValid(datum.y)").mark_rule(
                strokeDash=[2, 2], size=2).encode(y="y:Q", color=color, opacity=opacity, tooltip=["series:N", "y:Q"]))
        if any("x" in r for r in self.rules):
            layers.append(alt.Chart(alt.NamedData("rules")).transform_filter("isValid(datum.x)").mark_rule(
                size=2).encode(x=x, color=color, opacity=opacity, tooltip=["series:N", alt.Tooltip("x:Q", title=self.x_title)]))
        chart = alt.layer(*layers).properties(title=self.title, width=640, height=320)
        spec = chart.to_dict()
        spec["datasets"] = {"points": self.points, "lines": self.lines, "rules": self.rules}
        return spec


def build(sources: list[Source], line_rate_bps: float | None = None) -> list[Figure]:
    """Every figure the stored results support, in reading order."""
    label = _labeller(sources)
    found: list[Figure | None] = [
        throughput_vs_frame_size(sources, label, line_rate_bps),
        latency_vs_frame_size(sources, label),
        latency_percentiles(sources, label),
        loss_vs_load(sources, label),
        tcp_baseline(sources, label),
    ]
    found += threshold_sweeps(sources, label)
    found += search_traces(sources, label)
    found += failover_timelines(sources, label)
    found += sim_figures(sources)
    found += sweep_figures(sources)
    return [f for f in found if f is not None]


def _labeller(sources: list[Source]) -> Callable[[Source, str], str]:
    """Series names: the mode, prefixed by the directory's label when several are compared."""
    several = sum(1 for s in sources if s.units or s.failovers) > 1
    return lambda s, text: f"{s.label}: {text}" if several else text


def _groups(sources: Iterable[Source], keep: Callable[[dict], bool]) -> Iterable[tuple[Source, dict]]:
    for s in sources:
        for g in s.summary.get("groups", []):
            if keep(g):
                yield s, g


def _point(series: str, x: Any, stat: dict | None, **extra: Any) -> dict[str, Any] | None:
    if not stat:
        return None
    return {"series": series, "x": x, "y": stat["mean"], "lo": stat["ci_low"], "hi": stat["ci_high"], "n": stat["n"],
            **extra}


def _excluded(groups: Iterable[tuple[Source, dict]]) -> str:
    """The caption's account of what validity flags kept out."""
    invalid = sum(g["units"] - g["valid_units"] for _, g in groups)
    flags = sorted({name for _, g in groups for name in g["flags"]})
    text = f" {invalid} invalid unit(s) excluded." if invalid else " No unit was invalid."
    return text + (f" Flags seen: {', '.join(flags)} (see the tables)." if flags else "")


def _figure(points: list, **kwargs: Any) -> Figure | None:
    points = [p for p in points if p is not None]
    return Figure(points=points, **kwargs) if points else None


def throughput_vs_frame_size(sources: list[Source], label, line_rate_bps: float | None) -> Figure | None:
    """RFC 2544 throughput (NDR/PDR) per frame size, imported UDP rates too, with the line rate."""
    groups = list(_groups(sources, lambda g: "frame_size" in g["params"] and (
        g["kind"] == "throughput" or (g["kind"] == "import" and "l2_mbps" in g["metrics"]))))
    points = []
    for s, g in groups:
        frame = g["params"]["frame_size"]
        if g["kind"] == "import":
            points.append(_point(label(s, f"{g['mode']} {g['step']}"), frame, g["metrics"].get("l2_mbps")))
            continue
        for name, stat in g["metrics"].items():
            if name.startswith("throughput_mbps_loss_"):
                goal = float(name.removeprefix("throughput_mbps_loss_"))
                what = "NDR (no loss)" if goal == 0 else f"PDR (loss <= {goal:g})"
                points.append(_point(label(s, f"{g['mode']} {what}"), frame, stat))
    line = line_rate_bps or _line_rate_bps(sources)
    lines = []
    if line:
        for f in sorted(set(CURVE_FRAME_SIZES) | {p["x"] for p in points if p}):
            lines.append({"series": "line rate, L2 (frame bits incl. FCS)", "x": f, "y": line * f / (f + L1_OVERHEAD_BYTES) / 1e6})
            lines.append({"series": f"line rate, L1 (frame + {L1_OVERHEAD_BYTES} B preamble, SFD, IFG)", "x": f,
                          "y": line / 1e6})
    caption = ("Throughput at layer 2 (frame bits, FCS included) per frame size, mean over valid repetitions with "
               "its 95 % interval. Dashed: the theoretical maximum at "
               f"{'an unknown line rate' if not line else f'{line / 1e6:g} Mbit/s'}: at L1 every frame also "
               f"takes {L1_OVERHEAD_BYTES} B of preamble, SFD and inter-frame gap, so L2 stays below it."
               + _excluded(groups))
    return _figure(points, id="throughput-vs-frame-size", title="Throughput vs frame size", caption=caption,
                   x_title="frame size (B)", y_title="throughput, Mbit/s (L2)", lines=lines, tooltip={"n": "n"})


def _line_rate_bps(sources: list[Source]) -> float | None:
    """The L1 line rate a campaign's throughput units searched under (line_rate_fps at a size)."""
    for _, u in _units(sources, "throughput"):
        return u["detail"]["line_rate_fps"] * (u["unit"]["params"]["frame_size"] + L1_OVERHEAD_BYTES) * 8
    return None


def _latency_groups(sources: list[Source]) -> list[tuple[Source, dict]]:
    return list(_groups(sources, lambda g: "frame_size" in g["params"] and "p50_us" in g["metrics"]))


def _latency_name(g: dict) -> str:
    p = g["params"]
    tool = p.get("tool", g["step"])
    load = f", load {p['load']:g} %" if p.get("load") else (", idle" if "load" in p else "")
    return f"{g['mode']} {tool}{load}"


def _tsn_limit(sources: list[Source]) -> Verdict:
    """The TSN verdict of the first campaign's latency step (frerlab's default otherwise)."""
    return next((s.verdict for s in sources if s.verdict), Verdict())


def _percentile(group: dict, p: str) -> dict | None:
    """A latency group's statistics of percentile `p` ("99.9" is the metric p99_9_us)."""
    return group["metrics"].get(f"p{p}_us".replace(".", "_"))


def latency_vs_frame_size(sources: list[Source], label) -> Figure | None:
    groups = _latency_groups(sources)
    points = [_point(label(s, f"{_latency_name(g)} P{p}"), g["params"]["frame_size"],
                     _percentile(g, p))
              for s, g in groups for p in FRAME_SIZE_PERCENTILES]
    verdict = _tsn_limit(sources)
    caption = ("Latency percentiles per frame size, mean over valid repetitions with its 95 % interval; sockperf "
               "figures are RTT/2, frerlab's `oneway` figures one-way. A percentile that too few samples support is "
               f"left out. Dotted: the TSN limit (P{verdict.percentile:g} < {verdict.limit_us:g} µs)." + _excluded(groups))
    return _figure(points, id="latency-vs-frame-size", title="Latency percentiles vs frame size", caption=caption,
                   x_title="frame size (B)", y_title="latency (µs)", y_log=True,
                   rules=[{"series": f"TSN limit P{verdict.percentile:g} < {verdict.limit_us:g} µs",
                           "y": verdict.limit_us}])


def latency_percentiles(sources: list[Source], label) -> Figure | None:
    """HDR-style: latency against the percentile, on a 1 / (1 - p) axis so the tail spreads out."""
    groups = _latency_groups(sources)
    points = [_point(label(s, f"{_latency_name(g)}, {g['params']['frame_size']} B"), 1 / (1 - float(p) / 100),
                     _percentile(g, p), percentile=f"P{p}")
              for s, g in groups for p in HDR_PERCENTILES]
    verdict = _tsn_limit(sources)
    caption = ("Latency by percentile (HDR-style: the x axis is 1 / (1 − p), so each further nine gets the same "
               "room), mean over valid repetitions with its 95 % interval; a percentile too few samples support "
               f"is left out. Dotted: the TSN limit at {verdict.limit_us:g} µs." + _excluded(groups))
    return _figure(points, id="latency-percentiles", title="Latency by percentile", caption=caption,
                   x_title="percentile", y_title="latency (µs)", x_log=True, y_log=True,
                   x_labels="'P' + format(100 - 100 / datum.value, '.6~f')", tooltip={"percentile": "percentile"},
                   x_ticks=[1 / (1 - float(p) / 100) for p in HDR_PERCENTILES],
                   rules=[{"series": f"TSN limit {verdict.limit_us:g} µs", "y": verdict.limit_us}])


def loss_vs_load(sources: list[Source], label) -> Figure | None:
    groups = list(_groups(sources, lambda g: g["kind"] == "loss_vs_load"))
    points = [_point(label(s, f"{g['mode']} {g['params']['frame_size']} B"), g["params"]["load"],
                     g["metrics"].get("loss_percent")) for s, g in groups]
    caption = ("Frame loss against the offered load (RFC 2544 section 26.3; percent of the line rate), mean over "
               "valid repetitions with its 95 % interval." + _excluded(groups))
    return _figure(points, id="loss-vs-load", title="Frame loss vs offered load", caption=caption,
                   x_title="offered load (% of line rate)", y_title="frame loss (%)")


def tcp_baseline(sources: list[Source], label) -> Figure | None:
    groups = list(_groups(sources, lambda g: g["kind"] == "tcp"))
    points = [_point(label(s, g["mode"]), g["params"]["duration_s"], g["metrics"].get("throughput_mbps"))
              for s, g in groups]
    caption = ("iperf3 TCP throughput per test duration, mean over valid repetitions with its 95 % interval "
               "(error bars)." + _excluded(groups))
    return _figure(points, id="tcp-baseline", title="TCP baseline per duration", caption=caption,
                   x_title="test duration (s)", y_title="TCP throughput (Mbit/s)", tooltip={"n": "n"})


def _units(sources: list[Source], kind: str) -> Iterable[tuple[Source, dict]]:
    """The units of `kind` that kept their trials (a unit whose tool failed before any trial
    ran has none to draw)."""
    for s in sources:
        for u in s.units:
            if u["unit"]["kind"] == kind and "trials" in u["detail"]:
                yield s, u


def _outcome(t: dict) -> str:
    return "invalid (decides nothing)" if not t["valid"] else "lost frames" if t["lost"] else "no loss"


def threshold_sweeps(sources: list[Source], label) -> list[Figure]:
    found = []
    for s, u in _units(sources, "threshold_sweep"):
        unit = u["unit"]
        points = [{"series": f"{t['phase']}: {_outcome(t)}", "x": k + 1, "y": t["load"], "loss_percent":
                   t["loss_ratio"] * 100, "duration_s": t["duration_s"]} for k, t in enumerate(u["detail"]["trials"])]
        m = u["metrics"]
        rules = [{"series": name, "y": m[key]} for key, name in (("zero_loss_threshold_load", "zero-loss threshold"),
                                                                  ("loss_onset_load", "loss onset")) if m.get(key)]
        found.append(_figure(points, id=f"sweep-{_slug(s.label, unit['id'])}",
                             title=f"Threshold sweep: {label(s, unit['mode'])}, {unit['params'].get('frame_size', '')} B",
                             caption="Every trial of the adaptive sweep (seed 002 section 2.3) in the order run, by "
                                     "phase and outcome; the verified zero-loss load and the loss onset as rules.",
                             x_title="trial", y_title="offered load (% of line rate)", rules=rules,
                             mark="points", tooltip={"loss_percent": "loss %", "duration_s": "trial s"}))
    return [f for f in found if f]


def _against_goals(t: dict, goals: list[dict]) -> str:
    """A search trial's outcome as the search judged it: the strictest loss goal it passes
    (a trial that lost a few frames still passes a goal that allows them), or that it fails
    them all."""
    met = [g["loss_ratio"] for g in goals if t["loss_ratio"] <= g["loss_ratio"]]
    if not met:
        return f"fails (loss > {max(g['loss_ratio'] for g in goals):g})"
    return f"passes loss <= {min(met):g}"


def search_traces(sources: list[Source], label) -> list[Figure]:
    found = []
    for s, u in _units(sources, "throughput"):
        d, unit = u["detail"], u["unit"]
        line, start, points = d["line_rate_fps"], 0.0, []
        for t in d["trials"]:
            counted = t.get("counted", t["valid"])
            points.append({"series": "not counted (invalid)" if not counted else _against_goals(t, d["goals"]),
                           "x": round(start, 3),
                           "y": t["rate_fps"] / line * 100, "duration_s": t["duration_s"],
                           "loss_percent": t["loss_ratio"] * 100})
            start += t["duration_s"]
        rules = [{"series": "NDR found" if g["loss_ratio"] == 0 else f"PDR found (loss <= {g['loss_ratio']:g})",
                  "y": g["rate"] / line * 100} for g in d["goals"] if g.get("rate")]
        found.append(_figure(points, id=f"search-{_slug(s.label, unit['id'])}",
                             title=f"Throughput search: {label(s, unit['mode'])}, {unit['params']['frame_size']} B "
                                   f"({d['search']})",
                             caption=f"Each trial of the {d['search']} search at the time it started (trial time "
                                     f"only, {d['total_trial_s']:g} s in all), its rate and outcome; the rates found "
                                     "as rules.", x_title="trial time elapsed (s)",
                             y_title="trial rate (% of line rate)", rules=rules, mark="points",
                             tooltip={"duration_s": "trial s", "loss_percent": "loss %"}))
    return [f for f in found if f]


def failover_timelines(sources: list[Source], label) -> list[Figure]:
    found = []
    names = {"sent": "sent by the talker", "path_a": "path a", "path_b": "path b",
             "after_elimination": "after elimination"}
    for s in sources:
        for k, (mode, result, timeline) in enumerate(s.failovers):
            if timeline:
                bin_ms = timeline["bin_ms"]
                points = [{"series": names.get(name, name), "x": i * bin_ms, "y": n / bin_ms}
                          for name, counts in timeline["series"].items() for i, n in enumerate(counts)]
                rules = [{"series": e["what"].replace(" ", " path ", 1), "x": e["t_ms"]} for e in timeline["events"]]
                how = (f"data frames per millisecond as sent, on each path and after elimination ({bin_ms:g} ms bins, "
                       "from tcpdump captures in the testbed's namespaces"
                       + ("" if timeline.get("complete") else "; a capture dropped frames, so a series may miss some")
                       + ")")
            else:  # an interval's width is the time to the next one's start (the last one's is unknown)
                intervals = result.get("intervals", [])
                points = [{"series": "after elimination", "x": i["t_s"] * 1000,
                           "y": i["received"] / ((after["t_s"] - i["t_s"]) * 1000)}
                          for i, after in zip(intervals, intervals[1:])]
                rules = [{"series": f"{'restore' if e['up'] else 'cut'} path {e['path']}", "x": e["t_s"] * 1000}
                         for e in result.get("events", [])]
                how = "frames per millisecond after elimination per interval (this run captured no per-path timeline)"
            found.append(_figure(points, id=f"failover-{_slug(s.label, mode, str(k))}",
                                 title=f"Fail-over timeline: {label(s, mode)}",
                                 caption=f"The fail-over run's {how}; each cut and restore as a vertical rule at the "
                                         f"time it was asked for. Verdict: {result.get('verdict', '')}",
                                 x_title="time since the first frame at the listener (ms)", y_title="frames per ms",
                                 rules=rules, mark="line"))
    return [f for f in found if f]


def sim_figures(sources: list[Source]) -> list[Figure]:
    found = [hotspot_queues(sources)]
    for s in (s for s in sources if s.kind == "sim"):
        series = s.tables.get("series")
        if series is not None and len(series):
            points = [{"series": r.stream, "x": r.time_s, "y": r.throughput_bps / 1e6, "lost": r.lost}
                      for r in series.itertuples()]
            found.append(_figure(points, id=f"sim-rate-{_slug(s.label)}", title=f"Simulator: per-flow rate ({s.label})",
                                 caption="Received rate of each stream per report interval (simulator run).",
                                 x_title="simulated time (s)", y_title="received rate (Mbit/s)",
                                 tooltip={"lost": "lost in interval"}, mark="line"))
        rates = s.tables.get("rate_series")
        if rates is not None and len(rates):
            points = [{"series": r.stream, "x": r.time_s, "y": r.rate_mean_bps / 1e6, "max": r.rate_max_bps / 1e6}
                      for r in rates.itertuples()]
            found.append(_figure(points, id=f"sim-cn-{_slug(s.label)}", title=f"Simulator: regulated rates ({s.label})",
                                 caption="Each rate-controlled stream's sending rate (QCN, BCN or FECN), time-weighted "
                                         "mean per report interval (simulator run).", x_title="simulated time (s)",
                                 y_title="sending rate (Mbit/s)", tooltip={"max": "max Mbit/s"}, mark="line"))
        ports = s.tables.get("port_series")
        if ports is not None and len(ports):
            busy = ports.groupby("port")["queue_max_bytes"].transform("max") > 0
            ports = ports[busy]  # idle ports (every reverse direction, say) would only add flat zero lines
            points = [{"series": r.port, "x": r.time_s, "y": r.tx_bps / 1e6} for r in ports.itertuples()]
            found.append(_figure(points, id=f"sim-links-{_slug(s.label)}", title=f"Simulator: link throughput ({s.label})",
                                 caption="Frame bits (L2) each of those ports started sending per report interval "
                                         "(simulator run).", x_title="simulated time (s)", y_title="throughput (Mbit/s)",
                                 mark="line"))
            points = [{"series": f"{r.port} {what}", "x": r.time_s, "y": getattr(r, column) / 1024}
                      for r in ports.itertuples() for what, column in (("max", "queue_max_bytes"),
                                                                       ("mean", "queue_mean_bytes"))]
            found.append(_figure(points, id=f"sim-queue-{_slug(s.label)}", title=f"Simulator: queue length ({s.label})",
                                 caption="Queued bytes of each egress port that ever queued a frame, per report "
                                         "interval: the maximum and the time-weighted mean (simulator run).", x_title="simulated time (s)",
                                 y_title="queue (KiB)", mark="line"))
    return [f for f in found if f]


def hotspot_queues(sources: list[Source]) -> Figure | None:
    """The hotspot queue of every simulator run whose scenario has an output-generated hotspot
    (`frerlab.sim.hotspot.hotspot_of`), one series per run: mechanisms side by side."""
    runs = [s for s in sources if s.kind == "sim" and s.scenario is not None]
    if not runs:  # the simulator's modules load the native module: only a report of simulator runs needs them
        return None
    from frerlab.errors import UsageError
    from frerlab.sim.hotspot import hotspot_of
    from frerlab.sim.schema import parse_scenario

    points = []
    for s in runs:
        try:
            found = hotspot_of(parse_scenario(s.scenario, str(s.path / "scenario.json")))
        except UsageError:  # a run stored by a frerlab whose scenario vocabulary differed
            continue
        ports = s.tables.get("port_series")
        if found is None or ports is None:
            continue
        hot = ports[ports["port"] == found[0]]
        points += [{"series": s.label, "x": r.time_s, "y": r.queue_mean_bytes / 1024} for r in hot.itertuples()]
    return _figure(points, id="sim-hotspot-queues", title="Simulator: hotspot queue of each run",
                   caption="Time-weighted mean queue of the egress whose service rate drops (the output-generated "
                           "hotspot), per report interval, one line per simulator run.",
                   x_title="simulated time (s)", y_title="hotspot queue (KiB)", mark="line")


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

        def name(r: dict, what: str = "", others: list[str] = others) -> str:
            return " ".join([str(r["stream"]), *(f"{o}={r[o]}" for o in others), what]).strip()
        loss = [{"series": name(r), "x": xv, "y": r["loss_ratio"] * 100, "value": str(r[axis])} for xv, r in rows]
        latency = [{"series": name(r, f"P{p}"), "x": xv, "y": r[f"latency_{key}_ns"] / 1000, "value": str(r[axis])}
                   for xv, r in rows for p, key in (("50", "p50"), ("99", "p99"), ("99.9", "p99_9"))
                   if r.get(f"latency_{key}_ns") == r.get(f"latency_{key}_ns")]  # NaN: no frame arrived
        slug, title = _slug(s.label), f"Simulator sweep over {axis} ({s.label})"
        found.append(_figure(loss, id=f"sweep-loss-{slug}", title=f"{title}: loss", x_title=x_title,
                             y_title="frame loss (%)", tooltip={"value": axis},
                             caption=f"Each stream's frame loss at every point of the sweep over {axis} "
                                     "(one simulator run per point)."))
        found.append(_figure(latency, id=f"sweep-latency-{slug}", title=f"{title}: latency", x_title=x_title,
                             y_title="latency (µs)", y_log=True, tooltip={"value": axis},
                             caption=f"Each stream's latency percentiles at every point of the sweep over {axis}."))
    return [f for f in found if f]


def _hotspot_sweep(s: Source, table: pd.DataFrame, grid: list[str]) -> list[Figure]:
    """Drain time and busiest-link control traffic of every run against the first grid field
    that holds one kind of number; the other fields name the series."""
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
    drain = [{"series": name(r), "x": xv, "y": r["drain_time_s"] * 1000, "value": str(r[axis])}
             for xv, r in rows if r["drain_time_s"] == r["drain_time_s"]]  # NaN: never drained
    control = [{"series": name(r), "x": xv, "y": r["control_bps"] / 1e6, "value": str(r[axis])}
               for xv, r in rows if r["control_bps"] > 0]
    slug, title = _slug(s.label), f"Hotspot sweep over {axis} ({s.label})"
    return [f for f in (
        _figure(drain, id=f"hotspot-drain-{slug}", title=f"{title}: transient response", x_title=x_title,
                y_title="drain time (ms)", tooltip={"value": axis},
                caption="Time from the hotspot's onset until its queue, past its peak, first falls below the "
                        "threshold (frerlab.sim.hotspot.metrics). A run without a point never drained."),
        _figure(control, id=f"hotspot-control-{slug}", title=f"{title}: control overhead", x_title=x_title,
                y_title="control traffic on the busiest link (Mbit/s)", y_log=True, tooltip={"value": axis},
                caption="Congestion-notification frames (notifications, probes and their reflections) on the link "
                        "that carried the most of them, averaged over the run.")) if f]


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
