"""Statistics of run summaries: checked against scipy and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from secoverhead.analysis.compare import combined_interaction, compare_arms, interaction, per_round
from secoverhead.analysis.stats import (
    PAIRED,
    UNPAIRED,
    Change,
    bootstrap_medians,
    change,
    holm,
    mean_interval,
    median_ci,
    paired_difference,
    paired_ratio,
    tukey_outliers,
    welch_difference,
    welch_ratio,
)


def runs_table(values: dict[str, list[float]], **extra) -> pd.DataFrame:
    """One run per (arm, round): values[arm][round]."""
    rows, run_id = [], 0
    for rnd in range(max(len(v) for v in values.values())):
        for arm, v in values.items():
            if rnd < len(v):
                rows.append({"run_id": run_id, "arm": arm, "round": rnd, "x": v[rnd], **extra})
                run_id += 1
    return pd.DataFrame(rows)


def test_paired_ratio_is_the_paired_t_test_on_log_ratios():
    rng = np.random.default_rng(1)
    b = rng.lognormal(0, 0.1, 9)
    c = b * rng.lognormal(0.1, 0.05, 9)
    est = paired_ratio(b, c)
    d = np.log(c) - np.log(b)
    assert est.ratio == pytest.approx(math.exp(d.mean()))
    assert est.p_value == pytest.approx(st.ttest_rel(np.log(c), np.log(b)).pvalue)
    lo, hi = st.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=st.sem(d))
    assert (est.ci_low, est.ci_high) == pytest.approx((math.exp(lo), math.exp(hi)))
    assert est.n == 9 and est.design == PAIRED


def test_welch_ratio_is_welchs_test_on_logs():
    rng = np.random.default_rng(2)
    a, b = rng.lognormal(0, 0.1, 7), rng.lognormal(0.2, 0.3, 5)
    est = welch_ratio(a, b)
    assert est.p_value == pytest.approx(st.ttest_ind(np.log(b), np.log(a), equal_var=False).pvalue)
    assert est.ratio == pytest.approx(math.exp(np.log(b).mean() - np.log(a).mean()))
    assert est.ci_low < est.ratio < est.ci_high and est.design == UNPAIRED


def test_a_between_report_spread_adds_twice_in_variance_with_satterthwaites_degrees_of_freedom():
    """Two reports each drew their level once: 2 tau^2 joins Welch's variance, and how well tau is known (its
    degrees of freedom) joins Welch's degrees of freedom."""
    rng = np.random.default_rng(4)
    a, b = rng.lognormal(0, 0.03, 4), rng.lognormal(0.1, 0.03, 4)
    plain, none = welch_ratio(a, b), welch_ratio(a, b, between_sd=0.0, between_df=3)
    assert (none.ci_low, none.ci_high, none.p_value) == pytest.approx((plain.ci_low, plain.ci_high, plain.p_value))
    known, rough = welch_ratio(a, b, between_sd=0.05), welch_ratio(a, b, between_sd=0.05, between_df=2)
    assert known.ratio == pytest.approx(plain.ratio)  # the centre stays
    assert known.ci_low < plain.ci_low and known.ci_high > plain.ci_high and known.p_value > plain.p_value
    assert rough.ci_low < known.ci_low and rough.p_value > known.p_value  # a rougher tau reads wider
    va, vb = np.log(a).var(ddof=1) / 4, np.log(b).var(ddof=1) / 4
    vt = 2 * 0.05**2
    df = (va + vb + vt) ** 2 / (va**2 / 3 + vb**2 / 3 + vt**2 / 2)
    half = st.t.ppf(0.975, df) * math.sqrt(va + vb + vt)
    assert math.log(rough.ci_high) - math.log(rough.ratio) == pytest.approx(half)
    flat = welch_ratio([2.0, 2.0], [2.2, 2.2], between_sd=0.05)  # no spread in the rounds: tau's alone
    assert flat.ci_low < 2.2 / 2 < flat.ci_high and 0 < flat.p_value < 1
    assert math.log(flat.ci_high / flat.ratio) == pytest.approx(st.norm.ppf(0.975) * math.sqrt(vt))


def test_differences_match_scipy():
    rng = np.random.default_rng(3)
    a, b = rng.normal(50, 2, 8), rng.normal(53, 2, 8)
    assert paired_difference(a, b).p_value == pytest.approx(st.ttest_rel(b, a).pvalue)
    assert welch_difference(a, b).p_value == pytest.approx(st.ttest_ind(b, a, equal_var=False).pvalue)
    _, lo, hi, _, _ = mean_interval(b - a)
    assert (lo, hi) == pytest.approx(st.t.interval(0.95, 7, loc=(b - a).mean(), scale=st.sem(b - a)))


def test_too_few_pairs_give_no_interval_and_identical_pairs_a_point():
    est = paired_ratio([1.0], [2.0])
    assert est.ratio == 2.0 and math.isnan(est.ci_low) and math.isnan(est.p_value)
    est = paired_ratio([1.0, 2.0], [1.5, 3.0])  # the same ratio in every round: no spread
    assert est.ci_low == pytest.approx(1.5) and est.ci_high == pytest.approx(1.5) and est.p_value < 1e-9
    est = paired_ratio([2.0, 2.0], [3.0, 3.0])  # exactly no spread
    assert est.ci_low == est.ci_high == pytest.approx(1.5) and est.p_value == 0.0
    assert paired_ratio([1.0, 1.0], [-1.0, -2.0]).n == 0  # negative values cannot enter a log ratio


def test_a_round_with_zero_throughput_is_a_total_loss_never_dropped():
    """A run that completed no transaction counts: the interval reaches a ratio of 0 (a loss of 100 %), however
    tight the other rounds; a zero in the baseline sends the upper end to infinity."""
    tight = paired_ratio([100.0, 101.0, 99.0, 100.0], [95.0, 96.0, 94.0, 95.0])
    lost = paired_ratio([100.0, 101.0, 99.0, 100.0, 100.0], [95.0, 96.0, 94.0, 95.0, 0.0])
    assert tight.ci_low > 0.9 and lost.ci_low == 0.0 and lost.zeros == 1 and lost.n == 5
    assert lost.ci_high == pytest.approx(tight.ci_high)
    gained = paired_ratio([0.0, 100.0, 100.0], [50.0, 101.0, 99.0])
    assert gained.ci_high == math.inf and gained.zeros == 1


@pytest.mark.parametrize(
    "ratio, lo, hi, better, expected",
    [
        (1.30, 1.20, 1.40, False, Change.WORSE),
        (1.30, 1.20, 1.40, True, Change.BETTER),
        (0.70, 0.60, 0.80, False, Change.BETTER),
        (1.01, 1.005, 1.015, False, Change.SAME),  # real but within the 2 % band
        (1.00, 0.99, 1.01, False, Change.SAME),  # confidently inside the band
        (1.10, 0.90, 1.30, False, Change.UNCLEAR),
        (1.01, 0.95, 1.07, False, Change.UNCLEAR),  # small, but the interval leaves the band
        (1.047, 1.0018, 1.09, False, Change.UNCLEAR),  # excludes 1, but not wholly past +2 %: no regression
        (1.047, 1.021, 1.09, False, Change.WORSE),
        (0.95, 0.90, 0.979, True, Change.WORSE),
        (float("nan"), 1.0, 1.2, False, Change.UNCLEAR),
    ],
)
def test_change_words(ratio, lo, hi, better, expected):
    assert change(ratio, lo, hi, higher_is_better=better) == expected


def test_holm_matches_a_hand_computed_example():
    # p sorted: 0.01 (x4 = 0.04), 0.02 (x3 = 0.06), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> monotone 0.06)
    assert holm([0.03, 0.01, 0.04, 0.02]).tolist() == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert np.isnan(holm([0.01, float("nan")])[1])


@pytest.mark.parametrize("n", [7, 8, 51])
def test_exact_bootstrap_medians_match_naive_resampling(n):
    rng = np.random.default_rng(n)
    x = np.sort(rng.exponential(1.0, n))
    fast = bootstrap_medians(x, 40_000, np.random.default_rng(0))
    naive = np.median(rng.choice(x, size=(40_000, n)), axis=1)
    for q in (5, 25, 50, 75, 95):
        assert np.percentile(fast, q) == pytest.approx(np.percentile(naive, q), rel=0.06, abs=0.02)
    med, lo, hi = median_ci(x)
    assert lo <= med <= hi and med == pytest.approx(np.median(x))


def test_compare_arms_pairs_by_round_and_keeps_a_retaken_run_beside_its_original():
    runs = runs_table({"base": [10.0, 11.0, 9.0, 10.5], "cand": [12.0, 13.2, 10.8, 12.6]})
    # round 1's candidate was flagged noisy and taken again: both runs count, as their mean
    runs = pd.concat([runs, pd.DataFrame([{"run_id": 99, "arm": "cand", "round": 1, "x": 13.2}])], ignore_index=True)
    c = compare_arms(runs, "x", baseline="base")["cand"]
    assert c.design == PAIRED and c.n_pairs == 4 and c.ratio == pytest.approx(1.2)
    assert c.change == Change.WORSE and "n=4 rounds" in c.evidence()
    runs.loc[(runs["arm"] == "cand") & (runs["round"] == 1) & (runs["run_id"] < 99), "x"] = 0.0  # a stall
    stalled = compare_arms(runs, "x", baseline="base")["cand"]
    assert stalled.ratio < c.ratio and stalled.ci_low < c.ci_low  # the stall is not replaced away


def test_unpaired_when_rounds_do_not_meet():
    runs = pd.concat(
        [runs_table({"base": [10, 11, 9]}), runs_table({"cand": [20, 21, 19]}).assign(round=lambda d: d["round"] + 100)]
    )
    c = compare_arms(runs, "x", baseline="base")["cand"]
    assert c.design == UNPAIRED and c.n_pairs == 0 and "runs" in c.n_text


def test_a_call_is_one_family_bonferroni_intervals_and_holm_p():
    runs = runs_table({"base": [10, 11, 9, 10, 10.5], "a": [12, 13, 11, 12, 12.4], "b": [10, 11.2, 9.1, 10, 10.6]})
    both = compare_arms(runs, "x", baseline="base")
    alone = compare_arms(runs, "x", baseline="base", candidates=["a"])["a"]
    assert both["a"].family == 2 and both["a"].confidence == pytest.approx(0.975)
    assert both["a"].ci_low < alone.ci_low and both["a"].ci_high > alone.ci_high
    assert both["a"].p_value >= alone.p_value and "Holm" in both["a"].test


def test_difference_scale_for_percentage_points():
    runs = runs_table({"off": [50, 52, 49, 51], "on": [53, 55.5, 51.6, 54.1]})
    c = compare_arms(runs, "x", baseline="off", quantity="difference")["on"]
    assert c.ratio == pytest.approx(3.05) and c.ci_low < 3.05 < c.ci_high and "difference" in c.evidence()


def test_interaction_is_a_ratio_of_ratios_per_round():
    rows = []
    rng = np.random.default_rng(4)
    for rnd in range(6):
        drift = rng.lognormal(0, 0.2)  # a slow round hits every arm and workload alike
        for wl, loss in (("write", 0.8), ("read", 1.0)):
            rows += [
                {"arm": "off", "round": rnd, "workload": wl, "threads": 1, "tps": 100 * drift},
                {
                    "arm": "on",
                    "round": rnd,
                    "workload": wl,
                    "threads": 1,
                    "tps": 100 * drift * loss * rng.lognormal(0, 0.01),
                },
            ]
    runs = pd.DataFrame(rows).assign(run_id=range(len(rows)))
    c = next(
        iter(
            interaction(
                runs,
                "tps",
                baseline="off",
                candidate="on",
                factor="workload",
                level="write",
                reference="read",
                by=["threads"],
            ).values()
        )
    )
    assert c.ratio == pytest.approx(0.8, rel=0.02) and c.ci_high < 1
    assert len(per_round(runs[runs["workload"] == "write"], "tps", ["off", "on"])) == 6


def test_combined_interaction_is_the_per_round_mean_over_cells():
    """One comparison for a claim about levels: per round the mean over thread counts of the log ratio of
    ratios; its geometric mean equals the mean of the per-cell ones, and it is one family member."""
    rng = np.random.default_rng(5)
    rows = []
    for rnd in range(8):
        for threads, loss in ((1, 0.90), (16, 0.96)):
            drift = rng.lognormal(0, 0.2)
            for wl, f in (("write", loss), ("read", 1.0)):
                rows += [
                    {"arm": "off", "round": rnd, "workload": wl, "threads": threads, "x": 100 * drift},
                    {
                        "arm": "on",
                        "round": rnd,
                        "workload": wl,
                        "threads": threads,
                        "x": 100 * drift * f * rng.lognormal(0, 0.03),
                    },
                ]
    runs = pd.DataFrame(rows).assign(run_id=range(len(rows)))
    kw = dict(baseline="off", candidate="on", factor="workload")
    per = interaction(runs, "x", level="write", reference="read", by=["threads"], **kw)
    combined = combined_interaction(runs, "x", pairs=[("write", "read")], over=["threads"], **kw)
    assert combined.ratio == pytest.approx(np.exp(np.mean([np.log(c.ratio) for c in per.values()])), rel=1e-9)
    assert combined.family == 1 and combined.n_pairs == 8 and "averaged over threads" in combined.test
    widths = [np.log(c.ci_high / c.ci_low) for c in per.values()]
    assert np.log(combined.ci_high / combined.ci_low) < min(widths)  # the mean of two cells is the tighter
    assert combined_interaction(runs.iloc[0:0], "x", pairs=[("write", "read")], over=["threads"], **kw) is None


def test_tukey_outliers_are_counted():
    assert tukey_outliers(np.array([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 5.0])) == 1


def _simulated_runs(rng, rounds: int, per_run: int, run_sd: float, round_sd: float, sample_sd: float):
    """Two identical arms. Each round shifts both (drift); each run shifts its own samples (machine state)."""
    samples, runs = [], []
    for rnd in range(rounds):
        drift = rng.normal(0, round_sd)
        for arm in ("a", "b"):
            level = drift + rng.normal(0, run_sd)
            x = np.exp(level + rng.normal(0, sample_sd, per_run))
            samples.append(pd.DataFrame({"arm": arm, "x": x}))
            runs.append({"arm": arm, "round": rnd, "run_id": len(runs), "x": float(np.median(x))})
    return pd.concat(samples), pd.DataFrame(runs)


def test_run_level_paired_analysis_keeps_aa_false_positives_at_alpha_where_pooled_samples_do_not():
    rng = np.random.default_rng(11)
    trials, pooled_fp, run_fp = 400, 0, 0
    for _ in range(trials):
        samples, runs = _simulated_runs(rng, rounds=6, per_run=100, run_sd=0.05, round_sd=0.1, sample_sd=0.05)
        a, b = samples.loc[samples["arm"] == "a", "x"], samples.loc[samples["arm"] == "b", "x"]
        pooled_fp += st.mannwhitneyu(a, b).pvalue < 0.05  # every sample as if independent: pseudo-replication
        c = compare_arms(runs, "x", baseline="a", candidates=["b"])["b"]
        run_fp += c.ci_low > 1 or c.ci_high < 1
    assert run_fp / trials <= 0.05 + 0.025  # binomial sd at 400 trials is ~0.011
    assert pooled_fp / trials > 0.3  # pooling samples of shared runs cries wolf most of the time


def test_paired_rounds_are_more_precise_than_unpaired_runs_under_drift():
    rng = np.random.default_rng(12)
    widths = {"paired": [], "unpaired": []}
    for _ in range(100):
        _, runs = _simulated_runs(rng, rounds=8, per_run=5, run_sd=0.03, round_sd=0.15, sample_sd=0.01)
        for name, paired in (("paired", True), ("unpaired", False)):
            c = compare_arms(runs, "x", baseline="a", candidates=["b"], paired=paired)["b"]
            widths[name].append(c.ci_high / c.ci_low)
    assert np.median(widths["paired"]) < np.median(widths["unpaired"]) ** 0.5  # much narrower


def test_paired_medians_are_of_the_blocks_compared():
    """In duets the baseline runs once per candidate: a comparison's medians are those of its own duets, not of
    every baseline run (here the other candidate's duets ran at half the speed)."""
    rows = []
    for rnd in range(6):
        for arm, (base, cand) in {"fast": (100.0, 98.0), "slow": (50.0, 40.0)}.items():
            block = f"{rnd}:{arm}:[]"
            rows += [
                {"arm": "a", "round": rnd, "block": block, "x": base + rnd % 2},
                {"arm": arm, "round": rnd, "block": block, "x": cand + rnd % 2},
            ]
    runs = pd.DataFrame(rows).assign(run_id=lambda d: range(len(d)))
    c = compare_arms(runs, "x", baseline="a", candidates=["fast"])["fast"]
    assert c.design.startswith("paired by duet") and c.n_pairs == 6
    assert c.baseline_median == pytest.approx(100.5) and c.candidate_median == pytest.approx(98.5)
    assert c.n_baseline == 12  # every baseline run still counted as taken
    # unpaired (no blocks): the medians of every run, as before
    c = compare_arms(runs.drop(columns=["block", "round"]), "x", baseline="a", candidates=["fast"])["fast"]
    assert c.baseline_median == pytest.approx(75.5)
