"""Experiment design: look schedules with alpha spending, feasibility of a plan, and sequential stopping that
keeps the false-positive rate honest, by simulation and on the real runner."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from secoverhead.analysis.compare import compare_arms
from secoverhead.analysis.design import (
    ClaimPlan,
    check,
    fixed,
    half_width,
    min_detectable_ratio,
    rounds_needed,
    schedule,
)
from secoverhead.measurement.experiment import Experiment, ExperimentPlan, Measurement
from secoverhead.measurement.plan import cell_of
from secoverhead.measurement.results import ResultStore


def test_schedule_spends_alpha_little_early_most_late():
    looks = schedule(3, 12, 4)
    assert looks.rounds == (3, 6, 9, 12)
    assert sum(looks.alphas) == pytest.approx(0.05)
    assert list(looks.alphas) == sorted(looks.alphas) and looks.alphas[0] < 0.05 / 4
    assert schedule(3, 4, 5).rounds == (3, 4)  # never more looks than rounds
    assert schedule(5, 5, 3).rounds == (5,) and schedule(5, 5, 3).alphas == (0.05,)
    assert fixed(8).rounds == (8,)
    assert looks.index_for(7) == 2 and looks.index_for(20) == 3
    with pytest.raises(ValueError):
        schedule(1, 5)


def test_a_steeper_spending_keeps_more_alpha_for_the_last_look():
    flat, steep = schedule(5, 14, 2), schedule(5, 14, 2, power=4)
    assert flat.alphas == pytest.approx((0.0125, 0.0375))
    assert steep.alphas == pytest.approx((0.05 / 16, 0.05 * 15 / 16))
    assert sum(steep.alphas) == pytest.approx(0.05)  # the union bound still holds
    assert schedule(5, 14, 2, power=1).alphas == pytest.approx((0.025, 0.025))
    with pytest.raises(ValueError):
        schedule(5, 14, 2, power=0)


def test_precision_grows_with_rounds_and_shrinks_with_noise():
    assert half_width(20, 0.05, 0.05) < half_width(5, 0.05, 0.05) < half_width(5, 0.20, 0.05)
    assert half_width(5, 0.05, 0.05, comparisons=4) > half_width(5, 0.05, 0.05)
    assert min_detectable_ratio(20, 0.05, 0.05) < min_detectable_ratio(5, 0.05, 0.05)
    assert math.isinf(half_width(1, 0.05, 0.05))
    assert rounds_needed(0.05, 0.05, 0.05) < rounds_needed(0.02, 0.05, 0.05)


def test_a_plan_that_cannot_decide_is_flagged_with_the_rounds_it_needs():
    looks = schedule(3, 6, 2)
    ok, hopeless = check(
        [
            ClaimPlan("CPU per op, +-10 %", noise_cv=0.03, precision=0.10),
            ClaimPlan("TPS, +-2 %", noise_cv=0.20, precision=0.02, comparisons=4),
        ],
        looks,
    )
    assert ok.feasible and not hopeless.feasible
    assert hopeless.rounds_needed is None or hopeless.rounds_needed > 6
    assert "cannot reach" in hopeless.message(6) and "decidable" in ok.message(6)


def test_a_study_plan_is_checked_and_sized_up_before_it_starts():
    """The audit and TDE quick plans decide; cut to 7 rounds, TDE's write-heavy claim (+-4 % on its prior spread)
    cannot: warn says so, size-up raises repetitions to what it needs, refuse stops before anything starts."""
    from secoverhead.core.errors import ConfigError
    from secoverhead.core.params import build, read_file
    from secoverhead.core.paths import PARAMS
    from secoverhead.studies.audit import declarations as audit_declarations
    from secoverhead.studies.tde import declarations as tde_declarations

    assert (
        build(audit_declarations.Params, read_file(PARAMS / "audit" / "quick.yaml"), study="audit").check_plan() == []
    )
    values = read_file(PARAMS / "tde" / "quick.yaml")
    assert build(tde_declarations.Params, values, study="tde").check_plan() == []
    values = values | {"repetitions": 7}
    warned = build(tde_declarations.Params, values | {"plan_check": "warn"}, study="tde")
    lines = warned.check_plan()
    assert any("write-heavy" in line and "cannot reach" in line for line in lines) and warned.repetitions == 7
    sized = build(tde_declarations.Params, values | {"plan_check": "size-up"}, study="tde")
    lines = sized.check_plan()
    assert sized.repetitions > 7 and any("raised from 7" in line for line in lines)
    assert all(f.feasible for f in sized.feasibility())
    with pytest.raises(ConfigError, match="cannot reach"):
        build(tde_declarations.Params, values | {"plan_check": "refuse"}, study="tde").check_plan()
    assert build(tde_declarations.Params, values | {"aa": True}, study="tde").check_plan() == []  # A/A has no claims


def _aa_experiment(rng, looks, *, round_sd=0.1, run_sd=0.05, heavy=False) -> tuple[bool, int]:
    """One sequential A/A experiment: rounds of two identical arms; a false positive is any look whose
    interval excludes 1. Returns (false positive, rounds used)."""
    rows = []
    for rnd in range(looks.rounds[-1]):
        drift = rng.normal(0, round_sd)
        for arm in ("a", "b"):
            noise = rng.standard_t(3) * run_sd / math.sqrt(3) if heavy else rng.normal(0, run_sd)
            rows.append({"arm": arm, "round": rnd, "run_id": len(rows), "x": math.exp(drift + noise)})
        n = rnd + 1
        if n in looks.rounds:
            alpha = looks.alpha_at(looks.rounds.index(n))
            c = compare_arms(pd.DataFrame(rows), "x", baseline="a", candidates=["b"], confidence=1 - alpha)["b"]
            if c.ci_low > 1 or c.ci_high < 1:
                return True, n
    return False, looks.rounds[-1]


@pytest.mark.parametrize("heavy", [False, True], ids=["log-normal", "heavy-tailed t3"])
def test_sequential_stopping_keeps_aa_false_positives_at_most_alpha(heavy):
    rng = np.random.default_rng(21 + heavy)
    looks = schedule(3, 12, 4)
    trials = 600
    fp = sum(_aa_experiment(rng, looks, heavy=heavy)[0] for _ in range(trials))
    assert fp / trials <= 0.05 + 0.02  # binomial sd at 600 trials is ~0.009; the union bound gives <= 0.05


def test_looking_four_times_at_full_alpha_would_not():
    rng = np.random.default_rng(23)
    naive = schedule(3, 12, 4).__class__((3, 6, 9, 12), (0.05, 0.05, 0.05, 0.05))
    fp = sum(_aa_experiment(rng, naive)[0] for _ in range(600))
    assert fp / 600 > 0.07  # why the looks must share the error budget


def _experiment(tmp_path, name, effects, repetitions=12, judge_threshold=1.0):
    """A real Experiment with a synthetic measure: arm 'b' of cell c costs effects[c] times arm 'a'."""
    rng = np.random.default_rng(5)
    store = ResultStore(tmp_path, name)
    exp = Experiment(
        ExperimentPlan(name, arms=["a", "b"], factors={"c": list(effects)}, repetitions=repetitions, warmup=0), store
    )

    def measure(arm, factors):
        ratio = effects[factors["c"]] if arm == "b" else 1.0
        return Measurement({"x": ratio * math.exp(rng.normal(0, 0.03))})

    def decide(index, alpha):
        needed = set()
        comps = compare_arms(store.runs(), "x", baseline="a", candidates=["b"], by=["c"], confidence=1 - alpha)
        for (_, c), comp in comps.items():
            if not (comp.ci_low > judge_threshold or comp.ci_high < judge_threshold):
                needed |= {cell_of(arm, {"c": c}) for arm in ("a", "b")}
        return needed

    exp.run(measure, looks=schedule(3, repetitions, 4), decide=decide)
    return store


def test_the_runner_stops_when_every_claim_is_decided(tmp_path):
    store = _experiment(tmp_path, "big", {"x1": 2.0, "x2": 0.5})
    meta = store.metadata()
    assert len(store.records()) == 2 * 2 * 3  # decided at the first look, after 3 rounds
    assert "decided after 3 rounds" in meta["stop_reason"] and meta["final_alpha"] == pytest.approx(
        schedule(3, 12, 4).alphas[0]
    )


def test_later_rounds_go_only_to_undecided_cells(tmp_path):
    store = _experiment(tmp_path, "mixed", {"clear": 2.0, "close": 1.004})
    runs = store.runs()
    per_cell = runs.groupby("c")["round"].nunique()
    assert per_cell["clear"] == 3 and per_cell["close"] == 12  # the budget went to the undecided cell
    assert store.metadata()["status"] == "complete" and len(store.metadata()["looks_done"]) == 4


def test_aa_floor_from_fewer_rounds_than_planned_keeps_false_positives_near_alpha():
    """Ten measured A/A rounds stand in for a plan of 20: plain resampling repeats rounds and made the looks'
    false-positive rate look like 10-24 %; the smoothed resample keeps it near the 5 % spent."""
    import numpy as np

    from secoverhead.analysis.design import aa_floor, schedule, smoothed_resample

    looks = schedule(4, 20, 3)
    rates = [
        aa_floor(np.random.default_rng(seed).normal(0.0, 0.1, 10), looks, trials=2000, seed=seed).false_positive_rate
        for seed in range(12)
    ]
    assert 0.03 <= float(np.mean(rates)) <= 0.062  # plain resampling: 0.071
    d = np.random.default_rng(1).normal(0.3, 0.2, 10)
    x = smoothed_resample(d, (20000, 1), np.random.default_rng(2))
    assert x.mean() == pytest.approx(d.mean(), abs=0.01)
    assert x.std() == pytest.approx(d.std(ddof=1), rel=0.05)
    assert len(np.unique(x)) > 19000  # no repeated rounds


def test_aa_floor_is_an_experiments_spread_even_when_more_rounds_were_measured_than_planned():
    """16 measured rounds of sd 0.1 for a 12-round plan: the floor is what 12 independent rounds give (about
    1.96 x 0.1 / sqrt 12 = 5.8 %), not the ~3 % that subsets of the 16 gave (their means hardly differ)."""
    import numpy as np

    from secoverhead.analysis.design import aa_floor, schedule

    z = np.linspace(-1.7, 1.7, 16)
    d = (z - z.mean()) / z.std(ddof=1) * 0.1  # exactly mean 0, sd 0.1
    f = aa_floor(d, schedule(3, 12, 2), trials=4000)
    assert f.floor == pytest.approx(np.expm1(1.96 * 0.1 / np.sqrt(12)), rel=0.15)


def test_aa_floor_counts_the_offset_in_the_floor_but_not_in_false_positives():
    import numpy as np

    from secoverhead.analysis.design import aa_floor, schedule

    d = np.random.default_rng(3).normal(0.08, 0.02, 30)  # a systematic 8 % difference, little spread
    f = aa_floor(d, schedule(4, 20, 3), trials=2000)
    assert f.floor > 0.07 and f.offset == pytest.approx(np.expm1(d.mean()))
    assert f.false_positive_rate <= 0.08


def test_budget_rounds_is_what_the_time_affords_within_the_plan():
    from secoverhead.analysis.design import budget_rounds

    assert budget_rounds(60, 2.0, 3, 77) == 30
    assert budget_rounds(600, 2.0, 3, 77) == 77  # the plan ends first
    assert budget_rounds(5, 2.0, 3, 77) == 3  # the first look is always reached
    assert budget_rounds(60, 0.0, 3, 77) == 77


def _slow_measure(seconds: float):
    """Two arms 1 % apart, each run taking `seconds`: the clock, not the data, ends such an experiment."""
    import time

    def measure(arm, factors):
        time.sleep(seconds)
        return Measurement({"x": 1.0 + 0.01 * (arm == "b")})

    return measure


def _never_decided(index, alpha):
    return {cell_of(a, {}) for a in ("a", "b")}


def test_a_budget_stop_spends_what_the_looks_left_and_a_decided_stop_does_not(tmp_path):
    looks = schedule(3, 40, 3)  # looks at 3, 22 and 40; the clock ends it long before 22
    store = ResultStore(tmp_path, "budget")
    exp = Experiment(ExperimentPlan("budget", arms=["a", "b"], repetitions=40, warmup=0, max_seconds=0.6), store)
    exp.run(_slow_measure(0.02), looks=looks, decide=_never_decided)
    meta = store.metadata()
    assert meta["status"] == "stopped at time budget" and 3 < len(store.records()) // 2 < 40
    assert meta["stop_reason"] == "time budget of 0.6 s reached"
    assert meta["final_alpha"] == pytest.approx(0.05 - looks.alphas[0])  # not the next look's alone
    decided = _experiment(tmp_path, "decided", {"x1": 2.0, "x2": 0.5})
    assert decided.metadata()["final_alpha"] == pytest.approx(schedule(3, 12, 4).alphas[0])


def test_the_budget_never_stops_an_experiment_before_its_first_look(tmp_path):
    looks = schedule(4, 40, 2)
    store = ResultStore(tmp_path, "late")
    exp = Experiment(ExperimentPlan("late", arms=["a", "b"], repetitions=40, warmup=1, max_seconds=0.01), store)
    measure = _slow_measure(0.01)
    exp.run(measure, looks=looks, decide=_never_decided)
    meta = store.metadata()
    measured = {r.round for r in store.records() if not r.warmup}
    assert meta["status"] == "stopped at time budget" and len(measured) == 4  # warm-up and 4 rounds, then stop
    assert [d["rounds"] for d in meta["looks_done"]] == [4]
    # without looks there is no first look to reach: the clock alone
    plain = ResultStore(tmp_path, "plain")
    Experiment(ExperimentPlan("plain", arms=["a", "b"], repetitions=40, warmup=1, max_seconds=0.01), plain).run(measure)
    assert len(plain.records()) < 4


def test_a_part_without_claims_still_gets_its_guaranteed_rounds(tmp_path):
    """The TLS study's round-trip part decides nothing: late in a shared budget it once ran its warm-up only."""
    store = ResultStore(tmp_path, "noclaims")
    exp = Experiment(
        ExperimentPlan("noclaims", arms=["a", "b"], repetitions=40, warmup=1, max_seconds=0.0, min_rounds=3), store
    )
    exp.run(_slow_measure(0.001))
    measured = {r.round for r in store.records() if not r.warmup}
    assert len(measured) == 3 and store.metadata()["status"] == "stopped at time budget"
    assert store.metadata()["stop_reason"] == "no time left of the study's budget; its guaranteed 3 rounds ran"
