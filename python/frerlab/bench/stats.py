"""Statistics of benchmark figures: every figure is reported with its n, mean, sample standard
deviation, coefficient of variation and a confidence interval of the mean (`summarize`); FRER
against control is a difference of means with its interval, Welch's t-test and Hedges' g
(`welch`); and a latency percentile is only reported when enough samples lie beyond it
(`percentile_support`). Quantities with a bounded range get intervals that stay in it: the
exact binomial interval of a proportion (`clopper_pearson`), the loss ratio of repeated trials
(`loss_interval`) and the mean of a quantity that cannot be negative (`nonnegative_interval`).
docs/benchmarks.md ("Statistics") states the rules.

Bad input (no values, a NaN, infinite or huge value, a confidence outside (0, 1)) raises ValueError
naming the value and what would be valid."""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from scipy import optimize as _optimize
from scipy import special as _special
from scipy import stats as _scipy

#: Largest magnitude of a value: beyond it the squares of the deviations overflow a float.
MAX_MAGNITUDE = 1e150

#: log of the smallest positive float: a beta quantile below it is 0.
_LOG_TINIEST = math.log(math.ulp(0.0))

#: A percentile is supported when at least this many samples are expected beyond it (on its
#: smaller side): with fewer, the empirical percentile is set by a handful of extreme samples.
TAIL_SAMPLES = 10


@dataclass(frozen=True)
class Summary:
    """n, mean, spread and the confidence interval of the mean of one set of values."""

    n: int
    mean: float
    #: Sample standard deviation (ddof=1); None for one value (unknown, not zero).
    std: float | None
    #: std / |mean|; None when the mean is 0 or the std is unknown.
    cv: float | None
    confidence: float
    #: Bounds of the interval of the mean (Student's t); None for one value.
    low: float | None
    high: float | None

    @property
    def half_width(self) -> float | None:
        """Half the width of the interval of the mean; None for one value."""
        return None if self.high is None else self.high - self.mean

    def text(self, unit: str = "") -> str:
        """The figure as one line, e.g. "512.3 Mbit/s ± 4.1 (95 % CI, n=5, CV 0.6 %)"."""
        unit = f" {unit}" if unit else ""
        if self.half_width is None:
            return f"{_number(self.mean)}{unit} (n=1: one sample, interval unknown)"
        mean, half = _rounded(self.mean, self.half_width)
        cv = "CV unknown (mean 0)" if self.cv is None else f"CV {_two_digits(100 * self.cv)} %"
        return f"{mean}{unit} ± {half} ({_percent(self.confidence)} % CI, n={self.n}, {cv})"


@dataclass(frozen=True)
class Comparison:
    """The difference of the means of a and b (a − b) with Welch's t-test and Hedges' g."""

    a: Summary
    b: Summary
    difference: float
    confidence: float
    #: Bounds of the interval of the difference (Welch–Satterthwaite degrees of freedom).
    low: float
    high: float
    t: float
    df: float
    #: Two-sided p-value of Welch's t.
    p: float
    #: Hedges' g: the difference over the pooled standard deviation, corrected for small samples.
    hedges_g: float

    @property
    def significant(self) -> bool:
        """Whether the difference is significant at the level 1 − confidence (5 % for 0.95)."""
        return self.p < 1 - self.confidence

    @property
    def size(self) -> str:
        """Cohen's words for |g|: negligible (< 0.2), small (< 0.5), medium (< 0.8), large."""
        g = abs(self.hedges_g)
        return "negligible" if g < 0.2 else "small" if g < 0.5 else "medium" if g < 0.8 else "large"

    def text(self, unit: str = "", names: tuple[str, str] = ("a", "b")) -> str:
        """One sentence: the difference, its interval, the test, and whether it is significant
        and how large, e.g. "FRER − control: -3.1 Mbit/s [95 % CI -5.2, -1.0]; Welch's t = ...
        significant at 5 %; Hedges' g = -1.9 (large)"."""
        unit = f" {unit}" if unit else ""
        half = (self.high - self.low) / 2
        diff, _ = _rounded(self.difference, half)
        low, _ = _rounded(self.low, half)
        high, _ = _rounded(self.high, half)
        level = _percent(1 - self.confidence)
        verdict = "significant" if self.significant else "not significant"
        return (
            f"{names[0]} − {names[1]}: {diff}{unit} [{_percent(self.confidence)} % CI {low}, "
            f"{high}]; Welch's t = {self.t:.3g}, df = {self.df:.3g}, p = {self.p:.2g}: "
            f"{verdict} at {level} %; Hedges' g = {self.hedges_g:.2g} ({self.size})"
        )


@dataclass(frozen=True)
class Interval:
    """An estimate with a confidence interval that stays within the quantity's range."""

    n: int
    estimate: float
    confidence: float
    #: Bounds of the interval; None for one value (n = 1).
    low: float | None
    high: float | None
    #: How the interval was made, e.g. "quasi-binomial Clopper-Pearson (phi 3.2)" or "n = 1: no
    #: interval".
    method: str


def summarize(values: Iterable[float], confidence: float = 0.95) -> Summary:
    """n, mean, sample std, CV and the Student's t interval of the mean of `values`.

    # Errors
    ValueError when `values` is empty or holds a value that is not a finite number, or when
    `confidence` is not strictly between 0 and 1."""
    xs = _finite(values, "values")
    _check_confidence(confidence)
    n = len(xs)
    mean = math.fsum(xs) / n
    if n == 1:
        return Summary(1, mean, None, None, confidence, None, None)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = _t_quantile(confidence, n - 1) * std / math.sqrt(n)
    cv = None if mean == 0 else std / abs(mean)
    return Summary(n, mean, std, cv, confidence, mean - half, mean + half)


def welch(a: Iterable[float], b: Iterable[float], confidence: float = 0.95) -> Comparison:
    """The difference of means a − b with its interval, Welch's t-test and Hedges' g.

    # Errors
    ValueError for the input `summarize` refuses, when a or b has fewer than 2 values, or when
    both are constant (no spread: t and g are undefined)."""
    xa, xb = _finite(a, "a"), _finite(b, "b")
    for name, xs in (("a", xa), ("b", xb)):
        if len(xs) < 2:
            raise ValueError(
                f"{name} has {len(xs)} value; Welch's t-test needs at least 2 in each sample"
            )
    sa, sb = summarize(xa, confidence), summarize(xb, confidence)
    va, vb = sa.std**2 / sa.n, sb.std**2 / sb.n
    if va + vb == 0:
        raise ValueError(
            f"a and b are both constant ({sa.mean!r} and {sb.mean!r}); Welch's t-test and "
            "Hedges' g need spread in at least one sample"
        )
    difference = sa.mean - sb.mean
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (sa.n - 1) + vb**2 / (sb.n - 1))
    t = difference / se
    p = float(2 * _scipy.t.sf(abs(t), df))
    half = _t_quantile(confidence, df) * se
    pooled_df = sa.n + sb.n - 2
    pooled = math.sqrt(((sa.n - 1) * sa.std**2 + (sb.n - 1) * sb.std**2) / pooled_df)
    # Hedges' (1981) exact small-sample correction J(m) = Γ(m/2) / (√(m/2) Γ((m−1)/2)).
    m = pooled_df / 2
    j = math.exp(math.lgamma(m) - math.lgamma(m - 0.5)) / math.sqrt(m)
    low, high = difference - half, difference + half
    return Comparison(sa, sb, difference, confidence, low, high, t, df, p, j * difference / pooled)


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) binomial interval of the proportion k / n: the α/2 quantile of
    Beta(k, n − k + 1) and the 1 − α/2 quantile of Beta(k + 1, n − k), α = 1 − confidence;
    k = 0 gives a low bound of 0 and k = n a high bound of 1. Also right for millions of trials
    with few successes, where scipy's beta.ppf is not (see `_beta_quantile`).

    # Errors
    ValueError when `n` is not a whole number >= 1, `k` not a whole number in 0..=n, or
    `confidence` not strictly between 0 and 1."""
    if not _whole(n) or n < 1:
        raise ValueError(f"n {n!r} is invalid; the number of trials must be a whole number >= 1")
    if not _whole(k) or not 0 <= k <= n:
        raise ValueError(f"k {k!r} is invalid; successes must be a whole number in 0..={n}")
    _check_confidence(confidence)
    return _beta_interval(k, n, confidence)


def loss_interval(lost: Iterable[int], sent: Iterable[int], confidence: float = 0.95) -> Interval:
    """The loss ratio of repeated trials (one (lost, sent) pair per repetition) with an interval
    within [0, 1]. The estimate is the pooled ratio p = Σ lost / Σ sent. With n >= 2
    repetitions the interval is quasi-binomial Clopper-Pearson: the dispersion factor
    φ = max(1, X² / (n − 1)), Pearson's X² = Σ (lost_i − sent_i p)² / (sent_i p (1 − p))
    (φ = 1 when p is 0 or 1), then the Clopper-Pearson interval of the effective counts
    Σ lost / φ of Σ sent / φ, left unrounded (the beta quantiles take real counts) so that their
    ratio stays p and the interval contains it: repetitions that disagree more than binomial
    sampling explains widen the interval. One repetition has no interval.

    # Errors
    ValueError when `lost` or `sent` is empty, their lengths differ, a count is not a whole
    number, a lost count is negative or above its sent count, a sent count is below 1, or
    `confidence` is not strictly between 0 and 1."""
    lost, sent = list(lost), list(sent)
    _check_confidence(confidence)
    if not lost or not sent:
        raise ValueError(
            f"lost has {len(lost)} and sent {len(sent)} values; a loss ratio needs at least one "
            "repetition"
        )
    if len(lost) != len(sent):
        raise ValueError(
            f"lost has {len(lost)} values and sent {len(sent)}; each repetition needs one "
            "(lost, sent) pair"
        )
    for i, (k, m) in enumerate(zip(lost, sent)):
        if not _whole(m) or m < 1:
            raise ValueError(f"sent[{i}] is {m!r}; frames sent must be a whole number >= 1")
        if not _whole(k) or not 0 <= k <= m:
            raise ValueError(f"lost[{i}] is {k!r}; it must be a whole number in 0..={m} (sent[{i}])")
    n, total_lost, total_sent = len(lost), sum(lost), sum(sent)
    p = total_lost / total_sent
    if n == 1:
        return Interval(1, p, confidence, None, None, "n = 1: no interval")
    phi = 1.0
    if 0 < p < 1:
        x2 = math.fsum((k - m * p) ** 2 / (m * p * (1 - p)) for k, m in zip(lost, sent))
        phi = max(1.0, x2 / (n - 1))
    low, high = _beta_interval(total_lost / phi, total_sent / phi, confidence)
    method = f"quasi-binomial Clopper-Pearson (phi {_two_digits(phi)})"
    return Interval(n, p, confidence, low, high, method)


def nonnegative_interval(
    values: Iterable[float], confidence: float = 0.95, count: bool = False
) -> Interval:
    """The mean of a quantity that cannot be negative (a rate, a latency, a count of frames or
    retransmits) with an interval within [0, ∞). The Student's t interval of the mean (method
    "t", as `summarize`) when its low bound is >= 0 and `count` is False; otherwise the t
    interval of log(1 + x) mapped back by exp(·) − 1 (method "t on log(1 + x)"), its low bound
    clipped at 0 and its high bound infinite past the largest float; when skewed data put the
    mean above that interval, its high bound is the t interval's instead, which contains the mean
    (the method says so). Equal values give low = high = the value ("no spread"); one value has
    no interval.

    # Errors
    ValueError for the input `summarize` refuses and for a negative value."""
    xs = _finite(values, "values")
    _check_confidence(confidence)
    for i, x in enumerate(xs):
        if x < 0:
            raise ValueError(f"values[{i}] is {x!r}; every value must be >= 0")
    plain = summarize(xs, confidence)
    n, mean = plain.n, plain.mean
    if n == 1:
        return Interval(1, mean, confidence, None, None, "n = 1: no interval")
    if min(xs) == max(xs):
        return Interval(n, xs[0], confidence, xs[0], xs[0], "no spread")
    if not count and plain.low >= 0:
        return Interval(n, mean, confidence, plain.low, plain.high, "t")
    logs = summarize([math.log1p(x) for x in xs], confidence)
    # With few, wildly spread values the high bound can pass the largest float: unbounded.
    high = math.inf if logs.high > math.log(sys.float_info.max) else math.expm1(logs.high)
    # exp(mean of log(1 + x)) − 1 <= mean (Jensen): only rounding puts low above the mean.
    low = min(max(0.0, math.expm1(logs.low)), mean)
    method = "t on log(1 + x)"
    if high < mean:
        high, method = plain.high, f"{method}, widened to t's high bound to contain the mean"
    return Interval(n, mean, confidence, low, high, method)


def samples_needed(p: float) -> int:
    """How many samples the percentile `p` (in percent, e.g. 99.9) needs: enough that
    TAIL_SAMPLES of them are expected beyond it on its smaller side, ceil(10 / min(p, 100 − p) %).
    P99.9 needs 10,000; P99.999 needs 1,000,000; P50 needs 20.

    # Errors
    ValueError when `p` is not a number strictly between 0 and 100."""
    if not (_real(p) and 0 < p < 100):
        raise ValueError(
            f"percentile {p!r} is out of range; "
            "it must be a number strictly between 0 and 100 (e.g. 99.9)"
        )
    exact = Fraction(str(p))
    return math.ceil(TAIL_SAMPLES * 100 / min(exact, 100 - exact))


def percentile_support(n: int, p: float) -> bool:
    """Whether `n` samples support reporting the percentile `p` (see `samples_needed`): a report
    says "P99.999 not supported by 10,000 samples (needs 1,000,000)" when this is False.

    # Errors
    ValueError when `n` is not a whole number >= 0, or `p` is refused by `samples_needed`."""
    if not _whole(n) or n < 0:
        raise ValueError(f"sample count {n!r} is invalid; it must be a whole number >= 0")
    return n >= samples_needed(p)


def _finite(values: Iterable[float], name: str) -> list[float]:
    """The values as floats, refusing an empty set and anything not a finite number."""
    xs = []
    for i, x in enumerate(values):
        if not (_real(x) and math.isfinite(x)):
            raise ValueError(f"{name}[{i}] is {x!r}; every value must be a finite number")
        if abs(x) > MAX_MAGNITUDE:
            raise ValueError(f"{name}[{i}] is {x!r}; every value must lie within ±{MAX_MAGNITUDE:g}")
        xs.append(float(x))
    if not xs:
        raise ValueError(f"{name} is empty; a figure needs at least one value")
    return xs


def _beta_interval(k: float, n: float, confidence: float) -> tuple[float, float]:
    """The Clopper-Pearson bounds of k of n from beta quantiles; k and n may be real (effective
    counts), 0 <= k <= n, n > 0."""
    alpha = 1 - confidence
    low = 0.0 if k == 0 else _beta_quantile(alpha / 2, k, n - k + 1)
    high = 1.0 if k == n else _beta_quantile(1 - alpha / 2, k + 1, n - k)
    return low, high


def _beta_quantile(q: float, a: float, b: float) -> float:
    """The q quantile of Beta(a, b) to about 12 significant digits, found as the root of its
    distribution function in log(x): scipy's beta.ppf is off by up to a factor 2 for a small and
    b large (scipy issues 12635, 12796; e.g. 1000 of 132,579,327 frames), exactly where loss
    ratios live, and a quantile may be 1e-12 or far smaller. For a > b the mirror image,
    1 − the 1 − q quantile of Beta(b, a), keeps the root away from 1, where floats are coarse."""
    if a > b:
        return 1 - _beta_quantile(1 - q, b, a)

    def excess(log_x: float) -> float:
        return _special.betainc(a, b, math.exp(log_x)) - q

    if excess(_LOG_TINIEST) >= 0:
        return 0.0
    return math.exp(_optimize.brentq(excess, _LOG_TINIEST, 0, xtol=1e-12))


def _whole(x: object) -> bool:
    """Whether x is a whole number (an integer, not a bool)."""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _real(x: object) -> bool:
    """Whether x is a real number (not a bool, not a string)."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_confidence(confidence: float) -> None:
    if not (_real(confidence) and 0 < confidence < 1):
        raise ValueError(
            f"confidence {confidence!r} is out of range; "
            "it must be strictly between 0 and 1 (e.g. 0.95)"
        )


def _t_quantile(confidence: float, df: float) -> float:
    """The two-sided Student's t quantile for `confidence` with `df` degrees of freedom."""
    return float(_scipy.t.ppf((1 + confidence) / 2, df))


def _rounded(value: float, half_width: float) -> tuple[str, str]:
    """value and half_width as text, the half-width to 2 significant digits and the value to
    the same decimal place (4.1 -> one decimal); a zero half-width leaves the value as is."""
    if half_width == 0:
        return _number(value), "0"
    decimals = max(0, 1 - math.floor(math.log10(half_width)))
    return f"{value:.{decimals}f}", f"{half_width:.{decimals}f}"


def _number(value: float) -> str:
    return f"{value:.6g}"


def _two_digits(value: float) -> str:
    return f"{value:.2g}" if abs(value) < 100 else f"{value:.0f}"


def _percent(fraction: float) -> str:
    return f"{100 * fraction:.6g}"
