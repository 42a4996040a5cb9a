"""Link loss swept over topology files: for each file and each loss probability, that loss on
the chosen links (every link by default), one simulator run and the prediction (faults at their
times); a table of each stream's delivered and predicted loss, and a figure of both against the
link loss (log-log: the simulator's points with their 95 % intervals, the prediction as lines).
What `frerlab net sweep` runs; docs/networks.md shows the ladder's figure."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from frerlab.errors import UsageError
from frerlab.net.analyse import analyse
from frerlab.net.topology import parse_topology

#: Most runs one sweep makes (files x loss values).
MAX_RUNS = 1000
#: Two-sided 95 % normal quantile, for the simulator's points.
Z95 = 1.96


def loss_sweep(topologies: list[tuple[str, dict[str, Any]]], losses: list[float], links: list[str] | None = None,
               allow_long: bool = False, progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """One row per file, loss and stream: p, sent, delivered, loss_ratio (measured) with its
    95 % Wilson interval, predicted_loss, and whether the measurement lies within the binomial
    interval of the prediction that misses once in a million (as the tests check).
    `topologies` are (label, plain data) pairs."""
    from frerlab.net import sim

    if len(topologies) * len(losses) > MAX_RUNS:
        raise UsageError(f"{len(topologies)} files x {len(losses)} losses = {len(topologies) * len(losses)} runs is out "
                         f"of range (at most {MAX_RUNS})")
    for p in losses:
        if not 0 <= p <= 1:
            raise UsageError(f"--loss {p:g} is out of range (0..1)")
    rows, done = [], 0
    for label, data in topologies:
        names = [link.get("name") for link in data.get("links", []) if isinstance(link, dict)]
        unknown = [link for link in links or [] if link not in names]
        if unknown:
            raise UsageError(f"{label}: --links {unknown[0]!r} is not a link of it (links: {', '.join(map(str, names))})")
        for p in losses:
            point = copy.deepcopy(data)
            for link in point["links"]:
                if links is None or link["name"] in links:
                    link["loss"] = p
            topo = parse_topology(point, label)
            result = sim.run(topo, allow_long=allow_long)
            prediction = analyse(topo, faults="schedule")
            for row in sim.summary(topo, result, prediction):
                n, delivered, predicted = row["sent"], row["delivered_ratio"], row["predicted_ratio"]
                measured = 1 - delivered
                low, high = wilson(measured, n)
                spread = 4.892 * math.sqrt(predicted * (1 - predicted) / n)
                rows.append({"topology": topo.name, "stream": row["stream"], "p": p, "sent": n,
                             "delivered": row["delivered"], "loss_ratio": measured, "loss_low": low, "loss_high": high,
                             "predicted_loss": 1 - predicted,
                             "within_prediction": abs(delivered - predicted) <= spread})
            done += 1
            if progress:
                progress(done, len(topologies) * len(losses))
    return rows


def wilson(fraction: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a measured fraction of n trials (above 0 when the fraction is,
    so it can be drawn on a log scale)."""
    centre = (fraction + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(fraction * (1 - fraction) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def figure(rows: list[dict[str, Any]], title: str) -> dict[str, Any]:
    """The Vega-Lite specification of loss against link loss: one colour per topology and
    stream, the simulator as points with 95 % intervals, the prediction as a line. Rows whose
    measured loss is 0 cannot be drawn on the log scale and are left out of the points."""
    import altair as alt

    data = [{**r, "series": f"{r['topology']} / {r['stream']}"} for r in rows]
    base = alt.Chart(alt.Data(values=data))
    x = alt.X("p:Q", scale=alt.Scale(type="log"), title="loss probability of each swept link")
    y_scale = alt.Scale(type="log")
    colour = alt.Color("series:N", title="network / stream")
    line = base.mark_line().encode(x=x, y=alt.Y("predicted_loss:Q", scale=y_scale,
                                                 title="frames lost (fraction of those sent)"), color=colour)
    measured = base.transform_filter("datum.loss_ratio > 0")
    points = measured.mark_point(filled=True, size=40).encode(x=x, y=alt.Y("loss_ratio:Q", scale=y_scale), color=colour)
    bars = measured.mark_rule().encode(x=x, y=alt.Y("loss_low:Q", scale=y_scale), y2="loss_high:Q", color=colour)
    return (line + bars + points).properties(title=title, width=480, height=320).to_dict()
