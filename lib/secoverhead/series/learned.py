"""The between-run sd learned from the reports themselves: what a report's rounds share (its server instances, their
data loads, the machine's day) spreads its estimates between reports more than their own intervals say, and every
comparison between arms on instances of their own adds that spread (claimcheck widens by it).

Learned by the engine that pools reports (analysis/pooling.py): per cell, Paule-Mandel's tau^2 over the newest
reports of one series; per study and metric, the root mean square over its cells (as the declared terms were).
A cell counts once MIN_REPORTS reports measured it; before that the term declared in data/claims/between_runs.yaml
stands, a prior from three reports. The pipeline writes what it learned into each report before its kernel starts
(between_runs.json, with the reports it came from), so a report's reading is fixed before its data."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.analysis.pooling import paule_mandel, recorded
from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.core.files import SCHEMA, atomic_write_json
from secoverhead.series.reports import collect, measured_now, reports_like

MIN_REPORTS = 5  # four degrees of freedom per cell before a learned term replaces the declared one
NEWEST = 20  # reports read at most, the newest of the series: a machine's spread drifts over weeks
FILE = "between_runs.json"

Cell = tuple[str, str, int, int]  # (metric, verdict id, reading, cell)
# claim id -> per reading, whether it compares arms on instances of their own: the study's rules say, and the caller
# (above this floor) reads them, only once there are enough reports to learn from
Between = Mapping[str, tuple[bool, ...]]
Kinds = Callable[[], Between]
Estimate = tuple[str, float, float]  # (report, estimate, its se)


def learn(root: Path, study: str, scale: str, target: str, kinds: Kinds) -> list[dict[str, Any]]:
    """The learned terms of a study's newest series at this scale and target, one entry per metric with enough
    reports (entries as between_runs.yaml's, and the reports they came from)."""
    runs = _newest_series(collect(root, study), scale, target)
    if len(runs) < MIN_REPORTS:  # nothing to learn yet: the study's rules (its code) need not load
        return []
    return terms(cells(root, study, runs, kinds()), study)


def terms(by_cell: dict[Cell, list[Estimate]], study: str, min_reports: int = MIN_REPORTS) -> list[dict[str, Any]]:
    """Per metric, the root mean square over its cells (those min_reports reports measured) of Paule-Mandel's sd
    between reports. benchmarks/between_runs.py declares the prior with this, at three reports."""
    out = []
    for metric in sorted({c[0] for c in by_cell}):
        mine = [xs for c, xs in by_cell.items() if c[0] == metric and len(xs) >= min_reports]
        if not mine:
            continue
        tau2 = [paule_mandel([v for _, v, _ in xs], [se * se for _, _, se in xs]) for xs in mine]
        used = sorted({run for xs in mine for run, _, _ in xs})
        out.append(
            {
                "study": study,
                "metric": metric,
                "sd": round(math.sqrt(sum(tau2) / len(tau2)), 4),
                "runs": len(used),
                "estimated": f"learned from {len(used)} reports of this series, {_span(used)}",
                "cells": len(mine),
                "reports": used,
            }
        )
    return out


def _span(runs: list[str]) -> str:
    return f"{runs[0].split('-', 1)[0]} to {runs[-1].split('-', 1)[0]}"


def _newest_series(df: pd.DataFrame, scale: str, target: str) -> list[str]:
    """The reports (oldest first, NEWEST at most) of the newest series at this scale and target."""
    if not len(df):
        return []
    df = df[(df["scale"] == scale) & (df["target"] == target)]
    if not len(df):
        return []
    return reports_like(df, df.sort_values(["date", "run"]).iloc[-1]["run"])[-NEWEST:]


def cells(root: Path, study: str, runs: list[str], between: Between) -> dict[Cell, list[Estimate]]:
    """Per cell of a comparison between arms on instances of their own (a beside build's too): each report's
    (estimate, se), as its verdicts recorded them; a claim's reports measured at its registry revision only."""
    out: dict[Cell, list[Estimate]] = defaultdict(list)
    for run in runs:
        for v in (read_verdicts(root / study / run) or {}).get("verdicts", []):
            if not isinstance(v, dict) or not measured_now(v):
                continue  # measured otherwise: another series
            reg = v.get("registered") or {}
            kinds = between.get(str(reg.get("id")), ())
            for k, judged in enumerate(v.get("judged") or []):
                if k >= len(kinds) or not kinds[k]:
                    continue
                for j, e in enumerate(judged.get("estimates") or []):
                    if (est := recorded(e)) is not None:
                        out[(str(reg.get("metric")), str(v.get("id")), k, j)].append((run, est.value, est.se))
    return out


def write(run_dir: Path, root: Path, study: str, scale: str, target: str, kinds: Kinds) -> Path:
    """between_runs.json in a report about to run: what was learned before it (kept as it was on a resume)."""
    path = run_dir / FILE
    if not path.exists():
        atomic_write_json(
            path, {"schema": SCHEMA, "min_reports": MIN_REPORTS, "terms": learn(root, study, scale, target, kinds)}
        )
    return path
