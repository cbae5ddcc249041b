"""The one engine that judges claims (claimcheck.Rule, analysis/reads.py): each kind of comparison gives the
intervals its reading decides on, at the confidence and family the reading's combine rule calls for."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from secoverhead.analysis.claimcheck import Rule, intervals_of, judge
from secoverhead.analysis.readings import Reading
from secoverhead.analysis.reads import Combined, Contrast, Ratio, Relative, Share, finite
from secoverhead.analysis.verdicts import Verdict


def runs_of(levels: dict, *, rounds: int = 8, noise: float = 0.02, seed: int = 0, factors=()) -> pd.DataFrame:
    """levels: {(arm, *factor values): value of metric 'm'}; log-normal noise per run, a drift per round."""
    rng = np.random.default_rng(seed)
    rows = []
    for rnd in range(rounds):
        drift = rng.lognormal(0, 0.1)
        for (arm, *cell), v in levels.items():
            rows.append({"arm": arm, "round": rnd, **dict(zip(factors, cell, strict=True)),
                         "m": v * drift * rng.lognormal(0, noise)})  # fmt: skip
    return pd.DataFrame(rows)


TWO = runs_of({("a", 1): 100.0, ("b", 1): 90.0, ("a", 2): 100.0, ("b", 2): 95.0}, factors=("w",))


def test_a_bound_every_cell_keeps_reads_each_cell_at_alpha_and_refutes_on_widened_intervals():
    every = Reading.below("r", 1.0, combine="all")
    each, refuting = intervals_of(Ratio("a", "b", by=("w",)), every, TWO, "m", 0.05, 1, None)
    assert [c.confidence for c in each] == [0.95, 0.95] and [c.family for c in each] == [1, 1]
    assert [c.confidence for c in refuting] == [0.975, 0.975] and all(c.family == 2 for c in refuting)
    assert all(r.lo <= e.lo and e.hi <= r.hi for e, r in zip(each, refuting, strict=True))


def test_a_loss_one_cell_shows_reads_widened_intervals_to_reproduce_and_each_at_alpha_to_refute():
    one = Reading.below("r", 1.0, combine="any")
    each, refuting = intervals_of(Ratio("a", "b", by=("w",)), one, TWO, "m", 0.05, 1, None)
    assert [c.confidence for c in each] == [0.975, 0.975]
    assert [c.confidence for c in refuting] == [0.95, 0.95]


def test_a_claim_of_two_readings_splits_refutings_alpha_between_them():
    every = Reading.below("r", 1.0, combine="all")
    _each, refuting = intervals_of(Ratio("a", "b", by=("w",)), every, TWO, "m", 0.05, 2, None)
    assert refuting[0].confidence == pytest.approx(1 - 0.025 / 2)
    one = Reading.below("r", 1.0, combine="any")
    _each, refuting = intervals_of(Ratio("a", "b", by=("w",)), one, TWO, "m", 0.05, 2, None)
    assert refuting[0].confidence == pytest.approx(0.975) and refuting[0].family == 1


def test_a_single_interval_is_read_once():
    single = runs_of({("a",): 100.0, ("b",): 80.0})
    each, refuting = intervals_of(Ratio("a", "b"), Reading.below("r", 1.0), single, "m", 0.05, 1, None)
    assert each == refuting and len(each) == 1 and each[0].confidence == 0.95


def test_a_loss_is_one_minus_the_ratio_in_percent_its_ends_swapped():
    single = runs_of({("a",): 100.0, ("b",): 80.0}, noise=0.01)
    (ratio,) = Ratio("a", "b", higher_is_better=True).cells(single, "m", 0.95, 1)
    (loss,) = Ratio("a", "b", higher_is_better=True, quantity="loss").cells(single, "m", 0.95, 1)
    assert loss.point == pytest.approx((1 - ratio.point) * 100) and 15 < loss.point < 25
    assert loss.lo == pytest.approx((1 - ratio.hi) * 100) and loss.hi == pytest.approx((1 - ratio.lo) * 100)


def test_a_ratio_at_a_level_reads_only_that_level_the_plans_when_given():
    runs = runs_of({("a", 1): 100.0, ("b", 1): 50.0, ("a", 8): 100.0, ("b", 8): 90.0}, factors=("t",))
    (top,) = Ratio("a", "b", at="t").cells(runs, "m", 0.95, 1)
    (low,) = Ratio("a", "b", at="t", at_level="min").cells(runs, "m", 0.95, 1)
    assert top.point == pytest.approx(0.9, abs=0.03) and low.point == pytest.approx(0.5, abs=0.03)
    (planned,) = Ratio("a", "b", at="t").cells(runs, "m", 0.95, 1, {"t": 1})
    assert planned.point == pytest.approx(low.point)
    assert Ratio("a", "b", at="t").where(runs) == "at t 8"


def test_a_ratio_through_a_third_arm_where_the_two_never_ran_together():
    rows = []
    for rnd in range(8):  # duets: x beside base, y beside base, never x beside y
        for block, (other, v) in enumerate((("x", 200.0), ("y", 100.0))):
            for arm, val in (("base", 50.0), (other, v)):
                rows.append({"arm": arm, "round": rnd, "block": rnd * 2 + block, "m": val * (1 + 0.01 * rnd)})
    runs = pd.DataFrame(rows)
    (c,) = Ratio("x", "y", through="base").cells(runs, "m", 0.95, 1)
    assert c.point == pytest.approx(0.5, rel=0.01) and "through base" in c.test


def test_relative_contrast_pooled_and_share_give_the_effect_they_name():
    runs = runs_of({("base",): 100.0, ("ref",): 70.0, ("x",): 90.0, ("y",): 98.0})
    rel = Relative("base", "ref", ("x", "y", "absent")).cells(runs, "m", 0.95, 1)
    assert [c.name for c in rel] == ["x / ref", "y / ref"] and rel[0].point == pytest.approx(90 / 70, rel=0.03)
    grid = runs_of(
        {("off", "w", 1): 100.0, ("on", "w", 1): 80.0, ("off", "w", 16): 100.0, ("on", "w", 16): 95.0,
         ("off", "r", 1): 100.0, ("on", "r", 1): 98.0, ("off", "r", 16): 100.0, ("on", "r", 16): 99.0},
        factors=("workload", "threads"),
    )  # fmt: skip
    contrast = Contrast("off", "on", "threads", by=("workload",)).cells(grid, "m", 0.95, 1)
    assert {c.name: round(c.point, 2) for c in contrast} == pytest.approx({"w": 0.84, "r": 0.99}, abs=0.03)
    (pooled,) = Combined("off", "on", "workload", ("w",), ("r",), over=("threads",)).cells(grid, "m", 0.95, 1)
    assert pooled.point == pytest.approx(math.sqrt(0.8 / 0.98 * 0.95 / 0.99), abs=0.03)
    cpu = runs_of({("http",): 10.0, ("full",): 110.0, ("cache",): 30.0})
    (share,) = Share("http", "full", "cache").cells(cpu, "m", 0.95, 1)
    assert share.point == pytest.approx(0.8, abs=0.03) and finite([share])


def test_too_few_rounds_decide_nothing_and_missing_arms_give_no_verdict():
    cpu = runs_of({("http",): 10.0, ("full",): 110.0, ("cache",): 30.0}, rounds=1)
    (share,) = Share("http", "full", "cache").cells(cpu, "m", 0.95, 1)
    assert not finite([share])
    rule = Rule("https", "recovery:TLS 1.2 resumed, session cache",
                (Share("HTTP", "TLS 1.2 full, RSA", "TLS 1.2 resumed, session cache"),))  # fmt: skip
    one = cpu.rename(columns={"m": "server_cpu_us_per_op"}).replace(
        {"arm": {"http": "HTTP", "full": "TLS 1.2 full, RSA", "cache": "TLS 1.2 resumed, session cache"}}
    )
    (v,) = judge([rule], one)
    assert v.verdict == Verdict.INCONCLUSIVE and v.judged == []
    assert judge([rule], one[one["arm"] != "HTTP"]) == []


def test_a_rule_about_a_factors_levels_waits_for_two_of_them():
    from secoverhead.studies.tde import claims as tde_claims

    one = {("encryption off", "w", 1): 100.0, ("encryption on", "w", 1): 80.0}
    grid = runs_of(one, factors=("workload", "threads")).rename(columns={"m": "tps"})
    assert [r.id for r in tde_claims.RULES if r.varies] == ["low-concurrency-loss", "high-concurrency-loss"]
    assert not [v for v in judge(tde_claims.RULES, grid, part="4c16g") if "concurrency" in v.id]
    two = one | {("encryption off", "w", 16): 100.0, ("encryption on", "w", 16): 95.0}
    grid = runs_of(two, factors=("workload", "threads")).rename(columns={"m": "tps"})
    got = {v.id for v in judge(tde_claims.RULES, grid, part="4c16g")}
    assert {"4c16g:low-concurrency-loss", "4c16g:high-concurrency-loss"} <= got
