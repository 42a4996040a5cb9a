"""RFC 2544 section 26.4 back-to-back: the longest burst of frames with minimum gaps that the
DUT forwards without loss. A burst is `frerlab gen send --max-rate --count N`: the generator
writes N frames as fast as it can, the talker's link (shaped at the testbed's rate) puts them
on the wire back to back, so the DUT sees a burst at line rate; what a socket generator cannot
do is keep its own link busy without a queue, which is why a burst larger than the talker's
queue is flagged (`sender_host_drops`) rather than counted. Binary search over N in
[1, max_burst], `iterations` halvings; N passes when each of its `trials` bursts arrives whole."""

from __future__ import annotations

from frerlab.bench.campaign import BackToBack
from frerlab.bench.steps import Context, result
from frerlab.units import L1_OVERHEAD_BYTES
from frerlab.bench.trial import Flag, generator_trial


def run(ctx: Context, step: BackToBack, params: dict) -> dict:
    frame = params["frame_size"]
    low, high = 0, step.max_burst + 1  # low passed (0: nothing yet), high failed (or is beyond the range)
    records, flags = [], []
    for _ in range(step.iterations):
        if high - low <= 1:
            break
        burst = (low + high) // 2
        passed = True
        for k in range(step.trials):
            ctx.note(f"{frame} B burst of {burst} frames, trial {k + 1}/{step.trials}")
            t = generator_trial(ctx.target, frame, 0, burst / ctx.target.line_rate_fps(frame),
                                ctx.out / "bursts" / f"{len(records):03d}", burst=burst)
            records.append({"burst": burst, **t.record()})
            flags += [f for f in t.flags if f.name not in {g.name for g in flags}]
            if not t.valid or t.lost:
                passed = False
                break
        low, high = (burst, high) if passed else (low, burst)
    metrics = {"back_to_back_frames": low or None,
               "back_to_back_us": low * (frame + L1_OVERHEAD_BYTES) * 8 / ctx.target.rate_bps * 1e6 if low else None,
               "resolved_frames": high - low}
    # invalid bursts ended the search from above; the result stands, with the flags as warnings
    return result(metrics, [Flag(f.name, f.detail, False) for f in flags], {"bursts": records})
