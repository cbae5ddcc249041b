"""A study's model of its original, as one table: each published figure beside what the model predicts for the
original's machine from this run's components, this machine's own figure for it, and the residual
(../shared/MODELS.md). Every study fills the same record; the reasons for a large residual are declared with the
study's model, before data, and quote the run's figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from secoverhead.analysis.stats import median_ci
from secoverhead.core.units import significant

# A residual larger than this names the component that would explain it (MODELS.md: "over ±25 %").
RESIDUAL_NAMED = 0.25

NAN = float("nan")
# Below this a figure is floating-point rounding, not a measurement: no unit here resolves a billionth.
ROUNDING = 1e-9


@dataclass(frozen=True)
class Prediction:
    """One published figure and the model's prediction of it. `published_high` makes the published figure a
    range (its ends); `low`/`high` are the prediction's 95 % interval over the run's own predictions (one per run
    or round); `why` is read only where the residual is over RESIDUAL_NAMED."""

    figure: str
    arm: str
    unit: str
    published: float
    published_high: float | None = None
    predicted: float = NAN
    low: float = NAN
    high: float = NAN
    components: str = ""  # what the prediction is made of, with this run's figures
    measured: float = NAN  # this machine's own figure for the same measure, where it has one
    why: str = ""  # the component that would explain a large residual, with its figure where measured here
    part: str = ""  # the part whose components it was predicted from (its server build: a stand-in says so)

    def residual(self) -> float:
        """predicted / published - 1; against a range, the distance to its nearer end (0 inside it)."""
        if not (_finite(self.predicted) and _finite(self.published)):
            return NAN
        if self.published_high is None:
            return self.predicted / self.published - 1 if self.published else NAN
        lo, hi = sorted((self.published, self.published_high))
        if lo <= self.predicted <= hi:
            return 0.0
        end = lo if self.predicted < lo else hi
        return self.predicted / end - 1 if end else NAN

    def over(self, each: Sequence[float] | np.ndarray | pd.Series) -> Prediction:
        """This figure predicted once per run (or round): the median of the runs' predictions and its bootstrap
        95 % interval."""
        x = np.asarray(each, dtype=float)
        mid, lo, hi = median_ci(x) if len(x) else (NAN, NAN, NAN)
        return replace(self, predicted=mid, low=lo, high=hi)

    def large(self) -> bool:
        r = self.residual()
        return _finite(r) and abs(r) > RESIDUAL_NAMED

    def needs_reason(self) -> bool:
        """A figure whose residual is large, or which is not predicted, says why."""
        return self.large() or not _finite(self.predicted)


def published_value(pub: pd.DataFrame, measure: str, arm: str) -> float:
    """One figure of an original's table (judging.published), NaN where it has none."""
    value = pub.loc[(pub["measure"] == measure) & (pub["arm"] == arm), "value"]
    return float(value.iloc[0]) if len(value) else NAN


def table(rows: Sequence[Prediction]) -> pd.DataFrame:
    """The study's prediction table: published, predicted (interval), measured here, residual, what the
    prediction is made of and, where the residual is over RESIDUAL_NAMED or nothing is predicted, why (a reason
    given in a row above reads "as above")."""
    seen: set[str] = set()

    def why(p: Prediction) -> str:
        if not p.needs_reason():
            return ""
        said = p.why in seen
        seen.add(p.why)
        return "as above" if said and p.why else p.why

    return pd.DataFrame(
        [
            {
                "part": p.part,
                "published figure": p.figure,
                "arm": p.arm,
                "unit": p.unit,
                "published": _figure(p.published, p.published_high),
                "predicted for the original": _figure(p.predicted),
                "95 % interval": _interval(p.low, p.high),
                "measured here": _figure(p.measured),
                "residual": _residual_text(p),
                "made of": p.components,
                f"why, where over {RESIDUAL_NAMED:.0%}": why(p),
            }
            for p in rows
        ],
        columns=COLUMNS,
    )


COLUMNS = ["part", "published figure", "arm", "unit", "published", "predicted for the original", "95 % interval",
           "measured here", "residual", "made of", f"why, where over {RESIDUAL_NAMED:.0%}"]  # fmt: skip


def unexplained(rows: Sequence[Prediction]) -> list[str]:
    """The figures whose residual is large, or which are not predicted, and say nothing of why."""
    return [f"{p.figure} ({p.arm})" for p in rows if p.needs_reason() and not p.why]


def _residual_text(p: Prediction) -> str:
    r = p.residual()
    return f"{r:+.0%}" if _finite(r) else "not predicted"


def _figure(x: float, high: float | None = None) -> str:
    if high is not None:
        return f"{_figure(x)} to {_figure(high)}"
    if not _finite(x):
        return ""
    if abs(x) < ROUNDING:  # a difference of two equal cells in floating point (5.55e-15) is no difference
        return "0"
    return f"{x:,.0f}" if abs(x) >= 100 else significant(x, 3)  # 8,000 and 0.00023, never 8e+03 or 2.3e-04


def _interval(lo: float, hi: float) -> str:
    return f"[{_figure(lo)}, {_figure(hi)}]" if _finite(lo) and _finite(hi) else ""


def _finite(x: float | None) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)
