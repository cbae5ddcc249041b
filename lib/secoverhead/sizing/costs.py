"""The measured extra cost of each comparison a calculation uses, from its study's runs: arm minus baseline on the
metric, per operation, paired by round (or duet) as the study ran them, with a t interval of the mean difference.

Each interval holds at the stated confidence on its own; a total is the sum of its lines' ends (each at least
zero, estimate.planned), which holds at least as often (the sd of a sum is at most the sum of the sds, for any
correlation, with intervals of normal shape). Asked for `joint`, every interval is Bonferroni-widened over all of
the comparisons (1 - alpha / m), so all of them hold together at the stated confidence: what a reader needs who
reads every line at once.

Where the study's claims add a between-run sd on the metric (its arms ran on instances of their own:
claim_registry.between_runs, learned or declared), the difference adds it too, as the arm's level times that sd of
the log ratio: another run of the study would move the extra by that much.

Where the run's series (series.reports: one scale, target, server build and machine speed class; a report that
measured the metric at an older revision left out) holds POOL_FROM reports or more up to it that priced the
comparison, the cost is theirs pooled (analysis.pooling: random effects, Paule-Mandel's between-run sd from those
reports, the interval pool draws, at the stated confidence), not the newest report's alone: an answer read once, so
no split over looks. The rest (levels, the cryptography in the extra, the measuring machine) stays the newest
report's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.compare import compare_arms
from secoverhead.analysis.pooling import RunEstimate, pool, run_estimate
from secoverhead.analysis.stats import mean_interval, widen
from secoverhead.core.errors import ConfigError
from secoverhead.core.units import significant
from secoverhead.measurement.parts import part_slug
from secoverhead.measurement.results import ResultStore
from secoverhead.series.reports import collect, reports_like, stale_metrics, vcpu_slowdown
from secoverhead.sizing import curves
from secoverhead.sizing.curves import AtLoad
from secoverhead.sizing.interval import Interval
from secoverhead.sizing.recipes import LOG_BYTE, PAGE, Line, Measure
from secoverhead.sizing.scaling import GENERAL, Primitives, as_it_ran, reference_us, speed_factor
from secoverhead.sizing.sources import Source, experiments_of


@dataclass(frozen=True)
class Priced:
    """One comparison, as measured: extra microseconds per operation on the measuring machine."""

    measure: Measure
    point: float
    lo: float
    hi: float
    baseline_us: float  # the baseline's median, per operation
    arm_us: float
    n: int  # rounds (or duets) paired
    design: str
    confidence: float
    primitives: Primitives  # the cryptography in the extra, per operation (TDE: the pages measured)
    calibration: Mapping[str, Any]  # the measuring machine's speed reference as its vCPU ran the rounds
    run_dir: Path
    between: str = ""  # the between-run sd added, as its claims say it, or the reports pooled ("" when neither)
    pooled: tuple[Path, ...] = ()  # the reports of the series pooled, oldest first (empty: the newest alone)
    load: AtLoad | None = None  # priced on the part's load curve at the user's load (None: back to back)
    reference: Mapping[str, Any] | None = None  # the measuring machine at its own speed (None: as calibration)

    @property
    def machine(self) -> Mapping[str, Any]:
        """The measuring machine at its own speed: a price for it, with no machine of the user's given."""
        return self.reference if self.reference is not None else self.calibration

    @property
    def reports(self) -> tuple[Path, ...]:
        return self.pooled or (self.run_dir,)


def _cell_runs(runs: pd.DataFrame, cell: Sequence[tuple[str, str]]) -> pd.DataFrame:
    for k, v in cell:
        runs = runs[runs[k].astype(str) == v]
    return runs


def _tde_primitives(arm_runs: pd.DataFrame) -> Primitives:
    """The encrypting arm's pages (decrypted on read, encrypted on write) and redo bytes per transaction, from
    InnoDB's own counters: what its extra CPU holds of AES."""
    med = arm_runs.median(numeric_only=True)
    pages = float(med.get("pages_decrypted_per_txn", 0.0) or 0.0) + float(
        med.get("pages_encrypted_per_txn", 0.0) or 0.0
    )
    log = float(med.get("log_written_bytes_per_txn", 0.0) or 0.0)
    return tuple((k, n) for k, n in ((PAGE, pages), (LOG_BYTE, log)) if np.isfinite(n) and n > 0)


def interval_level(lines: Sequence[Line], confidence: float, joint: bool) -> float:
    """Each comparison's confidence: `confidence`, or (joint) 1 - (1 - confidence) / m over the m comparisons the
    lines use, so that all of them hold together (Bonferroni)."""
    comparisons = len({m for ln in lines for m in ln.measures})
    return 1.0 - (1.0 - confidence) / max(1, comparisons) if joint else confidence


POOL_FROM = 3  # reports of a series from which a cost is theirs pooled (two: Hartung-Knapp's t on 1 df, far wider)
PRICED_FROM = 10  # the newest reports of a series a cost pools at most: a machine's costs drift over weeks


class Book:
    """The runs of the studies a calculation reads, loaded once, and the comparisons priced from them."""

    def __init__(self, sources: Mapping[str, Source], target: Mapping[str, Any] | None = None) -> None:
        self.sources = dict(sources)
        self.target = dict(target or {})  # the user's machine's speed reference (a load moves by it)
        self._runs: dict[tuple[Path, str], pd.DataFrame] = {}
        self._series: dict[Path, list[Path]] = {}
        self._stale: dict[Path, set[str]] = {}

    def runs(self, study: str, part: str, run_dir: Path | None = None) -> pd.DataFrame:
        """A part's run table, of the study's source run or (run_dir) another report of its series."""
        src = self.sources[study]
        key = (run_dir or src.run_of(part), part.lower())
        if key not in self._runs:
            exp = src.experiment(part) if run_dir is None else experiments_of(run_dir).get(part_slug(part))
            if exp is None:
                raise ConfigError(f"{key[0]}: no {part!r} experiment")
            self._runs[key] = ResultStore(exp.path.parent, exp.path.name, readonly=True).runs()
        return self._runs[key]

    def series(self, study: str, part: str) -> list[Path]:
        """The reports of the series of the run a part is read from, up to it, oldest first, the newest PRICED_FROM
        at most."""
        run_dir = self.sources[study].run_of(part)
        if run_dir not in self._series:
            names = reports_like(collect(run_dir.parent.parent, study), run_dir.name)
            names = names[: names.index(run_dir.name) + 1] if run_dir.name in names else [run_dir.name]
            self._series[run_dir] = [run_dir.parent / n for n in names[-PRICED_FROM:]]
        return self._series[run_dir]

    def price(self, m: Measure, confidence: float) -> Priced:
        """At the user's load where the part measured a load curve for it; else the newest report's cost, or
        where POOL_FROM reports of its series priced it, theirs pooled."""
        busy = self._price_busy(m, confidence)
        return self._at_load(m, busy, confidence) or busy

    def _at_load(self, m: Measure, busy: Priced, confidence: float) -> Priced | None:
        """The cost on the curve the source run measured for the arm (None: none, or no rate given): the user's
        rate per core moved to the measuring machine by the general speed factor, the back-to-back price the
        curve's end above its heaviest rate."""
        recorded = self.load_curve(m)
        lv = curves.levels(recorded, confidence) if recorded and m.load_rate else ()
        if not lv:
            return None
        cores = m.load_cores or float(recorded.get("cores") or 1.0)  # unknown: as many as the measuring server's
        per_core = m.load_rate / cores * speed_factor(busy.calibration, dict(busy.machine) | self.target)
        got = curves.at(lv, per_core, Interval(busy.point, busy.lo, busy.hi))
        e = got.extra
        return replace(busy, point=e.point, lo=e.lo, hi=e.hi, n=min(v.pairs for v in lv), design="paced at load",
                       load=got, pooled=(), between="")  # fmt: skip

    def load_curve(self, m: Measure) -> dict[str, Any]:
        """The load curve the source run's part recorded for the arm against the same baseline, of the measure's
        kind of operation ({} where none)."""
        exp = self.sources[m.study].experiment(m.part)
        meta = ResultStore(exp.path.parent, exp.path.name, readonly=True).metadata() if exp is not None else {}
        mine = (
            c
            for c in meta.get("load_curves") or []
            if (c.get("arm"), c.get("baseline"), c.get("kind")) == (m.arm, m.baseline, m.load_kind) and c.get("rounds")
        )
        return next(mine, {})

    def _price_busy(self, m: Measure, confidence: float) -> Priced:
        """The newest report's cost, or where POOL_FROM reports of its series priced it, theirs pooled."""
        one = self._price_one(m, confidence)
        ests = {r: e for r in self.series(m.study, m.part) if (e := self._estimate(m, r)) is not None}
        if one.run_dir not in ests or len(ests) < POOL_FROM or (p := pool(list(ests.values()), confidence)) is None:
            return one
        reports = tuple(ests)
        why = (
            f"pooled over {len(reports)} reports of its series ({reports[0].name} to {reports[-1].name}): their sd "
            f"between reports {significant(p.tau, 3)} µs (Paule-Mandel), the random-effects interval (Hartung-Knapp)"
        )
        mine = dict(one.machine)  # every report's estimate is at its machine's own speed (_estimate)
        return replace(one, point=p.estimate, lo=p.low, hi=p.high, n=len(reports), design="reports pooled",
                       between=why, pooled=reports, calibration=mine, reference=mine)  # fmt: skip

    def _estimate(self, m: Measure, run_dir: Path) -> RunEstimate | None:
        """An earlier report's cost over its own rounds (None where it did not price it: another plan's arms, or a
        metric it measured otherwise than the studies measure it now)."""
        if run_dir not in self._stale:
            self._stale[run_dir] = stale_metrics(run_dir)  # one read of its verdicts for every line priced
        if m.metric in self._stale[run_dir]:
            return None
        try:
            c, n, _ = self._compare(m, 0.95, run_dir)
        except ConfigError:
            return None
        if not np.isfinite(c.ci_low):
            return None
        k = self._ran(m.study, run_dir)  # at the machine's own speed: reports taken in a slow state pool alike
        return run_estimate("difference", c.ci_low / k, c.ci_high / k, n, 0.95)

    def _ran(self, study: str, run_dir: Path) -> float:
        """How much slower than its calibration's own speed a report's vCPU ran its rounds (1: not known)."""
        cal = self.sources[study].calibration_of(run_dir)
        ran = reference_us(as_it_ran(cal, vcpu_slowdown(run_dir)), GENERAL)
        own = reference_us(cal, GENERAL)
        return ran / own if ran and own else 1.0

    def _compare(self, m: Measure, confidence: float, run_dir: Path | None = None) -> tuple[Any, int, pd.DataFrame]:
        """The arm against its baseline on the metric in one report: the comparison, its pairs and the cell's runs."""
        runs = _cell_runs(self.runs(m.study, m.part, run_dir), m.cell)
        where = f"{(run_dir or self.sources[m.study].run_of(m.part)).name}: {m.part} {m.arm!r} vs {m.baseline!r}" + (
            f" ({', '.join(f'{k} {v}' for k, v in m.cell)})" if m.cell else ""
        )
        if m.metric not in runs or runs[runs["arm"] == m.arm][m.metric].notna().sum() == 0:
            raise ConfigError(
                f"{where}: no {m.metric} recorded (a server the suite did not start has no server CPU); name a run "
                "of servers the suite started"
            )
        comps = compare_arms(
            runs,
            m.metric,
            baseline=m.baseline,
            candidates=[m.arm],
            confidence=confidence,
            family=1,
            quantity="difference",
        )
        c = comps.get(m.arm)
        if c is None or not np.isfinite(c.ratio):
            raise ConfigError(f"{where}: no runs of both arms to compare")
        return c, int(c.n_pairs or min(c.n_baseline, c.n_candidate)), runs

    def _price_one(self, m: Measure, confidence: float) -> Priced:
        """The source run's cost alone, the between-run sd its claims declare or learned added."""
        run_dir = self.sources[m.study].run_of(m.part)
        c, n, runs = self._compare(m, confidence)
        lo, hi = (c.ci_low, c.ci_high) if np.isfinite(c.ci_low) else (float("-inf"), float("inf"))
        term = registry.between_runs().get((m.study, m.metric))
        if term is not None and term.sd:  # on the log ratio: the arm's level times it, in the metric's unit
            lo, hi = widen(lo, hi, float(c.candidate_median) * term.sd, n, confidence, log=False)
        arm_runs = runs[runs["arm"] == m.arm]
        prims = _tde_primitives(arm_runs) if m.pages else tuple(m.primitives)
        cal = self.sources[m.study].calibration_of(run_dir)
        return Priced(
            m,
            float(c.ratio),
            float(lo),
            float(hi),
            float(c.baseline_median),
            float(c.candidate_median),
            n,
            c.design,
            confidence,
            prims,
            as_it_ran(cal, vcpu_slowdown(run_dir)),
            run_dir,
            term.text() if term is not None and term.sd else "",
            reference=cal,
        )

    def price_all(self, lines: Sequence[Line], level: float) -> dict[Measure, Priced]:
        """Every comparison the lines use, each at `level` (interval_level)."""
        return {m: self.price(m, level) for m in dict.fromkeys(m for ln in lines for m in ln.measures)}

    def level(
        self, study: str, part: str, arm: str, metric: str, confidence: float, cell: Sequence[tuple[str, str]] = ()
    ) -> tuple[Interval, int]:
        """One arm's own level of a metric (not a difference): the mean of its run summaries, its t interval, n."""
        runs = _cell_runs(self.runs(study, part), cell)
        x = runs[runs["arm"] == arm][metric].to_numpy(dtype=float) if metric in runs else np.array([])
        x = x[np.isfinite(x)]
        if not len(x):
            raise ConfigError(f"{self.sources[study].run_of(part).name}: {part} {arm!r} recorded no {metric}")
        mean, lo, hi, _, n = mean_interval(x, confidence)
        return Interval(mean, lo if np.isfinite(lo) else mean, hi if np.isfinite(hi) else mean), n

    def compression(self, study: str, part: str, arm: str) -> tuple[str, float | None]:
        """The compressor the study measured on the arm's real log, and its ratio (zstd where measured)."""
        exp = self.sources[study].experiment(part)
        meta = ResultStore(exp.path.parent, exp.path.name, readonly=True).metadata() if exp is not None else {}
        measured = (meta.get("compression") or {}).get(arm) or {}
        for name in ("zstd", "gzip"):
            if measured.get(f"{name}_ratio"):
                return name, float(measured[f"{name}_ratio"])
        return "none measured", None
