"""Precision and recall of the history's change-point detector (analysis.changepoints.detect, what the index runs
over every series) on series shaped as this project's: 30 nightly reports of one claim's effect, each report's
estimate off by its own error and the between-run sd the registry declares for the metric, with one step of a
given size injected after report 15 (or none). A detection within TOLERANCE reports of the step is a true one.

    .venv/bin/python benchmarks/changepoint_check.py [SERIES]   # default 200 series per row

Mozilla's engineer-annotated series (the REALISE-Performance data, 2026) were the better check; their snapshot is
larger than this machine may fetch (559 MB), so the series here are synthetic at the project's own noise."""

from __future__ import annotations

import sys

import numpy as np

from secoverhead.analysis import claim_registry
from secoverhead.analysis.changepoints import detect

REPORTS, AT, TOLERANCE = 30, 15, 3
OWN = 0.02  # a quick report's own standard error on the log ratio
STEPS = (0.0, 0.025, 0.05, 0.10, 0.20)  # relative steps of the effect


def noise() -> float:
    """The between-report sd on the log ratio: the median of the registry's declared terms under 0.2."""
    sds = [b.sd for b in claim_registry.between_runs().values() if 0 < b.sd < 0.2]
    return float(np.median(sds)) if sds else 0.03


def row(step: float, series: int, between: float, rng: np.random.Generator) -> tuple[int, int, int]:
    """(series whose step was found within TOLERANCE, detections elsewhere, series with any detection)."""
    found = false = alarmed = 0
    for k in range(series):
        effect = np.where(np.arange(REPORTS) >= AT, np.log1p(step), 0.0)
        values = np.exp(effect + rng.normal(0, between, REPORTS) + rng.normal(0, OWN, REPORTS))
        half = np.full(REPORTS, 1.96 * np.hypot(OWN, between))
        points = [c.index for c in detect(values, half, seed=k)]
        near = [p for p in points if abs(p - AT) <= TOLERANCE]
        found += bool(near) and step > 0
        false += len(points) - (len(near) if step > 0 else 0)
        alarmed += bool(points)
    return found, false, alarmed


def main(argv: list[str]) -> int:
    series = int(argv[0]) if argv else 200
    between = noise()
    rng = np.random.default_rng(2026)
    print(f"{series} series of {REPORTS} reports, own se {OWN}, between-run sd {between:.3f}, step after {AT}")
    for step in STEPS:
        found, false, alarmed = row(step, series, between, rng)
        true = found if step else 0
        precision = true / (true + false) if true + false else float("nan")
        what = f"recall {found}/{series} ({found / series:.0%})" if step else f"alarmed {alarmed}/{series}"
        print(f"step {step:+.1%}: {what}; detections elsewhere {false}; precision {precision:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
