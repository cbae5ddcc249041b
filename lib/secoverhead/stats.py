"""Comparing two samples of a cost like a careful benchmarker (after benchstat, pyperf and criterion):
medians, a bootstrap CI of their ratio, a Mann-Whitney U test, a noise threshold, Tukey outliers reported
but kept, Holm's correction across a sweep, and an A/A calibration of the noise floor.

Values are costs by default (time, CPU per operation: higher is slower). Pass higher_is_better=True for
throughput. Every result is deterministic for a given seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats as _st

MIN_FOR_TEST = 4  # below this, Mann-Whitney cannot reach p < 0.05 (benchstat says the same)
MIN_FOR_CI = 6  # below this, a 95 % CI of a median is not meaningful (benchstat)
TEST_NAME = "Mann-Whitney U, two-sided"
CI_NAME = "bootstrap percentile 95 % CI of the ratio of medians"
VERDICTS = ("slower", "faster", "no change", "inconclusive")


@dataclass
class Comparison:
    """candidate vs baseline. ratio = candidate median / baseline median."""

    baseline_median: float
    candidate_median: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str
    n_baseline: int
    n_candidate: int
    alpha: float
    noise: float
    higher_is_better: bool
    test: str = TEST_NAME
    ci_method: str = CI_NAME
    warnings: list[str] = field(default_factory=list)

    @property
    def change_pct(self) -> float:
        """(candidate - baseline) / baseline in percent."""
        return (self.ratio - 1.0) * 100.0

    def as_dict(self) -> dict:
        return asdict(self) | {"change_pct": self.change_pct}


def _clean(x: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[np.isfinite(a)]


def bootstrap_medians(sorted_x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of n_boot bootstrap resamples of sorted_x, drawn exactly in O(n_boot).

    A resample's k-th order statistic is sorted_x[floor(U_(k) * n)] with U_(k) the k-th order statistic of n
    uniforms, which is Beta(k, n - k + 1); for even n the next one is U_(k) + (1 - U_(k)) * Beta(1, n - k).
    This avoids materialising n_boot x n resamples (100,000-sample arms stay well under a second).
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


def tukey_outliers(x: np.ndarray) -> int:
    """Number of values outside the 1.5 IQR fences."""
    if len(x) < 4:
        return 0
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    return int(np.sum((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)))


def _verdict(
    ratio: float, lo: float, hi: float, p: float, alpha: float, noise: float, higher_is_better: bool, testable: bool
) -> str:
    if not testable or not np.isfinite(ratio):
        return "inconclusive"
    inside_noise = abs(ratio - 1.0) <= noise
    if p < alpha and not inside_noise:
        worse = ratio > 1.0 if not higher_is_better else ratio < 1.0
        return "slower" if worse else "faster"
    if inside_noise and (p < alpha or (1.0 - noise <= lo and hi <= 1.0 + noise)):
        return "no change"  # either a real but negligible shift, or confidently within the noise band
    return "inconclusive"


def compare(
    baseline: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    *,
    alpha: float = 0.05,
    noise: float = 0.02,
    higher_is_better: bool = False,
    n_boot: int = 5000,
    seed: int = 0,
) -> Comparison:
    """Compare candidate with baseline; see the module docstring for the method."""
    if not 0 < alpha < 1 or noise < 0:
        raise ValueError("alpha must be in (0, 1) and noise >= 0")
    a, b = np.sort(_clean(baseline)), np.sort(_clean(candidate))
    warnings: list[str] = []
    if len(a) == 0 or len(b) == 0:
        nan = float("nan")
        return Comparison(
            nan,
            nan,
            nan,
            nan,
            nan,
            nan,
            "inconclusive",
            len(a),
            len(b),
            alpha,
            noise,
            higher_is_better,
            warnings=["an arm has no finite samples"],
        )
    med_a, med_b = float(np.median(a)), float(np.median(b))
    ratio = med_b / med_a if med_a != 0 else float("nan")
    rng = np.random.default_rng(seed)
    boot_a = bootstrap_medians(a, n_boot, rng)
    boot_b = bootstrap_medians(b, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_b / boot_a
    lo, hi = (float(v) for v in np.nanpercentile(ratios, [2.5, 97.5]))
    if min(len(a), len(b)) < MIN_FOR_CI:
        warnings.append(f"need >= {MIN_FOR_CI} samples per arm for a meaningful 95 % CI (have {len(a)}, {len(b)})")
    testable = min(len(a), len(b)) >= MIN_FOR_TEST
    if not testable:
        warnings.append(f"need >= {MIN_FOR_TEST} samples per arm to detect a difference at alpha={alpha}")
    p = float(_st.mannwhitneyu(a, b, alternative="two-sided").pvalue) if len(a) and len(b) else float("nan")
    for name, x in (("baseline", a), ("candidate", b)):
        if (k := tukey_outliers(x)) > 0:
            warnings.append(f"{name}: {k} outlier(s) beyond Tukey's fences (kept)")
    return Comparison(
        med_a,
        med_b,
        ratio,
        lo,
        hi,
        p,
        _verdict(ratio, lo, hi, p, alpha, noise, higher_is_better, testable),
        len(a),
        len(b),
        alpha,
        noise,
        higher_is_better,
        warnings=warnings,
    )


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


def compare_sweep(
    pairs: dict[object, tuple[Sequence[float], Sequence[float]]],
    *,
    alpha: float = 0.05,
    noise: float = 0.02,
    higher_is_better: bool = False,
    seed: int = 0,
) -> dict[object, Comparison]:
    """compare() for many (baseline, candidate) pairs, with verdicts decided on Holm-adjusted p-values."""
    results = {
        key: compare(a, b, alpha=alpha, noise=noise, higher_is_better=higher_is_better, seed=seed)
        for key, (a, b) in pairs.items()
    }
    adjusted = holm([c.p_value for c in results.values()])
    for c, p_adj in zip(results.values(), adjusted, strict=True):
        c.warnings.append(f"p-value Holm-adjusted over {len(results)} comparisons (raw p={c.p_value:.3g})")
        c.p_value = float(p_adj)
        c.test = f"{TEST_NAME}, Holm-corrected"
        c.verdict = _verdict(
            c.ratio,
            c.ci_low,
            c.ci_high,
            c.p_value,
            alpha,
            noise,
            higher_is_better,
            min(c.n_baseline, c.n_candidate) >= MIN_FOR_TEST,
        )
    return results


@dataclass
class Calibration:
    """What an A/A experiment says about the noise: how far identical arms drift apart, how often the test
    cries wolf, and the smallest relative shift detected with 80 % power at this sample size."""

    n_per_arm: int
    noise_floor: float  # 95th percentile of |ratio of medians - 1| between random halves
    false_positive_rate: float
    min_detectable_effect: float | None  # None: not even the largest shift tried was detected reliably
    trials: int


def aa_calibration(
    samples: Sequence[float] | np.ndarray,
    *,
    n_per_arm: int | None = None,
    alpha: float = 0.05,
    trials: int = 400,
    power: float = 0.8,
    seed: int = 0,
    shifts: Sequence[float] = (0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5),
) -> Calibration:
    """Calibrate from repeated identical runs: resample two arms of n_per_arm (default half the samples)
    from them, many times; then multiply one arm by 1 + shift to find the minimum detectable effect."""
    x = _clean(samples)
    if len(x) < 2 * MIN_FOR_TEST:
        raise ValueError(f"need at least {2 * MIN_FOR_TEST} A/A samples, have {len(x)}")
    n = n_per_arm or len(x) // 2
    rng = np.random.default_rng(seed)
    ratios, false_pos = [], 0
    for _ in range(trials):
        a, b = rng.choice(x, n), rng.choice(x, n)
        ratios.append(np.median(b) / np.median(a) - 1.0)
        false_pos += _st.mannwhitneyu(a, b).pvalue < alpha
    mde = None
    for s in shifts:
        hits = sum(
            _st.mannwhitneyu(rng.choice(x, n), rng.choice(x, n) * (1 + s)).pvalue < alpha for _ in range(trials // 4)
        )
        if hits / (trials // 4) >= power:
            mde = float(s)
            break
    return Calibration(n, float(np.percentile(np.abs(ratios), 95)), false_pos / trials, mde, trials)
