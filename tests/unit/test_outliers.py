"""One-off duets (outliers.py): the rule, its A/A error rate by simulation, and the runner taking one again."""

from __future__ import annotations

import math
import threading

import numpy as np
import pandas as pd
import pytest

from secoverhead.analysis.design import schedule
from secoverhead.analysis.outliers import deviation_limit, is_outlier, log_ratio
from secoverhead.analysis.stats import t_quantile
from secoverhead.measurement.experiment import Experiment, ExperimentPlan, Measurement
from secoverhead.measurement.plan import cell_of
from secoverhead.measurement.results import ResultStore


def test_log_ratio_refuses_missing_and_non_positive_values():
    assert log_ratio(100, 110) == pytest.approx(math.log(1.1))
    assert log_ratio(None, 1) is None and log_ratio(0, 1) is None and log_ratio(1, float("nan")) is None


@pytest.mark.parametrize(
    "x, others, expected",
    [
        (0.21, [0.01, -0.02, 0.02, 0.0], True),  # a two-second stall beside steady duets
        (0.05, [0.01, -0.02, 0.02, 0.0], False),  # within the limit
        (-0.12, [0.01, -0.03, 0.03], True),  # either direction
        (0.5, [0.0], False),  # one other duet cannot tell which of the two is odd
        (0.3, [0.2, -0.2, 0.25, -0.15, 0.1], False),  # a cell that spreads this much: 3 robust sd
    ],
)
def test_a_duet_is_an_outlier_only_far_from_the_others_median(x, others, expected):
    assert is_outlier(x, others, limit=0.1) is expected


def test_the_limit_widens_with_the_cells_own_spread():
    assert deviation_limit([0.0, 0.01], 0.1) == 0.1  # too few to estimate a spread
    assert deviation_limit([0.0, 0.01, -0.01, 0.005], 0.1) == 0.1
    wide = deviation_limit([0.2, -0.2, 0.1, -0.1, 0.0], 0.1)
    assert wide == pytest.approx(3 * 1.4826 * 0.1)


def _retaken(x: np.ndarray, rng, limit: float, look: int = 5) -> np.ndarray:
    """The rule as the runner applies it: each duet judged against the earlier ones when it ends (from three
    on), every one against all the others at the first look; an outlier replaced by a fresh draw of the same
    process (which may stall too), once."""

    def draw() -> float:
        return rng.choice([-0.25, 0.25]) if rng.random() < 0.03 else rng.normal(0, 0.03)

    out, again = list(x), set()
    for i in range(len(out)):
        if is_outlier(out[i], out[:i], limit):
            out[i], again = draw(), again | {i}
        if i + 1 == look:
            for j in range(look):
                if j not in again and is_outlier(out[j], out[:j] + out[j + 1 : look], limit):
                    out[j], again = draw(), again | {j}
    return np.asarray(out)


def test_taking_outliers_again_keeps_the_aa_false_positive_rate_and_narrows_intervals():
    """Identical arms whose duets stall now and then (3 %, either arm): 4,000 simulated experiments with the
    looks TDE's quick plan takes (5 rounds, then 8 at most). The rule is symmetric, so the sequential false
    positives stay <= 5 %; and it removes most of the width a stall adds, which is why TDE uses it."""
    rng = np.random.default_rng(11)
    looks, trials = schedule(5, 8, 2), 4000
    fp, width_raw, width_rule = 0, [], []
    for _ in range(trials):
        x = rng.normal(0, 0.03, 8)
        stalls = rng.random(8) < 0.03
        x[stalls] = rng.choice([-0.25, 0.25], stalls.sum())
        y = _retaken(x, rng, 0.1)
        for r, alpha in zip(looks.rounds, looks.alphas, strict=True):
            se = y[:r].std(ddof=1) / math.sqrt(r)
            if abs(y[:r].mean()) > t_quantile(r - 1, 1 - alpha / 2) * se:
                fp += 1
                break
        width_raw.append(x.std(ddof=1))
        width_rule.append(y.std(ddof=1))
    assert fp / trials <= 0.05
    assert np.percentile(width_rule, 95) < 0.6 * np.percentile(width_raw, 95)


@pytest.fixture
def quiet(monkeypatch):
    """No run flagged as noisy by the machine's own load: only the outlier rule flags duets."""
    from secoverhead.host import noise

    monkeypatch.setattr(noise, "STEAL_LIMIT", 2.0)
    monkeypatch.setattr(noise, "OUTSIDE_LIMIT", 1e9)


def test_the_runner_keeps_a_stalled_duet_and_records_which_arm_fell(tmp_path, quiet):
    rng = np.random.default_rng(2)
    lock = threading.Lock()
    state = {"stalled": False}
    store = ResultStore(tmp_path, "stall")
    exp = Experiment(
        ExperimentPlan(
            "stall", arms=["off", "on"], repetitions=6, warmup=1, design="duet", max_retakes=3, outlier=("tps", 0.1)
        ),
        store,
    )

    def measure(arm, factors):
        with lock:  # the "on" run of the fifth measured duet stalls, once
            measured_on = sum(1 for r in store.records() if r.arm == "on" and not r.warmup)
            stalled = arm == "on" and measured_on == 4 and not state["stalled"]
            state["stalled"] |= stalled
        return Measurement({"tps": 1000 * (0.7 if stalled else 1.0) * math.exp(rng.normal(0, 0.01))})

    everything = {cell_of("on", {}), cell_of("off", {})}
    exp.run(measure, looks=schedule(3, 6, 2), decide=lambda index, alpha: everything)
    meta = store.metadata()
    (stray,) = meta["outlier_duets"]
    assert stray["low_arm"] == "on" and stray["ratio"] < 0.8 and "taken_again" not in stray
    assert meta["retakes"] == 0  # never replaced because of its value: a stall may be the arm's real cost
    runs = store.runs()
    assert (runs["tps"] < 800).sum() == 1 and runs.groupby("block").size().eq(2).all()  # kept, in the statistics


def test_a_duet_of_the_first_rounds_is_judged_at_the_look(tmp_path, quiet):
    """The first measured duets have too few others to be judged when they end: the look judges them."""
    store = ResultStore(tmp_path, "early")
    exp = Experiment(
        ExperimentPlan(
            "early", arms=["off", "on"], repetitions=5, warmup=0, design="duet", max_retakes=3, outlier=("tps", 0.1)
        ),
        store,
    )
    seen = {"on": 0}
    lock = threading.Lock()

    def measure(arm, factors):
        with lock:
            if arm == "on":
                seen["on"] += 1
            first_on = arm == "on" and seen["on"] == 1
        return Measurement({"tps": 700.0 if first_on else 1000.0 + seen["on"]})

    exp.run(measure, looks=schedule(4, 5, 2), decide=lambda index, alpha: set())
    (stray,) = store.metadata()["outlier_duets"]
    assert stray["block"].startswith("0:") and store.metadata()["retakes"] == 0


def test_claims_without_the_outliers_are_a_labelled_check_beside_the_verdict():
    """The verdict is judged on every run; the same rule without the recorded one-off duets is shown beside it,
    never in its place, and only when some duet was recorded."""
    from types import SimpleNamespace

    from secoverhead.analysis.verdicts import ClaimVerdict, Verdict
    from secoverhead.studies.protocol.judging import judged

    rows = [{"arm": a, "block": f"{r}:on", "round": r, "tps": 1000.0 * (0.7 if (a, r) == ("on", 0) else 1.0)}
            for r in range(4) for a in ("off", "on")]  # fmt: skip
    runs = pd.DataFrame(rows)

    def judge(runs, alpha):  # "no loss": refuted by any run's loss
        lost = (runs[runs["arm"] == "on"]["tps"] < 900).any()
        return [ClaimVerdict("no loss", Verdict.NOT_REPRODUCED if lost else Verdict.REPRODUCED, "e", id="x")]

    meta = {"outlier_duets": [{"block": "0:on", "low_arm": "on"}]}
    part = SimpleNamespace(runs=lambda: runs, alpha=0.05, metadata=lambda: meta)
    (v,) = judged(part, judge)
    assert v.verdict == Verdict.NOT_REPRODUCED  # the stall counts
    assert v.sensitivity.startswith("without the 1 one-off duet(s) (metric fell in: on): reproduced")
    assert "not the verdict" in v.sensitivity
    part = SimpleNamespace(runs=lambda: runs, alpha=0.05, metadata=lambda: {})
    assert judged(part, judge)[0].sensitivity == ""


def test_holm_over_a_studys_claims_steps_down_from_alpha_over_m():
    """claim_errors=holm: every claim first at alpha/m; those that decide leave and the rest are judged again at
    alpha over the claims left. A claim whose rule decides only at the full alpha stays undecided."""
    from types import SimpleNamespace

    from secoverhead.analysis.verdicts import ClaimVerdict, Verdict
    from secoverhead.studies.protocol.judging import study_verdicts

    # each claim decides once alpha reaches its own level
    levels = {"strong": 0.001, "middle": 0.03, "weak": 0.05}

    def judge(runs, alpha):
        return [
            ClaimVerdict(k, Verdict.REPRODUCED if alpha >= lv - 1e-12 else Verdict.INCONCLUSIVE, "e", id=k)
            for k, lv in levels.items()
        ]

    part = SimpleNamespace(name="p", arms=["A"], runs=lambda: None, alpha=0.06, metadata=lambda: {}, server={})
    result = type("R", (), {"params": SimpleNamespace(claim_errors="holm"), "__iter__": lambda self: iter([part])})()
    got = {v.id: v for v in study_verdicts(result, lambda p: judge)}
    # 0.06/3 = 0.02 decides "strong"; then 0.06/2 = 0.03 decides "middle"; then 0.06/1 decides "weak"
    assert all(v.verdict == Verdict.REPRODUCED for v in got.values())
    assert "decided at alpha/3" in got["strong"].evidence and "decided at alpha/1" in got["weak"].evidence
    levels["weak"] = 0.07  # decides only beyond the study's alpha: stays undecided
    got = {v.id: v for v in study_verdicts(result, lambda p: judge)}
    assert got["weak"].verdict == Verdict.INCONCLUSIVE and "undecided at alpha/1" in got["weak"].evidence
    result.params.claim_errors = "per-claim"  # the default: each claim at its part's alpha
    got = {v.id: v for v in study_verdicts(result, lambda p: judge)}
    assert got["weak"].verdict == Verdict.INCONCLUSIVE and got["middle"].verdict == Verdict.REPRODUCED
    assert "Holm" not in got["middle"].evidence
