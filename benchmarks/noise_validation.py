"""Is a noise flag a signal? For every measured run of the reports given: how far its figures stray from its cell's
(each figure's |log deviation| from the median of its arm, metric and experiment, over that experiment's median
deviation for the metric), the run's median over its figures, binned by the run's host steal and by the CPU busy
outside the experiment. A flag is validated where the runs beyond it stray more than those below it.

    .venv/bin/python benchmarks/noise_validation.py REPORTS_ROOT [REPORTS_ROOT ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

# the figures a verdict reads: latencies, rates and CPU per operation (not counts, flags, bytes or the noise itself)
UNITS = {"ms", "us", "ns", "1/s", "1/CPU-s"}
STEAL_BINS = [0, 0.02, 0.05, 0.10, 0.20, 0.30, 1.0]
OUTSIDE_BINS = [0, 0.1, 0.35, 1.0, 4.0]


def runs_of(results: Path) -> pd.DataFrame:
    """One row per measured run: its noise and the median normalised deviation of its figures."""
    r = pd.read_parquet(results)
    r = r[~r["warmup"].astype(bool)]
    noise = r[r["metric"].isin(["noise_steal_fraction", "noise_outside_cores"])]
    noise = noise.pivot_table(index="run_id", columns="metric", values="value", aggfunc="first")
    figures = r[r["unit"].isin(UNITS) & (pd.to_numeric(r["value"], errors="coerce") > 0)].copy()
    figures["log"] = np.log(figures["value"].astype(float))
    cell = figures.groupby(["arm", "metric"])["log"]
    figures = figures[cell.transform("size") >= 4]
    figures["dev"] = (figures["log"] - cell.transform("median")).abs()
    typical = figures.groupby("metric")["dev"].transform("median")
    figures["norm"] = figures["dev"] / typical.where(typical > 0)
    out = figures.groupby("run_id")["norm"].median().to_frame().join(noise, how="inner")
    out["experiment"] = results.parent.name
    return out.reset_index()


def table(runs: pd.DataFrame, column: str, bins: list[float]) -> pd.DataFrame:
    runs = runs.assign(band=pd.cut(runs[column], bins, right=False))
    return runs.groupby("band", observed=True)["norm"].agg(runs="size", median="median", p90=lambda x: x.quantile(0.9))


def main(roots: list[str]) -> None:
    files = [f for root in roots for f in sorted(Path(root).glob("*/2*/results/*/results.parquet"))]
    runs = pd.concat([runs_of(f) for f in files], ignore_index=True).dropna(subset=["norm"])
    print(f"{len(runs)} measured runs from {len(files)} experiments")
    print("by host steal (share of the machine's CPU time):")
    print(table(runs, "noise_steal_fraction", STEAL_BINS).round(2).to_string())
    print("by CPU busy outside the experiment (cores):")
    print(table(runs, "noise_outside_cores", OUTSIDE_BINS).round(2).to_string())


if __name__ == "__main__":
    main(sys.argv[1:] or ["reports"])
