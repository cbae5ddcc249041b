"""Turning a study's intervals into a verdict on a registered claim: one comparison of two arms (RatioClaim),
or intervals a study computes itself (verdict_of). Either way the reading comes from the registry, and the
verdict carries the claim's source, words, metric and reading with it into verdicts.json."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.compare import (  # pandas, which `secoverhead params` never needs
    compare_arms,
    relative,
)
from secoverhead.analysis.verdicts import ClaimVerdict, Verdict


def verdict_of(
    study: str,
    claim_id: str,
    verdict: Verdict,
    evidence: str,
    *,
    part: str = "",
    level: Any = None,
    measure: str = "",
    engine_note: str = "",
    ratio: float | None = None,
    ci_low: float | None = None,
    ci_high: float | None = None,
    needs: list[dict[str, Any]] | None = None,
    intervals: tuple[tuple[list, list | None], ...] = (),
    rounds: int = 0,
    cells: tuple[Sequence[str], ...] = (),
) -> ClaimVerdict:
    """A ClaimVerdict for the registered claim, its text filled in for this part and level. `intervals` (what
    decided it, one (intervals, refuting) pair per reading) and `rounds` (how many they rest on) let an
    undecided verdict say how many rounds would decide it; `cells` names each reading's intervals in order
    (the workload, the approach), so a summary can say which interval is which."""
    c = registry.get(study, claim_id)
    rounds_needed = None
    if verdict == Verdict.INCONCLUSIVE and intervals and rounds:
        rounds_needed = c.rounds_to_decide(*intervals, n=rounds)
        evidence += (
            f"; undecided after {rounds} rounds: about {rounds_needed} would decide it, were the estimate to stay"
            if rounds_needed
            else f"; undecided after {rounds} rounds: the estimate sits on the claim's line, where more rounds "
            "may never decide it"
        )
    return ClaimVerdict(
        c.claim.format(part=part, level=level),
        verdict,
        evidence,
        measure or c.metric_text,
        engine_note,
        id=f"{part}:{c.id}" if part else c.id,
        ratio=ratio,
        ci_low=ci_low,
        ci_high=ci_high,
        needs=needs or [],
        source=c.source_on(part),
        registered=c.record(),
        rounds_needed=rounds_needed,
        judged=judged(c, intervals, cells),
    )


def screen(verdicts: Sequence[ClaimVerdict], conditions: Mapping[str, Any]) -> list[ClaimVerdict]:
    """Each verdict's registered preconditions checked on the conditions of the environment and the baseline arm
    it was measured under: where one fails, the verdict is *not testable here*, its evidence kept as what the run
    measured instead and the place it can be tested named. Every verdict carries its checks."""
    for v in verdicts:
        if not v.registered:  # not a registered claim: nothing declares its preconditions
            continue
        claim = registry.get(v.registered["study"], v.registered["id"])
        checks = [p.check(conditions) for p in claim.preconditions]
        v.preconditions = checks
        failing = [c for c in checks if c["holds"] is False]
        if not failing:
            continue
        v.verdict = Verdict.NOT_TESTABLE
        v.evidence = (
            "not testable here: "
            + "; ".join(f"{c['text']} is {c['shown']}, the mechanism needs {c['required']}" for c in failing)
            + f" (the precondition says why). Measured instead (a fact, not a verdict): {v.evidence}"
        )
        v.testable_where = "; ".join(dict.fromkeys(c["where"] for c in failing))
        v.rounds_needed = None
        v.needs = []
    return list(verdicts)


def judged(
    c: registry.Claim,
    intervals: tuple[tuple[list, list | None], ...],
    cells: tuple[Sequence[str], ...] = (),
) -> list[dict[str, Any]]:
    """Per reading: its effect, regions and the intervals that were read against them (what a picture of the
    claim against its thresholds draws), with each interval's cell name where the study gave them."""
    out = []
    for k, (reading, (each, refuting)) in enumerate(zip(c.readings(), intervals, strict=False)):
        names = [str(n) for n in cells[k]] if k < len(cells) else []
        out.append(
            {
                **reading.as_dict(),
                "intervals": [[float(lo), float(hi)] for lo, hi in each],
                "refuting": [[float(lo), float(hi)] for lo, hi in refuting] if refuting is not None else None,
                "cells": names if len(names) == len(each) else [],
            }
        )
    return out


@dataclass(frozen=True)
class RatioClaim:
    """A registered claim decided by one comparison: the candidate arm against the baseline on the claim's
    registered metric, the ratio candidate / baseline read by the registered reading.

    `at`: a factor whose level the claim is checked at (e.g. the highest concurrency). `through`: duets whose two
    arms never ran together are compared through this arm."""

    study: str
    id: str
    baseline: str
    candidate: str
    higher_is_better: bool = False
    at: str | None = None
    through: str | None = None
    measure: str = ""
    engine_note: str = ""
    unit: str = ""

    @property
    def registered(self) -> registry.Claim:
        return registry.get(self.study, self.id)

    def check(self, runs: Any, alpha: float = 0.05, level: Any = None, part: str = "") -> ClaimVerdict | None:
        """The verdict on these runs (None when they lack either arm)."""

        claim = self.registered
        metric = claim.metric
        if self.at is not None and level is not None and self.at in runs:
            runs = runs[runs[self.at] == level]
        c = compare_arms(
            runs,
            metric,
            baseline=self.baseline,
            candidates=[self.candidate],
            by=[self.at] if self.at is not None and self.at in runs else [],
            higher_is_better=self.higher_is_better,
            confidence=1 - alpha,
        )
        if not c:
            return None
        comparison = next(iter(c.values()))
        if self.through and not comparison.n_pairs and self.through in set(runs["arm"]):
            # each ran beside `through` (a duet baseline), never beside the other: (cand/through)/(base/through)
            r = relative(
                runs,
                metric,
                baseline=self.through,
                candidates=[self.candidate],
                reference=self.baseline,
                higher_is_better=self.higher_is_better,
                confidence=1 - alpha,
            )
            if r:
                comparison = dataclasses.replace(next(iter(r.values())), cell=comparison.cell)
        intervals = (([(comparison.ci_low, comparison.ci_high)], None),)
        verdict = claim.decide(*intervals)
        return verdict_of(
            self.study,
            self.id,
            verdict,
            comparison.evidence(self.unit),
            part=part,
            level=level,
            measure=self.measure,
            engine_note=self.engine_note,
            ratio=comparison.ratio,
            ci_low=comparison.ci_low,
            ci_high=comparison.ci_high,
            needs=[{"arm": a, **comparison.cell} for a in (comparison.baseline, comparison.candidate)],
            intervals=intervals,
            rounds=comparison.n_pairs or min(comparison.n_baseline, comparison.n_candidate),
        )
