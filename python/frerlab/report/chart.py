"""The report's one visual language, and a figure as one Vega-Lite specification (Altair) that the
page draws interactively and vl-convert renders to PNG and SVG: the same data and drawing in all
three.

The same thing looks the same in every figure:
- colour is the mode, always: FRER blue, control vermillion (Okabe and Ito's colour-blind-safe
  palette); a figure whose series are not modes (a simulator's streams) takes its colours from
  the same palette and then Tableau's 20, so no two series share one below 28;
- shape is the outcome: a mean is a filled circle, a repetition a small hollow one, a passing
  trial a circle, a failing one a cross, an invalid unit or trial a downward triangle, a unit
  counted with a warning flag (its sender saturated a core, say) a square, a rate
  found at the top of its search (censored, "≥") an upward triangle; a rate a search or sweep
  found is a dashed rule in its mode's colour, labelled;
- dash is the results directory when several are compared (the first solid);
- grey is for what was not measured: line rates, thresholds, limits and the times of cuts,
  each labelled where it is drawn, never in a colour a data series could have.

A figure's data is one table, `rows`, whose `role` says how a row is drawn: `mean` (joined by a
line, with its interval `lo`..`hi` where there is one), `rep` (a repetition), `trial`
(a search's or sweep's trial, or an invalid unit: drawn by outcome, never joined), `found` (a
rate a search found: a rule in the mode's colour), `line` (a reference curve), `rule_x` and
`rule_y` (references), `band` (a shaded span of x, e.g. a cut path). Panels (`panel`, and `row`
for a grid) split a figure where one axis would mix things that are not comparable. A figure
whose x is a list of names (`x_names`, e.g. attacks) draws its measured rows as points side by
side per name, one place per colour, never joined."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import altair as alt

#: Okabe and Ito (2008), "Color Universal Design": blue and vermillion for the two modes.
MODE_COLOURS = {"FRER": "#0072B2", "control": "#D55E00"}
#: Further series (other modes, simulator streams): the rest of Okabe-Ito, then Tableau 20.
MORE_COLOURS = ["#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442", "#1f77b4", "#aec7e8", "#ff7f0e",
                "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd", "#c5b0d5", "#8c564b", "#c49c94",
                "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5"]
#: References (line rates, thresholds, limits, cuts): never a data colour.
REFERENCE = "#6b6b6b"
#: Outcome -> mark shape, the same in every figure.
OUTCOMES = {"passes": "circle", "fails": "cross", "invalid": "triangle-down", "flagged (counted)": "square",
            "censored (≥)": "triangle-up"}
#: Pixels a raised mark (see Figure.spec) is drawn above its place.
RAISED = 9
#: Results directories when several are compared: solid, dashed, dotted, dash-dot.
DASHES = [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3]]

MODE_NAMES = {"frer": "FRER", "control": "control"}


def mode_name(mode: str) -> str:
    """A mode as the legends name it."""
    return MODE_NAMES.get(mode, mode)


@dataclass
class Scale:
    """An axis scale: linear (from zero where a ratio is read from it), log, or symlog (a log
    axis that also shows 0, for loss)."""

    kind: str = "linear"
    zero: bool = False
    #: symlog: the value around which the axis turns from linear to logarithmic
    constant: float | None = None
    domain: list[float] | None = None

    def alt(self) -> alt.Scale:
        if self.kind == "linear":
            return alt.Scale(zero=self.zero, domain=self.domain or alt.Undefined)
        if self.kind == "symlog":
            return alt.Scale(type="symlog", constant=self.constant or 1, domain=self.domain or alt.Undefined)
        return alt.Scale(type="log", domain=self.domain or alt.Undefined)


@dataclass
class Figure:
    """One figure: its rows and how to draw them (see the module's doc)."""

    id: str
    title: str
    caption: str
    x_title: str
    y_title: str
    rows: list[dict[str, Any]]
    x_scale: Scale = field(default_factory=Scale)
    y_scale: Scale = field(default_factory=Scale)
    #: "mode": colour is the mode (campaign figures); "series": colour is the series (simulator)
    colour: str = "mode"
    #: extra row fields shown on hover, name -> title
    tooltip: dict[str, str] = field(default_factory=dict)
    #: a Vega expression labelling an axis, and the values to label (the HDR plot's percentiles)
    x_labels: str | None = None
    x_ticks: list[float] | None = None
    y_labels: str | None = None
    y_ticks: list[float] | None = None
    #: "line+points" joins the means; "line" draws dense series without points; "points" never joins them
    mark: str = "line+points"
    #: x is one of these names (in this order), not a number; each colour gets its own place beside it
    x_names: list[str] | None = None
    #: panels per line of a wrapped facet
    columns: int = 3

    @property
    def points(self) -> list[dict[str, Any]]:
        """The measured rows (means, repetitions, trials)."""
        return [r for r in self.rows if r["role"] in ("mean", "rep", "trial")]

    @property
    def series(self) -> list[str]:
        """Every colour the legend lists: FRER, then control, then other modes; other series in
        order of first appearance."""
        found = list(dict.fromkeys(r[self.colour] for r in self.rows if r.get(self.colour) is not None))
        if self.colour == "mode":
            order = list(MODE_COLOURS)
            found.sort(key=lambda n: order.index(n) if n in order else len(order))
        return found

    @property
    def panels(self) -> list[str]:
        return list(dict.fromkeys(r["panel"] for r in self.rows if r.get("panel") is not None))

    def spec(self) -> dict[str, Any]:
        """The Vega-Lite specification, its data in the data set `rows`."""
        roles = {r["role"] for r in self.rows}
        rows_facet = any(r.get("row") is not None for r in self.rows)
        faceted = bool(self.panels)
        names = self.series
        if self.colour == "mode":
            extra = iter(MORE_COLOURS)
            colours = [MODE_COLOURS.get(n) or next(extra) for n in names]
        else:
            colours = MORE_COLOURS[:len(names)] if len(names) <= len(MORE_COLOURS) else alt.Undefined
        pick = alt.selection_point(fields=[self.colour], bind="legend", name="legend_pick")
        colour = alt.Color(f"{self.colour}:N", title=None, scale=alt.Scale(domain=names, range=colours),
                           legend=alt.Legend(orient="bottom", columns=4, labelLimit=420,
                                             symbolType="circle" if self.mark == "points" else "stroke"))
        opacity = alt.condition(pick, alt.value(1.0), alt.value(0.12))
        campaigns = list(dict.fromkeys(r["campaign"] for r in self.rows if r.get("campaign")))
        dash = (alt.StrokeDash("campaign:N", title="results", scale=alt.Scale(domain=campaigns, range=DASHES[:len(campaigns)]),
                               legend=alt.Legend(orient="bottom", symbolType="stroke"))
                if len(campaigns) > 1 else alt.Undefined)
        outcomes = [o for o in OUTCOMES if any(r.get("outcome") == o for r in self.rows if r["role"] == "trial")]
        shape = alt.Shape("outcome:N", title="outcome", scale=alt.Scale(domain=outcomes, range=[OUTCOMES[o] for o in outcomes]),
                          legend=alt.Legend(orient="bottom"))
        x_axis = alt.Axis(title=self.x_title, labelExpr=self.x_labels or alt.Undefined, values=self.x_ticks or alt.Undefined,
                          labelAngle=-30 if self.x_names else alt.Undefined)
        y_axis = alt.Axis(title=self.y_title, labelExpr=self.y_labels or alt.Undefined, values=self.y_ticks or alt.Undefined)
        y_scale = self.y_scale
        if y_scale.kind == "log" and y_scale.domain is None:
            # a log axis spans the measured values; an interval reaching 0 (or far beyond) is cut at its edge
            measured = [r["y"] for r in self.rows if r["role"] in ("mean", "rep", "trial", "rule_y") and r["y"] > 0]
            if measured:
                y_scale = Scale("log", domain=[min(measured) / 1.25, max(measured) * 1.25])
        if self.x_names:
            x = alt.X("x:N", axis=x_axis, sort=self.x_names, scale=alt.Scale(domain=self.x_names))
            offset = alt.XOffset(f"{self.colour}:N", sort=names, scale=alt.Scale(domain=names))
            x_tip = alt.Tooltip("x:N", title=self.x_title)
        else:
            x, offset = alt.X("x:Q", axis=x_axis, scale=self.x_scale.alt()), alt.Undefined
            x_tip = alt.Tooltip("x:Q", title=self.x_title, format=".6~g")
        y = alt.Y("y:Q", axis=y_axis, scale=y_scale.alt())
        tips = [alt.Tooltip(f"{self.colour}:N", title="series" if self.colour == "series" else "mode"),
                x_tip, alt.Tooltip("y:Q", title=self.y_title, format=".4~g")]
        tips += [alt.Tooltip(f"{k}:N", title=v) for k, v in self.tooltip.items()]
        base = alt.Chart()

        def role(name: str) -> alt.Chart:
            return base.transform_filter(alt.datum.role == name)

        layers = []
        if "mean" in roles:
            line = {"line+points": lambda c: c.mark_line(point=alt.OverlayMarkDef(filled=True, size=45)),
                    "line": lambda c: c.mark_line(), "points": lambda c: c.mark_point(filled=True, size=60)}[self.mark]
            interval = [alt.Tooltip("interval:N", title="95 % interval")] if any(r.get("interval") for r in self.rows) else []
            layers.append(line(role("mean")).encode(x=x, xOffset=offset, y=y, color=colour, strokeDash=dash,
                                                    detail="series:N", opacity=opacity,
                                                    tooltip=tips + [alt.Tooltip("n:N", title="n"), *interval]))
            if any(r.get("lo") is not None for r in self.rows):
                low = f"max(datum.lo, {y_scale.domain[0]!r})" if y_scale.kind == "log" and y_scale.domain else "datum.lo"
                layers.append(role("mean").transform_filter("isValid(datum.lo)").transform_calculate(low=low).mark_rule(
                    size=1.5, clip=True).encode(x=x, xOffset=offset, y=alt.Y("low:Q", scale=y_scale.alt()), y2="hi:Q",
                                                color=colour, opacity=opacity))
        if "rep" in roles:
            layers.append(role("rep").mark_point(size=22, filled=False, strokeWidth=1).encode(
                x=x, y=y, color=colour, opacity=opacity, tooltip=tips))
        if "trial" in roles:
            # two modes' invalid units without a value sit at one place on the axis: the rows with `raised`
            # are drawn RAISED pixels higher
            for raised in sorted({bool(r.get("raised")) for r in self.rows if r["role"] == "trial"}):
                trials = role("trial").transform_filter("datum.raised" if raised else "!datum.raised")
                layers.append(trials.mark_point(size=70, filled=True, strokeWidth=2, yOffset=-RAISED if raised else 0)
                              .encode(x=x, y=y, color=colour, shape=shape, opacity=opacity, tooltip=tips))
        if "found" in roles:
            found = role("found")
            layers.append(found.mark_rule(strokeDash=[5, 3], size=1.5).encode(y="y:Q", color=colour, opacity=opacity))
            layers.append(found.mark_text(align="right", baseline="bottom", dx=-2, dy=-2, fontSize=11).encode(
                y="y:Q", x=alt.value(self._width()), text="label:N", color=colour))
        if "line" in roles:
            layers.append(role("line").mark_line(strokeDash=[6, 3], color=REFERENCE).encode(
                x=x, y=y, detail="label:N", tooltip=[alt.Tooltip("label:N", title="reference"), alt.Tooltip("y:Q", format=".4~g")]))
            layers.append(role("line").transform_filter("datum.last").mark_text(
                align="right", baseline="bottom", dy=-3, color=REFERENCE, fontSize=11).encode(x=x, y=y, text="label:N"))
        if "rule_y" in roles:
            layers.append(role("rule_y").mark_rule(strokeDash=[3, 3], size=1.5, color=REFERENCE).encode(
                y=y, tooltip=[alt.Tooltip("label:N", title="reference")]))
            layers.append(role("rule_y").mark_text(align="left", baseline="bottom", dx=3, dy=-2, color=REFERENCE,
                                                   fontSize=11).encode(y=y, x=alt.value(0), text="label:N"))
        if "rule_x" in roles:
            layers.append(role("rule_x").mark_rule(strokeDash=[3, 3], size=1.5, color=REFERENCE).encode(
                x=x, tooltip=[alt.Tooltip("label:N", title="reference")]))
            layers.append(role("rule_x").mark_text(align="left", baseline="top", dx=3, dy=2, color=REFERENCE,
                                                   fontSize=11).encode(x=x, y=alt.value(0), text="label:N"))
        if "band" in roles:  # first, so that the data is drawn over the shading
            layers.insert(0, role("band").mark_rect(color=REFERENCE, opacity=0.18).encode(
                x=x, x2="x2:Q", tooltip=[alt.Tooltip("label:N", title="span")]))
            layers.append(role("band").mark_text(align="left", baseline="top", dx=3, dy=2, color=REFERENCE,
                                                 fontSize=11).encode(x=x, y=alt.value(0), text="label:N"))
        # the legend's pick and the zoom belong to the first layer that draws measured rows
        first = 1 if "band" in roles else 0
        layers[first] = layers[first].add_params(pick)
        chart = alt.layer(*layers, data=alt.NamedData("rows"))
        if faceted:
            inner = chart.properties(width=self._width(), height=220 if rows_facet else 240)
            header = alt.Header(labelFontSize=12, labelFontWeight="bold", title=None)
            if rows_facet:
                spec = inner.facet(column=alt.Column("panel:N", sort=self.panels, header=header),
                                   row=alt.Row("row:N", sort=list(dict.fromkeys(r["row"] for r in self.rows if r.get("row"))),
                                               header=header))
            else:
                spec = inner.facet(facet=alt.Facet("panel:N", sort=self.panels, header=header), columns=self.columns)
            chart = spec.properties(title=self.title)
        else:
            chart = chart.properties(title=self.title, width=640, height=320)
            if not self.x_names:  # names are not zoomed
                zoom = alt.selection_interval(bind="scales", name="zoom")
                chart.layer[first] = chart.layer[first].add_params(zoom)
        spec = chart.to_dict()
        spec["datasets"] = {"rows": self.rows}
        return spec

    def _width(self) -> int:
        panels = len(self.panels)
        if not panels:
            return 640
        return max(220, min(640, 900 // min(panels, self.columns)))


def panel_references(rows: list[dict], panels: list[Any], **reference: Any) -> None:
    """Adds the reference `reference` (a rule or band row) to every panel in `panels` (a facet
    draws a row only in the panel it names)."""
    rows += [{**reference, "panel": p} for p in panels]
