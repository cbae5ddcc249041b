"""Experiments and the results store: interleaving, warm-up, resume after a crash, secrets stripped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from secoverhead.core.files import sanitize
from secoverhead.core.secrets import Secret
from secoverhead.measurement.experiment import Experiment, ExperimentPlan, Measurement
from secoverhead.measurement.plan import plan_rounds
from secoverhead.measurement.results import ResultStore


def plan_runs(*args, **kw):
    return [p for rnd in plan_rounds(*args, **kw) for unit in rnd for p in unit]


def test_plan_interleaves_arms_every_round_with_a_recorded_seed():
    plan = plan_runs(["a", "b", "c"], {"threads": [1, 8]}, repetitions=4, warmup=1, seed=3)
    assert len(plan) == 3 * 2 * 5
    for rnd in range(5):
        for threads in (1, 8):
            arms = [p.arm for p in plan if p.round == rnd and p.factors["threads"] == threads]
            assert sorted(arms) == ["a", "b", "c"]  # each arm once per round and combination
    orders = {tuple(p.arm for p in plan if p.round == r and p.factors["threads"] == 1) for r in range(5)}
    assert len(orders) > 1  # shuffled, not A B C every round
    assert plan == plan_runs(["a", "b", "c"], {"threads": [1, 8]}, repetitions=4, warmup=1, seed=3)
    assert [p.warmup for p in plan if p.round == 0] == [True] * 6
    assert {p.repetition for p in plan if not p.warmup} == {0, 1, 2, 3}


@pytest.mark.parametrize("arms", [["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"]])
def test_interleaved_order_is_balanced_every_k_rounds(arms):
    k = len(arms)
    for seed in range(20):
        plan = plan_runs(arms, {"threads": [1, 8]}, repetitions=3 * k, warmup=1, seed=seed)
        for threads in (1, 8):
            for cycle in range(3):
                rounds = range(1 + cycle * k, 1 + (cycle + 1) * k)  # measured rounds after the warm-up
                orders = [[p.arm for p in plan if p.round == r and p.factors["threads"] == threads] for r in rounds]
                for pos in range(k):
                    assert sorted(o[pos] for o in orders) == sorted(arms)  # each arm in each position once
    two = plan_runs(["a", "b"], {}, repetitions=10, warmup=0, seed=1)
    firsts = Counter(two[i].arm for i in range(0, len(two), 2))
    assert firsts == {"a": 5, "b": 5}
    cycles = {tuple(p.arm for p in plan_runs(["a", "b", "c"], {}, repetitions=3, warmup=0, seed=s)) for s in range(10)}
    assert len(cycles) > 1  # the permutation is drawn, not fixed


def test_duet_plan_pairs_the_baseline_with_each_arm_in_blocks_of_their_own():
    rounds = list(plan_rounds(["base", "x", "y"], {"threads": [1, 8]}, repetitions=3, warmup=1, seed=5, design="duet"))
    assert len(rounds) == 4
    for rnd, units in enumerate(rounds):
        assert len(units) == 2 * 2  # per combination, one pair per candidate
        for base, cand in units:
            assert (base.arm, base.partner) == ("base", cand.arm) and cand.partner == "base"
            assert base.block == cand.block and str(rnd) in base.block and base.factors == cand.factors
            assert base.round == cand.round == rnd and base.warmup == cand.warmup == (rnd == 0)
        assert len({u[0].block for u in units}) == len(units)  # every pair is a block of its own
        assert sorted(u[1].arm for u in units) == ["x", "x", "y", "y"]
    # keys differ by partner, so the baseline's two runs in a round are stored apart
    keys = [p.key for units in rounds for u in units for p in u]
    assert len(keys) == len(set(keys))
    with pytest.raises(ValueError, match="duet"):
        list(plan_rounds(["only"], {}, repetitions=1, warmup=0, seed=0, design="duet"))


def test_runs_are_stored_with_warmups_marked(tmp_path):
    store = ResultStore(tmp_path, "exp1")
    exp = Experiment(
        ExperimentPlan("exp1", arms=["off", "on"], factors={"n": [1]}, repetitions=3, warmup=1), store, progress=False
    )
    exp.run(
        lambda arm, f: Measurement(
            {"latency_ms": 1.0 if arm == "off" else 2.0}, samples=pd.DataFrame({"latency_ms": [1.0, 1.1]})
        )
    )
    runs = store.runs()
    assert len(runs) == 6 and not runs["warmup"].any()
    assert len(store.runs(include_warmup=True)) == 8
    long = pd.read_parquet(store.path / "results.parquet")
    assert set(long.columns) >= {"run_id", "arm", "factor_n", "metric", "value", "warmup", "unit", "higher_is_better"}
    assert set(long.columns) >= {"study", "experiment", "host", "target", "commit"}  # provenance on every row
    lat = long[long["metric"] == "latency_ms"]
    assert len(lat) == 8 and lat["warmup"].sum() == 2 and set(lat["unit"]) == {"ms"}
    assert lat["higher_is_better"].eq(False).all()
    assert {"noise_steal_fraction", "noise_busy_cores", "noise_flagged"} <= set(long["metric"])  # noise per run
    assert (store.path / "results.csv").exists()
    assert len(store.samples()) == 12
    meta = store.metadata()
    assert meta["status"] == "complete" and meta["plan"]["seed"] == 0
    assert meta["environment"]["machine"]["cpu_cores"] >= 1


def test_a_duets_runs_share_one_noise_window_closed_when_the_last_ends(tmp_path, monkeypatch):
    """The baseline returns at once, its partner after 0.3 s: the one window both runs' noise is read in closes after
    the partner's end (closed by the first, it raced the partner's reaping of its clients), and each run keeps its
    own duration."""
    from secoverhead.host import noise
    from secoverhead.measurement import experiment

    closed: list[float] = []

    class Recording(noise.NoiseMonitor):
        def _close(self):
            closed.append(time.monotonic())
            return super()._close()

    monkeypatch.setattr(experiment, "NoiseMonitor", Recording)
    store = ResultStore(tmp_path, "duet")
    ended: dict[str, float] = {}

    def measure(arm, f):
        if arm == "slow":
            time.sleep(0.3)
        ended[arm] = time.monotonic()
        return Measurement({"latency_ms": 1.0})

    plan = ExperimentPlan("duet", arms=["base", "slow"], repetitions=1, warmup=0, design="duet")
    Experiment(plan, store, progress=False).run(measure)
    assert closed and min(closed) >= ended["slow"] >= ended["base"]  # each party's stop, after the partner's end
    runs = store.runs()
    assert len(runs) == 2 and runs["noise_busy_cores"].nunique() == 1  # one window for both
    durations = {r.arm: r.duration_s for r in store.records()}
    assert durations["base"] < durations["slow"] and durations["slow"] >= 0.3 - 0.01  # not the partner's wait


def test_a_failure_mid_sweep_keeps_completed_runs_and_records_the_error(tmp_path):
    store = ResultStore(tmp_path, "exp2")
    exp = Experiment(ExperimentPlan("exp2", arms=["a", "b"], repetitions=3, warmup=0), store, progress=False)
    calls = []

    def measure(arm, factors):
        calls.append(arm)
        if len(calls) == 4:
            raise RuntimeError("server went away")
        return Measurement({"x": len(calls)})

    with pytest.raises(RuntimeError, match="server went away"):
        exp.run(measure)
    records = store.records()
    assert [r.status for r in records] == ["ok", "ok", "ok", "error"]
    assert "server went away" in records[-1].error
    assert store.metadata()["status"] == "failed"
    # Resuming retries the failed run and continues; completed ones are not repeated.
    calls.clear()
    Experiment(ExperimentPlan("exp2", arms=["a", "b"], repetitions=3, warmup=0), store, progress=False).run(
        lambda arm, f: Measurement({"x": 0})
    )
    assert len(store.completed_keys()) == 6


def test_time_budget_stops_the_plan_and_says_so(tmp_path):
    store = ResultStore(tmp_path, "exp3")
    exp = Experiment(
        ExperimentPlan("exp3", arms=["a", "b"], repetitions=50, warmup=0, max_seconds=0.3), store, progress=False
    )

    def slow(arm, factors):
        time.sleep(0.1)
        return Measurement({"x": 1})

    exp.run(slow)
    assert 2 <= len(store.records()) < 100
    assert store.metadata()["status"] == "stopped at time budget"


def test_same_id_with_another_plan_is_refused(tmp_path):
    store = ResultStore(tmp_path, "exp4")
    Experiment(ExperimentPlan("exp4", arms=["a"], repetitions=1), store, progress=False)
    with pytest.raises(ValueError, match="another plan"):
        Experiment(ExperimentPlan("exp4", arms=["a", "b"], repetitions=1), store, progress=False)


def test_secrets_are_stripped_from_everything_stored(tmp_path):
    pw = Secret("sentinel-PW-31337")
    store = ResultStore(tmp_path, "exp5")
    exp = Experiment(
        ExperimentPlan("exp5", arms=["a"], repetitions=1, warmup=0),
        store,
        about={
            "parameters": {
                "mysql_password": "sentinel-PW-31337",
                "mysql_password_env": "MYSQL_PW",
                "nested": {"dsn": "mysql://bench:sentinel-PW-31337@host/db", "secret": pw},
            }
        },
        progress=False,
    )
    exp.run(lambda arm, f: Measurement({"x": 1}, info={"note": f"connected with {pw.reveal()}"}))
    for path in store.path.rglob("*"):
        if path.is_file():
            assert b"sentinel-PW-31337" not in path.read_bytes(), path
    meta = store.metadata()
    assert meta["parameters"]["mysql_password_env"] == "MYSQL_PW"  # where a secret lives is not a secret
    assert meta["parameters"]["mysql_password"] == "<redacted>"


def test_sanitize_keeps_ordinary_values():
    assert sanitize({"key_type": "rsa", "threads": 8, "ratio": float("nan")}) == {
        "key_type": "rsa",
        "threads": 8,
        "ratio": None,
    }


CRASHING = textwrap.dedent(
    """
    import sys, time
    from secoverhead.measurement.experiment import Experiment, ExperimentPlan, Measurement
    from secoverhead.measurement.results import ResultStore
    store = ResultStore(sys.argv[1], "crash")
    exp = Experiment(ExperimentPlan("crash", arms=["a", "b", "c"], repetitions=10, warmup=1), store, progress=False)
    def measure(arm, factors):
        time.sleep(0.05)
        print(arm, flush=True)
        return Measurement({"t": time.time()})
    exp.run(measure)
    """
)


def test_a_killed_experiment_resumes_without_repeating_or_losing_runs(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    for _ in range(8):
        proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = ResultStore(tmp_path, "crash")
    before = {r.key: r.metrics["t"] for r in store.records()}
    assert 7 <= len(before) < 33
    ran = []

    def measure(arm, factors):
        ran.append(arm)
        return Measurement({"t": -1.0})

    Experiment(ExperimentPlan("crash", arms=["a", "b", "c"], repetitions=10, warmup=1), store, progress=False).run(
        measure
    )
    records = store.records()
    assert len(records) == 33 and len(ran) == 33 - len(before)
    keys = Counter(r.key for r in records)
    assert max(keys.values()) == 1  # nothing repeated
    assert {r.key: r.metrics["t"] for r in records if r.key in before} == before  # nothing lost or rewritten
    assert json.loads((store.path / "metadata.json").read_text())["status"] == "complete"


def test_an_owner_that_exited_is_dead_even_as_an_unreaped_zombie():
    from secoverhead.core.owners import alive

    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not alive(child.pid)  # not reaped yet: its directories are stale all the same
    child.wait()
    assert not alive(child.pid) and alive(os.getpid()) and not alive("x") and not alive(0)


def test_the_vcpus_speed_is_checked_once_before_each_round_and_not_again_on_resume(tmp_path):
    store = ResultStore(tmp_path, "speed")
    plan = ExperimentPlan("speed", arms=["a", "b"], repetitions=3, warmup=1, speed_check_s=0.01)
    calls = []

    def measure(arm, factors):
        calls.append(arm)
        if len(calls) == 5:
            raise RuntimeError("server went away")
        return Measurement({"x": 1})

    with pytest.raises(RuntimeError):
        Experiment(plan, store, progress=False).run(measure)
    checks = store.metadata()["speed_checks"]
    assert [c["round"] for c in checks] == [0, 1]  # the first and second measured rounds; no warm-up
    assert all(c["loop_ms"] > 0 for c in checks)
    Experiment(plan, store, progress=False).run(lambda arm, f: Measurement({"x": 1}))
    checks = store.metadata()["speed_checks"]
    # the rounds done are not checked again; the one cut short is, as its other runs start
    assert [(c["round"], c["warmup"]) for c in checks] == [(0, False), (1, False), (1, False), (2, False)]


def test_without_a_speed_check_the_plan_records_none(tmp_path):
    store = ResultStore(tmp_path, "nospeed")
    Experiment(ExperimentPlan("nospeed", arms=["a"], repetitions=2, warmup=0), store, progress=False).run(
        lambda arm, f: Measurement({"x": 1})
    )
    assert "speed_checks" not in store.metadata()


def test_the_speed_check_takes_nothing_from_the_runs_budget(tmp_path, monkeypatch):
    """On a clock of its own (a busy machine stretches real sleeps): checks of 0.3 s and runs of 0.05 s."""
    import types

    from secoverhead.measurement import experiment

    now = [0.0]
    monkeypatch.setattr(experiment, "time", types.SimpleNamespace(monotonic=lambda: now[0]))

    def check(seconds):
        now[0] += seconds
        return {"loop_ms": 1.0}

    monkeypatch.setattr(experiment, "speed_check", check)
    store = ResultStore(tmp_path, "budget")
    plan = ExperimentPlan("budget", arms=["a"], repetitions=3, warmup=0, max_seconds=0.5, speed_check_s=0.3)

    def measure(arm, factors):
        now[0] += 0.05
        return Measurement({"x": 1})

    Experiment(plan, store, progress=False).run(measure)
    assert len(store.records()) == 3  # 0.9 s of checks, 0.15 s of runs: the budget of 0.5 s is the runs'
