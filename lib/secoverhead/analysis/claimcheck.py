"""The one engine that judges claims: a claim is a declaration (Rule: what each of its registered readings
compares, analysis/reads.py), its intervals read by the registry's reading, its preconditions checked on the
environment and the baseline arm (screen). The verdict carries the claim's source, words, metric and reading
with it into verdicts.json."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis import pooling
from secoverhead.analysis.readings import verdict_from
from secoverhead.analysis.reads import Cell, Kind, Ratio, cell_of, finite, level_of, widened
from secoverhead.analysis.stats import t_quantile
from secoverhead.analysis.verdicts import ClaimVerdict, Verdict
from secoverhead.core.units import figure, p_text

UNDECIDED = "; undecided after "  # where an undecided verdict's evidence says what would decide it


@dataclass(frozen=True)
class Grounds:
    """What a verdict rests on. `intervals` (one (intervals, refuting) pair per reading) and `rounds` (how many
    they rest on) let an undecided verdict say how many rounds would decide it; `cells` names each reading's
    intervals in order (the workload, the approach), so a summary can say which interval is which; `needs` the
    cells an undecided claim wants more rounds of; `measure` what was measured, in words."""

    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    needs: list[dict[str, Any]] = field(default_factory=list)
    intervals: tuple[tuple[list, list | None], ...] = ()
    rounds: int = 0
    cells: tuple[Sequence[str], ...] = ()
    quantities: tuple[str, ...] = ()
    measure: str = ""
    floors: tuple[float, ...] = ()  # per reading: the half-width a between-run sd adds at any rounds, its unit
    estimates: tuple[list[list[float] | None], ...] = ()  # per reading and cell: [value, se] over this run's rounds


def verdict_of(
    study: str,
    claim_id: str,
    verdict: Verdict,
    evidence: str,
    *,
    part: str = "",
    level: Any = None,
    engine_note: str = "",
    grounds: Grounds = Grounds(),
) -> ClaimVerdict:
    """A ClaimVerdict for the registered claim, its text filled in for this part and level."""
    c = registry.get(study, claim_id)
    g = grounds
    rounds_needed = None
    if verdict == Verdict.INCONCLUSIVE and g.intervals and g.rounds:
        rounds_needed = c.rounds_to_decide(*g.intervals, n=g.rounds, floors=g.floors)
        evidence += f"{UNDECIDED}{g.rounds} rounds: " + _what_would_decide(c, g, rounds_needed)
    return ClaimVerdict(
        c.claim.format(part=part, level=level),
        verdict,
        evidence,
        g.measure or c.metric_text,
        engine_note,
        id=f"{part}:{c.id}" if part else c.id,
        ratio=g.ratio,
        ci_low=g.ci_low,
        ci_high=g.ci_high,
        needs=list(g.needs),
        source=c.source_on(part),
        registered=c.record(),
        rounds_needed=rounds_needed,
        judged=judged(c, g.intervals, g.cells, g.quantities, g.estimates),
        before=_before(c, verdict, g),
    )


def _before(c: registry.Claim, verdict: Verdict, g: Grounds) -> list[dict[str, Any]]:
    """The verdict each earlier definition of the claim gives on the same intervals (its preconditions are
    screened apart, in `screen`), so a report after a change shows the old verdict beside the new."""
    out = []
    for old in c.superseded:
        then = c.as_before(old)
        decided = then.decide(*g.intervals) if g.intervals else Verdict.INCONCLUSIVE
        was = verdict if old.reading is None else decided
        out.append({"until": old.until, "change": old.change, "reading": then.describe(), "verdict": str(was),
                    "without": list(old.without)})  # fmt: skip
    return out


def _what_would_decide(c: registry.Claim, g: Grounds, rounds: int | None) -> str:
    """More rounds, more reports of its series, or nothing: what an undecided verdict could still be decided by."""
    if rounds:
        return f"about {rounds} would decide it, were the estimate to stay"
    runs = c.runs_to_decide(*g.intervals, n=g.rounds) if any(g.floors) else None
    if runs:
        return (
            "no number of rounds in one run decides it (the between-run sd alone keeps its interval too wide); "
            f"about {runs} reports of its series would, judged together as its standing verdict, were the estimate "
            "and their spread to stay"
        )
    return "the estimate sits on the claim's line, where more rounds may never decide it"


def _measured(evidence: str) -> str:
    """A verdict's evidence as a description: what more rounds or runs would decide goes, since none would."""
    return evidence.split(UNDECIDED, 1)[0]


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
        _screen_before(v, failing, claim, conditions)
        if not failing:
            continue
        v.verdict = Verdict.NOT_TESTABLE
        v.evidence = (
            "not testable here: "
            + "; ".join(f"{c['text']} is {c['shown']}, the mechanism needs {c['required']}" for c in failing)
            + f" (the precondition says why). Measured instead (a fact, not a verdict): {_measured(v.evidence)}"
        )
        v.testable_where = "; ".join(dict.fromkeys(c["where"] for c in failing))
        v.rounds_needed = None
        v.needs = []
    return list(verdicts)


def _screen_before(
    v: ClaimVerdict, failing: list[dict[str, Any]], claim: registry.Claim, conditions: Mapping[str, Any]
) -> None:
    """Each earlier definition's verdict under the preconditions it had: those added since do not screen it, those
    dropped since do."""
    for old, then in zip(v.before, claim.superseded, strict=False):
        dropped = [p.check(conditions) for p in then.had]
        old["preconditions"] = dropped
        if any(c["condition"] not in old["without"] for c in failing) or any(c["holds"] is False for c in dropped):
            old["verdict"] = str(Verdict.NOT_TESTABLE)


def judged(
    c: registry.Claim,
    intervals: tuple[tuple[list, list | None], ...],
    cells: tuple[Sequence[str], ...] = (),
    quantities: tuple[str, ...] = (),
    estimates: tuple[list[list[float] | None], ...] = (),
) -> list[dict[str, Any]]:
    """Per reading: its effect, regions and the intervals that were read against them (what a picture of the
    claim against its thresholds draws), with each interval's cell name where the study gave them, and the
    quantity its numbers are on (ratio, loss in %, difference, share as a fraction), so they show as measured;
    each cell's estimate over the run's rounds alone on the pooling scale (analysis/pooling.py); and the
    reading's own verdict, so a page shows the reading that decided the claim."""
    out = []
    for k, (reading, (each, refuting)) in enumerate(zip(c.readings(), intervals, strict=False)):
        names = [str(n) for n in cells[k]] if k < len(cells) else []
        out.append(
            {
                **reading.as_dict(),
                "intervals": [[float(lo), float(hi)] for lo, hi in each],
                "refuting": [[float(lo), float(hi)] for lo, hi in refuting] if refuting is not None else None,
                "cells": names if len(names) == len(each) else [],
                **({"quantity": quantities[k]} if k < len(quantities) else {}),
                **({"estimates": estimates[k]} if k < len(estimates) and len(estimates[k]) == len(each) else {}),
                "verdict": str(verdict_from(*reading.holds(each, refuting), what=f"{c.study}:{c.id}")),
            }
        )
    return out


@dataclass(frozen=True)
class Rule:
    """A registered claim as a declaration: what each of its readings reads (analysis/reads.py), in the
    registry's order. Its words, metric, readings and preconditions are the registry's; this engine turns the
    comparisons into intervals and a verdict the same way for every study:

    - a reading that every cell must reproduce (combine: all) reads each cell's interval at alpha to reproduce
      (an intersection-union test keeps its error rate without a correction, Berger 1982) and
      Bonferroni-widened intervals to refute (one cell refutes);
    - a reading that one cell may reproduce (combine: any) reads Bonferroni-widened intervals to reproduce and
      each cell's at alpha to refute;
    - a claim of several readings reproduces when every reading does and is refuted when any is, so refuting
      splits alpha over its readings.

    `varies`: a factor the claim speaks of the levels of (judged only where the runs hold two or more);
    `context`: what stands beside the evidence without deciding (e.g. the capacity loss of a CPU-bound server)."""

    study: str
    id: str
    reads: tuple[Kind, ...]
    measure: str = ""
    engine_note: str = ""
    unit: str = ""
    varies: str | None = None
    context: Any = None  # (runs, alpha) -> str

    @property
    def registered(self) -> registry.Claim:
        return registry.get(self.study, self.id)

    def judge(self, runs: Any, alpha: float = 0.05, *, part: str = "", levels: Mapping[str, Any] | None = None
              ) -> ClaimVerdict | None:  # fmt: skip
        """The verdict on these runs (None when they lack what a reading compares): the readings' intervals,
        widened by a declared between-run sd, decided by the registry's readings."""
        claim = self.registered
        if not self._readable(runs, claim.metric):
            return None
        read, own = self._intervals(runs, claim, alpha, levels)
        if any(not each for each, _ in read):
            return None
        return self._verdict(claim, read, runs, alpha, part, levels, own)

    def _readable(self, runs: Any, metric: str) -> bool:
        if runs is None or not len(runs) or "arm" not in runs or metric not in runs:
            return False
        return not self.varies or (self.varies in runs and runs[self.varies].nunique() >= 2)

    def _intervals(self, runs: Any, claim: registry.Claim, alpha: float, levels: Mapping[str, Any] | None
                   ) -> tuple[list[tuple[list[Cell], list[Cell]]], list[tuple[list[Cell], list[Cell]]]]:  # fmt: skip
        """Per reading (the intervals that may reproduce, those that may refute), widened where declared; and the
        same over the run's rounds only (what pooling over runs starts from)."""
        for r, reading in zip(self.reads, claim.readings(), strict=True):
            if r.quantity != reading.quantity:  # what is read and what the registry declares must be one number
                raise ValueError(f"{self.study}:{self.id}: reads a {r.quantity}, registered as a {reading.quantity}")
        read = [intervals_of(r, reading, runs, claim.metric, alpha, len(self.reads), levels)
                for r, reading in zip(self.reads, claim.readings(), strict=True)]  # fmt: skip
        between = registry.between_runs().get((self.study, claim.metric))
        if between is None:
            return read, read
        return [(_widened(r, each, between.sd), _widened(r, refuting, between.sd))
                for r, (each, refuting) in zip(self.reads, read, strict=True)], read  # fmt: skip

    def _replication(self, metric: str) -> str:
        """What the intervals cover: a declared between-run sd, or this run's rounds only."""
        if not any(r.between_instances for r in self.reads):
            return ""
        between = registry.between_runs().get((self.study, metric))
        return (
            between.text()
            if between is not None
            else "intervals over this run's rounds only (no between-run sd declared)"
        )

    def _verdict(self, claim: registry.Claim, read: list, runs: Any, alpha: float, part: str,
                 levels: Mapping[str, Any] | None, own: list) -> ClaimVerdict:  # fmt: skip
        sets = tuple(([c.interval for c in each], [c.interval for c in refuting]) for each, refuting in read)
        decidable = all(finite(each) for each, _ in read)
        first = read[0][0]
        single = len(read) == 1 and len(first) == 1
        return verdict_of(
            self.study,
            self.id,
            claim.decide(*sets) if decidable else Verdict.INCONCLUSIVE,
            self._evidence(claim, read, runs, alpha, levels),
            part=part,
            level=self._level(runs, levels),
            engine_note=self.engine_note,
            grounds=Grounds(
                **(_on_its_quantity(first[0], self.reads[0].quantity) if single else {}),
                needs=[n for r, (each, _) in zip(self.reads, read, strict=True) for n in r.needs(each, runs)],
                intervals=sets if decidable else (),
                rounds=min(c.n for each, _ in read for c in each),
                cells=tuple([c.name for c in each] for each, _ in read),
                quantities=tuple(r.quantity for r in self.reads),
                measure="; ".join(t for t in (self.measure, self._replication(claim.metric)) if t),
                floors=self._floors(claim.metric, read),
                estimates=tuple(_estimates(each, r.quantity) for r, (each, _) in zip(self.reads, own, strict=True)),
            ),
        )

    def _floors(self, metric: str, read: list) -> tuple[float, ...]:
        """Per reading, the half-width its declared between-run sd adds however many rounds (0 where none)."""
        between = registry.between_runs().get((self.study, metric))
        tau = between.sd if between is not None else 0.0
        return tuple(
            floor_of(each, tau, r.quantity) if r.between_instances and tau else 0.0
            for r, (each, _) in zip(self.reads, read, strict=True)
        )

    def _level(self, runs: Any, levels: Mapping[str, Any] | None) -> Any:
        at = next((r for r in self.reads if getattr(r, "at", None)), None)
        if at is None or at.at not in runs:
            return None
        return level_of(runs, at.at, at.at_level, levels)

    def _evidence(
        self, claim: registry.Claim, read: list, runs: Any, alpha: float, levels: Mapping[str, Any] | None
    ) -> str:
        texts = [
            _reading_text(reading, r, each, refuting, self.unit, r.where(runs, levels))
            for reading, r, (each, refuting) in zip(claim.readings(), self.reads, read, strict=True)
        ]
        extra = self.context(runs, alpha) if self.context is not None else ""
        return ". ".join(texts) + (f"; {extra}" if extra else "")


def _estimates(cells: list[Cell], quantity: str) -> list[list[float] | None]:
    """Each cell's [value, se] on the pooling scale from its interval over the run's rounds (None: not poolable)."""
    out: list[list[float] | None] = []
    for c in cells:
        e = pooling.run_estimate(quantity, c.lo, c.hi, c.n, c.confidence) if finite([c]) else None
        out.append([e.value, e.se] if e is not None and math.isfinite(e.se) else None)
    return out


def _on_its_quantity(cell: Cell, quantity: str) -> dict[str, float]:
    """A single interval as the verdict's ratio and ends: the comparison's own quantity (a loss as the ratio it
    came from), the interval as decided (widened, where a between-run sd was added)."""
    if quantity == "loss":
        point = cell.comparison.ratio if cell.comparison else 1 - cell.point / 100
        return {"ratio": point, "ci_low": 1 - cell.hi / 100, "ci_high": 1 - cell.lo / 100}
    return {"ratio": cell.point, "ci_low": cell.lo, "ci_high": cell.hi}


def floor_of(cells: list[Cell], tau: float, quantity: str) -> float:
    """The half-width a between-run sd tau (on the log ratio, or in the metric's unit for a difference) gives an
    interval at any number of rounds, in the reading's unit, at the cells' confidence and largest centre."""
    if not cells:
        return 0.0
    z = t_quantile(1e6, 0.5 + cells[0].confidence / 2)
    centre = max((c.lo + c.hi) / 2 for c in cells)
    if quantity == "ratio":
        return centre * (math.exp(z * tau) - 1)
    if quantity == "loss":
        return (100 - centre) * (math.exp(z * tau) - 1)
    return z * tau


def as_judged(study: str, metric: str, c: Any) -> tuple[float, float]:
    """A ratio comparison between arms on instances of their own, as its claims judge it: the interval with the
    declared between-run sd added (what a figure or table beside the verdict must show)."""
    between = registry.between_runs().get((study, metric))
    cell = widened(cell_of(c), between.sd if between is not None else 0.0, "ratio")
    return cell.lo, cell.hi


def _widened(r: Any, cells: list[Cell], tau: float) -> list[Cell]:
    """Cells of a comparison between arms on instances of their own, widened by the between-run sd."""
    return [widened(c, tau, r.quantity) for c in cells] if r.between_instances else cells


def intervals_of(r: Any, reading: Any, runs: Any, metric: str, alpha: float, readings: int,
          levels: Mapping[str, Any] | None) -> tuple[list[Cell], list[Cell]]:  # fmt: skip
    """(the intervals that may reproduce, those that may refute) of one reading: at the confidence and
    Bonferroni family its combine rule and the claim's number of readings call for (see Rule)."""
    probe = r.cells(runs, metric, 1 - alpha, 1, levels)
    k = len(probe)
    if not k:
        return [], []
    every = reading.combine == "all"
    each = probe if every or k == 1 else r.cells(runs, metric, 1 - alpha, k, levels)
    refute_family = k if every else 1
    if readings == 1 and refute_family == 1:
        return each, probe
    return each, r.cells(runs, metric, 1 - alpha / readings, refute_family, levels)


def _reading_text(reading: Any, r: Any, each: list[Cell], refuting: list[Cell], unit: str, where: str = "") -> str:
    """One reading's evidence: the quantity, each cell's estimate and interval on the reading's quantity (every
    number through reading.shown, as the headline shows it), the confidence and family they were read at, n and
    test; a single comparison's medians (in the metric's `unit`) and p; the refuting intervals where they
    differ."""
    c0 = each[0]
    head = f"{reading.effect}{' (' + where + ')' if where else ''}"
    cells = "; ".join(
        f"{c.name + ': ' if c.name else ''}{reading.shown(c.point)} [{reading.shown(c.lo)}, {reading.shown(c.hi)}]"
        for c in each
    )
    cmp = c0.comparison if len(each) == 1 and not c0.name and isinstance(r, Ratio) else None
    if cmp is not None:
        u = f" {unit}" if unit else ""
        cells = f"median {figure(cmp.baseline_median)}{u} -> {figure(cmp.candidate_median)}{u}; {cells}"
    plural = "CIs" if len(each) > 1 else "CI"
    corr = f", Bonferroni over {c0.family} {r.cells_word}" if c0.family > 1 else ""
    p = f", {p_text(cmp.p_value)}" if cmp is not None else ""
    out = f"{head}: {cells} ({plural} at {c0.confidence * 100:.4g} %{corr}; {c0.n_text}, {c0.test}{p})"
    if [c.interval for c in refuting] != [c.interval for c in each]:
        out += f"; for refuting, at {refuting[0].confidence * 100:.4g} %: " + ", ".join(
            f"{c.name + ' ' if c.name else ''}[{reading.shown(c.lo)}, {reading.shown(c.hi)}]" for c in refuting
        )
    return out


def judge(
    rules: Sequence[Rule], runs: Any, alpha: float = 0.05, *, part: str = "", levels: Mapping[str, Any] | None = None
) -> list[ClaimVerdict]:
    """Every rule's verdict on a part's runs (those a rule cannot read, left out)."""
    return [v for rule in rules if (v := rule.judge(runs, alpha, part=part, levels=levels)) is not None]
