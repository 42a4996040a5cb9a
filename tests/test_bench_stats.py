"""frerlab.bench.stats against independently known results: NIST StRD reference data, the
Wikipedia Welch's t-test example, textbook t-table values, scipy's binomtest for the exact
binomial interval (the code uses beta quantiles) and closed forms derived by hand in the comments
(never the scipy call the code itself makes)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from scipy.stats import binomtest

from frerlab.bench.stats import (
    clopper_pearson,
    loss_interval,
    nonnegative_interval,
    percentile_support,
    samples_needed,
    summarize,
    welch,
)


def test_summary_of_a_textbook_set():
    # 2, 4, 4, 4, 5, 5, 7, 9: sum 40 -> mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32,
    # sample variance 32/7 -> std 2.138090; CV 2.138090/5 = 0.427618. Student's t table,
    # 7 degrees of freedom, two-sided 95 %: 2.365 -> half-width 2.365 * 2.138090 / sqrt(8) = 1.7878.
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s.n == 8
    assert s.mean == 5.0
    assert s.std == pytest.approx(math.sqrt(32 / 7), rel=1e-12)
    assert s.cv == pytest.approx(0.427618, abs=1e-6)
    assert s.half_width == pytest.approx(1.7878, abs=5e-4)
    assert (s.low, s.high) == pytest.approx((5 - s.half_width, 5 + s.half_width))
    assert s.text("Mbit/s") == "5.0 Mbit/s ± 1.8 (95 % CI, n=8, CV 43 %)"


def test_summary_of_nist_numacc1_with_its_exact_interval():
    # NIST StRD univariate "NumAcc1": certified mean 10000002, certified std 1 (a large offset
    # that a naive sum of squares gets wrong). With 2 degrees of freedom the t quantile has a
    # closed form: P(|T| <= q) = q / sqrt(2 + q^2) = 0.95 -> q = sqrt(2 * 0.95^2 / (1 - 0.95^2))
    # = 4.302653, so the half-width is q * 1 / sqrt(3) = 2.484138.
    s = summarize([10000001, 10000003, 10000002])
    q = math.sqrt(2 * 0.95**2 / (1 - 0.95**2))
    assert s.mean == 10000002
    assert s.std == pytest.approx(1.0, rel=1e-12)
    assert s.half_width == pytest.approx(q / math.sqrt(3), rel=1e-9)
    assert s.half_width == pytest.approx(2.484138, abs=1e-6)
    assert s.text("µs") == "10000002.0 µs ± 2.5 (95 % CI, n=3, CV 1e-05 %)"


def test_another_confidence_uses_its_own_quantile():
    # Same closed form for 2 degrees of freedom at 99 %: q = sqrt(2 * 0.99^2 / (1 - 0.99^2)) = 9.924843.
    s = summarize([1, 2, 3], confidence=0.99)
    assert s.half_width == pytest.approx(9.924843 / math.sqrt(3), abs=1e-6)
    assert s.text().startswith("2.0 ± 5.7 (99 % CI, n=3,")


def test_one_value_has_no_interval_and_says_so():
    s = summarize([512.3])
    assert (s.n, s.mean) == (1, 512.3)
    assert s.std is None and s.cv is None
    assert s.low is None and s.high is None and s.half_width is None
    assert s.text("Mbit/s") == "512.3 Mbit/s (n=1: one sample, interval unknown)"


def test_constant_values_have_zero_spread():
    s = summarize([7.5, 7.5, 7.5, 7.5])
    assert (s.std, s.cv, s.low, s.high) == (0.0, 0.0, 7.5, 7.5)
    assert s.text("ms") == "7.5 ms ± 0 (95 % CI, n=4, CV 0 %)"


def test_mean_zero_has_no_cv():
    s = summarize([-1, 1])
    assert s.mean == 0 and s.cv is None
    assert "CV unknown (mean 0)" in s.text()


def test_welch_against_the_wikipedia_example():
    # Wikipedia, "Welch's t-test", Examples, example 1: published Welch t = -2.46, df = 25.0,
    # p = 0.021. Means by hand: 312.3 / 15 = 20.82 and 344.8 / 15 = 22.98667, difference -2.16667.
    a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    c = welch(a1, a2)
    assert c.difference == pytest.approx(20.82 - 344.8 / 15, rel=1e-12)
    assert c.t == pytest.approx(-2.46, abs=0.005)
    assert c.df == pytest.approx(25.0, abs=0.05)
    assert c.p == pytest.approx(0.021, abs=0.0005)
    assert c.significant
    assert c.low < c.difference < c.high < 0


def test_welch_t_df_p_and_interval_in_closed_form():
    # a = 0, 0, 0 (variance 0); b = 1, 2, 3 (mean 2, variance 1, so var/n = 1/3).
    # t = (0 - 2) / sqrt(1/3) = -sqrt(12); Welch-Satterthwaite df = (1/3)^2 / ((1/3)^2 / 2) = 2.
    # For 2 degrees of freedom the two-sided p is 1 - |t| / sqrt(2 + t^2) = 1 - sqrt(6/7) = 0.074180,
    # and the 95 % quantile is sqrt(2 * 0.95^2 / (1 - 0.95^2)) = 4.302653, half-width * sqrt(1/3).
    c = welch([0, 0, 0], [1, 2, 3])
    assert c.t == pytest.approx(-math.sqrt(12), rel=1e-12)
    assert c.df == pytest.approx(2.0, rel=1e-12)
    assert c.p == pytest.approx(1 - math.sqrt(6 / 7), rel=1e-9)
    half = math.sqrt(2 * 0.95**2 / (1 - 0.95**2)) * math.sqrt(1 / 3)
    assert (c.low, c.high) == pytest.approx((-2 - half, -2 + half), rel=1e-9)
    assert not c.significant
    # Pooled std sqrt((0 + 2 * 1) / 4) = sqrt(0.5), d = -2 / sqrt(0.5) = -2.828427, and
    # J(4) = Gamma(2) / (sqrt(2) * Gamma(1.5)) = 1 / (sqrt(2) * sqrt(pi) / 2) = 0.797885: g = -2.256758.
    assert c.hedges_g == pytest.approx(-2.256758, abs=1e-6)
    assert c.text("ms", ("FRER", "control")) == (
        "FRER − control: -2.0 ms [95 % CI -4.5, 0.5]; Welch's t = -3.46, df = 2, p = 0.074: "
        "not significant at 5 %; Hedges' g = -2.3 (large)"
    )


def test_hedges_g_by_hand():
    # a = 1..5 and b = 3..7: both variance 2.5, so the pooled std is sqrt(2.5) = 1.581139 and
    # Cohen's d = (3 - 5) / 1.581139 = -1.264911. Hedges' correction for m = 5 + 5 - 2 = 8:
    # J = Gamma(4) / (sqrt(4) * Gamma(3.5)) = 6 / (2 * 3.323351) = 0.902703
    # (Gamma(3.5) = 2.5 * 1.5 * 0.5 * sqrt(pi)), so g = -1.141839. The common approximation
    # 1 - 3 / (4m - 1) = 0.903226 agrees to 3 digits.
    c = welch([1, 2, 3, 4, 5], [3, 4, 5, 6, 7])
    j = 6 / (2 * 2.5 * 1.5 * 0.5 * math.sqrt(math.pi))
    assert c.hedges_g == pytest.approx(j * -2 / math.sqrt(2.5), rel=1e-12)
    assert c.hedges_g == pytest.approx(-1.141839, abs=1e-6)
    assert c.size == "large"
    # Same data: se = sqrt(2.5/5 + 2.5/5) = 1, t = -2, df = 1 / (2 * 0.25 / 4) = 8; the t table
    # puts |t| = 2 with 8 df between the 10 % (1.860) and 5 % (2.306) two-sided points.
    assert (c.t, c.df) == pytest.approx((-2.0, 8.0), rel=1e-12)
    assert 0.05 < c.p < 0.10


@pytest.mark.parametrize(
    ("shift", "size"), [(0.1, "negligible"), (0.3, "small"), (0.7, "medium"), (1.0, "large")]
)
def test_effect_size_words(shift, size):
    # a = 0..9 (std 3.02765) against a shifted by `shift` std: g = J(18) * shift, J(18) = 0.9576
    # (1 - 3 / (4 * 18 - 1) = 0.9577): 0.096, 0.29, 0.67, 0.96.
    a = list(range(10))
    std = math.sqrt(82.5 / 9)
    assert welch([x + shift * std for x in a], a).size == size


@pytest.mark.parametrize(
    ("p", "needed"),
    # 10 samples beyond the percentile: 10 / 0.001 = 10,000; 10 / 0.00001 = 1,000,000;
    # P50 has 50 % on each side: 10 / 0.5 = 20; P1 is the low tail: 10 / 0.01 = 1000.
    [(99.9, 10_000), (99.99, 100_000), (99.999, 1_000_000), (99, 1000), (50, 20), (1, 1000), (90, 100)],
)
def test_samples_needed(p, needed):
    assert samples_needed(p) == needed


def test_percentile_support_on_both_sides_of_its_boundary():
    assert not percentile_support(9_999, 99.9)
    assert percentile_support(10_000, 99.9)
    assert not percentile_support(10_000, 99.999)
    assert percentile_support(1_000_000, 99.999)
    assert not percentile_support(0, 50)
    assert not percentile_support(19, 50)
    assert percentile_support(20, 50)


@pytest.mark.parametrize(("k", "n"), [(1, 10), (3, 10), (7, 20), (50, 100), (2, 1000), (999, 1000)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_clopper_pearson_against_binomtest(k, n, confidence):
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    assert clopper_pearson(k, n, confidence) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_clopper_pearson_at_the_ends_in_closed_form():
    # k = 0: P(X = 0) = (1 - high)^n = α/2, so high = 1 - 0.025^(1/n); k = n mirrors it:
    # low = 0.025^(1/n). For n = 10: 1 - 0.025^0.1 = 0.308497.
    assert clopper_pearson(0, 10) == pytest.approx((0.0, 0.308497), abs=1e-6)
    assert clopper_pearson(0, 10)[0] == 0
    assert clopper_pearson(10, 10) == pytest.approx((0.025**0.1, 1.0), rel=1e-12)
    assert clopper_pearson(10, 10)[1] == 1
    assert clopper_pearson(0, 1) == pytest.approx((0.0, 0.975), rel=1e-12)


@pytest.mark.parametrize("n", [10, 132_579_327, 10**12])
def test_clopper_pearson_of_none_or_one_in_many_in_closed_form(n):
    # k = 1: P(X >= 1) = 1 - (1 - low)^n = α/2, so low = 1 - 0.975^(1/n); k = 0 (above):
    # high = 1 - 0.025^(1/n). Millions of frames with few lost is where scipy's beta.ppf fails.
    assert clopper_pearson(1, n)[0] == pytest.approx(-math.expm1(math.log(0.975) / n), rel=1e-9)
    assert clopper_pearson(0, n)[1] == pytest.approx(-math.expm1(math.log(0.025) / n), rel=1e-9)


def test_clopper_pearson_mirrors_k_and_n_minus_k():
    for k in range(11):
        low, high = clopper_pearson(k, 10)
        assert clopper_pearson(10 - k, 10) == pytest.approx((1 - high, 1 - low), rel=1e-12, abs=1e-15)


def test_clopper_pearson_where_scipy_beta_ppf_is_wrong():
    # 1000 of 132,579,327: scipy 1.17's beta.ppf(0.025, 1000, 132578328) returns 1.52e-05, twice
    # the estimate 7.54e-06; binomtest's root search is right to about 1e-7.
    ci = binomtest(1000, 132_579_327).proportion_ci(method="exact")
    assert clopper_pearson(1000, 132_579_327) == pytest.approx((ci.low, ci.high), rel=1e-6)


def test_loss_of_agreeing_repetitions_is_the_plain_clopper_pearson_of_the_pooled_counts():
    # 5 of 100 lost four times: every lost_i equals sent_i * p, X² = 0, phi = max(1, 0) = 1.
    r = loss_interval([5, 5, 5, 5], [100, 100, 100, 100])
    assert (r.n, r.estimate, r.confidence) == (4, 0.05, 0.95)
    assert (r.low, r.high) == clopper_pearson(20, 400)
    assert r.method == "quasi-binomial Clopper-Pearson (phi 1)"
    # 4, 6, 5, 5: X² = (1 + 1) / (100 * 0.05 * 0.95) = 0.42 < n - 1, still phi 1.
    assert loss_interval([4, 6, 5, 5], [100] * 4) == r


def test_loss_of_disagreeing_repetitions_has_a_wider_interval():
    # Same pooled 20 / 400 = 0.05, all lost in one repetition: X² = (3 * 5² + 15²) / 4.75
    # = 63.158, phi = X² / 3 = 400 / 19 = 21.05, effective counts 0.95 of 19.
    agree = loss_interval([5, 5, 5, 5], [100] * 4)
    disagree = loss_interval([0, 0, 20, 0], [100] * 4)
    assert disagree.estimate == agree.estimate == 0.05
    assert disagree.method == "quasi-binomial Clopper-Pearson (phi 21)"
    assert disagree.low < agree.low < agree.high < disagree.high
    # The effective counts lie between 0 and 1 of 19, and so does the interval.
    assert clopper_pearson(0, 19)[1] < disagree.high < clopper_pearson(1, 19)[1]
    assert clopper_pearson(0, 19)[0] < disagree.low < clopper_pearson(1, 19)[0]


def test_loss_interval_with_whole_effective_counts():
    # 25 and 75 of 100: p = 0.5, X² = 2 * 25² / (100 * 0.25) = 50 = phi (n - 1 = 1), so the
    # effective counts are 100 / 50 = 2 of 200 / 50 = 4: the Clopper-Pearson interval of 2 of 4.
    r = loss_interval([25, 75], [100, 100])
    ci = binomtest(2, 4).proportion_ci(method="exact")
    assert r.method == "quasi-binomial Clopper-Pearson (phi 50)"
    assert (r.low, r.high) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_loss_interval_contains_the_ratio_when_the_effective_counts_are_small():
    # 1 of 1 and 0 of 28: phi = 29, effective counts 1/29 of 1, a 99.9 % low bound near 1e-97.
    # 7 of 8 and 226 of 227: phi 13.3, effective counts 17.49 of 17.64; rounded to 17 of 18
    # they would miss p = 0.9915 at 50 %.
    assert loss_interval([1, 0], [1, 28], 0.999).low < 1 / 29
    r = loss_interval([7, 226], [8, 227], 0.5)
    assert r.low < r.estimate < r.high


def test_loss_interval_at_no_loss_and_total_loss_stays_in_range():
    # p = 0 and p = 1 have phi 1: the Clopper-Pearson ends of 0 of 300 and 300 of 300.
    none = loss_interval([0, 0, 0], [100, 100, 100])
    assert (none.estimate, none.low) == (0, 0)
    assert none.high == pytest.approx(1 - 0.025 ** (1 / 300), rel=1e-12)
    assert none.method.endswith("(phi 1)")
    every = loss_interval([100, 50], [100, 50])
    assert (every.estimate, every.high) == (1, 1)
    assert every.low == pytest.approx(0.025 ** (1 / 150), rel=1e-12)


def test_loss_of_one_repetition_has_no_interval():
    r = loss_interval([3], [100])
    assert (r.n, r.estimate, r.low, r.high) == (1, 0.03, None, None)
    assert r.method == "n = 1: no interval"


@given(
    st.lists(
        st.integers(1, 10**9).flatmap(lambda m: st.tuples(st.integers(0, m), st.just(m))), min_size=2, max_size=20
    ),
    st.sampled_from([0.5, 0.9, 0.95, 0.99]),
)
def test_loss_interval_stays_in_range_and_contains_the_ratio(pairs, confidence):
    lost, sent = [k for k, _ in pairs], [m for _, m in pairs]
    r = loss_interval(lost, sent, confidence)
    assert 0 <= r.low <= r.estimate <= r.high <= 1


@pytest.mark.parametrize("count", [False, True])
def test_skewed_retransmits_stay_nonnegative_and_contain_the_mean(count):
    # 0, 0, 900: the t interval 300 ± 4.303 * 519.6 / sqrt(3) = 300 ± 1291 would go below 0.
    assert summarize([0, 0, 900]).low < 0
    r = nonnegative_interval([0, 0, 900], count=count)
    assert (r.n, r.estimate) == (3, 300)
    assert r.method == "t on log(1 + x)"
    assert 0 == r.low < r.estimate < r.high


def test_counts_use_the_log_interval_even_when_t_stays_nonnegative():
    # 290, 300, 310: t gives 300 ± 24.8, already >= 0, and is taken as is for a rate ...
    s = summarize([290, 300, 310])
    r = nonnegative_interval([290, 300, 310])
    assert (r.n, r.estimate, r.low, r.high, r.method) == (3, s.mean, s.low, s.high, "t")
    # ... while a count always goes through log(1 + x): nearly the same interval, skewed up.
    c = nonnegative_interval([290, 300, 310], count=True)
    assert c.method == "t on log(1 + x)"
    assert 0 < c.low < c.estimate == 300 < c.high
    assert (c.low, c.high) == pytest.approx((s.low, s.high), rel=0.01)
    assert c.high - c.estimate > c.estimate - c.low


def test_a_mean_above_the_log_interval_takes_the_high_bound_of_t():
    # Nine 0 and one 1000: mean 100, but exp(mean of log(1 + x)) - 1 = 1001^0.1 - 1 = 0.995 and
    # its interval ends far below 100; t's high bound 100 + 2.262 * 316.2 / sqrt(10) = 326.2.
    xs = [0] * 9 + [1000]
    r = nonnegative_interval(xs)
    assert r.method == "t on log(1 + x), widened to t's high bound to contain the mean"
    assert r.low == 0 and r.estimate == 100
    assert r.high == summarize(xs).high == pytest.approx(326.2, abs=0.1)


def test_nonnegative_interval_of_equal_values_and_of_one_value():
    assert nonnegative_interval([5, 5, 5], count=True) == nonnegative_interval([5, 5, 5])
    r = nonnegative_interval([5, 5, 5])
    assert (r.n, r.estimate, r.low, r.high, r.method) == (3, 5, 5, 5, "no spread")
    assert (nonnegative_interval([0, 0]).low, nonnegative_interval([0, 0]).high) == (0, 0)
    one = nonnegative_interval([7.5], confidence=0.99)
    assert (one.n, one.estimate, one.confidence, one.low, one.high) == (1, 7.5, 0.99, None, None)
    assert one.method == "n = 1: no interval"


@given(
    st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=2, max_size=40),
    st.booleans(),
    st.sampled_from([0.5, 0.9, 0.95, 0.99]),
)
def test_nonnegative_interval_stays_nonnegative_and_contains_the_mean(xs, count, confidence):
    r = nonnegative_interval(xs, confidence, count)
    assert 0 <= r.low <= r.estimate <= r.high


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: summarize([]), r"^values is empty; a figure needs at least one value$"),
        (lambda: summarize([1.0, float("nan")]), r"^values\[1\] is nan; every value must be a finite number$"),
        (lambda: summarize([float("inf")]), r"^values\[0\] is inf; every value must be a finite number$"),
        (lambda: summarize([1, "2"]), r"^values\[1\] is '2'; every value must be a finite number$"),
        (lambda: summarize([1, -1e300]), r"^values\[1\] is -1e\+300; every value must lie within ±1e\+150$"),
        (lambda: summarize([True]), r"^values\[0\] is True; every value must be a finite number$"),
        (lambda: summarize([1, 2], confidence=1.0), r"^confidence 1.0 is out of range; it must be strictly between 0 and 1"),
        (lambda: summarize([1, 2], confidence=0), r"^confidence 0 is out of range;"),
        (lambda: summarize([1, 2], confidence=95), r"^confidence 95 is out of range;"),
        (lambda: welch([1], [1, 2]), r"^a has 1 value; Welch's t-test needs at least 2 in each sample$"),
        (lambda: welch([1, 2], [float("-inf"), 2]), r"^b\[0\] is -inf; every value must be a finite number$"),
        (lambda: welch([1, 2], []), r"^b is empty;"),
        (lambda: welch([3, 3], [4, 4, 4]), r"^a and b are both constant \(3.0 and 4.0\); .* need spread"),
        (lambda: welch([1, 2], [3, 4], confidence=-0.5), r"^confidence -0.5 is out of range;"),
        (lambda: samples_needed(100), r"^percentile 100 is out of range; it must be a number strictly between 0 and 100"),
        (lambda: samples_needed(0), r"^percentile 0 is out of range;"),
        (lambda: samples_needed(float("nan")), r"^percentile nan is out of range;"),
        (lambda: percentile_support(-1, 99), r"^sample count -1 is invalid; it must be a whole number >= 0$"),
        (lambda: percentile_support(10.5, 99), r"^sample count 10.5 is invalid;"),
        (lambda: clopper_pearson(0, 0), r"^n 0 is invalid; the number of trials must be a whole number >= 1$"),
        (lambda: clopper_pearson(1, 2.0), r"^n 2.0 is invalid;"),
        (lambda: clopper_pearson(-1, 10), r"^k -1 is invalid; successes must be a whole number in 0..=10$"),
        (lambda: clopper_pearson(11, 10), r"^k 11 is invalid;"),
        (lambda: clopper_pearson(1.5, 10), r"^k 1.5 is invalid;"),
        (lambda: clopper_pearson(True, 10), r"^k True is invalid;"),
        (lambda: clopper_pearson(1, 10, confidence=1), r"^confidence 1 is out of range;"),
        (lambda: loss_interval([], []), r"^lost has 0 and sent 0 values; a loss ratio needs at least one repetition$"),
        (lambda: loss_interval([1, 2], [10]), r"^lost has 2 values and sent 1; each repetition needs one \(lost, sent\) pair$"),
        (lambda: loss_interval([0, 0], [10, 0]), r"^sent\[1\] is 0; frames sent must be a whole number >= 1$"),
        (lambda: loss_interval([0], [-5]), r"^sent\[0\] is -5;"),
        (lambda: loss_interval([0], [10.0]), r"^sent\[0\] is 10.0;"),
        (lambda: loss_interval([1, 11], [10, 10]), r"^lost\[1\] is 11; it must be a whole number in 0..=10 \(sent\[1\]\)$"),
        (lambda: loss_interval([-1], [10]), r"^lost\[0\] is -1;"),
        (lambda: loss_interval([0.5], [10]), r"^lost\[0\] is 0.5;"),
        (lambda: loss_interval([1], [10], confidence=0), r"^confidence 0 is out of range;"),
        (lambda: nonnegative_interval([1, -0.5]), r"^values\[1\] is -0.5; every value must be >= 0$"),
        (lambda: nonnegative_interval([]), r"^values is empty;"),
        (lambda: nonnegative_interval([1, float("nan")]), r"^values\[1\] is nan; every value must be a finite number$"),
        (lambda: nonnegative_interval([1, 2], confidence=2), r"^confidence 2 is out of range;"),
    ],
)
def test_bad_input_is_refused_with_what_would_be_valid(call, message):
    with pytest.raises(ValueError, match=message):
        call()


_values = st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=2, max_size=40)


@given(_values, st.sampled_from([0.5, 0.9, 0.95, 0.99]))
def test_interval_contains_the_mean(xs, confidence):
    s = summarize(xs, confidence)
    assert s.low <= s.mean <= s.high


@given(_values)
def test_interval_shrinks_as_n_grows_with_the_same_spread(xs):
    # The same values twice: the same spread, twice the samples.
    assume(max(xs) - min(xs) > 1e-3)
    once, twice = summarize(xs), summarize(xs * 2)
    assert twice.half_width < once.half_width
