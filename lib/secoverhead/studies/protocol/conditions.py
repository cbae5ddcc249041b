"""The conditions every study's preconditions read of this machine, and the baseline arm's medians
(analysis/preconditions.py names them all)."""

from __future__ import annotations

import math
import os
import platform
import re
from typing import Any

import pandas as pd


def host() -> dict[str, Any]:
    """This machine: its usable cores and its kernel's (major, minor) version."""
    m = re.match(r"(\d+)\.(\d+)", platform.release())
    return {
        "host_cores": len(os.sched_getaffinity(0)),
        "kernel_version": [int(m.group(1)), int(m.group(2))] if m else None,
    }


def median(runs: pd.DataFrame, metric: str) -> float | None:
    """The metric's median over runs (None when no run has it)."""
    if not len(runs) or metric not in runs:
        return None
    x = pd.to_numeric(runs[metric], errors="coerce").dropna()
    return float(x.median()) if len(x) else None


def highest_cell(runs: pd.DataFrame, metric: str, by: list[str]) -> float | None:
    """The highest of the metric's medians per cell of `by` (None when no run has it)."""
    cells = _cell_medians(runs, metric, by)
    return float(cells.max()) if cells is not None and len(cells) else None


def lowest_cell(runs: pd.DataFrame, metric: str, by: list[str]) -> float | None:
    """The lowest of the metric's medians per cell of `by` (None when no run has it)."""
    cells = _cell_medians(runs, metric, by)
    return float(cells.min()) if cells is not None and len(cells) else None


def _cell_medians(runs: pd.DataFrame, metric: str, by: list[str]) -> pd.Series | None:
    if not len(runs) or metric not in runs or any(b not in runs for b in by):
        return None
    x = pd.to_numeric(runs[metric], errors="coerce")
    return x.groupby([runs[b] for b in by]).median().dropna()


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b and math.isfinite(b) else None
