"""Experiments: arms (named configurations) x factors (workload, threads, ...) x rounds.

Runs are interleaved: in each round every arm runs once per factor combination, in a balanced order derived
from a recorded seed (each arm takes each position once in every k rounds of k arms, the permutation redrawn
every k rounds), so slow drifts of a noisy machine hit every arm alike, a position effect (the first run of
a round after a warmer or colder machine) cancels instead of leaning on whichever arm drew more first
places, and the round is a block.
The first `warmup` rounds are marked warm-up and kept. The plan is generated round by round (its size is
arithmetic, never a list in memory). Each run is stored the moment it ends; re-running an experiment with the
same id resumes after the runs already completed.

Sequential: with `looks`, the runner asks `decide(look, alpha)` after the planned rounds; it answers which
(arm, factors) cells its undecided claims still need. Later rounds run only those, and the experiment stops
when nothing is undecided or the time budget ends (see design.py for why the error rate stays honest). The
budget never stops an experiment before its first look: later parts of a study sharing one budget still
reach a point where their claims can be decided.
A single run whose noise diagnostics cross a threshold is flagged and, budget permitting, taken again; a duet is
not (its ratio cancels what hit both runs), and one that strays from its cell's other duets is recorded and kept
(outliers.py). An optional
profiling round runs after the warm-up, marked, and never enters the statistics.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from secoverhead.analysis import outliers
from secoverhead.analysis.design import Looks
from secoverhead.core.errors import Stalled
from secoverhead.core.units import significant
from secoverhead.host import environment
from secoverhead.host.calibration import speed_check
from secoverhead.host.noise import NoiseMonitor
from secoverhead.measurement.plan import PlannedRun, Unit, combinations, plan_rounds
from secoverhead.measurement.progress import Progress
from secoverhead.measurement.results import ResultStore, RunRecord
from secoverhead.workloads.measurement import Measurement, check_untimed

__all__ = ["Experiment", "ExperimentPlan", "Measurement", "Profiling"]


MeasureFn = Callable[[str, dict[str, Any]], Measurement]


DecideFn = Callable[[int, float], "set[tuple[str, tuple]] | None"]


@dataclass(frozen=True)
class ExperimentPlan:
    """One experiment's plan, fixed before its first run: its signature is recorded, and a resumed experiment
    must have the same one. min_rounds: measured rounds the clock never cuts when there are no looks (a part
    without claims, an A/A run); with looks, the first look's rounds are the guarantee."""

    experiment_id: str
    arms: tuple[str, ...]
    factors: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    repetitions: int = 5
    warmup: int = 1
    seed: int = 0
    design: str = "interleaved"
    max_seconds: float | None = None
    max_retakes: int = 0  # noisy single runs taken again: at most this many per experiment
    min_rounds: int = 0
    outlier: tuple[str, float] | None = None  # duets: (metric, least log deviation) marking an outlier duet
    speed_check_s: float = 0.0  # seconds of the vCPU's speed check before each round (0: none)

    def __post_init__(self) -> None:
        object.__setattr__(self, "arms", tuple(self.arms))
        object.__setattr__(self, "factors", {k: list(v) for k, v in (self.factors or {}).items()})
        next(self.rounds())  # validates

    @property
    def combos(self) -> list[dict[str, Any]]:
        return combinations(self.factors)

    @property
    def planned_runs(self) -> int:
        per_round = 2 * (len(self.arms) - 1) if self.design == "duet" else len(self.arms)
        return per_round * len(self.combos) * (self.repetitions + self.warmup)

    def rounds(self) -> Iterator[list[Unit]]:
        return plan_rounds(list(self.arms), self.factors, self.repetitions, self.warmup, self.seed, design=self.design)

    def signature(self) -> dict[str, Any]:
        return {
            "arms": list(self.arms),
            "factors": {k: [str(v) for v in vs] for k, vs in self.factors.items()},
            "repetitions": self.repetitions,
            "warmup": self.warmup,
            "seed": self.seed,
            "design": self.design,
        }


@dataclass(frozen=True)
class Profiling:
    """A profiling round after the warm-up: `attach(arm, factors)` wraps each of its runs; `measure` is what a
    profiling run does when not the experiment's own; `factors` the combinations profiled (default: the first)."""

    attach: Callable[[str, dict[str, Any]], contextlib.AbstractContextManager]
    factors: Sequence[Mapping[str, Any]] | None = None
    measure: MeasureFn | None = None


@dataclass
class _Session:
    """What one call of Experiment.run has seen: runs done, the cells still needed, looks, retakes, outliers."""

    start: float
    done: set[tuple]
    looks_done: list[dict[str, Any]]
    strays: list[dict[str, Any]]
    needed: set[tuple[str, tuple]] | None = None
    retakes: int = 0
    guaranteed: int = 0  # measured rounds the clock never cuts
    uncut: set[str] = field(default_factory=set)  # the keys of the runs it never cuts (warm-up included)
    profiled: bool = False
    stop_reason: str = ""
    duets: dict[str, tuple[Unit, list[RunRecord]]] = field(default_factory=dict)  # measured duets, by block
    speed_checks: list[dict[str, Any]] = field(default_factory=list)  # the vCPU's speed before each round

    def uncuttable(self, p: PlannedRun) -> bool:
        """A run the clock never cuts: warm-up, or a round the first look guarantees."""
        return p.warmup or p.repetition < self.guaranteed

    @property
    def flagged(self) -> set[str]:
        return {d["block"] for d in self.strays}  # blocks recorded as outliers (never judged again)


class Experiment:
    """Plan, run, store. `measure(arm, factors)` performs one run and returns a Measurement. `about`: what the
    store's metadata records of where the experiment ran (study, parameters, servers, calibration)."""

    def __init__(
        self,
        plan: ExperimentPlan,
        store: ResultStore,
        *,
        about: Mapping[str, Any] | None = None,
        progress: bool = False,
    ) -> None:
        self.plan, self.store, self.progress = plan, store, progress
        self._lock = threading.Lock()
        self._record_plan(dict(about or {}))

    def _record_plan(self, about: dict[str, Any]) -> None:
        """A new experiment's plan into its metadata (what was recorded before, e.g. its conditions, is kept);
        a resumed one must have the same plan."""
        plan, meta = self.plan, self.store.metadata()
        if meta.get("plan") and meta["plan"] != plan.signature():
            raise ValueError(
                f"experiment {plan.experiment_id!r} already exists in {self.store.path} with another plan "
                f"({meta['plan']}); use a new experiment id or remove that directory"
            )
        if meta.get("plan"):
            if about.get("servers"):
                self.store.update_metadata(servers={**meta.get("servers", {}), **about["servers"]})
            return
        self.store.write_metadata(
            meta
            | {
                "experiment_id": plan.experiment_id,
                "study": about.get("study", ""),
                "plan": plan.signature(),
                "created": environment.utc_now(),
                "parameters": dict(about.get("parameters") or {}),
                "servers": dict(about.get("servers") or {}),
                "environment": environment.collect(),
                "calibration": dict(about.get("calibration") or {}),
                "planned_runs": plan.planned_runs,
                "outlier_watch": list(plan.outlier) if plan.outlier else None,  # one-off duets recorded
                "status": "planned",
            }
        )

    # -- running: a schedule of named steps (measure, look, retake, finish) --------------------------
    def run(
        self,
        measure: MeasureFn,
        *,
        looks: Looks | None = None,
        decide: DecideFn | None = None,
        profiling: Profiling | None = None,
    ) -> ResultStore:
        """Run every remaining planned run (fewer when looks decide early). Errors are recorded and re-raised;
        completed runs stay stored and the long table is rebuilt on every exit."""
        s = self._begin(profiling)
        s.guaranteed = looks.rounds[0] if looks is not None and decide is not None else self.plan.min_rounds
        s.uncut = {p.key for rnd in self.plan.rounds() for unit in rnd for p in unit if s.uncuttable(p)}
        self._progress.floor = len(s.uncut - s.done)
        status = "complete"
        try:
            for rnd in self.plan.rounds():
                self._profile_if_due(rnd, s, profiling, measure)
                self._check_speed(rnd, s)
                self._measure_round(rnd, s, measure)
                if self._look(rnd, s, looks, decide):
                    break
        except _Budget:
            status = "stopped at time budget"
            s.stop_reason = (
                f"time budget of {significant(self.plan.max_seconds, 3)} s reached"
                if self.plan.max_seconds > 0  # a part the parts before it left no time: its guaranteed rounds ran
                else f"no time left of the study's budget; its guaranteed {s.guaranteed} rounds ran"
            )
        except (KeyboardInterrupt, SystemExit):
            status = "interrupted"
            raise
        except BaseException:
            status = "failed"
            raise
        finally:
            self._finish(s, status, looks)
        return self.store

    def _begin(self, profiling: Profiling | None) -> _Session:
        meta = self.store.metadata()
        done = self.store.completed_keys()
        profiled_runs = len(self.plan.arms) * len(profiling.factors or self.plan.combos[:1]) if profiling else 0
        self._progress = Progress(
            self.plan.experiment_id,
            self.store.path / "progress.json",
            ceiling=self.plan.planned_runs + profiled_runs + self.plan.max_retakes,
            done=len(done),
            max_seconds=self.plan.max_seconds,
            show=self.progress,
        )
        self.store.update_metadata(status="running", resumed_with_done=len(done))
        looks_done, strays = list(meta.get("looks_done", [])), list(meta.get("outlier_duets", []))
        checks = list(meta.get("speed_checks", []))
        return _Session(time.monotonic(), done, looks_done, strays, profiled=profiling is None, speed_checks=checks)

    def _check_speed(self, rnd: list[Unit], s: _Session) -> None:
        """How fast the vCPU runs as a measured round starts (host/calibration.py: its slow state shows in no
        other figure), recorded with the round; a round already done is not checked again. The budget is the runs':
        the check's time is not taken from it."""
        first = rnd[0][0]
        if self.plan.speed_check_s <= 0 or first.warmup or all(p.key in s.done for unit in rnd for p in unit):
            return  # a warm-up round follows servers starting: the machine is not quiet, and no statistic reads it
        t0 = time.monotonic()
        check = speed_check(self.plan.speed_check_s)
        s.start += time.monotonic() - t0
        s.speed_checks.append({"round": first.repetition, "warmup": first.warmup, **check})
        self.store.update_metadata(speed_checks=s.speed_checks)

    def _profile_if_due(self, rnd: list[Unit], s: _Session, profiling: Profiling | None, measure: MeasureFn) -> None:
        """The profiling round: after warm-up, so it sees warm servers; before the budget can stop anything."""
        if s.profiled or rnd[0][0].warmup or profiling is None:
            return
        combos = [dict(c) for c in profiling.factors] if profiling.factors is not None else self.plan.combos[:1]
        done = self.store.completed_keys()
        for combo in combos:
            for arm in self.plan.arms:
                planned = PlannedRun(-1, 0, False, arm, combo, profiling=True)
                if planned.key not in done:
                    with profiling.attach(arm, dict(combo)):
                        self._run_unit((planned,), profiling.measure or measure)
        s.profiled = True

    def _measure_round(self, rnd: list[Unit], s: _Session, measure: MeasureFn) -> None:
        """Every unit of a round not yet done, except cells the last look no longer needs. The first look is the
        plan's least: the clock bounds the rounds after it, so an experiment that starts late in a shared budget
        still reaches it (warm-up and profiling included) rather than ending with rounds that decide nothing."""
        first = rnd[0][0]
        for unit in rnd:
            if all(p.key in s.done for p in unit):
                continue
            if s.needed is not None and not first.warmup and unit[-1].cell not in s.needed:
                self._progress.drop(len(unit))
                continue
            if self._over_budget(s) and not s.uncuttable(first):
                raise _Budget
            records = self._run_unit(unit, measure)
            s.done.update(p.key for p in unit)
            self._progress.floor = len(s.uncut - s.done)
            if len(unit) == 2 and not first.warmup:
                s.duets[unit[-1].block] = (unit, records)
            # A noisy duet is kept: both runs shared the noise window, and their ratio cancels what hit both
            # (taking duets again when the host's steal rose to 8-20 % cost TDE a fifth of its rounds); a one-off
            # in one arm (outliers.py) is what a duet cannot cancel. A warm-up run is never taken again: no
            # statistic reads it (TDE's 8c32g took all eight of its warm-up runs twice, 26 s).
            noisy = len(unit) == 1 and not first.warmup and any(r.metrics.get("noise_flagged") for r in records)
            self._retake(unit, records, s, measure, noisy=noisy)

    def _look(self, rnd: list[Unit], s: _Session, looks: Looks | None, decide: DecideFn | None) -> bool:
        """At a planned look: every duet against all the others of its cell so far (the first ones had too few),
        then ask which cells the undecided claims still need. True when none: the experiment stops."""
        first = rnd[0][0]
        n_done = first.repetition + 1
        if looks is None or decide is None or first.warmup or n_done not in looks.rounds:
            return False
        for block, (unit, records) in list(s.duets.items()):
            if block not in s.flagged:
                self._retake(unit, records, s, None, noisy=False)
        index = looks.rounds.index(n_done)
        s.needed = decide(index, looks.alpha_at(index))
        look = {"rounds": n_done, "look": index, "alpha": looks.alpha_at(index), "undecided_cells": len(s.needed or ())}
        s.looks_done.append(look)
        self.store.update_metadata(looks_done=s.looks_done)
        if s.needed is not None and not s.needed:
            # a claim not testable here asks for no rounds either (preconditions.py)
            s.stop_reason = f"every claim decided after {n_done} rounds (look {index + 1}), or not testable"
            return True
        return False

    def _retake(
        self, unit: Unit, records: list[RunRecord], s: _Session, measure: MeasureFn | None, *, noisy: bool
    ) -> None:
        """Take a single run the machine's noise monitor flagged again once, within the retake and time budgets.
        An outlier duet is recorded, never taken again: a retake chosen by the duet's value would replace it in
        the statistics, and when stalls are a real cost of one arm that hides the cost (the report judges with it
        and shows the claims without the recorded outliers beside, as a check)."""
        stray = self._stray(records)
        if stray:
            s.strays.append(stray)
            self.store.update_metadata(outlier_duets=s.strays)
        if noisy and measure is not None and s.retakes < self.plan.max_retakes and not self._over_budget(s):
            s.retakes += 1
            self._run_unit(unit, measure, retake_of=records[-1].run_id)

    def _over_budget(self, s: _Session) -> bool:
        return self.plan.max_seconds is not None and time.monotonic() - s.start > self.plan.max_seconds

    def _finish(self, s: _Session, status: str, looks: Looks | None) -> None:
        """Progress closed, the long table rebuilt, and how the experiment ended recorded."""
        self._progress.close(status, s.stop_reason or ("all planned rounds ran" if status == "complete" else ""))
        with contextlib.suppress(Exception):
            self.store.export()
        budget_stop = status == "stopped at time budget"
        self.store.update_metadata(
            status=status,
            stop_reason=s.stop_reason,
            finished=environment.utc_now(),
            completed_runs=len(self.store.completed_keys()),
            retakes=s.retakes,
            outlier_duets=s.strays,
            looks=looks.as_dict() if looks else None,
            final_alpha=_final_alpha(looks, s.looks_done, self._measured_rounds(), budget_stop=budget_stop),
        )

    def _stray(self, records: list[RunRecord]) -> dict[str, Any]:
        """A measured duet far from its cell's other duets on the outlier metric (see outliers.py), or {}."""
        if self.plan.outlier is None or len(records) != 2 or records[0].warmup or records[0].profiling:
            return {}
        metric, limit = self.plan.outlier
        base, cand = records
        x = outliers.log_ratio(base.metrics.get(metric), cand.metrics.get(metric))
        others = outliers.cell_ratios(self.store.records(), metric, cand, exclude_block=cand.block)
        if x is None or not outliers.is_outlier(x, others, limit):
            return {}
        return outliers.describe(base, cand, metric, others)

    def _measured_rounds(self) -> int:
        return len({r.round for r in self.store.records() if r.status == "ok" and not r.warmup and not r.profiling})

    def _run_unit(self, unit: Unit, measure: MeasureFn, retake_of: int | None = None) -> list[RunRecord]:
        """Run one planned run, or a duet's two at the same time (sharing one noise window)."""
        if len(unit) == 1:
            with NoiseMonitor() as nm:
                rec = self._run_one(unit[0], measure, retake_of, nm)
            return [rec]

        with NoiseMonitor(len(unit)) as nm, ThreadPoolExecutor(max_workers=len(unit)) as pool:
            futures = [pool.submit(self._run_one, p, measure, retake_of, nm) for p in unit]
            errors = [f.exception() for f in futures]
        first_error = next((e for e in errors if e is not None), None)
        if first_error is not None:
            raise first_error
        return [f.result() for f in futures]

    def _run_one(self, planned: PlannedRun, measure: MeasureFn, retake_of: int | None, nm: NoiseMonitor) -> RunRecord:
        started, t0 = environment.utc_now(), time.monotonic()
        with self._lock:
            run_id = self.store.reserve_run_id()

        def record(**outcome: Any) -> RunRecord:
            return RunRecord(
                run_id,
                planned.arm,
                planned.factors,
                planned.repetition,
                planned.round,
                planned.warmup,
                started,
                ended,
                duration,
                profiling=planned.profiling,
                block=planned.block,
                partner=planned.partner,
                **outcome,
            )

        self._progress.start(planned.arm, planned.factors)
        try:
            m = measure(planned.arm, dict(planned.factors))
        except Exception as exc:
            nm.abandon()
            ended, duration = environment.utc_now(), time.monotonic() - t0
            with self._lock:
                self.store.append(record(status="error", error="".join(traceback.format_exception_only(exc)).strip()))
            raise
        ended, duration = environment.utc_now(), time.monotonic() - t0  # before waiting for a duet's partner
        try:
            check_untimed(m, duration)
        except Stalled as exc:
            nm.abandon()
            with self._lock:
                self.store.append(record(status="error", error=f"Stalled: {exc}"))
            raise
        m.metrics |= nm.stop().metrics()  # a duet's runs share the window: the last to end closes it
        if retake_of is not None:
            m.info = m.info | {"retake_of": retake_of}
        rec = record(metrics=m.metrics, info=m.info)
        with self._lock:
            self.store.append(rec, samples=m.samples, intervals=m.intervals)
            self._progress.finish(rec.duration_s)
        return rec


def _final_alpha(looks: Looks | None, done: list[dict[str, Any]], rounds: int, *, budget_stop: bool = False) -> float:
    """The alpha the report's intervals spend. Stopped because every claim was decided: that look's alpha.
    Stopped by the clock (which does not look at the data): what the looks before this final analysis left of
    the error budget, so a plan sized for more rounds than the budget afforded does not end on an early
    look's small alpha (the union bound over the looks done and this one still holds). Otherwise that of the
    look the data ended at, or the next unspent one."""
    if looks is None:
        return 0.05
    if budget_stop:
        left = sum(looks.alphas) - sum(float(d["alpha"]) for d in done if d["rounds"] < rounds)
        if left > 0:
            return left
    if done and done[-1]["rounds"] == rounds:
        return float(done[-1]["alpha"])
    nxt = done[-1]["look"] + 1 if done else looks.index_for(rounds)
    return looks.alpha_at(nxt)


class _Budget(Exception):
    """The time budget ended: stop starting runs."""
