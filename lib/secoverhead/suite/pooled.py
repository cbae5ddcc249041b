"""Verdicts over reports in the index: every claim's reports of one series (history.SERIES: one scale, target,
server version and machine speed class) pooled by analysis/pooling.py, beside the newest report's own verdict. A
series pools at most pooling.LOOKS reports; the report after that opens the next (a closed series' verdict is
shown until the next has two). Reports that recorded no estimates (made before they were) are left out and
counted. (history.collect names a report by its directory, `run`.)"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.analysis import claim_registry
from secoverhead.analysis.pooling import LOOKS, PooledVerdict, look_confidence, pooled_verdict
from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.suite.history import SERIES

KEY = [c for c in SERIES if c != "claim id"]


def _judged_by_run(root: Path, study: str, runs: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """report directory -> verdict id -> its verdict (the registered claim and what was judged)."""
    out = {}
    for run in runs:
        data = read_verdicts(root / study / run) or {}
        out[run] = {str(v.get("id")): v for v in data.get("verdicts", []) if isinstance(v, dict) and v.get("id")}
    return out


def _series_runs(runs: list[str]) -> tuple[list[str], bool]:
    """The reports of the open series (the newest LOOKS-block with two or more, else the last closed one) and
    whether it is closed."""
    blocks = [runs[i : i + LOOKS] for i in range(0, len(runs), LOOKS)]
    if len(blocks) > 1 and len(blocks[-1]) < 2:
        return blocks[-2], True
    return blocks[-1], len(blocks[-1]) == LOOKS


def pooled(root: Path, study: str, history_df: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """One row per claim and series: the reports pooled, the pooled verdict and each cell's pooled interval, and
    the newest report's own verdict."""
    if not len(history_df):
        return pd.DataFrame()
    first = history_df.drop_duplicates(["run", "claim id"]).copy()
    first["verdict id"] = first["claim id"].str.replace(r" \[.*\]$", "", regex=True)
    verdicts = _judged_by_run(root, study, list(dict.fromkeys(first["run"])))
    rows = []
    for (vid, *key), g in first.groupby(["verdict id", *KEY], sort=False):
        runs = list(dict.fromkeys(g.sort_values(["date", "run"])["run"]))
        with_estimates = [r for r in runs if _has_estimates(verdicts[r].get(vid))]
        chosen, closed = _series_runs(with_estimates) if with_estimates else ([], False)
        newest = verdicts[runs[-1]].get(vid) or {}
        registered = newest.get("registered") or {}
        pv = _pool(registered, [verdicts[r][vid] for r in chosen], alpha)
        rows.append(
            {
                "claim": newest.get("claim", vid),
                **dict(zip(KEY, key, strict=True)),
                "reports pooled": len(chosen) if pv is not None else 0,
                "since": str(g[g["run"] == chosen[0]]["started"].iloc[0])[:10] if chosen and pv else "",
                "series": "closed" if closed else "open",
                "pooled verdict": pv.verdict.value if pv is not None else "not pooled",
                "pooled": _interval_text(pv, registered),
                "newest report's verdict": newest.get("verdict", ""),
                "reports without estimates": len(runs) - len(with_estimates),
            }
        )
    return pd.DataFrame(rows)


def _has_estimates(v: dict[str, Any] | None) -> bool:
    return bool(v) and all(j.get("estimates") for j in v.get("judged") or [{}])


def _pool(registered: dict[str, Any], judged: list[dict[str, Any]], alpha: float) -> PooledVerdict | None:
    if len(judged) < 2 or not registered.get("study") or not registered.get("id"):
        return None
    if any(v.get("verdict") == "not testable here" for v in judged):  # a precondition failed: nothing to pool
        return None
    return pooled_verdict(registered["study"], registered["id"], [v.get("judged") or [] for v in judged], alpha)


def _interval_text(pv: PooledVerdict | None, registered: dict[str, Any]) -> str:
    if pv is None:
        return ""
    readings = claim_registry.get(registered["study"], registered["id"]).readings()
    parts = []
    for reading, cells in zip(readings, pv.readings, strict=True):
        for c in cells:
            name = f"{c.name}: " if c.name else ""
            parts.append(f"{name}{reading.shown(c.point)} [{reading.shown(c.low)}, {reading.shown(c.high)}]")
    return "; ".join(parts)


def section(root: Path, study: str, history_df: pd.DataFrame, alpha: float = 0.05) -> str:
    """The index's pooled-verdict table of one study ('' when no claim has two reports to pool)."""
    df = pooled(root, study, history_df, alpha)
    if not len(df) or not (df["reports pooled"] >= 2).any():
        return ""
    cols = {"claim": "claim", "scale": "scale", "target": "target", "reports pooled": "reports", "since": "since",
            "series": "series", "pooled verdict": "pooled verdict", "pooled": "pooled [interval]",
            "newest report's verdict": "newest report", "reports without estimates": "no estimates"}  # fmt: skip
    table = _table(df[list(cols)].rename(columns=cols))
    level = look_confidence(alpha)
    return (
        "<h3>Verdicts over reports</h3><p><small>"
        + html.escape(
            f"Each claim's reports of one series (scale, target, server version, machine speed class) pooled: a "
            f"random-effects estimate (Paule-Mandel) and a Hartung-Knapp interval at {level * 100:.3g} %, "
            f"alpha / {LOOKS - 1} for each look, so looking after every report keeps the error rate within "
            f"{alpha:g}; a series closes at {LOOKS} reports."
        )
        + f"</small></p>{table}"
    )


def _table(df: pd.DataFrame) -> str:
    """The rows as HTML, escaped; the claim and the interval kept readable (the index's cells break anywhere)."""
    wide = {"claim": "min-width:12em", "target": "min-width:7em", "pooled [interval]": "min-width:10em"}
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "".join(
        "<tr>" + "".join(f'<td style="{wide.get(c, "")}">{html.escape(str(v))}</td>' for c, v in r.items()) + "</tr>"
        for _, r in df.iterrows()
    )
    return f"<table><tr>{head}</tr>{rows}</table>"
