"""The arithmetic: per line, the measured extra per operation moved to the user's machine, times the rate, gives
cores; plus round trips, latency; summed, the total and which input dominates it. Every figure is an interval
(point, low, high) carried from the measured intervals; the rates are the user's, exact."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from secoverhead.sizing.costs import Priced
from secoverhead.sizing.interval import Interval, total
from secoverhead.sizing.recipes import BUSY_PRICE, Line
from secoverhead.sizing.scaling import GENERAL, rescale, speed_factor, spread


@dataclass
class LineResult:
    """One line, computed."""

    line: Line
    priced: list[Priced]
    measured_us: Interval  # extra CPU per operation on the machine that measured it
    us: Interval  # the same on the user's machine
    cores: Interval
    latency_ms: Interval  # the CPU time on the operation's path plus its round trips
    scaled_by: list[str] = field(default_factory=list)  # the references that moved it, with their factors

    @property
    def at_load(self) -> bool:
        """Priced on a load curve at the user's load (else as measured back to back)."""
        return any(p.load is not None for p in self.priced)

    @property
    def notes(self) -> tuple[str, ...]:
        """The line's notes; priced at the user's load, that load's note in place of the back-to-back caveat."""
        if not self.at_load:
            return self.line.notes
        kept = tuple(n for n in self.line.notes if n != BUSY_PRICE.get(self.line.busy_price))
        return (*kept, *(p.load.note(self.line.per) for p in self.priced if p.load is not None))


def target_for(priced: Priced, target: Mapping[str, Any]) -> dict[str, Any]:
    """The user's machine as far as they described it; any reference they did not give is the measuring
    machine's at its own speed (a report taken in the vCPU's slow state is priced at the machine's own)."""
    return dict(priced.machine) | dict(target)


def _scaled(priced: Priced, target: Mapping[str, Any]) -> tuple[Interval, list[str]]:
    to = target_for(priced, target)
    m = priced.measure
    prims = priced.primitives
    to_prims = m.to_primitives

    def one(us: float, cal: Mapping[str, Any]) -> float:
        return rescale(us, priced.calibration, cal, prims, to_prims)

    # the user's machine is one calibration: its references carry their repeatability, which widens the interval
    lo_cal, hi_cal = (spread(to, -1), spread(to, +1)) if target else (to, to)
    moved = []
    for key, _ in (*prims, *(to_prims or ()), (GENERAL, 1)):
        f = speed_factor(priced.calibration, to, key)
        label = f"{key} x{f:.2f}"
        if label not in moved:
            moved.append(label)
    return Interval(one(priced.point, to), one(priced.lo, lo_cal), one(priced.hi, hi_cal)), moved


def compute_line(line: Line, priced: Mapping[Any, Priced], target: Mapping[str, Any], rtt_ms: float) -> LineResult:
    ps = [priced[m] for m in line.measures]
    measured = total([Interval(p.point, p.lo, p.hi) for p in ps])
    parts = [_scaled(p, target) for p in ps]
    us = total([iv for iv, _ in parts])
    moved = list(dict.fromkeys(label for _, labels in parts for label in labels))
    cores = us.times(line.rate / 1e6)
    latency = us.times(1e-3).plus(line.round_trips * rtt_ms)
    return LineResult(line, ps, measured, us, cores, latency, moved)


@dataclass
class Totals:
    server: Interval  # extra cores on the server, all lines, each at least zero (the interval planned with)
    client: Interval  # extra cores on the application's hosts (not in the server's), the same way
    shares: dict[str, float]  # line key -> its share of the server total (point estimates, negatives as 0)
    dominant: str | None  # the line key with the largest share


def planned(results: Sequence[LineResult]) -> Interval:
    """The lines' extra cores summed as a DBA plans with them: each line's interval at least zero."""
    return total([r.cores.at_least_zero() for r in results])


def totals(results: Sequence[LineResult]) -> Totals:
    server = [r for r in results if r.line.side == "server"]
    client = [r for r in results if r.line.side == "client"]
    s = planned(server)
    positive = {r.line.key: r.cores.at_least_zero().point for r in server}
    whole = sum(positive.values())
    shares = {k: v / whole for k, v in positive.items()} if whole > 0 else dict.fromkeys(positive, 0.0)
    dominant = max(shares, key=shares.get) if whole > 0 else None
    return Totals(s, planned(client), shares, dominant)


SECONDS_PER_DAY = 86_400.0
DAYS_PER_MONTH = 365.25 / 12


@dataclass(frozen=True)
class Storage:
    """Audit log volume from the bytes per statement the audit study measured (machine independent)."""

    approach: str
    bytes_per_statement: Interval
    statements_per_s: float
    retention_months: float
    compressor: str  # the compressor the audit study measured on the approach's real log
    ratio: float | None

    @property
    def gb_per_day(self) -> Interval:
        return self.bytes_per_statement.times(self.statements_per_s * SECONDS_PER_DAY / 1e9)

    @property
    def retention_days(self) -> float:
        return self.retention_months * DAYS_PER_MONTH

    @property
    def gb_retained_raw(self) -> Interval:
        return self.gb_per_day.times(self.retention_days)

    @property
    def gb_retained_compressed(self) -> Interval | None:
        return self.gb_retained_raw.times(1.0 / self.ratio) if self.ratio else None

    @property
    def gb_rotated_daily(self) -> Interval | None:
        """Daily rotation, each finished day compressed: one raw day plus the rest compressed."""
        if not self.ratio:
            return None
        days = self.retention_days
        return self.gb_per_day.times(min(1.0, days) + max(0.0, days - 1.0) / self.ratio)
