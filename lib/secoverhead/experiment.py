"""Experiments: arms (named configurations) x factors (workload, threads, ...) x repetitions.

Runs are interleaved: in each round every arm runs once per factor combination, in an order shuffled per
round from a recorded seed, so slow drifts of a noisy machine hit every arm alike. The first `warmup`
rounds are marked warm-up and kept. Each run is stored the moment it ends; re-running an experiment with
the same id resumes after the runs already completed. A time budget stops the plan early (recorded).
"""

from __future__ import annotations

import itertools
import random
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import environment
from .measurement import Measurement
from .results import ResultStore, RunRecord, run_key

__all__ = ["Experiment", "Measurement", "PlannedRun", "plan_runs"]


@dataclass(frozen=True)
class PlannedRun:
    run_id: int
    round: int
    repetition: int
    warmup: bool
    arm: str
    factors: dict[str, Any]

    @property
    def key(self) -> str:
        return run_key(self.arm, self.factors, self.repetition, self.warmup)


MeasureFn = Callable[[str, dict[str, Any]], Measurement]


def plan_runs(
    arms: Sequence[str], factors: Mapping[str, Sequence[Any]], repetitions: int, warmup: int, seed: int
) -> list[PlannedRun]:
    """The full, deterministic run order. Rounds outermost; within a round, factor combinations in order and
    arms shuffled per (round, combination)."""
    if not arms or len(set(arms)) != len(arms):
        raise ValueError(f"arms must be distinct and non-empty, got {list(arms)}")
    if repetitions < 1 or warmup < 0:
        raise ValueError("repetitions must be >= 1 and warmup >= 0")
    names = list(factors)
    combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*factors.values())] or [{}]
    rng = random.Random(seed)
    planned, run_id = [], 0
    for rnd in range(warmup + repetitions):
        for combo in combos:
            order = list(arms)
            rng.shuffle(order)
            for arm in order:
                is_warm = rnd < warmup
                planned.append(PlannedRun(run_id, rnd, rnd if is_warm else rnd - warmup, is_warm, arm, combo))
                run_id += 1
    return planned


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
        parameters: Mapping[str, Any] | None = None,
        servers: Mapping[str, Any] | None = None,
        progress: bool = True,
    ) -> None:
        self.experiment_id = experiment_id
        self.arms, self.factors = list(arms), {k: list(v) for k, v in (factors or {}).items()}
        self.repetitions, self.warmup, self.seed = int(repetitions), int(warmup), int(seed)
        self.max_seconds, self.store, self.progress = max_seconds, store, progress
        self.plan = plan_runs(self.arms, self.factors, self.repetitions, self.warmup, self.seed)
        self._signature = {
            "arms": self.arms,
            "factors": {k: [str(v) for v in vs] for k, vs in self.factors.items()},
            "repetitions": self.repetitions,
            "warmup": self.warmup,
            "seed": self.seed,
        }
        meta = store.metadata()
        if meta.get("plan") and meta["plan"] != self._signature:
            raise ValueError(
                f"experiment {experiment_id!r} already exists in {store.path} with another plan "
                f"({meta['plan']}); use a new experiment id or remove that directory"
            )
        if not meta:
            store.write_metadata(
                {
                    "experiment_id": experiment_id,
                    "plan": self._signature,
                    "created": environment.utc_now(),
                    "parameters": dict(parameters or {}),
                    "servers": dict(servers or {}),
                    "environment": environment.collect(),
                    "planned_runs": len(self.plan),
                    "status": "planned",
                }
            )
        elif servers:
            store.update_metadata(servers={**meta.get("servers", {}), **servers})

    def remaining(self) -> list[PlannedRun]:
        done = self.store.completed_keys()
        return [p for p in self.plan if p.key not in done]

    def run(self, measure: MeasureFn) -> ResultStore:
        """Run every remaining planned run. Errors are recorded and re-raised; completed runs stay stored."""
        todo = self.remaining()
        start = time.monotonic()
        self.store.update_metadata(status="running", resumed_with_done=len(self.plan) - len(todo))
        bar = _progress(len(self.plan), len(self.plan) - len(todo), self.experiment_id) if self.progress else None
        status = "complete"
        try:
            for planned in todo:
                if self.max_seconds is not None and time.monotonic() - start > self.max_seconds:
                    status = "stopped at time budget"
                    break
                self._run_one(planned, measure)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(f"{planned.arm} {planned.factors}"[:60])
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except BaseException:
            status = "failed"
            raise
        finally:
            if bar is not None:
                bar.close()
            self.store.update_metadata(
                status=status, finished=environment.utc_now(), completed_runs=len(self.store.completed_keys())
            )
        return self.store

    def _run_one(self, planned: PlannedRun, measure: MeasureFn) -> None:
        started, t0 = environment.utc_now(), time.monotonic()

        def record(**outcome: Any) -> RunRecord:
            return RunRecord(
                planned.run_id,
                planned.arm,
                planned.factors,
                planned.repetition,
                planned.round,
                planned.warmup,
                started,
                environment.utc_now(),
                time.monotonic() - t0,
                **outcome,
            )

        try:
            m = measure(planned.arm, dict(planned.factors))
        except Exception as exc:
            self.store.append(record(status="error", error="".join(traceback.format_exception_only(exc)).strip()))
            raise
        self.store.append(record(metrics=m.metrics, info=m.info), samples=m.samples, intervals=m.intervals)


def _progress(total: int, done: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, desc=desc, unit="run", leave=True)
