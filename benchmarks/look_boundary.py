"""The level each look of a pooled series reads its interval at, calibrated by simulation (a constant boundary over
the looks at k = 2..LOOKS reports, as Pocock's): the largest per-look alpha at which the chance that ANY look's
interval misses the truth stays within the series' alpha, in the worst of the scenarios below.

    .venv/bin/python benchmarks/look_boundary.py [SERIES]

A look misses at level a exactly when its p-value for the truth is below a: pool's interval is the modified
Hartung-Knapp one or the reports' plain t interval, whichever reaches further, so the larger of their two p-values
2 (1 - T_{k-1}(|centre - truth| / s)). A series misses when its smallest p-value over its looks is below a. So one
simulation gives the family-wise miss rate at every a, and the calibrated a is the alpha-quantile of the series'
smallest p-values, taken in the worst scenario. Looks are nested (each pools every report before it), so they are
strongly correlated and Bonferroni (alpha / (LOOKS - 1)) spends far less than alpha.

Scenarios: between-run sd tau from 0 to 16 times a run's own error (reports that agree, to the spread between
them dominating);
each run's own error estimated from 3 or 5 rounds (a quick run's first look or its usual count), its size
varying between runs up to 4x; between-run effects normal, or t with 3 degrees of freedom (a run that strays).
The vectorised pool here is checked against analysis.pooling.pool on the first series of every scenario.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy import stats

from secoverhead.analysis.pooling import ALPHA, LOOKS, RunEstimate, pool

SCENARIOS = [  # (name, tau over the typical own se, rounds per run, own-se spread, between-run distribution)
    (f"tau/se {r:g}, {n} rounds, se x{s:g}, {dist}", r, n, s, dist)
    for r in (0.0, 0.5, 1.0, 2.0, 4.0, 16.0)
    for n in (3, 5)
    for s in (1.0, 4.0)
    for dist in ("normal", "t3")
]


def series(rng: np.random.Generator, count: int, ratio: float, rounds: int, spread: float, dist: str):
    """count series of LOOKS reports each: their estimates and standard errors (truth 0, typical own se 0.02)."""
    own = 0.02 * np.exp(rng.uniform(-np.log(spread) / 2, np.log(spread) / 2, size=(count, LOOKS)))
    tau = ratio * 0.02
    shift = rng.normal(0, 1, (count, LOOKS)) if dist == "normal" else rng.standard_t(3, (count, LOOKS)) / np.sqrt(3)
    draws = rng.normal(0, 1, (count, LOOKS, rounds)) * (own * np.sqrt(rounds))[..., None]
    values = tau * shift + draws.mean(axis=2)
    ses = draws.std(axis=2, ddof=1) / np.sqrt(rounds)
    return values, ses


def paule_mandel(y: np.ndarray, v: np.ndarray, iterations: int = 80) -> np.ndarray:
    """Row-wise Paule-Mandel tau^2 by bisection (as analysis.pooling.paule_mandel, for many series at once)."""
    k = y.shape[1]

    def q(tau2: np.ndarray) -> np.ndarray:
        w = 1 / (v + tau2[:, None])
        mu = (w * y).sum(1) / w.sum(1)
        return (w * (y - mu[:, None]) ** 2).sum(1)

    lo = np.zeros(len(y))
    hi = np.maximum(np.ptp(y, axis=1), 1e-12) ** 2
    while (grow := q(hi) > k - 1).any():
        hi = np.where(grow, hi * 2, hi)
    for _ in range(iterations):
        mid = (lo + hi) / 2
        above = q(mid) > k - 1
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(q(np.zeros(len(y))) <= k - 1, 0.0, (lo + hi) / 2)


def smallest_p(values: np.ndarray, ses: np.ndarray) -> np.ndarray:
    """Each series' smallest p-value for the truth (0) over its looks at k = 2..LOOKS."""
    out = np.ones(len(values))
    for k in range(2, LOOKS + 1):
        y, v = values[:, :k], ses[:, :k] ** 2
        tau2 = paule_mandel(y, v)
        w = 1 / (v + tau2[:, None])
        mu = (w * y).sum(1) / w.sum(1)
        q = (w * (y - mu[:, None]) ** 2).sum(1)
        s = np.sqrt(np.maximum(q / (k - 1), 1.0) / w.sum(1))
        weighted = 2 * stats.t.sf(np.abs(mu) / s, k - 1)
        # pool's interval reaches at least as far as the reports' plain t interval: it misses only where both miss
        plain = 2 * stats.t.sf(np.abs(y.mean(1)) / (y.std(1, ddof=1) / np.sqrt(k)), k - 1)
        out = np.minimum(out, np.maximum(weighted, plain))
    return out


def _check_against_the_library(values: np.ndarray, ses: np.ndarray, p: float) -> None:
    """The first series through analysis.pooling.pool: it misses at a level just above its smallest p-value and
    covers at one just below."""
    ests = [RunEstimate(float(a), float(b)) for a, b in zip(values[0], ses[0], strict=True)]
    for level, misses in ((1 - p * 1.001, True), (1 - p * 0.999, False)):
        looks = [pool(ests[:k], level) for k in range(2, LOOKS + 1)]
        assert any(not (x.low <= 0 <= x.high) for x in looks) == misses, (p, level)


def main(count: int = 20_000) -> None:
    rng = np.random.default_rng(20261128)
    worst = None
    bonferroni = ALPHA / (LOOKS - 1)
    print(f"{count} series of {LOOKS} reports per scenario; family-wise miss rate at Bonferroni's {bonferroni:.4f}")
    for name, ratio, rounds, spread, dist in SCENARIOS:
        values, ses = series(rng, count, ratio, rounds, spread, dist)
        p = smallest_p(values, ses)
        if p[0] < 0.5:
            _check_against_the_library(values, ses, float(p[0]))
        calibrated = float(np.quantile(p, ALPHA))
        print(f"  {name:38s} miss at Bonferroni {np.mean(p < bonferroni):.4f}; per-look alpha for {ALPHA}: "
              f"{calibrated:.4f}")  # fmt: skip
        worst = calibrated if worst is None else min(worst, calibrated)
    print(f"worst case: per-look alpha {worst:.4f} (Bonferroni: {bonferroni:.4f})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
