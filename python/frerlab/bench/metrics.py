"""What each metric a campaign or an import stores means: its label and unit for a person, its
kind of quantity (which decides the interval a report gives it: a loss ratio, a load in percent
of the line rate, a rate, a latency, a count), and whether it is an outcome worth comparing
between modes or campaigns (a set-point such as the load the generator reached, or the number
of samples, is not). summary.json's FRER-vs-control comparisons and the report's tables compare
only outcomes."""

from __future__ import annotations

from dataclasses import dataclass


#: Kinds of quantity: their interval and how they are compared across line rates. OTHER is any
#: quantity that cannot be negative (a CPU share, a time); SIGNED one that can (a margin).
LOSS, LOAD, RATE, LATENCY, COUNT, OTHER, SIGNED = "loss", "load", "rate", "latency", "count", "other", "signed"


@dataclass(frozen=True)
class Metric:
    """How a metric is read: `label` and `unit` for a person, `quantity` for the statistics,
    `outcome` whether a comparison of it means something (a set-point or a tally of samples
    does not)."""

    label: str
    unit: str
    quantity: str
    outcome: bool


_FIXED = {
    "loss_percent": Metric("frame loss", "%", LOSS, True),
    "lost": Metric("frames lost", "frames", COUNT, True),
    "duplicates": Metric("duplicates delivered", "frames", COUNT, True),
    "zero_loss_threshold_load": Metric("zero-loss threshold", "% of line rate", LOAD, True),
    "loss_onset_load": Metric("loss onset", "% of line rate", LOAD, True),
    "zero_loss_threshold_mbps": Metric("zero-loss threshold", "Mbit/s L2", RATE, False),
    "max_marginal_loss_percent": Metric("largest loss near the threshold", "%", OTHER, False),
    "throughput_mbps": Metric("TCP goodput", "Mbit/s", RATE, True),
    "retransmits": Metric("TCP retransmits", "segments", COUNT, True),
    "l2_mbps": Metric("UDP throughput", "Mbit/s L2", RATE, True),
    "frames_per_s": Metric("frame rate", "frames/s", RATE, True),
    "reordered": Metric("frames out of order", "frames", COUNT, True),
    "jitter_ms": Metric("jitter", "ms", LATENCY, True),
    "mean_us": Metric("mean latency", "µs", LATENCY, True),
    "delay_variation_us": Metric("delay variation", "µs", LATENCY, False),
    "recovery_ms": Metric("recovery time", "ms", LATENCY, True),
    "tsn_margin_percent": Metric("margin to the TSN limit", "%", SIGNED, False),
    "back_to_back_frames": Metric("back-to-back burst", "frames", COUNT, True),
}


#: Metrics that mean another thing in one kind of step: a loss-vs-load trial's lost frames depend
#: on its length and rate (its loss ratio is the outcome); a fail-over run's are the outcome.
_OF_KIND = {("loss_vs_load", "lost"): Metric("frames lost", "frames", COUNT, False),
            ("import", "throughput_mbps"): Metric("payload throughput", "Mbit/s", RATE, True)}


def metric(name: str, kind: str = "") -> Metric:
    """How the metric `name` of a step of `kind` is read (an unknown one: shown, never compared)."""
    if (kind, name) in _OF_KIND:
        return _OF_KIND[(kind, name)]
    if name in _FIXED:
        return _FIXED[name]
    if name.startswith("throughput_") and "_loss_" in name:
        what, goal = name.removeprefix("throughput_").split("_loss_", 1)
        label = goal_label(float(goal))
        return {"load": Metric(label, "% of line rate", LOAD, True),
                "mbps": Metric(label, "Mbit/s L2", RATE, False),
                "fps": Metric(label, "frames/s", RATE, False)}.get(what, Metric(name, "", OTHER, False))
    if name.startswith("p") and name.endswith("_us") and name[1:-3].replace("_", "").isdigit():
        return Metric(f"P{name[1:-3].replace('_', '.')}", "µs", LATENCY, name in ("p50_us", "p99_us", "p99_9_us"))
    return Metric(name, "", OTHER, False)


def goal_label(loss_ratio: float) -> str:
    """NDR for a search with no loss allowed (RFC 2544's throughput), PDR with its loss ratio."""
    return "NDR (no loss)" if loss_ratio == 0 else f"PDR (loss ≤ {loss_ratio * 100:g} %)"
