"""A known-truth device under test for the throughput searches, built on the simulator.

`LinkDut` is one stream of fixed-size frames from a talker through a wire into a bottleneck
link of known rate and egress queue, to a listener. A trial at `rate` bit/s (L2, frames with
FCS) for `duration_s` is one simulator run: the talker offers `rate * duration_s` bits worth of
frames at a constant pattern, the run lasts long enough to drain the queue, and the listener's
counts give sent and received. Optional noise is Bernoulli loss on the bottleneck link (each
trial has its own seed). `generator_bps` models a generator that cannot send faster than that:
it then sends fewer frames than offered, which the searches must flag, not count as loss.

The truth: a constant stream above the bottleneck's L2 capacity C = link_rate * frame /
(frame + overhead) fills the queue (Q bytes) in Q * 8 / (rate - C) seconds and then loses the
excess, so over a trial of duration D the highest rate losing at most the ratio g is about
(C + Q * 8 / D) / (1 - g) (`model_truth`). Frames are whole and the last one may be in
flight, so `measure_truth` finds it on the simulator itself by bisection down to a fraction
of a frame per trial; the two agree within 0.01 % (tests/test_bench_search.py checks it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from frerlab import sim
from frerlab.bench.search import TrialResult
from frerlab.units import L1_OVERHEAD_BYTES


@dataclass
class LinkDut:
    """A bottleneck link of `link_bps` (L1) with an egress queue of `queue_bytes`."""

    link_bps: float = 10e6
    queue_bytes: int = 16384
    frame_bytes: int = 1518
    loss_p: float = 0.0
    generator_bps: float | None = None
    seed: int = 1
    _seeds: Iterator[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._seeds = itertools.count(self.seed)

    @property
    def capacity_bps(self) -> float:
        """The bottleneck's rate in L2 bit/s (what a stream's `rate` counts)."""
        return self.link_bps * self.frame_bytes / (self.frame_bytes + L1_OVERHEAD_BYTES)

    def scenario(self, rate_bps: float, duration_s: float) -> dict[str, Any]:
        """The simulator scenario of one trial (see the module doc)."""
        sending = min(rate_bps, self.generator_bps or rate_bps)
        count = min(self.frames(rate_bps, duration_s), self.frames(sending, duration_s))
        drain = self.queue_bytes * 8 / self.link_bps + 0.01
        dut_link: dict[str, Any] = {"name": "dut", "a": "nic", "b": "l", "rate": self.link_bps,
                                    "egress": {"queue_limit": self.queue_bytes}}
        if self.loss_p:
            dut_link["loss"] = {"model": "bernoulli", "p": self.loss_p}
        return {
            "name": "link-dut", "seed": next(self._seeds),
            "duration": duration_s + drain, "interval": duration_s + drain,
            "nodes": {"t": {"kind": "host"}, "nic": {"kind": "switch"}, "l": {"kind": "host"}},
            "links": [{"name": "wire", "a": "t", "b": "nic", "rate": "1Gbps"}, dut_link],
            "streams": [{"name": "s", "talker": "t", "listener": "l", "rate": sending, "frame_size": self.frame_bytes,
                         "count": max(count, 1), "paths": [["wire", "dut"]]}],
        }

    def frames(self, rate_bps: float, duration_s: float) -> int:
        """Frames of `rate_bps` in `duration_s`."""
        return round(rate_bps * duration_s / (self.frame_bytes * 8))

    def trial(self, rate_bps: float, duration_s: float) -> TrialResult:
        """One simulator run at `rate_bps` for `duration_s` (the searches' trial callback)."""
        row = sim.run(self.scenario(rate_bps, duration_s), allow_long=True).streams.iloc[0]
        return TrialResult(self.frames(rate_bps, duration_s), int(row["sent"]), int(row["received"]), duration_s)


def model_truth(dut: LinkDut, loss_ratio: float, duration_s: float) -> float:
    """The highest rate losing at most `loss_ratio` over `duration_s`, from the fluid model."""
    return (dut.capacity_bps + dut.queue_bytes * 8 / duration_s) / (1 - loss_ratio)


def measure_truth(dut: LinkDut, loss_ratio: float, duration_s: float) -> float:
    """The same figure measured on the noise-free simulator by bisection until the interval is
    below a tenth of a frame per trial."""
    quiet = LinkDut(dut.link_bps, dut.queue_bytes, dut.frame_bytes)
    guess = model_truth(dut, loss_ratio, duration_s)
    low, high = guess * 0.99, guess * 1.01
    resolution = dut.frame_bytes * 8 / duration_s / 10
    while high - low > resolution:
        mid = (low + high) / 2
        if quiet.trial(mid, duration_s).loss_ratio <= loss_ratio:
            low = mid
        else:
            high = mid
    return low
