"""Intervals that cover a rerun: what varies between runs (the server instances a run's rounds all share) is
estimated from repeated runs (Paule-Mandel, as series/learned.py and benchmarks/between_runs.py do) and added to
every interval of the study's comparisons between arms (claimcheck.Rule, data/claims/between_runs.yaml)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.claimcheck import Rule
from secoverhead.analysis.pooling import paule_mandel
from secoverhead.analysis.reads import Cell, Contrast, Ratio, widened
from secoverhead.analysis.stats import t_quantile, widen

TRUE = 0.95  # server_audit's TPS over A's, in every rerun's population
ROUND_SD, INSTANCE_SD, ROUNDS = 0.03, 0.05, 8


def between_run_sd(estimates, ses) -> float:
    """The sd between runs, as the learner and benchmarks/between_runs.py take it."""
    return math.sqrt(paule_mandel(list(estimates), [se * se for se in ses]))


RULE = Rule("audit", "server_audit-small", (Ratio("A: no audit", "server_audit", higher_is_better=True),))


def rerun(seed: int) -> pd.DataFrame:
    """One run of a duet experiment: its two server instances give the candidate an offset that all its rounds
    share (drawn anew per run), and each round its own noise."""
    rng = np.random.default_rng(seed)
    offset = rng.normal(0, INSTANCE_SD)
    rows = []
    for rnd in range(ROUNDS):
        drift = rng.lognormal(0, 0.1)
        rows.append({"arm": "A: no audit", "round": rnd, "tps": 1000 * drift})
        ratio = TRUE * math.exp(offset + rng.normal(0, ROUND_SD))
        rows.append({"arm": "server_audit", "round": rnd, "tps": 1000 * drift * ratio})
    return pd.DataFrame(rows)


def interval(runs: pd.DataFrame) -> tuple[float, float]:
    v = RULE.judge(runs, 0.05)
    ((lo, hi),) = v.judged[0]["intervals"]
    return lo, hi


def coverage(seeds: range) -> float:
    return float(np.mean([lo <= TRUE <= hi for lo, hi in (interval(rerun(s)) for s in seeds)]))


def test_a_runs_own_interval_misses_a_rerun_the_declared_term_covers_it(monkeypatch):
    monkeypatch.setattr(registry, "between_runs", lambda: {})
    assert coverage(range(200)) < 0.6  # rounds sharing their instances: too narrow by construction
    # the between-run sd, estimated from 20 reruns as benchmarks/between_runs.py does it
    estimates, ses = [], []
    for s in range(1000, 1020):
        lo, hi = interval(rerun(s))
        estimates.append((math.log(lo) + math.log(hi)) / 2)
        ses.append((math.log(hi) - math.log(lo)) / 2 / t_quantile(ROUNDS - 1, 0.975))
    tau = between_run_sd(estimates, ses)
    assert 0.5 * INSTANCE_SD < tau < 1.6 * INSTANCE_SD
    declared = {("audit", "tps"): registry.BetweenRuns(tau, 20, "this test")}
    monkeypatch.setattr(registry, "between_runs", lambda: declared)
    assert coverage(range(200)) >= 0.88  # 95 % nominal; tau itself estimated from 20 runs
    assert "between-run sd" in RULE.judge(rerun(0), 0.05).measure


def test_the_between_run_sd_is_zero_when_runs_agree_as_their_rounds_say_and_grows_with_their_spread():
    rng = np.random.default_rng(1)
    ses = np.full(400, 0.02)
    assert between_run_sd(rng.normal(0, 0.02, 400), ses) < 0.01
    assert between_run_sd(rng.normal(0, math.hypot(0.02, 0.05), 400), ses) == pytest.approx(0.05, abs=0.01)
    assert between_run_sd([0.1], [0.02]) == 0.0 and between_run_sd([], []) == 0.0


def test_widening_adds_in_variance_and_keeps_the_centre():
    lo, hi = widen(0.9, 1.0, 0.05, 8, 0.95, log=True)
    assert lo < 0.9 and hi > 1.0 and math.log(lo) + math.log(hi) == pytest.approx(math.log(0.9) + math.log(1.0))
    assert widen(0.9, 1.0, 0.0, 8, 0.95, log=True) == (0.9, 1.0)
    assert widen(-2.0, 2.0, 1.0, 2, 0.95, log=False)[1] == pytest.approx(math.hypot(2.0, t_quantile(1, 0.975)))
    loss = Cell("", 10.0, 5.0, 15.0, 8, "n=8 rounds", "", 0.95, 1)
    wide = widened(loss, 0.05, "loss")
    assert wide.lo < 5.0 and wide.hi > 15.0  # widened on the ratio, its ends swapped back


def test_no_term_for_a_contrast_where_an_instances_offset_cancels(monkeypatch):
    from secoverhead.analysis.claimcheck import _widened

    cells = [Cell("w", 0.9, 0.85, 0.95, 8, "n=8 rounds", "", 0.95, 1)]
    assert _widened(Contrast("off", "on", "threads"), cells, 0.1) == cells
    assert _widened(Ratio("off", "on"), cells, 0.1) != cells


def test_a_declared_term_needs_three_runs_and_a_date(tmp_path, monkeypatch):
    from secoverhead.core import paths

    bad = tmp_path / "between_runs.yaml"
    bad.write_text("- {study: tde, metric: tps, sd: 0.02, runs: 2, estimated: today, engine: MySQL 8.0.33}\n")
    monkeypatch.setattr(paths, "BETWEEN_RUNS", bad)
    registry.between_runs.cache_clear()
    try:
        with pytest.raises(ValueError, match="runs 2 is not a whole number of runs, 3 or more"):
            registry.between_runs()
    finally:
        registry.between_runs.cache_clear()


GOOD = "{study: tde, metric: tps, sd: 0.02, runs: 3, estimated: today, engine: MySQL 8.0.33}"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (GOOD.replace("0.02", ".nan"), "sd nan is not a finite number"),
        (GOOD.replace("0.02", ".inf"), "sd inf is not a finite number"),
        (GOOD.replace("0.02", "1.0e+308"), "sd 1e+308 is not a finite number in [0, 100]"),
        (GOOD.replace("0.02", "1e308"), "sd '1e308'"),  # YAML reads it as text: refused all the same
        (GOOD.replace("0.02", "-0.1"), "sd -0.1"),
        (GOOD.replace("0.02", "'0.02'"), "sd '0.02'"),
        (GOOD.replace("3,", "3.5,"), "runs 3.5"),
        (GOOD.replace("estimated: today", "estimated: ''"), "estimated"),
        (GOOD.replace("study: tde, ", ""), "a mapping with study"),
        (GOOD.replace(", engine: MySQL 8.0.33", ""), "engine (the server build its runs measured) is missing"),
        (GOOD.replace("engine: MySQL 8.0.33", "engine: [8]"), "engine [8] is not a server build"),
        (GOOD + "\n- " + GOOD, "tde tps is declared twice"),
        ("- {study: tde, metric: [tps", "between-run terms"),  # a broken line: YAML's own error, the file named
        ("- &a [1]\n- *a\n", "alias"),  # no aliases, at any depth
    ],
)
def test_the_between_run_file_is_read_like_user_input_each_fault_one_line_naming_the_file(
    tmp_path, monkeypatch, text, says
):
    from secoverhead.core import paths
    from secoverhead.core.errors import ConfigError

    bad = tmp_path / "between_runs.yaml"
    bad.write_text(text if text.startswith("- &") else "- " + text.removeprefix("- "))
    monkeypatch.setattr(paths, "BETWEEN_RUNS", bad)
    registry.between_runs.cache_clear()
    try:
        with pytest.raises(ConfigError) as err:
            registry.between_runs()
        assert says in str(err.value) and "between_runs.yaml" in str(err.value), str(err.value)
    finally:
        registry.between_runs.cache_clear()


def test_a_broken_between_run_file_stops_a_run_before_any_server(tmp_path, monkeypatch):
    """Through the pipeline's pre-flight: one ConfigError before a server or kernel starts (prepare starts none)."""
    from secoverhead.app.pipeline import prepare
    from secoverhead.core import paths
    from secoverhead.core.errors import ConfigError

    bad = tmp_path / "between_runs.yaml"
    bad.write_text("- " + GOOD.replace("0.02", ".nan") + "\n")
    monkeypatch.setattr(paths, "BETWEEN_RUNS", bad)
    registry.between_runs.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"between_runs\.yaml entry 1: sd nan"):
            prepare("tls", overrides=[("repetitions", "2")])
    finally:
        registry.between_runs.cache_clear()


def test_an_undecided_verdict_never_promises_rounds_the_floor_forbids(monkeypatch):
    """With a between-run sd whose floor alone is wider than the room to the claim's line, the evidence says no
    number of rounds in one run decides it and how many reports of its series would; without one, it names rounds."""
    runs = rerun(3)
    monkeypatch.setattr(registry, "between_runs", lambda: {})
    plain = RULE.judge(runs, 0.05)
    monkeypatch.setattr(registry, "between_runs", lambda: {("audit", "tps"): registry.BetweenRuns(0.2, 20, "t")})
    floored = RULE.judge(runs, 0.05)
    assert floored.verdict.value == "inconclusive", floored.evidence
    assert "no number of rounds in one run decides it" in floored.evidence
    assert "reports of its series would" in floored.evidence
    assert floored.rounds_needed is None
    if plain.verdict.value == "inconclusive":
        assert plain.rounds_needed and f"about {plain.rounds_needed} would decide it" in plain.evidence
