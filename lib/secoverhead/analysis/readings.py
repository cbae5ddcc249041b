"""How an interval decides a claim: the reading, drawn before the data.

A reading cuts the line of the claim's effect into regions, each labelled *reproduce*, *refute* or *gap* (an
indifference zone between them). An interval decides only when it lies wholly inside regions of one label:
the labels partition the line, so no interval can lie wholly in both, and reproduce and refute cannot both
hold by construction. A claim over several intervals (every workload, every approach) combines them one of
two ways, both keeping the regions apart:

- ``all``: reproduced when every interval reproduces, refuted when any refutes (a bound every cell must keep);
- ``any``: reproduced when any interval reproduces, refuted when every one refutes (a loss one cell shows).

When the intervals that may refute are wider than those that may reproduce (Bonferroni-widened beside an
intersection-union test's), each wide interval contains its narrow one, so the regions stay apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from secoverhead.analysis.stats import reports_to_decide, t_quantile
from secoverhead.analysis.verdicts import Verdict
from secoverhead.core.units import QUANTITIES, shown

REPRODUCE, REFUTE, GAP = "reproduce", "refute", "gap"
LABELS = (REPRODUCE, REFUTE, GAP)


@dataclass(frozen=True)
class Reading:
    """Regions of the effect's line: labels[i] holds from cuts[i-1] (included) to cuts[i] (excluded); the first
    region starts at -inf, the last ends at +inf. `effect` names the quantity; `quantity` says what its numbers are
    (core.units.QUANTITIES: a ratio, a loss in %, a difference in `unit`, a share as a fraction), so every
    place that shows them shows them alike."""

    effect: str
    cuts: tuple[float, ...]
    labels: tuple[str, ...]
    combine: str = "all"  # all | any: how several intervals decide together (see the module's docstring)
    quantity: str = "ratio"
    unit: str = ""  # a difference's unit (pp, us); the other quantities carry theirs

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.cuts) + 1:
            raise ValueError(f"{self.effect}: {len(self.cuts)} cuts need {len(self.cuts) + 1} labels")
        if any(b <= a for a, b in zip(self.cuts, self.cuts[1:], strict=False)):
            raise ValueError(f"{self.effect}: cuts must increase")
        if set(self.labels) - set(LABELS) or REPRODUCE not in self.labels or REFUTE not in self.labels:
            raise ValueError(f"{self.effect}: labels are {LABELS}, with a reproduce and a refute region")
        if self.combine not in ("all", "any"):
            raise ValueError(f"{self.effect}: combine is 'all' or 'any'")
        if self.quantity not in QUANTITIES:
            raise ValueError(f"{self.effect}: quantity is one of {QUANTITIES}")

    # -- the shapes the registry uses -----------------------------------------------------------------------
    @classmethod
    def band(cls, effect: str, lo: float, hi: float, *, margin: float = 0.0, **kw: Any) -> Reading:
        """Reproduced inside [lo, hi]; refuted outside [lo - margin, hi + margin]."""
        if margin:
            return cls(effect, (lo - margin, lo, hi, hi + margin), (REFUTE, GAP, REPRODUCE, GAP, REFUTE), **kw)
        return cls(effect, (lo, hi), (REFUTE, REPRODUCE, REFUTE), **kw)

    @classmethod
    def above(cls, effect: str, line: float, *, refute_below: float | None = None, **kw: Any) -> Reading:
        """Reproduced above `line`; refuted below it (or below refute_below, leaving a gap between)."""
        if refute_below is None or refute_below == line:
            return cls(effect, (line,), (REFUTE, REPRODUCE), **kw)
        return cls(effect, (refute_below, line), (REFUTE, GAP, REPRODUCE), **kw)

    @classmethod
    def below(cls, effect: str, line: float, *, refute_above: float | None = None, **kw: Any) -> Reading:
        """Reproduced below `line`; refuted above it (or above refute_above, leaving a gap between)."""
        if refute_above is None or refute_above == line:
            return cls(effect, (line,), (REPRODUCE, REFUTE), **kw)
        return cls(effect, (line, refute_above), (REPRODUCE, GAP, REFUTE), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reading:
        """A registry entry's reading; its quantity is declared, never guessed from its words."""
        if "quantity" not in d:
            raise ValueError(f"{d.get('effect')}: a reading declares its quantity ({', '.join(QUANTITIES)})")
        kind = d["shape"]
        kw = {"combine": d.get("combine", "all"), "quantity": d["quantity"], "unit": str(d.get("unit", ""))}
        if kind == "band":
            return cls.band(d["effect"], d["low"], d["high"], margin=d.get("margin", 0.0), **kw)
        if kind == "above":
            return cls.above(d["effect"], d["line"], refute_below=d.get("refute_below"), **kw)
        if kind == "below":
            return cls.below(d["effect"], d["line"], refute_above=d.get("refute_above"), **kw)
        raise ValueError(f"unknown reading shape {kind!r}")

    def shown(self, x: float, exact: bool = False) -> str:
        """One of this reading's numbers as every page shows it (core.units.shown)."""
        return shown(x, self.quantity, self.unit, exact=exact)

    # -- deciding ------------------------------------------------------------------------------------------
    def region(self, x: float) -> int:
        """Index of the region holding x."""
        return sum(x >= c for c in self.cuts)

    def label_of(self, lo: float, hi: float) -> str | None:
        """The one label every point of [lo, hi] carries, or None (the interval crosses labels, or is not a
        finite interval)."""
        if not (_finite(lo) and _finite(hi)) or hi < lo:
            return None
        labels = set(self.labels[self.region(lo) : self.region(hi) + 1])
        return labels.pop() if len(labels) == 1 else None

    def reproduces(self, lo: float, hi: float) -> bool:
        return self.label_of(lo, hi) == REPRODUCE

    def refutes(self, lo: float, hi: float) -> bool:
        return self.label_of(lo, hi) == REFUTE

    def decide(
        self,
        intervals: Sequence[tuple[float, float]],
        refuting: Sequence[tuple[float, float]] | None = None,
    ) -> Verdict:
        """The verdict from the intervals (each (lo, hi)); `refuting`: wider intervals of the same cells, in
        the same order, that alone may refute (default: the same intervals)."""
        return verdict_from(*self.holds(intervals, refuting), what=f"{self.effect} on {intervals}, {refuting}")

    def holds(
        self,
        intervals: Sequence[tuple[float, float]],
        refuting: Sequence[tuple[float, float]] | None = None,
    ) -> tuple[bool, bool]:
        """(reproduce holds, refute holds), each on its own: what the disjointness test checks."""
        intervals = list(intervals)
        refuting = list(refuting) if refuting is not None else intervals
        if not intervals or len(refuting) != len(intervals):
            return False, False
        agg = all if self.combine == "all" else any
        dual = any if self.combine == "all" else all
        return agg(self.reproduces(*i) for i in intervals), dual(self.refutes(*i) for i in refuting)

    def rounds_to_decide(self, lo: float, hi: float, n: int, floor: float = 0.0) -> int | None:
        """Rounds an interval [lo, hi] measured over n rounds would need to lie in one region, were its centre to
        stay where it is and its own half-width to shrink as 1/sqrt(rounds); None when its centre lies in a gap,
        on a cut, the interval is not finite, or `floor` (the half-width a between-run sd adds whatever the
        rounds, in the reading's unit) leaves it no room: then no number of rounds in one run decides it."""
        room = self._room(lo, hi, n)
        if room is None or floor >= room:
            return None
        half = (hi - lo) / 2
        own = max(half**2 - floor**2, 0.0)  # the run's own part of the half-width, squared
        return max(n, math.ceil(n * own / (room**2 - floor**2) - 1e-9))  # not one more for a rounding error

    def runs_to_decide(self, lo: float, hi: float, n: int, confidence: float = 0.95) -> int | None:
        """Reports like this one whose standing verdict (a confidence sequence over their estimates: each
        report's spread read from this interval's half-width at t(n-1)) would lie in one region, were the estimate
        and the spread to stay; None where no number of reports decides it (a gap, a cut, no interval)."""
        room = self._room(lo, hi, n)
        if room is None or n < 2:
            return None
        spread = (hi - lo) / 2 / t_quantile(n - 1, 0.5 + confidence / 2)
        return reports_to_decide(spread, room, confidence)

    def _room(self, lo: float, hi: float, n: int) -> float | None:
        """How far the interval's centre lies from the nearest edge of its region, or None (no region to reach)."""
        if not (_finite(lo) and _finite(hi)) or hi < lo or n < 1:
            return None
        centre = (lo + hi) / 2
        i = self.region(centre)
        if self.labels[i] == GAP:
            return None
        edges = (-math.inf, *self.cuts, math.inf)
        room = min(centre - edges[i], edges[i + 1] - centre)
        return room if room > 0 else None

    def describe(self) -> str:
        """The regions in words, e.g. 'reproduce in [15, 45]; refute below 15 or above 45'."""
        edges = (-math.inf, *self.cuts, math.inf)
        parts: dict[str, list[str]] = {}
        for i, label in enumerate(self.labels):
            lo, hi = edges[i], edges[i + 1]
            text = (
                f"below {self.shown(hi, exact=True)}"
                if lo == -math.inf
                else f"above {self.shown(lo, exact=True)}"
                if hi == math.inf
                else f"[{self.shown(lo, exact=True)}, {self.shown(hi, exact=True)}]"
            )
            parts.setdefault(label, []).append(text)
        out = "; ".join(f"{label} {' or '.join(parts[label])}" for label in LABELS if label in parts)
        if self.combine == "any":
            out += " (one cell reproduces; refuting needs every cell)"
        return f"{self.effect}: {out}"

    def as_dict(self) -> dict[str, Any]:
        return {"effect": self.effect, "cuts": list(self.cuts), "labels": list(self.labels), "combine": self.combine,
                "quantity": self.quantity, "unit": self.unit}  # fmt: skip


def verdict_from(reproduces: bool, refutes: bool, *, what: str) -> Verdict:
    """The verdict from the two regions' tests. Both holding is impossible by construction: a loud failure
    rather than a silent choice."""
    if reproduces and refutes:
        raise AssertionError(f"{what}: both reproduced and refuted")
    return Verdict.REPRODUCED if reproduces else Verdict.NOT_REPRODUCED if refutes else Verdict.INCONCLUSIVE


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, int | float) and math.isfinite(x)


def reading_quantity(reading: Mapping[str, Any]) -> tuple[str, str]:
    """(quantity, unit) of a judged reading, as the registry declares them (verdicts of before issue 42 call the
    quantity "scale"); guessed from the effect's words only for verdicts written before readings declared theirs."""
    declared = str(reading.get("quantity", reading.get("scale", "")))
    if declared in QUANTITIES:
        return declared, str(reading.get("unit", "") or ("pp" if declared == "difference" else ""))
    e = str(reading.get("effect", "")).lower()
    if "percentage point" in e or e.endswith(" pp"):
        return "difference", "pp"
    if "share" in e or "recovers" in e:
        return "share", "%"
    return ("loss", "%") if "%" in e else ("ratio", "×")
