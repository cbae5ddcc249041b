"""A claim's cell over the reports of a series: Paule-Mandel's tau and the modified Hartung-Knapp interval (read once,
by the calculator), the confidence sequence a standing verdict reads at every look, and its error over a history
read every night at the between-run sd the registry declares."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from benchmarks import standing_error
from secoverhead.analysis.pooling import (
    ALPHA,
    RunEstimate,
    from_scale,
    more_reports,
    paule_mandel,
    pool,
    pooled_verdict,
    run_estimate,
    to_scale,
)
from secoverhead.analysis.stats import confidence_sequence, reports_to_decide, sequence_half, t_quantile
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


def test_the_confidence_sequence_is_finite_from_three_reports_wider_than_one_look_and_narrows_with_more():
    """Valid at every look, so wider than a fixed-sample t interval at the same k; unbounded at two reports (their
    spread is one difference); its half-width falls as the reports accumulate."""
    assert sequence_half(1.0, 2, 0.95) == math.inf and math.isfinite(sequence_half(1.0, 3, 0.95))
    halves = [sequence_half(1.0, k, 0.95) for k in range(3, 400)]
    assert all(b < a for a, b in itertools.pairwise(halves))
    for k in (5, 10, 30, 365):
        fixed = t_quantile(k - 1, 0.975) / math.sqrt(k)
        assert fixed < sequence_half(1.0, k, 0.95) < 2.5 * fixed
    assert sequence_half(1.0, 10, 0.99) > sequence_half(1.0, 10, 0.95)
    mean, lo, hi, sd = confidence_sequence([0.1, 0.2, 0.3], 0.95)
    assert mean == pytest.approx(0.2) and sd == pytest.approx(0.1) and lo < 0.2 < hi
    assert confidence_sequence([0.1], 0.95) is None and confidence_sequence([0.1, math.nan], 0.95) is None


def test_reports_to_decide_is_the_fewest_whose_sequence_fits_and_none_without_room():
    k = reports_to_decide(0.05, 0.03, 0.95)
    assert k is not None and sequence_half(0.05, k, 0.95) < 0.03 <= sequence_half(0.05, k - 1, 0.95)
    assert reports_to_decide(0.05, 0.0, 0.95) is None and reports_to_decide(0.05, 1e-9, 0.95) is None


def test_the_confidence_sequence_misses_a_mean_at_any_of_365_looks_in_at_most_alpha_of_histories():
    """Estimates normal, heavy-tailed (t3) or of varying spread (each report's own error differing): the share of
    histories in which the interval excludes the truth at ANY look from the second to the 365th stays within alpha
    (plus three Monte-Carlo standard errors). Vectorised: each look's interval from running sums."""
    rng = np.random.default_rng(365)
    histories, nights, alpha = 300, 365, 0.05
    k = np.arange(1, nights + 1)
    limit = alpha + 3 * math.sqrt(alpha * (1 - alpha) / histories)
    for draws in (
        rng.normal(0, 1, (histories, nights)),
        rng.standard_t(3, (histories, nights)),
        rng.normal(0, 1, (histories, nights)) * np.exp(rng.uniform(-1, 1, (histories, nights))),
    ):
        mean = np.cumsum(draws, axis=1) / k
        ss = np.maximum(np.cumsum(draws**2, axis=1) - k * mean**2, 0)
        sd = np.sqrt(ss / np.maximum(k - 1, 1))
        halves = np.array([[sequence_half(float(s), int(n), 1 - alpha) for n, s in zip(k, row, strict=True)]
                           for row in sd[:60]])  # fmt: skip
        missed = (np.abs(mean[:60]) > halves)[:, 1:].any(axis=1)
        assert missed.mean() <= limit + 3 * math.sqrt(alpha / 60), missed.mean()


@pytest.mark.parametrize("scenario", standing_error.scenarios(), ids=lambda s: f"{s.study}:{s.claim}")
def test_a_claim_on_its_line_shows_a_decided_standing_verdict_in_at_most_alpha_of_30_night_histories(scenario):
    """Through pooled_verdict, every look of 30 nightly reports (benchmarks/standing_error.py runs 365): the truth
    exactly on the claim's line, the registry's between-run sd, a quick report's own error. A rule that judged
    each night alone, or restarted its error budget, fails here (issue 78: a night's own verdict decided in 25-54 %
    of such histories)."""
    histories = 150
    standing, _ = standing_error.rates(scenario, 30, histories)
    assert standing / histories <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / histories), standing


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


def test_more_reports_are_counted_by_the_rule_that_will_decide():
    """Reports on the band's edge: never (None); reports inside but spread: a finite number more, after which the
    sequence at that spread would lie inside."""
    spread = [_judged([r]) for r in (0.93, 0.99, 0.95, 0.97)]
    v = pooled_verdict("audit", "server_audit-small", spread)
    assert v.verdict == Verdict.INCONCLUSIVE
    more = more_reports("audit", "server_audit-small", v)
    assert more is not None and more >= 1
    edge = [_judged([r]) for r in (0.86, 0.94, 0.88, 0.92)]
    assert more_reports("audit", "server_audit-small", pooled_verdict("audit", "server_audit-small", edge)) is None


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
