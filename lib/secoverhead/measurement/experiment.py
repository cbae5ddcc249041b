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
import json
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from secoverhead.analysis import outliers
from secoverhead.analysis.design import Looks
from secoverhead.host import environment
from secoverhead.host.noise import NoiseMonitor
from secoverhead.measurement.plan import PlannedRun, Unit, combinations, plan_rounds
from secoverhead.measurement.progress import Progress
from secoverhead.measurement.results import ResultStore, RunRecord
from secoverhead.workloads.measurement import Measurement

__all__ = ["Experiment", "Measurement"]


MeasureFn = Callable[[str, dict[str, Any]], Measurement]


DecideFn = Callable[[int, float], "set[tuple[str, tuple]] | None"]


class Experiment:
    """Plan, run, store. `measure(arm, factors)` performs one run and returns a Measurement."""

    def __init__(
        self,
        experiment_id: str,
        *,
        arms: Sequence[str],
        factors: Mapping[str, Sequence[Any]] | None = None,
        repetitions: int = 5,
        warmup: int = 1,
        seed: int = 0,
        max_seconds: float | None = None,
        store: ResultStore,
        study: str = "",
        parameters: Mapping[str, Any] | None = None,
        servers: Mapping[str, Any] | None = None,
        calibration: Mapping[str, Any] | None = None,
        progress: bool = False,
        max_retakes: int = 0,
        design: str = "interleaved",
        outlier: tuple[str, float] | None = None,
        min_rounds: int = 0,
    ) -> None:
        """min_rounds: measured rounds the clock never cuts when there are no looks (a part without claims,
        an A/A run); with looks, the first look's rounds are the guarantee."""
        self.experiment_id = experiment_id
        self.min_rounds = int(min_rounds)
        self.design = design
        self.arms, self.factors = list(arms), {k: list(v) for k, v in (factors or {}).items()}
        self.repetitions, self.warmup, self.seed = int(repetitions), int(warmup), int(seed)
        self.max_seconds, self.store, self.progress = max_seconds, store, progress
        self.combos = combinations(self.factors)
        per_round = 2 * (len(self.arms) - 1) if design == "duet" else len(self.arms)
        self.planned_runs = per_round * len(self.combos) * (self.repetitions + self.warmup)
        next(self.rounds())  # validates
        self.max_retakes = max_retakes or 0  # noisy runs taken again: at most this many per experiment
        self.outlier = outlier  # duets: (metric, least log deviation) that marks a duet as an outlier (see _stray)
        self._lock = threading.Lock()
        self._signature = {
            "arms": self.arms,
            "factors": {k: [str(v) for v in vs] for k, vs in self.factors.items()},
            "repetitions": self.repetitions,
            "warmup": self.warmup,
            "seed": self.seed,
            "design": design,
        }
        meta = store.metadata()
        if meta.get("plan") and meta["plan"] != self._signature:
            raise ValueError(
                f"experiment {experiment_id!r} already exists in {store.path} with another plan "
                f"({meta['plan']}); use a new experiment id or remove that directory"
            )
        if not meta.get("plan"):  # new (what was recorded before the plan, e.g. its conditions, is kept)
            store.write_metadata(
                meta
                | {
                    "experiment_id": experiment_id,
                    "study": study,
                    "plan": self._signature,
                    "created": environment.utc_now(),
                    "parameters": dict(parameters or {}),
                    "servers": dict(servers or {}),
                    "environment": environment.collect(),
                    "calibration": dict(calibration or {}),
                    "planned_runs": self.planned_runs,
                    "outlier_watch": list(self.outlier) if self.outlier else None,  # one-off duets recorded
                    "status": "planned",
                }
            )
        elif servers:
            store.update_metadata(servers={**meta.get("servers", {}), **servers})

    # -- the plan --------------------------------------------------------------------------------
    def rounds(self) -> Iterator[list[Unit]]:
        return plan_rounds(self.arms, self.factors, self.repetitions, self.warmup, self.seed, design=self.design)

    def remaining(self) -> list[PlannedRun]:
        done = self.store.completed_keys()
        return [p for rnd in self.rounds() for unit in rnd for p in unit if p.key not in done]

    # -- running ---------------------------------------------------------------------------------
    def run(
        self,
        measure: MeasureFn,
        *,
        looks: Looks | None = None,
        decide: DecideFn | None = None,
        profile: Callable[[str, dict[str, Any]], contextlib.AbstractContextManager] | None = None,
        profile_factors: Sequence[Mapping[str, Any]] | None = None,
        profile_measure: MeasureFn | None = None,
    ) -> ResultStore:
        """Run every remaining planned run (fewer when looks decide early). Errors are recorded and re-raised;
        completed runs stay stored and the long table is rebuilt on every exit."""
        start = time.monotonic()
        done = self.store.completed_keys()
        profiling_runs = len(self.arms) * len(profile_factors or self.combos[:1]) if profile is not None else 0
        self._progress = Progress(
            self.experiment_id,
            self.store.path / "progress.json",
            ceiling=self.planned_runs + profiling_runs + self.max_retakes,
            done=len(done),
            max_seconds=self.max_seconds,
            show=self.progress,
        )
        self.store.update_metadata(status="running", resumed_with_done=len(done))
        status, stop_reason, needed = "complete", "", None
        look_log: list[dict[str, Any]] = list(self.store.metadata().get("looks_done", []))
        retakes, profiled = 0, profile is None
        strays: list[dict[str, Any]] = list(self.store.metadata().get("outlier_duets", []))
        ran: dict[str, tuple[Unit, list[RunRecord]]] = {}  # measured duets of this session, by block
        flagged = {d["block"] for d in strays}  # blocks recorded as outliers (never judged again)

        def retake(unit: Unit, records: list[RunRecord], stray: dict[str, Any], noisy: bool) -> None:
            """Take a single run the machine's noise monitor flagged again once, within the retake and time
            budgets. An outlier duet is recorded, never taken again: a retake chosen by the duet's value would
            replace it in the statistics, and when stalls are a real cost of one arm that hides the cost (the
            report judges with it and shows the claims without the recorded outliers beside, as a check)."""
            nonlocal retakes
            if stray:
                flagged.add(stray["block"])
                strays.append(stray)
                self.store.update_metadata(outlier_duets=strays)
            in_budget = self.max_seconds is None or time.monotonic() - start < self.max_seconds
            if noisy and retakes < self.max_retakes and in_budget:
                retakes += 1
                self._run_unit(unit, measure, retake_of=records[-1].run_id)

        # The first look is the plan's least: the clock bounds the rounds after it, so an experiment that
        # starts late in a shared budget still reaches it (warm-up and profiling included) rather than ending
        # with rounds that can decide nothing.
        guaranteed = looks.rounds[0] if looks is not None and decide is not None else self.min_rounds
        try:
            for rnd in self.rounds():
                first = rnd[0][0]
                measured_round = not first.warmup
                if measured_round and not profiled:  # after warm-up, so it sees warm servers; before the budget
                    self._profiling_round(profile_measure or measure, profile, profile_factors)
                    profiled = True
                for unit in rnd:
                    if all(p.key in done for p in unit):
                        continue
                    if needed is not None and measured_round and unit[-1].cell not in needed:
                        self._progress.drop(len(unit))
                        continue
                    over = self.max_seconds is not None and time.monotonic() - start > self.max_seconds
                    if over and not (first.warmup or first.repetition < guaranteed):
                        raise _Budget
                    records = self._run_unit(unit, measure)
                    done.update(p.key for p in unit)
                    if len(unit) == 2 and not first.warmup:
                        ran[unit[-1].block] = (unit, records)
                    # A noisy duet is kept: both runs shared the noise window, and their ratio cancels what
                    # hit both (taking duets again when the host's steal rose to 8-20 % cost TDE a fifth of its
                    # rounds); a one-off in one arm (outliers.py) is what a duet cannot cancel.
                    noisy = len(unit) == 1 and any(r.metrics.get("noise_flagged") for r in records)
                    retake(unit, records, self._stray(records), noisy)
                n_done = first.repetition + 1
                if looks is not None and decide is not None and measured_round and n_done in looks.rounds:
                    # every duet against all the others of its cell so far (the first ones had too few)
                    for block, (unit, records) in list(ran.items()):
                        if block not in flagged:
                            retake(unit, records, self._stray(records), False)
                    index = looks.rounds.index(n_done)
                    needed = decide(index, looks.alpha_at(index))
                    look_log.append(
                        {
                            "rounds": n_done,
                            "look": index,
                            "alpha": looks.alpha_at(index),
                            "undecided_cells": len(needed or ()),
                        }
                    )
                    self.store.update_metadata(looks_done=look_log)
                    if needed is not None and not needed:
                        # a claim not testable here asks for no rounds either (preconditions.py)
                        stop_reason = f"every claim decided after {n_done} rounds (look {index + 1}), or not testable"
                        break
        except _Budget:
            status, stop_reason = "stopped at time budget", f"time budget of {self.max_seconds:.0f} s reached"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except SystemExit:
            status = "interrupted"
            raise
        except BaseException:
            status = "failed"
            raise
        finally:
            self._progress.close(status, stop_reason or ("all planned rounds ran" if status == "complete" else ""))
            with contextlib.suppress(Exception):
                self.store.export()
            self.store.update_metadata(
                status=status,
                stop_reason=stop_reason,
                finished=environment.utc_now(),
                completed_runs=len(self.store.completed_keys()),
                retakes=retakes,
                outlier_duets=strays,
                looks=looks.as_dict() if looks else None,
                final_alpha=_final_alpha(
                    looks, look_log, self._measured_rounds(), budget_stop=status == "stopped at time budget"
                ),
            )
        return self.store

    def _stray(self, records: list[RunRecord]) -> dict[str, Any]:
        """A measured duet far from its cell's other duets on the outlier metric (see outliers.py), or {}."""
        if self.outlier is None or len(records) != 2 or records[0].warmup or records[0].profiling:
            return {}
        metric, limit = self.outlier
        base, cand = records
        x = outliers.log_ratio(base.metrics.get(metric), cand.metrics.get(metric))
        others = outliers.cell_ratios(self.store.records(), metric, cand, exclude_block=cand.block)
        if x is None or not outliers.is_outlier(x, others, limit):
            return {}
        return outliers.describe(base, cand, metric, others)

    def _measured_rounds(self) -> int:
        return len({r.round for r in self.store.records() if r.status == "ok" and not r.warmup and not r.profiling})

    def _profiling_round(self, measure: MeasureFn, profile, profile_factors) -> None:
        combos = [dict(c) for c in profile_factors] if profile_factors is not None else self.combos[:1]
        done = self.store.completed_keys()
        for combo in combos:
            for arm in self.arms:
                planned = PlannedRun(-1, 0, False, arm, combo, profiling=True)
                if planned.key in done:
                    continue
                with profile(arm, dict(combo)):
                    self._run_unit((planned,), measure)

    def _run_unit(self, unit: Unit, measure: MeasureFn, retake_of: int | None = None) -> list[RunRecord]:
        """Run one planned run, or a duet's two at the same time (sharing one noise window)."""
        if len(unit) == 1:
            with NoiseMonitor() as nm:
                rec = self._run_one(unit[0], measure, retake_of, nm)
            return [rec]

        with NoiseMonitor() as nm, ThreadPoolExecutor(max_workers=len(unit)) as pool:
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
                environment.utc_now(),
                time.monotonic() - t0,
                profiling=planned.profiling,
                block=planned.block,
                partner=planned.partner,
                **outcome,
            )

        self._progress.start(planned.arm, planned.factors)
        try:
            m = measure(planned.arm, dict(planned.factors))
        except Exception as exc:
            with self._lock:
                self.store.append(record(status="error", error="".join(traceback.format_exception_only(exc)).strip()))
            raise
        m.metrics |= nm.stop().metrics()  # a duet's runs share the window: the first to end closes it
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


def read_progress(path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
