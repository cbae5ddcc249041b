"""Verdicts on published claims: the words, the rules that turn an interval into a verdict, and
verdicts.json (what the report index shows without re-running anything). Standard library only.

A claim is *reproduced* when the whole confidence interval lies where the claim says, *not reproduced* when
the whole interval lies on the wrong side, and *inconclusive* otherwise: the data cannot decide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import atomic_write_json, read_json

if TYPE_CHECKING:
    from .stats import Comparison


class Verdict(StrEnum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive"


@dataclass
class ClaimVerdict:
    """A published claim checked against our runs."""

    claim: str
    verdict: Verdict
    evidence: str  # the numbers, n (runs or rounds), test and CI that decide it
    measure: str = ""
    engine_note: str = ""
    id: str = ""  # stable name, for history across runs
    ratio: float | None = None  # the effect, where it is a ratio (history plots it)
    ci_low: float | None = None
    ci_high: float | None = None
    needs: list[dict[str, Any]] = field(default_factory=list)  # (arm, cell) runs that would help decide it

    @property
    def decided(self) -> bool:
        return self.verdict != Verdict.INCONCLUSIVE

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = str(self.verdict)
        return d


def _finite(*xs: float) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def bound_verdict(lo: float, hi: float, *, at_least: float | None = None, at_most: float | None = None) -> Verdict:
    """Reproduced when [lo, hi] lies inside [at_least, at_most]; not reproduced when it lies wholly outside."""
    if not _finite(lo, hi):
        return Verdict.INCONCLUSIVE
    if (at_least is None or lo >= at_least) and (at_most is None or hi <= at_most):
        return Verdict.REPRODUCED
    if (at_least is not None and hi < at_least) or (at_most is not None and lo > at_most):
        return Verdict.NOT_REPRODUCED
    return Verdict.INCONCLUSIVE


def judge_ratio(
    claim: str,
    c: Comparison,
    *,
    expect: str,
    min_ratio: float | None = None,
    max_ratio: float | None = None,
    measure: str = "",
    engine_note: str = "",
    unit: str = "",
    id: str = "",
) -> ClaimVerdict:
    """A claim about the direction (and rough size) of a change, from one comparison.

    expect: "worse" (the candidate costs more / delivers less), "better", or "similar" (no change beyond the
    noise band, or inside [min_ratio, max_ratio]). min_ratio / max_ratio bound the size the claim implies
    (e.g. "markedly slower": min_ratio=1.3), tested on the whole interval.
    """
    from .stats import Change

    decided = (Change.WORSE, Change.BETTER, Change.SAME)
    if expect == "similar":
        if max_ratio is not None or min_ratio is not None:
            v = bound_verdict(c.ci_low, c.ci_high, at_least=min_ratio, at_most=max_ratio)
            if v == Verdict.INCONCLUSIVE and c.change == Change.SAME:
                v = Verdict.REPRODUCED
        elif c.change == Change.SAME:
            v = Verdict.REPRODUCED
        elif c.change in (Change.WORSE, Change.BETTER):
            v = Verdict.NOT_REPRODUCED
        else:
            v = Verdict.INCONCLUSIVE
    elif c.change == Change.UNCLEAR:
        v = Verdict.INCONCLUSIVE
    elif c.change != Change(expect):
        v = Verdict.NOT_REPRODUCED if c.change in decided else Verdict.INCONCLUSIVE
    else:
        v = bound_verdict(c.ci_low, c.ci_high, at_least=min_ratio, at_most=max_ratio)
    return ClaimVerdict(
        claim,
        v,
        c.evidence(unit),
        measure,
        engine_note,
        id=id,
        ratio=c.ratio,
        ci_low=c.ci_low,
        ci_high=c.ci_high,
        needs=[{"arm": a, **c.cell} for a in (c.baseline, c.candidate)],
    )


@dataclass(frozen=True)
class RatioClaim:
    """A published claim about one arm against another on one run metric, declared as data.

    `at`: a factor whose level the claim is checked at (e.g. the highest concurrency); the claim's text may
    name it as {level}."""

    id: str
    claim: str
    metric: str
    baseline: str
    candidate: str
    expect: str  # worse | better | similar
    min_ratio: float | None = None
    max_ratio: float | None = None
    measure: str = ""
    engine_note: str = ""
    unit: str = ""
    higher_is_better: bool = False
    at: str | None = None
    through: str | None = None  # duets: when the two arms never ran together, compare them through this arm

    def check(self, runs: Any, alpha: float = 0.05, level: Any = None) -> ClaimVerdict | None:
        """The verdict on these runs (None when they lack either arm)."""
        import dataclasses

        from .compare import compare_arms, relative

        if self.at is not None and level is not None and self.at in runs:
            runs = runs[runs[self.at] == level]
        c = compare_arms(
            runs,
            self.metric,
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
                self.metric,
                baseline=self.through,
                candidates=[self.candidate],
                reference=self.baseline,
                higher_is_better=self.higher_is_better,
                confidence=1 - alpha,
            )
            if r:
                comparison = dataclasses.replace(next(iter(r.values())), cell=comparison.cell)
        return judge_ratio(
            self.claim.format(level=level),
            comparison,
            expect=self.expect,
            min_ratio=self.min_ratio,
            max_ratio=self.max_ratio,
            measure=self.measure,
            engine_note=self.engine_note,
            unit=self.unit,
            id=self.id,
        )


def write_verdicts(
    output_dir: str | Path, study: str, verdicts: Sequence[ClaimVerdict], notes: Sequence[str] = ()
) -> Path:
    path = Path(output_dir) / "verdicts.json"
    atomic_write_json(path, {"study": study, "verdicts": [v.as_dict() for v in verdicts], "notes": list(notes)})
    return path


def read_verdicts(run_dir: Path) -> dict[str, Any] | None:
    """verdicts.json of a report directory (None when missing or corrupt)."""
    for p in (run_dir / "verdicts.json", run_dir / "results" / "verdicts.json"):
        if p.exists():
            data = read_json(p)
            return data if isinstance(data, dict) else None
    return None
