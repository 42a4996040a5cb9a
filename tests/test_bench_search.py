"""The throughput searches of frerlab.bench.search on the simulator-backed known-truth DUT
(frerlab.bench.dut.LinkDut): the seeds' binary search and the RFC 9971-style search find the
bottleneck within their resolution with the truth inside the interval, NDR and PDR come out of
one search, a generator that sends short is never counted as loss, and bad parameters are
refused naming the value."""

from __future__ import annotations

import pytest

from frerlab.bench.dut import LinkDut, measure_truth, model_truth
from frerlab.bench.search import GeneratorShortfall, Goal, TrialResult, binary_search, mlr_search
from frerlab.errors import UsageError

NDR, PDR = Goal(1e-5), Goal(0.005)


def test_the_simulated_truth_matches_the_fluid_model() -> None:
    # 10 Mbit/s L1, 1518-byte frames: C = 9.87 Mbit/s L2; a 64 KiB queue adds 17.5 kbit/s over 30 s.
    dut = LinkDut(link_bps=10e6, queue_bytes=65536)
    for loss in (1e-5, 0.005):
        assert measure_truth(dut, loss, 30) == pytest.approx(model_truth(dut, loss, 30), rel=1e-4)


def test_binary_search_as_the_seeds_ran_it_finds_the_capacity_within_its_resolution() -> None:
    dut = LinkDut(link_bps=7.3e6, queue_bytes=16384)
    truth = measure_truth(dut, 1e-5, 30)
    result = binary_search(dut.trial, 0, 20e6, iterations=10, trial_duration_s=30, loss_threshold=1e-5)
    goal = result.goals[0]
    assert [t.duration_s for t in result.trials] == [30] * 10 and result.total_trial_s == 300
    assert truth - 20e6 / 2**10 <= goal.rate <= truth
    assert goal.lower == goal.rate and goal.lower <= truth < goal.upper
    assert goal.resolved  # 20 Mbit/s / 1024 = 0.27 % of the truth, within the 0.5 % width


def test_mlr_search_finds_ndr_and_pdr_in_one_search_with_short_trials_first() -> None:
    # A big queue on a slow link: 1 s trials pass about 17 % above what 30 s trials pass, so
    # a search that reported short trials would be far off.
    dut = LinkDut(link_bps=3.1e6, queue_bytes=65536)
    result = mlr_search(dut.trial, 20e3, 20e6, [NDR, PDR])
    assert [g.loss_ratio for g in result.goals] == [1e-5, 0.005]
    assert result.trials[0].rate == 20e6 and result.trials[0].duration_s == 1.0
    for goal in result.goals:
        truth = measure_truth(dut, goal.loss_ratio, 30)
        assert goal.resolved and goal.lower <= truth < goal.upper
        assert goal.upper - goal.lower <= 0.005 * goal.upper
        assert abs(goal.rate / truth - 1) <= 0.005
        confirmations = [t for t in result.trials if t.rate == goal.rate and t.duration_s == 30]
        assert confirmations and all(t.result.loss_ratio <= goal.loss_ratio for t in confirmations)
    short_passes = [t for t in result.trials if t.duration_s < 30 and t.result.loss_ratio == 0]
    assert max(t.rate for t in short_passes) > result.goals[1].upper  # short trials were optimistic
    assert result.total_trial_s <= 0.6 * 300


def test_a_short_sent_trial_is_retried_and_never_counted_as_loss() -> None:
    """The generator falls short on the first attempt at every load (it sends at most 5 Mbit/s,
    as a busy iperf3 might); the retry sends everything. The search must reach the same result
    as with a good generator and keep the short attempts, marked invalid."""
    good, flaky_gen = LinkDut(link_bps=7.3e6), LinkDut(link_bps=7.3e6, generator_bps=5e6)
    attempts: dict[float, int] = {}

    def flaky(rate: float, duration_s: float) -> TrialResult:
        attempts[rate] = attempts.get(rate, 0) + 1
        return (flaky_gen if attempts[rate] == 1 else good).trial(rate, duration_s)

    reference = binary_search(LinkDut(link_bps=7.3e6).trial, 0, 20e6)
    result = binary_search(flaky, 0, 20e6)
    assert result.goals == reference.goals
    invalid = [t for t in result.trials if not t.valid]
    assert invalid and all(t.result.sent < t.result.offered and t.result.received == t.result.sent for t in invalid)
    assert all(t.rate > 5e6 for t in invalid)
    assert result.total_trial_s == reference.total_trial_s + 30 * len(invalid)


def test_a_generator_that_never_reaches_the_rate_stops_the_search_naming_it() -> None:
    dut = LinkDut(link_bps=7.3e6, generator_bps=5e6)
    with pytest.raises(GeneratorShortfall, match=r"at rate 1e\+07 .* in 3 attempts: lower max_rate"):
        mlr_search(dut.trial, 20e3, 10e6, [NDR])


@pytest.mark.parametrize(("call", "message"), [
    (lambda: Goal(loss_ratio=1.5), r"loss_ratio 1\.5 is out of range \[0, 1\)"),
    (lambda: Goal(final_trial_duration_s=30, duration_sum_s=10),
     r"duration_sum_s 10 is out of range \(\[final_trial_duration_s 30, inf\)\)"),
    (lambda: Goal(relative_width=0), r"relative_width 0 is out of range \(0, 1\)"),
    (lambda: binary_search(LinkDut().trial, 0, 20e6, iterations=0),
     r"iterations 0 is out of range \(an integer in 1\.\.=64\)"),
    (lambda: binary_search(LinkDut().trial, 5e6, 1e6),
     r"max_rate 1000000\.0 is out of range \(above min_rate 5000000\.0"),
    (lambda: mlr_search(LinkDut().trial, 0, 20e6), r"min_rate 0 is out of range \(0, inf\)"),
    (lambda: mlr_search(LinkDut().trial, 1e3, 20e6, [NDR], initial_trial_duration_s=60),
     r"initial_trial_duration_s 60 is out of range \(0, 30\]"),
    (lambda: mlr_search(LinkDut().trial, 1e3, 20e6, [NDR], send_tolerance=-0.1),
     r"send_tolerance -0\.1 is out of range \[0, 1\)"),
])
def test_bad_parameters_are_refused_naming_the_value_and_range(call, message) -> None:
    with pytest.raises(UsageError, match=message):
        call()


def test_mlr_search_starts_full_length_trials_at_the_extrapolated_guess_not_a_flattered_short_pass() -> None:
    # On 3.1 Mbit/s with 64 KiB the 5.5 s phase passes about 2 % above the 30 s truth; the first
    # 30 s trial goes to the load extrapolated from failed 1 s and 5.5 s trials (capacity +
    # buffer / duration), just below the NDR truth, instead of re-trying that flattered pass.
    dut = LinkDut(link_bps=3.1e6, queue_bytes=65536)
    result = mlr_search(dut.trial, 20e3, 20e6, [NDR, PDR])
    short_pass = max(t.rate for t in result.trials if 1 < t.duration_s < 30 and t.result.loss_ratio == 0)
    first_full = next(t for t in result.trials if t.duration_s == 30)
    truth = measure_truth(dut, 1e-5, 30)
    assert short_pass > 1.01 * truth
    assert truth * 0.995 <= first_full.rate <= truth and first_full.result.loss_ratio == 0
    assert first_full.rate == result.goals[0].rate
    assert result.total_trial_s <= 0.5 * 300
