"""Progress that tells the truth: the total never grows during a run (retakes and profiling runs are in it
from the start, decided or cut runs come off it), the ETA never promises past the time budget left, and
progress.json ends final with the total equal to the runs made."""

from __future__ import annotations

import json
import time

from secoverhead.measurement import experiment as ex
from secoverhead.measurement.progress import Progress, describe
from secoverhead.measurement.results import ResultStore


def _noisy(monkeypatch, flags):
    flagged = iter(flags)

    class Flagged:
        def __init__(self, noise):
            self.noise = noise

        def metrics(self):
            return self.noise.metrics() | {"noise_flagged": next(flagged, 0.0)}

    class Noisy(ex.NoiseMonitor):
        def stop(self):
            return Flagged(super().stop())

    monkeypatch.setattr(ex, "NoiseMonitor", Noisy)


def test_the_total_never_grows_through_retakes_and_a_budget_stop(tmp_path, monkeypatch):
    _noisy(monkeypatch, [1.0, 0.0, 1.0] + [0.0] * 100)  # two noisy runs: two retakes
    store = ResultStore(tmp_path, "budget")
    exp = ex.Experiment(
        ex.ExperimentPlan("budget", arms=["a", "b"], repetitions=20, warmup=1, max_retakes=3, max_seconds=0.6), store
    )
    seen = []

    def measure(arm, factors):
        state = json.loads((store.path / "progress.json").read_text())
        seen.append(state["planned"])
        assert state["eta_s"] is None or state["eta_s"] <= 0.6 + 1e-6  # never past the budget
        time.sleep(0.05)
        return ex.Measurement({"x": 1.0})

    exp.run(measure)
    assert seen == sorted(seen, reverse=True), seen  # only ever shrinks
    final = json.loads((store.path / "progress.json").read_text())
    assert final["final"] and final["status"] == "stopped at time budget"
    assert final["done"] == final["planned"] == len(store.records()) < 42
    assert "time budget" in final["current"] and "{" not in final["current"]


def test_a_complete_run_ends_with_every_run_counted(tmp_path, monkeypatch):
    _noisy(monkeypatch, [1.0] + [0.0] * 100)
    store = ResultStore(tmp_path, "retake")
    exp = ex.Experiment(ex.ExperimentPlan("retake", arms=["a", "b"], repetitions=2, warmup=0, max_retakes=2), store)
    exp.run(lambda arm, factors: ex.Measurement({"x": 1.0}))
    final = json.loads((store.path / "progress.json").read_text())
    assert len(store.records()) == 5 and final["done"] == 5 and final["planned"] == 5
    assert final["status"] == "complete" and final["eta_s"] == 0.0


def test_eta_is_bounded_by_the_budget_left(tmp_path):
    now = [0.0]
    p = Progress("x", tmp_path / "p.json", ceiling=100, max_seconds=60, clock=lambda: now[0])
    assert p.eta_s() == 60  # nothing measured yet: the budget is the most it can take
    for _ in range(5):
        now[0] += 10
        p.finish(10.0)  # 95 runs of 10 s left would be 950 s
        assert p.eta_s() <= max(0.0, 60 - now[0]) + 1e-9
    p.drop(95)
    assert p.total() == 5 and p.eta_s() == 0
    unbounded = Progress("y", tmp_path / "q.json", ceiling=10)
    unbounded.finish(2.0)
    assert unbounded.eta_s() == 18.0


def test_runs_the_clock_cannot_cut_keep_the_eta_above_zero_past_the_budget(tmp_path):
    """The first look's rounds run whatever the budget: their time is the ETA, not 0m00s (TDE said so 3 times)."""
    now = [0.0]
    p = Progress("x", tmp_path / "p.json", ceiling=100, max_seconds=30, clock=lambda: now[0])
    for _ in range(5):
        now[0] += 10
        p.finish(10.0)
    assert p.eta_s() == 0.0  # past the budget, nothing guaranteed left
    p.floor = 3
    assert p.eta_s() == 30.0  # three runs of 10 s
    p.drop(93)
    assert p.eta_s() == 20.0  # never more than the runs left


def test_an_experiment_keeps_the_uncut_runs_current(tmp_path):
    """Warm-up and the rounds before the first look are counted down as they run, to 0 at the end."""
    store = ResultStore(tmp_path, "floor")
    exp = ex.Experiment(ex.ExperimentPlan("floor", arms=["a", "b"], repetitions=4, warmup=1, min_rounds=2), store)
    floors = []

    def measure(arm, factors):
        floors.append(exp._progress.floor)
        return ex.Measurement({"x": 1.0})

    exp.run(measure)
    assert floors == [6, 5, 4, 3, 2, 1, 0, 0, 0, 0] and exp._progress.floor == 0


def test_drops_never_take_the_total_below_the_runs_done(tmp_path):
    p = Progress("x", tmp_path / "p.json", ceiling=4)
    for _ in range(3):
        p.finish(1.0)
    p.drop(10)
    assert p.total() == 3


def test_a_run_is_described_in_words():
    assert describe("encryption on", {"workload": "oltp_read_only", "threads": 16}) == (
        "encryption on · workload oltp_read_only, threads 16"
    )
    assert describe("TLS", {}) == "TLS"


def test_an_interrupted_experiment_stops_short_of_its_total(tmp_path):
    p = Progress("x", tmp_path / "p.json", ceiling=10)
    for _ in range(3):
        p.finish(1.0)
    p.close("interrupted", "interrupted by SIGINT")
    final = json.loads((tmp_path / "p.json").read_text())
    assert final["final"] and final["status"] == "interrupted" and final["done"] == 3 and final["planned"] == 10
    done = Progress("y", tmp_path / "q.json", ceiling=10)
    done.finish(1.0)
    done.close("stopped at time budget")
    assert json.loads((tmp_path / "q.json").read_text())["planned"] == 1


WHY = "every claim decided after 4 rounds (look 1), or not testable"


def test_a_finished_bar_on_the_terminal_is_closed_once_and_never_redrawn(tmp_path, capsys):
    from secoverhead.app.watch import Watch

    w = Watch(tmp_path, "tls", tty=True)
    running = {"experiment": "tls-mysql", "done": 2, "planned": 9, "eta_s": 30.0, "current": "TLS", "final": False}
    w._draw([running])
    assert w.waiting is None and "tls-mysql" in w.bars
    final = running | {"done": 9, "final": True, "status": "decided", "current": WHY * 2}
    w._draw([final])
    bar = w.bars["tls-mysql"]
    assert "tls-mysql" in w.closed and bar.disable  # closed: tqdm draws it no more
    bar.set_postfix_str = lambda *a, **k: (_ for _ in ()).throw(AssertionError("redrawn"))
    w._draw([final])  # the next poll leaves it alone, and says what happens between experiments
    assert w.waiting is not None and "between parts" in w.waiting.desc
    w._finish()
    assert "tls-mysql decided" in (err := capsys.readouterr().err) and WHY * 2 in err  # the reason whole


def test_a_resumed_run_does_not_redraw_the_earlier_attempts_end_and_rates_only_its_new_runs(tmp_path, capsys):
    """The earlier attempt's interrupted bar (7 of 11) is not drawn again as if it had just ended; the part,
    running again from its 7 runs, starts its bar there, so its rate is of the runs since (not 7 runs in 0 s)."""
    from secoverhead.app.watch import Watch

    earlier = {
        "experiment": "tls-mysql",
        "done": 7,
        "planned": 11,
        "final": True,
        "status": "interrupted",
        "current": "interrupted",
        "updated": 1.0,
    }
    (tmp_path / "tls-mysql").mkdir()
    (tmp_path / "tls-mysql" / "progress.json").write_text(json.dumps(earlier))
    w = Watch(tmp_path, "tls", tty=True)
    w._draw(w.states())
    assert "tls-mysql" not in w.bars and "tls-mysql" not in w.closed
    again = earlier | {"final": False, "status": "running", "current": "TLS", "eta_s": 9.0, "updated": 2.0}
    w._draw([again])
    bar = w.bars["tls-mysql"]
    assert (bar.n, bar.initial) == (7, 7) and bar.format_dict["n"] - bar.format_dict["initial"] == 0
    w._draw([again | {"done": 8}])
    assert bar.n == 8 and "interrupted" not in capsys.readouterr().err
    ended = again | {"done": 11, "final": True, "status": "complete", "updated": 3.0}
    w._draw([ended])
    assert "tls-mysql" in w.closed  # a later end is drawn: it is not the earlier attempt's


def test_the_terminal_cuts_what_runs_at_a_word_and_never_mid_word(tmp_path, capsys):
    from secoverhead.app.watch import Watch

    w = Watch(tmp_path, "tde", tty=True)
    w._draw([{"experiment": "tde-4c16g", "done": 2, "planned": 9, "eta_s": 30.0, "current": WHY * 2, "final": False}])
    postfix = w.bars["tde-4c16g"].postfix
    assert postfix.endswith("…") and WHY[:40] in postfix and not postfix[:-1].endswith(("no", "("))


def test_a_noisy_warm_up_run_is_not_taken_again(tmp_path, monkeypatch):
    """No statistic reads a warm-up run, so the noise monitor's flag on one costs no second run; a measured one
    flagged the same way is taken again."""
    _noisy(monkeypatch, [1.0, 1.0, 0.0, 1.0] + [0.0] * 100)  # both warm-up runs flagged, then one measured run
    store = ResultStore(tmp_path, "warm")
    exp = ex.Experiment(ex.ExperimentPlan("warm", arms=["a", "b"], repetitions=2, warmup=1, max_retakes=5), store)
    exp.run(lambda arm, factors: ex.Measurement({"x": 1.0}))
    records = store.records()
    assert sum(r.warmup for r in records) == 2
    assert len(records) == 2 + 4 + 1  # warm-up, measured, one retake


def test_a_running_postfix_is_cut_at_a_word_and_the_reason_it_ended_is_said_whole():
    from secoverhead.measurement.progress import shortened

    reason = WHY
    assert len(shortened(reason * 2)) <= 60 and shortened(reason * 2).endswith("…")
    assert not shortened(reason * 2)[:-1].endswith(("no", "(")) and " " not in shortened(reason * 2)[-2:]
    assert shortened("short") == "short"
