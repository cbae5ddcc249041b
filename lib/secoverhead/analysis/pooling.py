"""Evidence over reports: one claim's cell as measured by the reports of one series, pooled into one interval that
the claim's reading judges as it judges one report's.

Each report gives an estimate on the analysis scale (the log ratio for a ratio or a loss, the difference itself in
points) and its own standard error (its rounds only). Reports differ by more than their rounds say (instances,
the machine's day), so a series' verdict rests on the reports' estimates alone, their spread measured from
themselves (no report's own error, no declared between-run sd: a report of 3 rounds knows its own error on 2
degrees of freedom, and weights built on so rough an error let one report that underestimated its own dominate).

A series is read every morning, for as long as it runs: its verdict is a **standing verdict**, judged on a
confidence sequence (stats.confidence_sequence), an interval that misses the truth at ANY look with chance at most
alpha, however many reports the series holds and however often it is read. So the series never closes and never
restarts its error budget; a claim on its line shows a decided verdict some morning of a year with chance at most
alpha (benchmarks/standing_error.py simulates it through pooled_verdict; a unit test holds it).

`pool` is the random-effects estimate read once (the calculator prices from it): Paule-Mandel's tau^2 and the
modified Hartung-Knapp interval (Roever, Knapp & Friede 2015), never narrower than the reports' plain t interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.readings import GAP, Reading
from secoverhead.analysis.stats import confidence_sequence, reports_to_decide, t_quantile
from secoverhead.analysis.verdicts import Verdict

ALPHA = 0.05  # a series' chance of any wrong standing verdict over all its looks, however many


@dataclass(frozen=True)
class RunEstimate:
    """One report's estimate of one cell on the analysis scale, its standard error over its own rounds."""

    value: float
    se: float


@dataclass(frozen=True)
class Pooled:
    """The reports' pooled estimate on the analysis scale, its interval at `confidence`, and what it rests on."""

    k: int
    estimate: float
    low: float
    high: float
    tau: float  # between-run sd as these reports estimate it (pool); the sd of their estimates (sequence)
    confidence: float


def paule_mandel(values: Sequence[float], variances: Sequence[float], tol: float = 1e-12) -> float:
    """tau^2 at which the weighted residuals' Q equals its expectation k - 1 (0 when the reports agree as well as
    their own errors say or better). Q falls as tau^2 grows, so bisection finds it."""
    k = len(values)
    if k < 2:
        return 0.0

    def q(tau2: float) -> float:
        return _weighted(values, variances, tau2)[1]

    if q(0.0) <= k - 1:
        return 0.0
    lo, hi = 0.0, max(max(values) - min(values), 1e-12) ** 2
    while q(hi) > k - 1:
        hi *= 2
    while hi - lo > tol * max(hi, 1e-300):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if q(mid) > k - 1 else (lo, mid)
    return (lo + hi) / 2


def _weighted(values: Sequence[float], variances: Sequence[float], tau2: float) -> tuple[float, float, float]:
    """At between-run variance tau2: the weighted mean, the weighted residuals' Q and the sum of the weights."""
    w = [1 / (v + tau2) for v in variances]
    mu = sum(wi * y for wi, y in zip(w, values, strict=True)) / sum(w)
    return mu, sum(wi * (y - mu) ** 2 for wi, y in zip(w, values, strict=True)), sum(w)


def pool(runs: Sequence[RunEstimate], confidence: float) -> Pooled | None:
    """The random-effects estimate of the reports and its modified Hartung-Knapp interval; None under two or
    where one has no finite positive standard error."""
    k = len(runs)
    if k < 2 or not all(math.isfinite(r.value) and math.isfinite(r.se) and r.se > 0 for r in runs):
        return None
    y, v = [r.value for r in runs], [r.se**2 for r in runs]
    tau2 = paule_mandel(y, v)
    mu, q, weight = _weighted(y, v, tau2)
    t = t_quantile(k - 1, 0.5 + confidence / 2)
    half = t * math.sqrt(max(q / (k - 1), 1.0) / weight)
    mean = sum(y) / k
    plain = t * math.sqrt(sum((x - mean) ** 2 for x in y) / (k - 1) / k)
    return Pooled(k, mu, min(mu - half, mean - plain), max(mu + half, mean + plain), math.sqrt(tau2), confidence)


# From an interval a report judged on a reading's quantity to the analysis scale and back: a ratio and a loss are
# pooled on the log ratio (a loss in % is 1 - ratio), a difference in points and a share won back (a mean of
# per-round shares with its t interval, reads.Share) as they are.
def to_scale(quantity: str, lo: float, hi: float) -> tuple[float, float] | None:
    """(lo, hi) of a reading's interval on the analysis scale, ordered; None where it has none (a ratio reaching
    zero, a quantity not pooled)."""
    if quantity == "loss":
        lo, hi = 1 - hi / 100, 1 - lo / 100
    if quantity in ("ratio", "loss"):
        return (math.log(lo), math.log(hi)) if lo > 0 and hi > 0 else None
    return (lo, hi) if quantity in ("difference", "share") else None


def from_scale(quantity: str, lo: float, hi: float) -> tuple[float, float]:
    """The inverse of to_scale: an interval on the analysis scale as the reading reads it."""
    if quantity == "ratio":
        return math.exp(lo), math.exp(hi)
    if quantity == "loss":
        return (1 - math.exp(hi)) * 100, (1 - math.exp(lo)) * 100
    return lo, hi


def recorded(e: object) -> RunEstimate | None:
    """A [value, se] pair as verdicts.json records it, read back (None unless both are finite and se > 0)."""
    if not isinstance(e, list | tuple) or len(e) != 2:
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in e) or e[1] <= 0:
        return None
    return RunEstimate(float(e[0]), float(e[1]))


def run_estimate(quantity: str, lo: float, hi: float, rounds: int, confidence: float) -> RunEstimate | None:
    """A report's estimate from its own interval (its rounds only, before any between-run sd was added): the
    interval's centre on the analysis scale and its half-width over the t quantile it was read at."""
    scaled = to_scale(quantity, lo, hi)
    if scaled is None or rounds < 2:
        return None
    a, b = scaled
    return RunEstimate((a + b) / 2, (b - a) / 2 / t_quantile(rounds - 1, 0.5 + confidence / 2))


@dataclass(frozen=True)
class PooledCell:
    """One cell of one reading over the reports pooled, on the reading's quantity: estimate, interval, the sd of
    the reports' estimates (on the analysis scale) and the interval that may refute, where it differs."""

    name: str
    point: float
    low: float
    high: float
    sd: float
    refuting: tuple[float, float]


@dataclass(frozen=True)
class PooledVerdict:
    """A claim's standing verdict: the verdict the registry's readings give its series' confidence sequences."""

    verdict: Verdict
    reports: int
    confidence: float  # every look's, before any split over cells or readings
    readings: tuple[tuple[PooledCell, ...], ...]


def pooled_verdict(study: str, claim_id: str, judged_reports: Sequence[list[dict]], alpha: float = ALPHA
                   ) -> PooledVerdict | None:  # fmt: skip
    """The claim's standing verdict on the reports of one series (each one's `judged` readings, oldest first):
    each cell's confidence sequence over the reports, its level split as one report splits it (intervals_of: a
    reading that every cell must reproduce refutes on Bonferroni-widened intervals, one that any cell may
    reproduce reproduces on them; refuting splits over the readings). None where they cannot be pooled: fewer
    than two, cells that differ between them, or one without estimates."""
    claim = registry.get(study, claim_id)
    readings = claim.readings()
    if len(judged_reports) < 2 or any(len(j) < len(readings) for j in judged_reports):
        return None
    level = 1 - alpha
    sets, shown = [], []
    for k, reading in enumerate(readings):
        cells = _cells(k, judged_reports)
        if cells is None:
            return None
        each_conf, refute_conf = _levels(reading.combine, len(cells), len(readings), alpha)
        row = tuple(
            _shown(reading.quantity, name, sequence(ests, each_conf), sequence(ests, refute_conf))
            for name, ests in cells
        )
        sets.append(([(c.low, c.high) for c in row], [c.refuting for c in row]))
        shown.append(row)
    return PooledVerdict(claim.decide(*sets), len(judged_reports), level, tuple(shown))


def _levels(combine: str, cells: int, readings: int, alpha: float) -> tuple[float, float]:
    """(each cell's, the refuting) confidence: alpha split over a reading's cells and the claim's readings as one
    report splits it."""
    each = 1 - alpha if combine == "all" or cells == 1 else 1 - alpha / cells
    return each, 1 - alpha / readings / (cells if combine == "all" else 1)


def more_reports(study: str, claim_id: str, pv: PooledVerdict, alpha: float = ALPHA) -> int | None:
    """Reports more than the series holds after which every undecided cell's confidence sequence would lie in one
    region, were its estimate and the reports' spread to stay (stats.reports_to_decide); None where one sits on a
    cut or in a gap, where no number of reports decides it."""
    readings = registry.get(study, claim_id).readings()
    need = [0]
    for reading, cells in zip(readings, pv.readings, strict=True):
        each, _ = _levels(reading.combine, len(cells), len(readings), alpha)
        for c in cells:
            if reading.label_of(c.low, c.high) is not None:
                continue
            room = _room(reading, c.point)
            k = reports_to_decide(c.sd, room, each) if room is not None else None
            if k is None:
                return None
            need.append(k - pv.reports)
    return max(max(need), 1)


def _room(reading: Reading, point: float) -> float | None:
    """How far a point lies from the nearest cut of its region, on the analysis scale (None in a gap, on a cut)."""
    i = reading.region(point)
    if reading.labels[i] == GAP:
        return None
    centre = to_scale(reading.quantity, point, point)
    if centre is None:
        return None
    cuts = [to_scale(reading.quantity, c, c) for c in reading.cuts]
    room = min((abs(centre[0] - c[0]) for c in cuts if c is not None), default=math.inf)
    return room if room > 0 else None


def sequence(runs: Sequence[RunEstimate], confidence: float) -> Pooled:
    """The reports' confidence sequence at `confidence` (valid at every look), on the analysis scale."""
    mean, lo, hi, sd = confidence_sequence([r.value for r in runs], confidence) or (math.nan,) * 4
    return Pooled(len(runs), mean, lo, hi, sd, confidence)


def _shown(quantity: str, name: str, p: Pooled, r: Pooled) -> PooledCell:
    """A pooled cell on its reading's quantity."""
    lo, hi = from_scale(quantity, p.low, p.high)
    point = from_scale(quantity, p.estimate, p.estimate)[0]
    return PooledCell(name, point, lo, hi, p.tau, from_scale(quantity, r.low, r.high))


def _cells(k: int, judged_reports: Sequence[list[dict]]) -> list[tuple[str, list[RunEstimate]]] | None:
    """Reading k's cells as the reports name them, each with every report's estimate; None when their cells
    differ or one has no estimate for one (a report from before estimates were recorded, or an unpoolable one)."""
    names = None
    per: list[list[RunEstimate]] = []
    for judged in judged_reports:
        entry = judged[k]
        ests = [recorded(e) for e in entry.get("estimates") or []]
        these = [str(n) for n in entry.get("cells") or []] or [""] * len(entry.get("intervals") or [])
        if not ests or len(ests) != len(these) or any(e is None for e in ests):
            return None
        if names is None:
            names, per = these, [[] for _ in these]
        elif these != names:
            return None
        for slot, est in zip(per, ests, strict=True):
            slot.append(est)
    return list(zip(names or [], per, strict=True))
