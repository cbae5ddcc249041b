"""A cost per operation at the DBA's load, from the curve a study measured (studies/protocol/loads.py): the
feature's extra server CPU per operation at several paced rates, each with its paired t interval.

The load is the rate per core of the server, moved to the measuring machine by the general speed factor (a
server twice as fast at the same rate per core is as busy as this one at half of it): demand per operation depends
on how busy the server is, the wake-up and cold cache of a statement that arrives at an idle thread (capacity
planning's load-dependent service demand, Zhang, Li and Zhou 2013). Between two measured rates the estimate and
both ends are interpolated in log rate. Outside them nothing is assumed: below the lightest rate the interval is
that rate's widened to where the first segment's slope leads; above the heaviest, the back-to-back price the study
measured (the server as busy as its clients could make it) with the hull of the two intervals."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from secoverhead.analysis.stats import mean_interval
from secoverhead.sizing.interval import Interval


@dataclass(frozen=True)
class Level:
    """One measured rate: its rate per core (operations a second a core, as met), the extra µs per operation
    (feature on minus off, paired by pair of rounds) with its t interval, and the pairs."""

    rate: float  # asked, operations a second
    per_core: float
    extra: Interval
    pairs: int


@dataclass(frozen=True)
class AtLoad:
    """The price at a load: the interval, where the load lies (inside, below, above what was measured), the load
    per core on the measuring machine, and the levels it came from."""

    extra: Interval
    where: str
    per_core: float
    levels: tuple[Level, ...]

    def note(self, per: str) -> str:
        lo, hi = self.levels[0].per_core, self.levels[-1].per_core
        yours = f"your load, {_n(self.per_core)} {plural(per)}/s a core of the measuring machine"
        measured = f"measured at {_n(lo)} to {_n(hi)} {plural(per)}/s a core"
        return {
            "inside": f"priced at {yours} ({measured})",
            "below": f"{yours}, is below what was measured ({measured}): the interval widened to where the lightest "
            "rates' slope leads",
            "above": f"{yours}, is above what was measured ({measured}): the interval runs up to the back-to-back "
            "price",
        }[self.where]


def plural(per: str) -> str:
    """What a line prices, counted: "queries", "statements", "connections"."""
    return per[:-1] + "ies" if per.endswith("y") else per + "s"


def _n(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def levels(recorded: Mapping[str, Any], confidence: float) -> tuple[Level, ...]:
    """The curve's rates, lightest first, each its pairs' differences (on minus off, µs per operation) and their t
    interval; a rate with fewer than 2 complete pairs is left out (no interval)."""
    cores = float(recorded.get("cores") or 1.0)
    arm = recorded["arm"]
    out = []
    for rate in sorted({float(r["rate"]) for r in recorded["rounds"]}):
        rounds = [r for r in recorded["rounds"] if float(r["rate"]) == rate]
        by_pair: dict[int, dict[bool, dict]] = {}
        for r in rounds:
            by_pair.setdefault(int(r["pair"]), {})[r["arm"] == arm] = r
        d = np.array([p[True]["cpu_us_per_op"] - p[False]["cpu_us_per_op"] for p in by_pair.values() if len(p) == 2])
        d = d[np.isfinite(d)]
        if len(d) < 2:
            continue
        mean, lo, hi, _, n = mean_interval(d, confidence)
        met = float(np.median([r["rate_met"] for r in rounds]))
        out.append(Level(rate, met / cores, Interval(mean, lo, hi), n))
    return tuple(out)


def _between(a: float, b: float, t: float) -> float:
    return a + (b - a) * t


def _along(a: Level, b: Level, x: float) -> Interval:
    """The segment a-b at load x, in log rate (extrapolated where x lies beyond it)."""
    t = (math.log(x) - math.log(a.per_core)) / (math.log(b.per_core) - math.log(a.per_core))
    return Interval(*(_between(u, v, t) for u, v in zip(_ends(a.extra), _ends(b.extra), strict=True)))


def _ends(iv: Interval) -> tuple[float, float, float]:
    return iv.point, iv.lo, iv.hi


def _hull(a: Interval, b: Interval, point: float) -> Interval:
    return Interval(point, min(a.lo, b.lo), max(a.hi, b.hi))


def at(curve: Sequence[Level], per_core: float, busy: Interval) -> AtLoad:
    """The extra per operation at `per_core` (operations a second a core of the measuring machine) on the curve;
    `busy`: the study's back-to-back price, the curve's end above its heaviest rate."""
    lv = tuple(sorted(curve, key=lambda v: v.per_core))
    if not lv or per_core <= 0:
        raise ValueError("a price at load needs a measured level and a load above 0")
    first, last = lv[0], lv[-1]
    if per_core > last.per_core:  # busier than any paced rate: toward the back-to-back price, the busiest measured
        return AtLoad(_hull(last.extra, busy, busy.point), "above", per_core, lv)
    if per_core < first.per_core:
        if len(lv) == 1:
            return AtLoad(first.extra, "below", per_core, lv)
        led = _along(first, lv[1], per_core)
        return AtLoad(_hull(first.extra, led, first.extra.point), "below", per_core, lv)
    for a, b in itertools.pairwise(lv):
        if a.per_core <= per_core <= b.per_core:
            return AtLoad(_along(a, b, per_core) if b.per_core > a.per_core else a.extra, "inside", per_core, lv)
    return AtLoad(first.extra, "inside", per_core, lv)  # one level, exactly at it
