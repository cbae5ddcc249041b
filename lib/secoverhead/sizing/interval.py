"""An estimate with its interval: what every figure of a calculation is. Sums add ends (the intervals of one
calculation are widened together, costs.py), rates and units scale them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    point: float
    lo: float
    hi: float

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.point + other.point, self.lo + other.lo, self.hi + other.hi)

    def times(self, k: float) -> Interval:
        """Scaled by a non-negative number (a rate, a unit)."""
        return Interval(self.point * k, self.lo * k, self.hi * k)

    def plus(self, c: float) -> Interval:
        return Interval(self.point + c, self.lo + c, self.hi + c)

    def at_least_zero(self) -> Interval:
        """As a feature's cost is planned: it adds work, so the part of an interval below zero is noise and counts
        as none (a line not told apart from zero adds nothing to the least, and at most its upper end)."""
        return Interval(max(self.point, 0.0), max(self.lo, 0.0), max(self.hi, 0.0))

    @staticmethod
    def zero() -> Interval:
        return Interval(0.0, 0.0, 0.0)


def total(intervals: Sequence[Interval]) -> Interval:
    out = Interval.zero()
    for i in intervals:
        out = out + i
    return out
