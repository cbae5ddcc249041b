"""Verdicts over reports in the index: reporting/over_reports.py's table of each study, as HTML."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from secoverhead.analysis.pooling import ALPHA, LOOKS, look_confidence
from secoverhead.reporting.over_reports import pooled


def section(root: Path, study: str, history_df: pd.DataFrame, alpha: float = ALPHA) -> str:
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
            f"Each claim's reports of one series (scale, target, server version, machine speed class, the "
            f"claim's measurement revision) pooled: a "
            f"random-effects estimate (Paule-Mandel) and a Hartung-Knapp interval, never narrower than the "
            f"reports' plain t interval, at {level * 100:.3g} % for each look: a level calibrated by simulation so "
            f"that looking after every report keeps the chance of any wrong verdict in a series within {alpha:g}; "
            f"a series closes at {LOOKS} reports, and its verdict, where it decided, is shown until the next decides."
        )
        + f"</small></p>{table}"
    )


def _table(df: pd.DataFrame) -> str:
    """The rows as HTML, escaped; the claim and the interval kept readable (the index's cells break anywhere), the
    headers wrapped, and the table scrolled on its own where a window is narrower than it still is."""
    words = "overflow-wrap:normal;"  # words whole: a verdict or a date never breaks inside
    wide = {"claim": "min-width:14em", "target": "min-width:7em", "pooled [interval]": "min-width:10em",
            "pooled verdict": "min-width:6em", "newest report": "min-width:6em", "series": "min-width:5em"}  # fmt: skip
    style = {c: words + wide.get(c, "white-space:nowrap") for c in df.columns}
    head = "".join(f'<th style="{words}white-space:normal">{html.escape(str(c))}</th>' for c in df.columns)
    rows = "".join(
        "<tr>" + "".join(f'<td style="{style[c]}">{html.escape(str(v))}</td>' for c, v in r.items()) + "</tr>"
        for _, r in df.iterrows()
    )
    return f'<div class="scroll"><table><tr>{head}</tr>{rows}</table></div>'  # ten columns: a narrow window scrolls it
