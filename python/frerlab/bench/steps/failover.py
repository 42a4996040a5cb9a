"""A FRER fail-over trial at a load: `frerlab failover` (frerlab.testbed.failover) with path a
cut and restored, then path b, while a stream runs at `load` percent of the line rate. With
FRER nothing may be lost or duplicated; the control group loses what path a carried while cut."""

from __future__ import annotations

from frerlab.bench.campaign import Failover
from frerlab.bench.steps import Context, result
from frerlab.testbed import failover


def run(ctx: Context, step: Failover, params: dict) -> dict:
    rate = max(1, round(ctx.target.fps(step.frame_size, params["load"])))
    ctx.note(f"fail-over at {params['load']:g} % ({rate} frames/s)")
    schedule = failover.Schedule(rate_fps=rate, frame_size=step.frame_size, duration_s=step.duration_s,
                                 cut_a=step.cut_a, cut_b=step.cut_b)
    outcome = failover.run(ctx.target.testbed, schedule, ctx.out)
    metrics = {"lost": outcome["lost"], "duplicates": outcome["duplicates"], "passed": float(outcome["verdict_met"])}
    for phase in outcome["phases"]:
        if phase["phase"] != "both paths":
            metrics[f"lost_{phase['phase'].replace(' ', '_')}"] = phase["lost"]
    return result(metrics, [], {key: outcome[key] for key in ("verdict", "phases", "intervals", "events")})
