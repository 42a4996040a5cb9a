"""RFC 2544 section 26.5 system recovery: the DUT is overloaded at `overload` percent of its
throughput for `overload_s`, then the load drops to `recovery` percent; the recovery time is
from the drop to the last frame lost. The load is two streams: the measured one at the
recovery rate for the whole trial, and background load making up the difference during the
overload. Their start and end come from the generators' own clocks (CLOCK_REALTIME of the
first send, and the send time), and the measured stream's losses per millisecond of its send
schedule (`gen recv --interval-frames`), so the recovery time is resolved to 1 ms (or one
frame, if slower). A trial spoiled only by a passing fault of the tester (either stream's
sender fell behind its schedule but sent every frame, or the listener's socket overflowed) is
run again, up to ATTEMPTS times, as frerlab.bench.trial does for one stream; the earlier
attempts' raw reports stay in `attempt-N/`."""

from __future__ import annotations

import json

from frerlab.bench.campaign import Recovery
from frerlab.bench.steps import Context, result
from frerlab.bench.trial import ATTEMPTS, Background, Flag, TrialOutcome, generator_trial

RESOLUTION_S = 0.001
#: The raw reports of one attempt.
REPORTS = ("send.json", "recv.json", "trial.json", "bg-send.json", "bg-recv.json")


def spoiled_by_tester(t: TrialOutcome, bg_send: dict) -> bool:
    """Whether an attempt is invalid only through passing faults of the tester: the measured
    stream's (TrialOutcome.spoiled_by_tester), or the background sender falling behind its
    schedule while still sending every frame it was due to (not a rate it cannot reach)."""
    background_short = bool(bg_send.get("shortfall"))
    if background_short and bg_send.get("unsent_due"):
        return False
    if not t.valid and not t.spoiled_by_tester:
        return False
    return background_short or not t.valid


def run(ctx: Context, step: Recovery, params: dict) -> dict:
    frame = step.frame_size
    throughput = ctx.target.fps(frame, step.throughput_load)
    measured_fps = throughput * step.recovery / 100
    extra_fps = throughput * (step.overload - step.recovery) / 100
    bin_frames = max(1, round(measured_fps * RESOLUTION_S))
    ctx.note(f"{frame} B overload {step.overload:g} % of {step.throughput_load:g} % for {step.overload_s:g} s")
    for attempt in range(1, ATTEMPTS + 1):
        with Background(ctx.target, frame, extra_fps, step.overload_s, ctx.out) as background:
            t = generator_trial(ctx.target, frame, measured_fps, step.overload_s + step.recovery_s, ctx.out,
                                bin_frames=bin_frames, attempts=1)
        bg_send, _ = background.reports()
        if attempt == ATTEMPTS or not spoiled_by_tester(t, bg_send):
            break
        kept = ctx.out / f"attempt-{attempt}"
        kept.mkdir()
        for name in REPORTS:
            (ctx.out / name).rename(kept / name)
    receiver = json.loads((ctx.out / "recv.json").read_text())
    sender = json.loads((ctx.out / "send.json").read_text())
    drop_s = (bg_send["start_realtime_ns"] - sender["start_realtime_ns"]) / 1e9 + bg_send["elapsed_s"]
    bins = receiver["streams"][0]["seq_bins"] if receiver["streams"] else []
    lossy = [b for b in bins if b["lost"]]
    last_loss_s = (lossy[-1]["first_seq"] + lossy[-1]["frames"]) / measured_fps if lossy else None
    flags = list(t.flags)
    if bg_send.get("shortfall"):
        flags.append(Flag("background_shortfall", f"the overload fell short: {bg_send.get('shortfall_reason')}", True))
    lost_in_overload = sum(b["lost"] for b in bins if b["first_seq"] / measured_fps < drop_s)
    if not lost_in_overload:
        flags.append(Flag("no_overload_loss", "nothing was lost during the overload: the DUT was not overloaded "
                                              "(raise overload or throughput_load)", False))
    recovery_s = max(0.0, last_loss_s - drop_s) if last_loss_s is not None else None
    metrics = {"recovery_ms": None if recovery_s is None else recovery_s * 1e3,
               "lost_during_overload": lost_in_overload, "lost_after_drop": t.lost - lost_in_overload}
    return result(metrics, flags, {"overload_end_s": drop_s, "last_loss_s": last_loss_s, "bin_frames": bin_frames,
                                   "measured_fps": measured_fps, "background_fps": extra_fps, "attempts": attempt,
                                   "trial": t.record()})
