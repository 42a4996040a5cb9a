"""Latency at one frame size (RFC 2544 section 26.2; seed 002 section 2.4), idle or under
background load: sockperf ping-pong, reported as RTT/2 (or sockperf under-load at the step's
`sockperf_mps`: the latency of the one message in 100 that the server answers; seed 004
section 5), or frerlab's own one-way latency from per-packet timestamps (`oneway`: probes at
`probe_rate_fps`; one clock on a testbed, since talker and listener share the host; on real
hosts only when their clocks are synchronised well enough, otherwise the unit is invalid with a
`clock_unsynchronised` flag). Percentiles P50 to P99.999, max, mean and the delay variation
(P99.9 - min); a percentile that the number of samples cannot support (fewer than 10 expected
beyond it, frerlab.bench.stats.percentile_support) is reported as None and named in a
`percentile_unsupported` flag. The TSN verdict: the verdict percentile below its limit, or
`unsupported` when too few samples back that percentile. The unit's detail keeps `timestamps`:
which stamps and clock produced the latency (docs/traffic.md, "Timestamps")."""

from __future__ import annotations

from contextlib import nullcontext

from frerlab.bench import stats
from frerlab.bench.campaign import Latency
from frerlab.bench.steps import Context, result
from frerlab.bench.trial import Background, Flag, generator_trial
from frerlab.traffic import gen
from frerlab.traffic.record import Latency as LatencyRecord
from frerlab.files import write_atomic
from frerlab.traffic.record import UDP_OVERHEAD
from frerlab.traffic.tools import sockperf
from frerlab.traffic.tools.base import ParseError

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)


def run(ctx: Context, step: Latency, params: dict) -> dict:
    tool, frame, load = params["tool"], params["frame_size"], params["load"]
    test = "under-load" if step.sockperf_mps else "ping-pong"
    how = f"{tool} under-load at {step.sockperf_mps} msg/s" if tool == "sockperf" and step.sockperf_mps else tool
    ctx.note(f"{how} {frame} B, load {load:g} %, {step.duration_s:g} s")
    background = (Background(ctx.target, frame, ctx.target.fps(frame, load), step.duration_s + 1, ctx.out)
                  if load else nullcontext())
    flags: list[Flag] = []
    with background:
        if tool == "sockperf":
            raw, source = sockperf.run_client(test, ctx.target.listener_ip,
                                              client_prefix=ctx.target.prefix("talker"),
                                              server_prefix=ctx.target.prefix("listener"),
                                              duration_s=step.duration_s, frame_size=frame, mps=step.sockperf_mps)
            write_atomic(ctx.out / "sockperf.txt", raw)
            try:
                latency = sockperf.parse(raw, source=source, test=test,
                                         payload_size=frame - UDP_OVERHEAD)[0].latency
            except ParseError as err:  # e.g. a client that lost every reply under load
                latency = None
                flags.append(Flag("tool_failed", f"{err} (its output: sockperf.txt)", True))
        else:
            t = generator_trial(ctx.target, frame, step.probe_rate_fps, step.duration_s, ctx.out)
            flags += t.flags
            latency = gen.latency_from_ns(t.latency_ns, timestamps=t.timestamps)
            clock_ok, why = ctx.target.one_way_clock
            if not clock_ok:
                flags.append(Flag("clock_unsynchronised", f"one-way latency needs synchronised clocks: {why}; "
                                                          "use tool sockperf (RTT/2)", True))
    if load:
        flags += _background_flags(background.reports())
    metrics, more = _latency_metrics(latency, step)
    return result(metrics, flags + more, {"latency": latency.model_dump() if latency else None,
                                         "kind": latency.kind if latency else None,
                                         "timestamps": latency.timestamps.model_dump()
                                         if latency and latency.timestamps else None})


def _latency_metrics(latency: LatencyRecord | None, step: Latency) -> tuple[dict, list[Flag]]:
    if latency is None or not latency.samples:
        return {}, [Flag("no_samples", "no latency sample arrived", True)]
    n = latency.samples
    metrics: dict[str, float | None] = {"samples": n, "mean_us": latency.mean_us, "min_us": latency.min_us,
                                        "max_us": latency.max_us}
    unsupported = []
    for p in PERCENTILES:
        value = latency.percentiles_us.get(f"{p:g}")
        supported = stats.percentile_support(n, p)
        if not supported:
            unsupported.append(f"P{p:g} (needs {stats.samples_needed(p):,})")
        metrics[f"p{p:g}_us".replace(".", "_")] = value if supported else None
    p999 = latency.percentiles_us.get("99.9")
    metrics["delay_variation_us"] = (p999 - latency.min_us if p999 is not None and latency.min_us is not None
                                     and stats.percentile_support(n, 99.9) else None)
    flags = [Flag("percentile_unsupported", f"{n:,} samples do not support {', '.join(unsupported)}", False)] \
        if unsupported else []
    verdict_value = latency.percentiles_us.get(f"{step.verdict.percentile:g}")
    if verdict_value is None or not stats.percentile_support(n, step.verdict.percentile):
        metrics["tsn_pass"] = None
    else:
        metrics["tsn_pass"] = float(verdict_value < step.verdict.limit_us)
        metrics["tsn_margin_percent"] = (1 - verdict_value / step.verdict.limit_us) * 100
    return metrics, flags


def _background_flags(reports: tuple[dict, dict]) -> list[Flag]:
    sender, _ = reports
    if sender.get("shortfall"):
        return [Flag("background_shortfall", f"the background load fell short: {sender.get('shortfall_reason')}",
                     True)]
    return []
