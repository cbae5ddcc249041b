"""Statistics of run summaries (after benchstat's benchmath): the unit of replication is the run.

Each run is summarised by one number per metric (its median latency, its server CPU per operation, its
throughput). Arms are interleaved per round, so a round is a block: the candidate/baseline ratio is taken
within each round and the comparison is made on those per-round log ratios,

    ratio = exp(mean(log(candidate_r / baseline_r)))       (the geometric mean of per-round ratios)
    CI    = exp(mean +- t(n-1) * sd / sqrt(n))             (Student t on the log ratios)
    p     = two-sided paired t test on the log ratios

which is exact when run-to-run noise is log-normal and, unlike a rank test, has no floor on p at small n
(Wilcoxon's signed-rank test cannot go below p = 2/2^n: 0.0625 at 5 rounds). Where rounds are incomplete,
Welch's unpaired t test on the logs is used instead and said so. Per-sample distributions (every
connection, every query) never enter a test: samples inside one run share the machine's state.

Values are costs by default (higher is worse); pass higher_is_better=True for throughput.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum

import numpy as np

from secoverhead.core.units import figure, p_text, signed

CONFIDENCE = 0.95
NOISE = 0.02  # changes within +-2 % are "no change" even when real: too small to act on
PAIRED = "paired by round"
DUET = "paired by duet (both arms at once)"
UNPAIRED = "unpaired (rounds incomplete)"
PAIRED_TEST = "paired t test on per-round log ratios"
UNPAIRED_TEST = "Welch t test on log run summaries"
PAIRED_CI = "Student t interval of the geometric mean of per-round ratios"
UNPAIRED_CI = "Welch interval of the ratio of geometric means"
PAIRED_DIFF_TEST = "paired t test on per-round differences"
UNPAIRED_DIFF_TEST = "Welch t test on run summaries"
PAIRED_DIFF_CI = "Student t interval of the mean per-round difference"
UNPAIRED_DIFF_CI = "Welch interval of the difference of means"


class Change(StrEnum):
    """What a comparison says about the candidate, in words a DBA reads."""

    WORSE = "worse"
    BETTER = "better"
    SAME = "no change"
    UNCLEAR = "inconclusive"


def _t():
    # deferred: studies import this; the CLI checks their parameters before heavy modules load
    from scipy import special  # light next to scipy.stats; only the t distribution is needed

    return special


def t_quantile(df: float, q: float) -> float:
    return float(_t().stdtrit(df, q))


def t_sf2(df: float, t: float) -> float:
    """Two-sided p-value of a t statistic."""
    return float(2 * _t().stdtr(df, -abs(t)))


@dataclass
class RatioEstimate:
    """candidate / baseline, with its interval and test."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int  # rounds (paired) or the smaller arm's runs (unpaired)
    design: str
    test: str
    ci_method: str
    confidence: float
    zeros: int = 0  # rounds where one arm measured exactly zero (a total loss): the interval reaches 0 or infinity


def _positive(x: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[np.isfinite(a) & (a > 0)]


def paired_ratio(
    baseline: Sequence[float], candidate: Sequence[float], *, confidence: float = CONFIDENCE
) -> RatioEstimate:
    """Per-round pairs (baseline[i], candidate[i]); a pair with a missing or negative value is dropped. A round where
    one arm measured exactly zero (no transaction at all) is a total loss, never dropped: the interval then reaches
    0 (the candidate's zero) or infinity (the baseline's), however the other rounds lie."""
    b, c = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    ok = np.isfinite(b) & np.isfinite(c) & (b > 0) & (c > 0)
    lost_c = np.isfinite(b) & (b > 0) & (c == 0)
    lost_b = np.isfinite(c) & (c > 0) & (b == 0)
    est = _paired_log_ratio(np.log(c[ok]) - np.log(b[ok]), confidence)
    zeros = int(lost_c.sum() + lost_b.sum())
    if not zeros:
        return est
    return dataclasses.replace(
        est,
        ci_low=0.0 if lost_c.any() else est.ci_low,
        ci_high=math.inf if lost_b.any() else est.ci_high,
        n=est.n + zeros,
        zeros=zeros,
    )


def _paired_log_ratio(d: np.ndarray, confidence: float) -> RatioEstimate:
    n = len(d)
    nan = float("nan")
    if n == 0:
        return RatioEstimate(nan, nan, nan, nan, 0, PAIRED, PAIRED_TEST, PAIRED_CI, confidence)
    mean = float(d.mean())
    if n < 2:
        return RatioEstimate(math.exp(mean), nan, nan, nan, n, PAIRED, PAIRED_TEST, PAIRED_CI, confidence)
    se = float(d.std(ddof=1)) / math.sqrt(n)
    if se == 0.0:
        p = 1.0 if mean == 0.0 else 0.0
        lo = hi = math.exp(mean)
    else:
        p = t_sf2(n - 1, mean / se)
        half = t_quantile(n - 1, 0.5 + confidence / 2) * se
        lo, hi = math.exp(mean - half), math.exp(mean + half)
    return RatioEstimate(math.exp(mean), lo, hi, p, n, PAIRED, PAIRED_TEST, PAIRED_CI, confidence)


def welch_ratio(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    between_sd: float = 0.0,
    between_df: float = math.inf,
) -> RatioEstimate:
    """Ratio of geometric means of two independent sets of run summaries. Where each set drew its level once from
    a spread between reports (`between_sd`, of the log, estimated with `between_df` degrees of freedom), both
    draws add to the variance and Satterthwaite's degrees of freedom take in how well that spread is known."""
    a, b = np.log(_positive(baseline)), np.log(_positive(candidate))
    n = min(len(a), len(b))
    nan = float("nan")
    if len(a) == 0 or len(b) == 0:
        return RatioEstimate(nan, nan, nan, nan, n, UNPAIRED, UNPAIRED_TEST, UNPAIRED_CI, confidence)
    diff = float(b.mean() - a.mean())
    if n < 2:
        return RatioEstimate(math.exp(diff), nan, nan, nan, n, UNPAIRED, UNPAIRED_TEST, UNPAIRED_CI, confidence)
    va, vb, vt = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b), 2 * between_sd**2
    se = math.sqrt(va + vb + vt)
    if se == 0.0:
        p = 1.0 if diff == 0.0 else 0.0
        lo = hi = math.exp(diff)
    else:
        parts = va**2 / (len(a) - 1) + vb**2 / (len(b) - 1) + vt**2 / between_df
        df = (va + vb + vt) ** 2 / parts if parts > 0 else math.inf  # only a known tau, exactly: the normal
        p = t_sf2(df, diff / se)
        half = t_quantile(df, 0.5 + confidence / 2) * se
        lo, hi = math.exp(diff - half), math.exp(diff + half)
    return RatioEstimate(math.exp(diff), lo, hi, p, n, UNPAIRED, UNPAIRED_TEST, UNPAIRED_CI, confidence)


def mean_interval(d: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float, float, int]:
    """Mean of d, its two-sided t interval and p against 0, and n."""
    n = len(d)
    nan = float("nan")
    if n == 0:
        return nan, nan, nan, nan, 0
    mean = float(d.mean())
    if n < 2:
        return mean, nan, nan, nan, n
    se = float(d.std(ddof=1)) / math.sqrt(n)
    if se == 0.0:
        return mean, mean, mean, 1.0 if mean == 0.0 else 0.0, n
    half = t_quantile(n - 1, 0.5 + confidence / 2) * se
    return mean, mean - half, mean + half, t_sf2(n - 1, mean / se), n


def paired_difference(
    baseline: Sequence[float], candidate: Sequence[float], *, confidence: float = CONFIDENCE
) -> RatioEstimate:
    """Per-round differences candidate - baseline (for percentage points, where a ratio means nothing)."""
    b, c = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    ok = np.isfinite(b) & np.isfinite(c)
    mean, lo, hi, p, n = mean_interval(c[ok] - b[ok], confidence)
    return RatioEstimate(mean, lo, hi, p, n, PAIRED, PAIRED_DIFF_TEST, PAIRED_DIFF_CI, confidence)


def welch_difference(
    baseline: Sequence[float], candidate: Sequence[float], *, confidence: float = CONFIDENCE
) -> RatioEstimate:
    a, b = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    n = min(len(a), len(b))
    nan = float("nan")
    if n == 0 or n < 2:
        diff = float(b.mean() - a.mean()) if n else nan
        return RatioEstimate(diff, nan, nan, nan, n, UNPAIRED, UNPAIRED_DIFF_TEST, UNPAIRED_DIFF_CI, confidence)
    diff = float(b.mean() - a.mean())
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0.0:
        return RatioEstimate(
            diff, diff, diff, 1.0 if diff == 0 else 0.0, n, UNPAIRED, UNPAIRED_DIFF_TEST, UNPAIRED_DIFF_CI, confidence
        )
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t_quantile(df, 0.5 + confidence / 2) * se
    return RatioEstimate(
        diff,
        diff - half,
        diff + half,
        t_sf2(df, diff / se),
        n,
        UNPAIRED,
        UNPAIRED_DIFF_TEST,
        UNPAIRED_DIFF_CI,
        confidence,
    )


def change(ratio: float, lo: float, hi: float, *, noise: float = NOISE, higher_is_better: bool = False) -> Change:
    """Worse or better when the whole interval lies beyond the noise band (+-noise around 1) on one side; no
    change when the whole interval lies inside it; inconclusive otherwise (an interval that merely excludes 1
    is no change a DBA would act on)."""
    if not all(map(math.isfinite, (ratio, lo, hi))):
        return Change.UNCLEAR
    if lo > 1.0 + noise or hi < 1.0 - noise:
        up = lo > 1.0 + noise
        return Change.BETTER if up == higher_is_better else Change.WORSE
    if 1.0 - noise <= lo and hi <= 1.0 + noise:
        return Change.SAME
    return Change.UNCLEAR


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone), NaN kept as NaN."""
    p = np.asarray(p_values, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    order = ok[np.argsort(p[ok])]
    running = 0.0
    for i, idx in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[idx]))
        out[idx] = running
    return out


@dataclass
class Comparison:
    """One candidate arm against the baseline on one metric in one cell (factor combination)."""

    metric: str
    baseline: str
    candidate: str
    cell: dict
    baseline_median: float  # median of the baseline's run summaries
    candidate_median: float
    ratio: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float  # Holm-adjusted over the comparisons made together
    change: Change
    n_baseline: int  # runs
    n_candidate: int
    n_pairs: int  # rounds with both arms
    design: str
    test: str
    ci_method: str
    higher_is_better: bool = False
    noise: float = NOISE
    family: int = 1
    quantity: str = "ratio"  # "ratio": ratio/ci are candidate/baseline; "difference": candidate - baseline
    warnings: list[str] = field(default_factory=list)

    @property
    def change_pct(self) -> float:
        if self.quantity == "difference":
            return self.ratio / self.baseline_median * 100.0 if self.baseline_median else float("nan")
        return (self.ratio - 1.0) * 100.0

    @property
    def n_text(self) -> str:
        if self.design == PAIRED or self.design.endswith("paired by round"):
            return f"n={self.n_pairs} rounds"
        if self.design == DUET:
            return f"n={self.n_pairs} duet runs"
        return f"n={self.n_baseline}/{self.n_candidate} runs"

    def evidence(self, unit: str = "") -> str:
        """The numbers, n, test and CI that decide, in one line."""
        u = f" {unit}" if unit else ""
        corr = f", Bonferroni over {self.family}" if self.family > 1 else ""
        if self.quantity == "difference":
            return (
                f"median {figure(self.baseline_median)}{u} -> "
                f"{figure(self.candidate_median)}{u}; difference {signed(self.ratio)}{u}, "
                f"{self.confidence * 100:.4g} % CI {signed(self.ci_low)} to {signed(self.ci_high)}{corr}; "
                f"{self.test}, {p_text(self.p_value)}; {self.n_text} ({self.design})"
            )
        return (
            f"median {figure(self.baseline_median)}{u} -> {figure(self.candidate_median)}{u}; ratio {self.ratio:.3f} "
            f"({self.change_pct:+.1f} %), {self.confidence * 100:.4g} % CI {self.ci_low:.3f}-{self.ci_high:.3f}{corr}; "
            f"{self.test}, {p_text(self.p_value)}; {self.n_text} ({self.design})"
        )

    def as_dict(self) -> dict:
        return asdict(self) | {"change_pct": self.change_pct, "change": str(self.change)}


def bootstrap_medians(sorted_x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of n_boot bootstrap resamples of sorted_x, drawn exactly in O(n_boot).

    A resample's k-th order statistic is sorted_x[floor(U_(k) * n)] with U_(k) the k-th order statistic of n
    uniforms, which is Beta(k, n - k + 1); for even n the next one is U_(k) + (1 - U_(k)) * Beta(1, n - k).
    """
    n = len(sorted_x)
    k = (n + 1) // 2
    u_k = rng.beta(k, n - k + 1, size=n_boot)
    lo = sorted_x[np.minimum((u_k * n).astype(np.int64), n - 1)]
    if n % 2:
        return lo
    u_next = u_k + (1.0 - u_k) * rng.beta(1, n - k, size=n_boot)
    hi = sorted_x[np.minimum((u_next * n).astype(np.int64), n - 1)]
    return (lo + hi) / 2.0


N_BOOT = 4000


def median_ci(values: Sequence[float] | np.ndarray, *, seed: int = 0) -> tuple[float, float, float]:
    """Median of run summaries and its bootstrap 95 % CI (for tables; tests use the t intervals above)."""
    x = np.asarray(values, dtype=float)
    x = np.sort(x[np.isfinite(x)])
    if not len(x):
        return (np.nan, np.nan, np.nan)
    boot = bootstrap_medians(x, N_BOOT, np.random.default_rng(seed))
    return float(np.median(x)), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))


def wilson(k: float, n: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson's interval of a proportion from k of n draws (a split's system ticks of all its ticks; an effective
    count may be fractional): unlike the normal approximation it stays inside [0, 1] and is not empty at k = 0 or
    k = n. (0, 1) with no draws."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"{k} of {n} draws")
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    p, z2 = k / n, z * z / n
    centre, half = (p + z2 / 2) / (1 + z2), z * math.sqrt(p * (1 - p) / n + z2 / (4 * n)) / (1 + z2)
    return (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)


def combined_share(
    k: Sequence[int], n: Sequence[int], confidence: float = CONFIDENCE
) -> tuple[float, float, float, float]:
    """A proportion combined over runs (each run's system ticks k of its n) and its Wilson interval: ticks as draws,
    their count shrunk by the runs' overdispersion (Pearson's chi-square over k - 1 runs, when above 1), since runs
    whose true shares differ spread more than their draws say. (share, low, high, draws the interval rests on)."""
    ks, ns = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    ks, ns = ks[ns > 0], ns[ns > 0]
    total = float(ns.sum())
    if not total:
        return math.nan, 0.0, 1.0, 0.0
    p = float(ks.sum()) / total
    dispersion = 1.0
    if len(ns) > 1 and 0 < p < 1:
        dispersion = max(1.0, float(((ks - ns * p) ** 2 / (ns * p * (1 - p))).sum()) / (len(ns) - 1))
    draws = total / dispersion
    lo, hi = wilson(p * draws, draws, confidence)
    return p, lo, hi, draws


def tukey_outliers(x: np.ndarray) -> int:
    """Number of values outside the 1.5 IQR fences."""
    if len(x) < 4:
        return 0
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    return int(np.sum((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)))


def widen(lo: float, hi: float, tau: float, n: int, confidence: float, *, log: bool) -> tuple[float, float]:
    """An interval over a run's rounds widened by a between-run sd `tau` (on the log quantity for a ratio): the
    run's own standard error and tau add in variance, read at the same t quantile (n rounds)."""
    if not tau or n < 2 or not (math.isfinite(lo) and math.isfinite(hi)) or (log and lo <= 0):
        return lo, hi
    a, b = (math.log(lo), math.log(hi)) if log else (lo, hi)
    centre, half = (a + b) / 2, (b - a) / 2
    half = math.sqrt(half**2 + (t_quantile(n - 1, 0.5 + confidence / 2) * tau) ** 2)
    a, b = centre - half, centre + half
    return (math.exp(a), math.exp(b)) if log else (a, b)


CREDIBLE = 0.001  # a rate is credibly above alpha when so many wrong verdicts would be this rare at alpha


def credibly_above(wrong: int, experiments: int, alpha: float = 0.05) -> bool:
    """Whether `wrong` of `experiments` is credibly more than alpha: the exact binomial tail P(X >= wrong) at
    alpha is below CREDIBLE (a rule that errs at alpha passes whatever the count, one at 30 % fails at 24)."""
    from scipy import stats as scipy_stats

    return wrong > 0 and float(scipy_stats.binom.sf(wrong - 1, experiments, alpha)) < CREDIBLE


# A confidence sequence for a mean from estimates with unknown spread (Lai 1976; Wang & Ramdas 2023, "Anytime-valid
# t-tests and confidence sequences for Gaussian means with unknown variance"): the t test's scale-invariant
# likelihood ratio mixed over a normal prior on the standardised effect, delta ~ N(0, 1 / MIXTURE). Under the null
# it is a test martingale, so by Ville's inequality it ever reaches 1/alpha with chance at most alpha, however many
# reports are read and however often: the interval below misses the truth at ANY look with chance at most alpha.
# MIXTURE is fixed from the design, not from data: the interval is tightest for series of about 5-30 reports (a
# prior sd of 4.5 report-to-report sds), finite from 3 reports, and keeps narrowing as 1/sqrt(k) after.
MIXTURE = 0.05


def sequence_half(sd: float, k: int, confidence: float, mixture: float = MIXTURE) -> float:
    """Half-width of the confidence sequence about the mean of k estimates whose sample sd is `sd` (inf where k is
    too few to bound it at this level)."""
    if k < 2 or not math.isfinite(sd) or sd < 0:
        return math.inf
    bound = ((mixture + k) / mixture / (1 - confidence) ** 2) ** (1 / k)
    room = k + mixture * (1 - bound)
    if room <= 0:
        return math.inf
    return math.sqrt((bound - 1) * (mixture + k) * (k - 1) * sd * sd / (k * room))


def confidence_sequence(values: Sequence[float], confidence: float) -> tuple[float, float, float, float] | None:
    """(mean, low, high, sd) of the estimates, the interval valid at every k at once; None under two or where one
    is not finite."""
    k = len(values)
    if k < 2 or not all(math.isfinite(v) for v in values):
        return None
    mean = sum(values) / k
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (k - 1))
    half = sequence_half(sd, k, confidence)
    return mean, mean - half, mean + half, sd


def reports_to_decide(sd: float, room: float, confidence: float, most: int = 10_000) -> int | None:
    """The fewest estimates at this spread whose confidence sequence's half-width is under `room` (the distance
    from the estimate to its nearest cut), were the estimate and the spread to stay; None past `most`."""
    if not (room > 0 and math.isfinite(sd)):
        return None
    lo, hi = 2, 2
    while sequence_half(sd, hi, confidence) >= room:
        lo, hi = hi, hi * 2
        if hi > most:
            return None
    while lo < hi:  # the half-width falls with k past the first finite one: bisect
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if sequence_half(sd, mid, confidence) >= room else (lo, mid)
    return hi
