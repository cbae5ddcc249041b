"""One-off duets: a duet whose ratio strays far from its cell's other duets is recorded.

Some servers have rare episodes: in TDE's 4c16g write-only x16 cell about one 3-s run in thirty stalls for
~2 s (purge reads queued behind the transactions' under the read-IOPS limit), a log ratio of 0.12-0.3 where the
cell's duets spread by sd 0.01-0.03. Whether such an episode belongs to neither arm or is a real cost of one
arm cannot be told from one duet, so the outlier stays in the statistics that decide (a retake chosen by its
value would replace it: at a true 5.0 % TPS loss with stalls only in the encrypted arm, a wrong "under 5 %"
rose from 10-30 % to 14-68 %). Which arm's metric fell is recorded, the report counts outliers per arm, and
the claims without the outlier duets are shown beside the verdicts as a labelled sensitivity check that never
decides. The rule looks only at |x - median of the others|, never at which arm is which.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from secoverhead.core.units import unit

SPREADS = 3.0  # a duet is an outlier beyond max(limit, SPREADS robust sd of the others)
MIN_OTHERS = 3  # duets of the cell it is compared with, at least


def log_ratio(base: Any, cand: Any) -> float | None:
    """log(cand / base) of two run metrics, None when either is missing or not positive."""
    try:
        b, c = float(base), float(cand)
    except (TypeError, ValueError):
        return None
    return math.log(c / b) if b > 0 and c > 0 and math.isfinite(b) and math.isfinite(c) else None


def deviation_limit(others: Sequence[float], limit: float) -> float:
    """How far from the others' median a duet may lie: the fixed limit, or SPREADS robust sd (1.4826 MAD) of
    the others when they spread more (from three of them on)."""
    if len(others) < 3:
        return limit
    mid = statistics.median(others)
    return max(limit, SPREADS * 1.4826 * statistics.median(abs(v - mid) for v in others))


def is_outlier(x: float, others: Sequence[float], limit: float, min_others: int = MIN_OTHERS) -> bool:
    """Whether log ratio x strays from the median of the cell's other duets (never with fewer than
    min_others of them: the median of two follows an outlier among them)."""
    if len(others) < min_others:
        return False
    return abs(x - statistics.median(others)) > deviation_limit(others, limit)


def cell_ratios(records: Iterable[Any], metric: str, cand: Any, *, exclude_block: str = "") -> list[float]:
    """The log ratios (candidate / baseline) of the measured duets of cand's cell and arm, the last pair of
    each block (a retake replaces its original), other than exclude_block."""
    pairs: dict[str, list[Any]] = {}
    for r in records:
        if r.status != "ok" or r.warmup or r.profiling or not r.block or r.block == exclude_block:
            continue
        if r.factors == cand.factors and cand.arm in (r.arm, r.partner):
            pairs.setdefault(r.block, [None, None])[r.arm == cand.arm] = r.metrics.get(metric)
    return [x for b, c in pairs.values() if (x := log_ratio(b, c)) is not None]


def _worse(base: str, cand: str, metric: str, *, rose: str) -> str:
    """The arm whose run went the bad way: its metric fell where higher is better (TPS), rose where lower is
    (CPU per operation, a time); where neither is known, the one whose metric fell."""
    fell = cand if rose == base else base
    return rose if unit(metric)[1] is False else fell


def describe(base: Any, cand: Any, metric: str, others: Sequence[float]) -> dict[str, Any]:
    """The record an outlier leaves in the experiment's metadata."""
    x = log_ratio(base.metrics.get(metric), cand.metrics.get(metric)) or 0.0
    mid = statistics.median(others)
    return {
        "block": cand.block,
        "metric": metric,
        "ratio": round(math.exp(x), 4),
        "cell_median_ratio": round(math.exp(mid), 4),
        "low_arm": base.arm if x > mid else cand.arm,  # whose metric fell (TPS: the arm that stalled)
        "worse_arm": _worse(base.arm, cand.arm, metric, rose=cand.arm if x > mid else base.arm),
        "run_ids": [base.run_id, cand.run_id],
    }
