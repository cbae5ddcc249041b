"""Pooling a claim's cell over the runs of a series: Paule-Mandel's tau, the modified Hartung-Knapp interval, the
looks' level, and the coverage of every look of a series at the between-run sd the registry declares."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from secoverhead.analysis import claim_registry
from secoverhead.analysis.pooling import (
    CALIBRATED_LOOK_ALPHA,
    LOOKS,
    RunEstimate,
    from_scale,
    look_confidence,
    paule_mandel,
    pool,
    pooled_verdict,
    run_estimate,
    to_scale,
)
from secoverhead.analysis.verdicts import Verdict


def test_runs_that_agree_within_their_own_errors_have_no_between_run_variance():
    assert paule_mandel([0.10, 0.105, 0.095], [0.01**2] * 3) == 0.0  # Q = 0.5 < k - 1
    assert paule_mandel([0.1], [0.01]) == 0.0  # one run: nothing to estimate from


def test_paule_mandel_solves_q_equal_to_k_minus_one():
    y, v = [0.0, 0.2, 0.4, 0.1], [0.01**2, 0.02**2, 0.01**2, 0.03**2]
    tau2 = paule_mandel(y, v)
    w = [1 / (vi + tau2) for vi in v]
    mu = sum(a * b for a, b in zip(w, y, strict=True)) / sum(w)
    assert sum(wi * (yi - mu) ** 2 for wi, yi in zip(w, y, strict=True)) == pytest.approx(3, rel=1e-6)
    assert tau2 > 0


def test_equal_errors_give_the_sample_variance_less_their_own():
    """With equal within-run variances PM's tau^2 is the runs' sample variance less it (a check by hand)."""
    y = [0.0, 0.3, 0.6]
    assert paule_mandel(y, [0.01] * 3) == pytest.approx(np.var(y, ddof=1) - 0.01, rel=1e-6)


def test_fewer_than_two_runs_or_an_unusable_error_pool_nothing():
    assert pool([RunEstimate(0.1, 0.01)], 0.95) is None
    assert pool([RunEstimate(0.1, 0.01), RunEstimate(0.2, 0.0)], 0.95) is None
    assert pool([RunEstimate(0.1, 0.01), RunEstimate(math.nan, 0.01)], 0.95) is None


def test_the_interval_is_never_narrower_than_the_plain_random_effects_one():
    """Runs agreeing better than their errors say (Q < k - 1) would make plain Hartung-Knapp narrower than the
    errors allow; the modification keeps the larger."""
    runs = [RunEstimate(0.100, 0.02), RunEstimate(0.101, 0.02), RunEstimate(0.099, 0.02)]
    p = pool(runs, 0.95)
    plain_half = 4.302653 * math.sqrt(1 / sum(1 / r.se**2 for r in runs))  # t(2, 0.975) * RE standard error
    assert p.tau == 0 and (p.high - p.low) / 2 == pytest.approx(plain_half, rel=1e-5)


def test_the_interval_reaches_at_least_as_far_as_the_reports_plain_t_interval():
    """A report that underestimated its own error (a tiny se from few rounds) draws the weighted estimate to itself;
    the interval still covers what the reports' own spread says: their mean +- t sd / sqrt(k)."""
    ests = [RunEstimate(0.0, 1e-4), RunEstimate(0.1, 0.05), RunEstimate(0.2, 0.05), RunEstimate(0.15, 0.05)]
    p = pool(ests, 0.95)
    y = np.array([e.value for e in ests])
    half = stats.t.ppf(0.975, 3) * y.std(ddof=1) / 2
    assert p.low <= y.mean() - half + 1e-12 and p.high >= y.mean() + half - 1e-12
    assert p.estimate < y.mean()  # weighted toward the report that claims to know best


def test_runs_that_disagree_widen_the_interval_beyond_their_own_errors():
    agree = pool([RunEstimate(0.10, 0.01), RunEstimate(0.10, 0.01), RunEstimate(0.10, 0.01)], 0.95)
    differ = pool([RunEstimate(0.00, 0.01), RunEstimate(0.10, 0.01), RunEstimate(0.20, 0.01)], 0.95)
    assert differ.tau > 0.05 and differ.high - differ.low > 5 * (agree.high - agree.low)
    assert differ.estimate == pytest.approx(0.10)


def test_each_look_reads_the_calibrated_level_and_an_uncalibrated_alpha_bonferronis():
    """The calibrated per-look alpha lies between Bonferroni's (which nested looks never need) and alpha itself
    (which one look alone would spend); an alpha or a number of looks not calibrated splits alpha over the looks."""
    calibrated = 1 - look_confidence(0.05)
    assert CALIBRATED_LOOK_ALPHA[0.05] == pytest.approx(calibrated)
    assert 0.05 / (LOOKS - 1) < calibrated < 0.05
    assert look_confidence(0.01) == pytest.approx(1 - 0.01 / (LOOKS - 1))
    assert look_confidence(0.05, looks=2) == pytest.approx(0.95)


@pytest.mark.parametrize(
    ("quantity", "lo", "hi"),
    [("ratio", 0.8, 1.25), ("loss", 5.0, 20.0), ("difference", -2.0, 3.5)],
)
def test_the_analysis_scale_round_trips(quantity, lo, hi):
    a, b = to_scale(quantity, lo, hi)
    assert a < b
    assert from_scale(quantity, a, b) == pytest.approx((lo, hi))


def test_a_ratio_reaching_zero_or_an_unknown_quantity_has_no_analysis_scale_and_a_share_is_its_own():
    assert to_scale("share", 0.1, 0.2) == (0.1, 0.2)  # a mean of per-round shares, a t interval: as a difference
    assert to_scale("nothing", 0.1, 0.2) is None
    assert to_scale("ratio", 0.0, 1.2) is None
    assert to_scale("loss", 50.0, 100.0) is None  # a loss of 100 % is a ratio of 0


def test_a_runs_estimate_is_its_intervals_centre_and_its_t_half_width():
    e = run_estimate("ratio", math.exp(-0.1), math.exp(0.1), rounds=5, confidence=0.95)
    assert e.value == pytest.approx(0.0) and e.se == pytest.approx(0.1 / 2.776445, rel=1e-5)
    assert run_estimate("ratio", 0.9, 1.1, rounds=1, confidence=0.95) is None


DECLARED = sorted({round(b.sd, 3) for b in claim_registry.between_runs().values() if b.sd < 0.2})


# the registry's between-run sds at 5 rounds; the calibration's hard cases: reports that agree, each knowing its
# error from 3 rounds (weights on 2 degrees of freedom), and a between-run sd ten times a report's own
@pytest.mark.parametrize(("tau", "n"), [*((t, 5) for t in DECLARED), (0.0, 3), (0.25, 3)])
def test_every_look_of_a_series_covers_the_truth_at_the_stated_level(tau, n):
    """Series of LOOKS runs (each run's own error as a quick run's, over n rounds): the share of series in which
    any look from the second run on misses the true effect stays within alpha (plus three Monte-Carlo standard
    errors)."""
    rng = np.random.default_rng(int(tau * 1e4) + 7 + n)
    alpha, series, truth = 0.05, 400, 0.05
    level = look_confidence(alpha)
    missed = 0
    for _ in range(series):
        ests = []
        for _k in range(LOOKS):
            own = rng.uniform(0.01, 0.04)  # a run's own standard error on the log ratio, as quick runs show
            rounds = rng.normal(0, own * math.sqrt(n), size=n)
            value = truth + rng.normal(0, tau) + rounds.mean()
            ests.append(RunEstimate(value, rounds.std(ddof=1) / math.sqrt(n)))
        looks = [pool(ests[:k], level) for k in range(2, LOOKS + 1)]
        missed += any(not (p.low <= truth <= p.high) for p in looks)
    limit = alpha + 3 * math.sqrt(alpha * (1 - alpha) / series)
    assert missed / series <= limit, f"tau {tau}: {missed} of {series} series missed at some look"


def _judged(ratios: list[float], se: float = 0.03, cells: list[str] | None = None) -> list[dict]:
    """One run's `judged` for a one-reading claim: each cell's estimate on the log ratio over its rounds."""
    names = cells or [""] * len(ratios)
    return [{"cells": names if cells else [], "intervals": [[0, 0]] * len(ratios),
             "estimates": [[math.log(r), se] for r in ratios]}]  # fmt: skip


def test_runs_that_together_lie_inside_the_band_reproduce_what_one_run_could_not():
    """server_audit 'costs little' (TPS ratio within 0.90-1.02): one run's interval (its own se 0.03 plus the
    between-run sd) straddles 0.90; six runs around 0.96 pooled lie inside."""
    runs = [_judged([r]) for r in (0.955, 0.965, 0.96, 0.958, 0.962, 0.96)]
    v = pooled_verdict("audit", "server_audit-small", runs)
    assert v.verdict == Verdict.REPRODUCED and v.reports == 6
    (cell,) = v.readings[0]
    assert 0.9 < cell.low < cell.point < cell.high < 1.02


def test_shares_won_back_pool_on_their_own_scale():
    """A session cache wins back a share of the full handshake's extra CPU above 0.5: reports whose own intervals
    (se 0.03, straddling the line) lie near 0.56 pool above it; reports round 0.5 stay inconclusive."""

    def judged(share: float) -> list[dict]:
        return [{"cells": [], "intervals": [[0, 0]], "estimates": [[share, 0.03]]}]

    claim = "recovery:TLS 1.2 resumed, session cache"
    v = pooled_verdict("https", claim, [judged(x) for x in (0.56, 0.57, 0.55, 0.56, 0.58, 0.56)])
    assert v.verdict == Verdict.REPRODUCED and 0.5 < v.readings[0][0].low < v.readings[0][0].high < 0.62
    near = pooled_verdict("https", claim, [judged(x) for x in (0.49, 0.52, 0.50, 0.51)])
    assert near.verdict == Verdict.INCONCLUSIVE


def test_runs_that_together_lie_outside_refute_and_a_straddle_stays_inconclusive():
    far = [_judged([r]) for r in (0.80, 0.82, 0.81, 0.79)]
    assert pooled_verdict("audit", "server_audit-small", far).verdict == Verdict.NOT_REPRODUCED
    edge = [_judged([r]) for r in (0.86, 0.94, 0.88, 0.92)]  # centred on the band's edge
    assert pooled_verdict("audit", "server_audit-small", edge).verdict == Verdict.INCONCLUSIVE


def test_a_loss_is_pooled_on_the_ratio_it_came_from_and_shown_in_percent():
    runs = [_judged([r], se=0.02) for r in (0.70, 0.72, 0.69, 0.71, 0.70)]
    v = pooled_verdict("audit", "general_log-loss", runs)
    (cell,) = v.readings[0]
    assert cell.point == pytest.approx(100 * (1 - math.exp(np.mean(np.log([0.70, 0.72, 0.69, 0.71, 0.70])))), rel=1e-3)
    assert 15 < cell.low < cell.point < cell.high < 45 and v.verdict == Verdict.REPRODUCED


def test_what_cannot_be_pooled_is_not():
    one = [_judged([0.96])]
    assert pooled_verdict("audit", "server_audit-small", one) is None  # one run
    old = [_judged([0.96]), [{"cells": [], "intervals": [[0.9, 1.0]]}]]  # a run from before estimates
    assert pooled_verdict("audit", "server_audit-small", old) is None
    moved = [_judged([0.96, 0.97], cells=["a", "b"]), _judged([0.96, 0.97], cells=["a", "c"])]
    assert pooled_verdict("tde", "high-concurrency-loss", moved) is None  # cells differ between runs
    unpoolable = [[{"cells": [], "intervals": [[0, 0]], "estimates": [None]}]] * 3
    assert pooled_verdict("audit", "server_audit-small", unpoolable) is None


def test_cells_of_a_reading_every_cell_must_reproduce_refute_at_their_bonferroni_level():
    """TDE 'under 5 % at many threads' over two workloads: each cell reproduces at the look's level, refuting
    reads Bonferroni-widened intervals (wider than those that reproduce)."""
    shifts = (-0.004, 0.0, 0.004, -0.002, 0.002, 0.0)
    runs = [_judged([0.99 * math.exp(d), 0.985 * math.exp(d)], se=0.01, cells=["read-only", "write-only"])
            for d in shifts]  # fmt: skip
    v = pooled_verdict("tde", "high-concurrency-loss", runs)
    for c in v.readings[0]:
        assert c.refuting[0] < c.low and c.refuting[1] > c.high
    assert v.verdict == Verdict.REPRODUCED
