"""RFC 2544 section 26.3 frame loss rate: one trial at a load (percent of line rate) and frame
size; the loss ratio of what the generator really sent, with the trial's flags (a trial beyond
what the sending host can put on its link is flagged, not counted as the DUT's loss)."""

from __future__ import annotations

from frerlab.bench.campaign import LossVsLoad
from frerlab.bench.steps import Context, result
from frerlab.bench.trial import generator_trial


def run(ctx: Context, step: LossVsLoad, params: dict) -> dict:
    frame, load = params["frame_size"], params["load"]
    ctx.note(f"{frame} B at {load:g} % for {step.trial_s:g} s")
    t = generator_trial(ctx.target, frame, ctx.target.fps(frame, load), step.trial_s, ctx.out)
    achieved = t.sent / t.duration_s
    metrics = {"loss_percent": t.loss_ratio * 100, "lost": t.lost,
               "sent_load_percent": achieved / ctx.target.line_rate_fps(frame) * 100,
               "received_mbps": t.received * frame * 8 / t.duration_s / 1e6}
    return result(metrics, t.flags, t.record())
