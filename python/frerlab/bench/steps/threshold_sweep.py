"""The seeds' zero-loss threshold discovery (seed 002 section 2.3) as one adaptive sweep, in
loads (percent of line rate) rather than the seeds' fixed Mbit/s lists:

1. coarse: from `start` up in `coarse.step` until a trial loses (or `stop`, or `coarse.points`);
2. fine: from the last loss-free coarse load up in `fine.step` until a trial loses;
3. verify: sustained trials (`verify.trial_s`) from the last loss-free fine load down in
   `verify.step` until one loses nothing: a load that passes 1 s can lose over 30 s, as the
   seeds saw (535 Mbit/s passed 10 s trials and lost 0.053 % over 30 s);
4. ultra-fine: `ultra_fine.points` loads `ultra_fine.step` apart above the verified load, each
   trial run whatever the one before did: the marginal-loss region the seeds mapped.

The zero-loss threshold is the verified load; the loss onset is the lowest load above it that
lost in the verify or ultra-fine phase. Invalid trials (flags) are kept but decide nothing."""

from __future__ import annotations

from frerlab.bench.campaign import SweepPhase, ThresholdSweep
from frerlab.bench.steps import Context, result
from frerlab.bench.trial import Flag, TrialOutcome, generator_trial


def run(ctx: Context, step: ThresholdSweep, params: dict) -> dict:
    frame = step.frame_size
    trials: list[dict] = []

    def trial(phase: str, load: float, duration_s: float) -> TrialOutcome:
        ctx.note(f"{phase}: {frame} B at {load:.4g} % for {duration_s:g} s")
        t = generator_trial(ctx.target, frame, ctx.target.fps(frame, load), duration_s,
                            ctx.out / "trials" / f"{len(trials):03d}")
        trials.append({"phase": phase, "load": load, **t.record()})
        return t

    def climb(phase: str, first: float, spec: SweepPhase) -> tuple[float | None, float | None]:
        """(last loss-free load, first lossy load) going up from `first`."""
        clean = None
        for k in range(spec.points):
            load = first + k * spec.step
            if load > step.stop:
                break
            t = trial(phase, load, spec.trial_s)
            if t.valid and t.lost:
                return clean, load
            if t.valid:
                clean = load
        return clean, None

    flags = []
    clean, lossy = climb("coarse", step.start, step.coarse)
    verified = None
    if lossy is None:
        flags.append(Flag("no_loss_found", f"no trial up to {step.stop:g} % lost a frame", False))
    elif clean is None:
        flags.append(Flag("loss_at_start", f"the first load, {step.start:g} %, lost frames: start lower", False))
    else:
        fine_clean, _ = climb("fine", clean + step.fine.step, step.fine)
        start = fine_clean if fine_clean is not None else clean
        for k in range(step.verify.points):
            t = trial("verify", start - k * step.verify.step, step.verify.trial_s)
            if t.valid and not t.lost:
                verified = start - k * step.verify.step
                break
        if verified is not None:
            for k in range(1, step.ultra_fine.points + 1):
                trial("ultra_fine", verified + k * step.ultra_fine.step, step.ultra_fine.trial_s)
        else:
            flags.append(Flag("not_verified", f"no load from {start:g} % down lost nothing over "
                                              f"{step.verify.trial_s:g} s", False))
    late = [t for t in trials if t["valid"] and t["phase"] in ("verify", "ultra_fine")]
    onset = min((t["load"] for t in late if t["lost"] and (verified is None or t["load"] > verified)), default=None)
    for name in dict.fromkeys(f["name"] for t in trials for f in t["flags"]):
        count = sum(name in {f["name"] for f in t["flags"]} for t in trials)
        flags.append(Flag(name, f"{count} of {len(trials)} trials", False))
    metrics = {"zero_loss_threshold_load": verified, "loss_onset_load": onset,
               "zero_loss_threshold_mbps": None if verified is None else
               ctx.target.fps(frame, verified) * frame * 8 / 1e6,
               "max_marginal_loss_percent": max((t["loss_ratio"] * 100 for t in late), default=None)}
    return result(metrics, flags, {"trials": trials})
