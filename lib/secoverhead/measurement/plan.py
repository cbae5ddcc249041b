"""An experiment's plan: runs (arm x factor combination x round), their cells, and the balanced order of each
round (interleaved or in duets). Arithmetic, never a list in memory."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from secoverhead.core.params import MAX_PLANNED_RUNS
from secoverhead.measurement.results import run_key


@dataclass(frozen=True)
class PlannedRun:
    round: int
    repetition: int
    warmup: bool
    arm: str
    factors: dict[str, Any]
    profiling: bool = False
    block: str = ""  # duet: the pair's block; "" = the round
    partner: str = ""  # duet: the arm running at the same time

    @property
    def key(self) -> str:
        return run_key(self.arm, self.factors, self.repetition, self.warmup, self.profiling, self.partner)

    @property
    def cell(self) -> tuple[str, tuple]:
        return cell_of(self.arm, self.factors)


def cell_of(arm: str, factors: Mapping[str, Any]) -> tuple[str, tuple]:
    return (arm, tuple(sorted((k, str(v)) for k, v in factors.items())))


def combinations(factors: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    names = list(factors)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*factors.values())] or [{}]


Unit = tuple[PlannedRun, ...]  # runs that run at the same time: one (interleaved) or two (a duet)


DESIGNS = ("interleaved", "duet")


def plan_rounds(
    arms: Sequence[str],
    factors: Mapping[str, Sequence[Any]],
    repetitions: int,
    warmup: int,
    seed: int,
    *,
    design: str = "interleaved",
) -> Iterator[list[Unit]]:
    """The deterministic run order, one round at a time: factor combinations in order, arms in a balanced
    order per (round, combination) (see balanced_order), so any round can be re-derived alone.

    duet: the first arm is the baseline; each round runs it beside every other arm in turn, both at once, each
    pair a block of its own (Bulej et al., "Duet Benchmarking", ICPE 2020): both arms meet the same
    interference, which their ratio cancels."""
    if not arms or len(set(arms)) != len(arms):
        raise ValueError(f"arms must be distinct and non-empty, got {list(arms)}")
    if repetitions < 1 or warmup < 0:
        raise ValueError("repetitions must be >= 1 and warmup >= 0")
    if design not in DESIGNS or (design == "duet" and len(arms) < 2):
        raise ValueError(f"design must be one of {DESIGNS} (duet needs a baseline and another arm)")
    combos = combinations(factors)
    runs_per_round = 2 * (len(arms) - 1) if design == "duet" else len(arms)
    if len(combos) * runs_per_round * (repetitions + warmup) > MAX_PLANNED_RUNS:
        raise ValueError(f"the plan has more than {MAX_PLANNED_RUNS} runs: lower repetitions or the factor levels")
    baseline = arms[0]
    for rnd in range(warmup + repetitions):
        warm = rnd < warmup
        rep = rnd if warm else rnd - warmup
        units: list[Unit] = []
        for combo in combos:
            label = sorted((k, str(v)) for k, v in combo.items())
            arms_here = list(arms) if design == "interleaved" else list(arms[1:])
            order = balanced_order(arms_here, f"{seed}:{'warm' if warm else 'measured'}:{label}", rep)
            if design == "interleaved":
                units += [(PlannedRun(rnd, rep, warm, arm, combo),) for arm in order]
                continue
            for cand in order:
                block = f"{rnd}:{cand}:{label}"
                units.append(
                    (
                        PlannedRun(rnd, rep, warm, baseline, combo, block=block, partner=cand),
                        PlannedRun(rnd, rep, warm, cand, combo, block=block, partner=baseline),
                    )
                )
        yield units


def balanced_order(items: Sequence[str], key: str, index: int) -> list[str]:
    """Rotation `index mod k` of a permutation of the k items drawn for cycle `index div k` (seeded by key):
    over every k consecutive indices each item takes each position exactly once (a Latin square), and the
    order still changes from cycle to cycle. A plain shuffle per round left it to chance: with two arms in 10
    rounds one arm runs first 7 times or more in a third of the seeds."""
    k = len(items)
    cycle, pos = divmod(index, k)
    perm = list(items)
    random.Random(f"{key}:{cycle}").shuffle(perm)
    return perm[pos:] + perm[:pos]
