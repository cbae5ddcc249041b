"""What a reading of a claim reads: the comparison whose intervals the registry's reading decides, declared once
per claim and computed here for every study alike.

Each kind gives one interval per cell (a workload, a thread count, an approach) at a stated confidence and
Bonferroni family; the engine (claimcheck.Rule) chooses those from the reading's `combine` so that every claim
keeps its error rate the same way. Kinds:

- ``Ratio``: candidate against baseline per cell (as a ratio, a loss in %, or a difference), optionally at the
  highest or lowest level of a factor, or through a third arm when the two never ran together;
- ``Relative``: each of several arms against a reference arm, through the baseline;
- ``Contrast``: the candidate's effect at one level of a factor over its effect at another (a ratio of ratios);
- ``Combined``: such contrasts between groups of levels, averaged per round into one interval;
- ``Share``: per round, the share of a costly arm's extra cost over the baseline that a candidate wins back.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from secoverhead.analysis.compare import combined_interaction, compare_arms, interaction, per_round, relative
from secoverhead.analysis.stats import Comparison, mean_interval, widen

Levels = Mapping[str, Any]  # a factor's level the plan fixes (e.g. the highest concurrency planned)


@dataclass(frozen=True)
class Cell:
    """One interval a reading reads, on the reading's own quantity (a ratio, a loss in %, a difference, a share),
    with what it rests on."""

    name: str  # the cell as a reader names it ('' when the reading has one cell)
    point: float
    lo: float
    hi: float
    n: int  # rounds (paired) or runs
    n_text: str
    test: str
    confidence: float
    family: int
    comparison: Comparison | None = None  # the underlying comparison, where there is one

    @property
    def interval(self) -> tuple[float, float]:
        return (self.lo, self.hi)


def level_of(runs: pd.DataFrame, factor: str, which: Any, levels: Levels | None) -> Any:
    """'max' / 'min' of the factor in the runs (or the plan's level, when the caller fixes it), else `which`."""
    if which == "max" and levels and factor in levels:
        return levels[factor]
    if which in ("max", "min"):
        values = runs[factor].dropna()
        return (values.max() if which == "max" else values.min()).item() if len(values) else None
    return which


def cell_name(cell: Mapping[str, Any], by: Sequence[str]) -> str:
    """A cell as a reader names it: 'oltp_write_only x16' for workload and threads, else the values joined."""
    values = [cell[b] for b in by if b in cell]
    if list(by) == ["workload", "threads"] and len(values) == 2:
        return f"{values[0]} x{values[1]}"
    return " ".join(str(v) for v in values)


def cell_of(c: Comparison, name: str = "", quantity: str = "ratio") -> Cell:
    """A comparison as a reading's cell: its number on the reading's quantity and its n counted as claims count it."""
    return _from(c, name, quantity)


def _from(c: Comparison, name: str, quantity: str) -> Cell:
    point, lo, hi = c.ratio, c.ci_low, c.ci_high
    if quantity == "loss":  # the share of the baseline's metric the candidate loses, %
        point, lo, hi = (1 - c.ratio) * 100, (1 - c.ci_high) * 100, (1 - c.ci_low) * 100
    return Cell(name, point, lo, hi, c.n_pairs or min(c.n_baseline, c.n_candidate), c.n_text,
                f"{c.test}; {c.design}", c.confidence, c.family, c)  # fmt: skip


class Kind:
    """What every kind of reading says of itself unless it says otherwise: its quantity, the level it was read at
    (none), and whether its arms ran on server instances of their own (a between-run sd then widens it)."""

    quantity = "ratio"
    between_instances = False

    def where(self, runs: pd.DataFrame, levels: Levels | None = None) -> str:
        return ""


class PerCell(Kind):
    """A candidate against a baseline, per cell of `by`."""

    @property
    def arms(self) -> tuple[str, ...]:
        return (self.baseline, self.candidate)  # type: ignore[attr-defined]

    @property
    def cells_word(self) -> str:
        by = self.by  # type: ignore[attr-defined]
        return f"{by[-1]}s" if by else "cells"


@dataclass(frozen=True)
class Ratio(PerCell):
    """Candidate against baseline on the claim's metric, per cell of `by`; `at`: only at the highest ('max') or
    lowest ('min') level of that factor; `through`: where the two never ran together (duets with a third arm),
    (candidate / through) / (baseline / through). quantity: 'ratio' (candidate / baseline), 'loss' (1 - ratio,
    in %) or 'difference' (candidate - baseline, e.g. percentage points)."""

    baseline: str
    candidate: str
    by: tuple[str, ...] = ()
    at: str | None = None
    at_level: str = "max"
    through: str | None = None
    higher_is_better: bool = False
    quantity: str = "ratio"
    between_instances = True

    def cells(self, runs: pd.DataFrame, metric: str, confidence: float, family: int | None,
              levels: Levels | None = None) -> list[Cell]:  # fmt: skip
        by = list(self.by)
        if self.at is not None and self.at in runs:
            level = level_of(runs, self.at, self.at_level, levels)
            runs = runs[runs[self.at] == level]
            by = [*by, self.at] if self.at not in by else by
        comps = compare_arms(
            runs, metric, baseline=self.baseline, candidates=[self.candidate], by=by,
            higher_is_better=self.higher_is_better, confidence=confidence, family=family,
            quantity="difference" if self.quantity == "difference" else "ratio",
        )  # fmt: skip
        out = []
        for c in comps.values():
            if self.through and not c.n_pairs and self.through in set(runs["arm"]):
                c = self._through(runs, metric, confidence, family, c.cell) or c
            out.append(_from(c, cell_name(c.cell, self.by), self.quantity))
        return out

    def where(self, runs: pd.DataFrame, levels: Levels | None = None) -> str:
        """The level the cells were read at, in words ('' when every level)."""
        if self.at is None or self.at not in runs:
            return ""
        return f"at {self.at} {level_of(runs, self.at, self.at_level, levels)}"

    def _through(
        self, runs: pd.DataFrame, metric: str, confidence: float, family: int | None, cell: dict
    ) -> Comparison | None:
        """Each ran beside `through` (a duet's baseline), never beside the other."""
        r = relative(
            runs, metric, baseline=self.through, candidates=[self.candidate], reference=self.baseline,
            higher_is_better=self.higher_is_better, confidence=confidence, family=family,
        )  # fmt: skip
        return dataclasses.replace(next(iter(r.values())), cell=cell) if r else None

    def needs(self, cells: Sequence[Cell], runs: pd.DataFrame) -> list[dict[str, Any]]:
        return [{"arm": a, **(c.comparison.cell if c.comparison else {})} for c in cells for a in self.arms]


@dataclass(frozen=True)
class Relative(Kind):
    """Each candidate present against `reference`, through `baseline`: per round (candidate / baseline) /
    (reference / baseline), so duets that never held the two together still compare them."""

    baseline: str
    reference: str
    candidates: tuple[str, ...]
    higher_is_better: bool = False
    cells_word: str = "arms"
    between_instances = True

    @property
    def arms(self) -> tuple[str, ...]:
        return (self.reference, *self.candidates)

    def cells(self, runs: pd.DataFrame, metric: str, confidence: float, family: int | None,
              levels: Levels | None = None) -> list[Cell]:  # fmt: skip
        present = [c for c in self.candidates if c in set(runs["arm"])]
        if not present or self.reference not in set(runs["arm"]):
            return []
        r = relative(
            runs, metric, baseline=self.baseline, candidates=present, reference=self.reference,
            higher_is_better=self.higher_is_better, confidence=confidence, family=family,
        )  # fmt: skip
        return [_from(c, f"{a} / {self.reference}", "ratio") for a, c in r.items()]

    def needs(self, cells: Sequence[Cell], runs: pd.DataFrame) -> list[dict[str, Any]]:
        return [{"arm": a} for a in (self.reference, *(c.comparison.candidate for c in cells if c.comparison))]


@dataclass(frozen=True)
class Contrast(PerCell):
    """The candidate's ratio to the baseline at one level of `factor` over the same at another ('min' / 'max':
    the runs' lowest / highest), per cell of `by`: below 1, the candidate loses more at `level`."""

    baseline: str
    candidate: str
    factor: str
    level: Any = "min"
    reference: Any = "max"
    by: tuple[str, ...] = ()

    def cells(self, runs: pd.DataFrame, metric: str, confidence: float, family: int | None,
              levels: Levels | None = None) -> list[Cell]:  # fmt: skip
        if self.factor not in runs:
            return []
        level, ref = level_of(runs, self.factor, self.level, None), level_of(runs, self.factor, self.reference, None)
        if level is None or level == ref:
            return []
        comps = interaction(
            runs, metric, baseline=self.baseline, candidate=self.candidate, factor=self.factor, level=level,
            reference=ref, by=list(self.by), confidence=confidence, family=family,
        )  # fmt: skip
        return [_from(c, cell_name(c.cell, self.by), "ratio") for c in comps.values()]

    def where(self, runs: pd.DataFrame, levels: Levels | None = None) -> str:
        lv, ref = level_of(runs, self.factor, self.level, None), level_of(runs, self.factor, self.reference, None)
        return f"{self.factor} {lv} over the same at {ref}"

    def needs(self, cells: Sequence[Cell], runs: pd.DataFrame) -> list[dict[str, Any]]:
        ends = (level_of(runs, self.factor, self.level, None), level_of(runs, self.factor, self.reference, None))
        return [
            {"arm": a, **{b: c.comparison.cell[b] for b in self.by if c.comparison}, self.factor: lv}
            for c in cells
            for lv in ends
            for a in self.arms
        ]


@dataclass(frozen=True)
class Combined(Kind):
    """The candidate's effect at each of `levels` of `factor` over its effect at each of `references`, averaged
    per round over every such pair and every cell of `over`: one interval for a claim about the levels."""

    baseline: str
    candidate: str
    factor: str
    levels: tuple[Any, ...]
    references: tuple[Any, ...]
    over: tuple[str, ...] = ()
    cells_word: str = "cells"

    @property
    def arms(self) -> tuple[str, ...]:
        return (self.baseline, self.candidate)

    def cells(self, runs: pd.DataFrame, metric: str, confidence: float, family: int | None,
              levels: Levels | None = None) -> list[Cell]:  # fmt: skip
        if self.factor not in runs:
            return []
        present = set(runs[self.factor])
        pairs = [(a, b) for a in self.levels if a in present for b in self.references if b in present]
        c = combined_interaction(
            runs, metric, baseline=self.baseline, candidate=self.candidate, factor=self.factor, pairs=pairs,
            over=list(self.over), confidence=confidence,
        )  # fmt: skip
        return [_from(c, "", "ratio")] if c is not None and c.n_pairs else []

    def needs(self, cells: Sequence[Cell], runs: pd.DataFrame) -> list[dict[str, Any]]:
        present = set(runs[self.factor])
        used = [lv for lv in (*self.levels, *self.references) if lv in present]
        overs = runs[list(self.over)].drop_duplicates().to_dict("records") if self.over else [{}]
        return [{"arm": a, self.factor: lv, **o} for o in overs for a in self.arms for lv in used]


@dataclass(frozen=True)
class Share(Kind):
    """Per round, the share of `costly`'s extra cost over `baseline` that `candidate` wins back,
    1 - (candidate - baseline) / (costly - baseline): its mean over rounds with a t interval."""

    baseline: str
    costly: str
    candidate: str
    cells_word: str = "cells"
    quantity = "share"

    @property
    def arms(self) -> tuple[str, ...]:
        return (self.baseline, self.costly, self.candidate)

    def cells(self, runs: pd.DataFrame, metric: str, confidence: float, family: int | None,
              levels: Levels | None = None) -> list[Cell]:  # fmt: skip
        if not len(runs) or not set(self.arms) <= set(runs["arm"]):
            return []
        t = per_round(runs, metric, list(self.arms))
        if not len(t):
            return []
        share = 1 - (t[self.candidate] - t[self.baseline]) / (t[self.costly] - t[self.baseline])
        m = family or 1
        point, lo, hi, _p, n = mean_interval(share.to_numpy(dtype=float), 1 - (1 - confidence) / m)
        return [Cell("", point, lo, hi, n, f"n={n} rounds", "t interval of the per-round share",
                     1 - (1 - confidence) / m, m)]  # fmt: skip

    def needs(self, cells: Sequence[Cell], runs: pd.DataFrame) -> list[dict[str, Any]]:
        return [{"arm": a} for a in self.arms]


def finite(cells: Sequence[Cell]) -> bool:
    """Every interval finite (fewer than two rounds give none, and decide nothing)."""
    return bool(cells) and all(math.isfinite(c.lo) and math.isfinite(c.hi) for c in cells)


def widened(cell: Cell, tau: float, quantity: str) -> Cell:
    """The cell's interval with a between-run sd added (stats.widen): tau on the log ratio for a ratio or a loss,
    in the metric's unit for a difference."""
    if not tau:
        return cell
    if quantity == "loss":  # back to the ratio, widened there, and out again
        lo, hi = widen(1 - cell.hi / 100, 1 - cell.lo / 100, tau, cell.n, cell.confidence, log=True)
        return dataclasses.replace(cell, lo=(1 - hi) * 100, hi=(1 - lo) * 100)
    lo, hi = widen(cell.lo, cell.hi, tau, cell.n, cell.confidence, log=quantity == "ratio")
    return dataclasses.replace(cell, lo=lo, hi=hi)
