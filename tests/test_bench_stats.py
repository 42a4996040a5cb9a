"""frerlab.bench.stats against independently known results: NIST StRD reference data, the
Wikipedia Welch's t-test example, textbook t-table values and closed forms derived by hand in
the comments (never the scipy call the code itself makes)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from frerlab.bench.stats import percentile_support, samples_needed, summarize, welch


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
