"""Standing verdicts in the index: series/standing.py's table of each study, as HTML."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from secoverhead.analysis.pooling import ALPHA
from secoverhead.series.standing import NOT_YET, table


def section(root: Path, study: str, history_df: pd.DataFrame, alpha: float = ALPHA) -> str:
    """The index's standing-verdict table of one study ('' when no claim's series has two reports)."""
    df = table(root, study, history_df, alpha)
    if not len(df) or not (df["standing verdict"] != NOT_YET).any():
        return ""
    cols = {"claim": "claim", "scale": "scale", "target": "target", "tested": "reports tested", "since": "since",
            "series": "series", "standing verdict": "standing verdict", "standing": "standing [interval]",
            "reports to decide": "reports to decide", "newest report's verdict": "newest report (one look)",
            "reports without estimates": "no estimates"}  # fmt: skip
    return (
        "<h3>Standing verdicts</h3><p><small>"
        + html.escape(
            f"Each claim judged on every report of its series that could test it (scale, target, server version, "
            f"machine speed class, the claim's measurement revision): a confidence sequence over the reports' "
            f"estimates, whose chance of ever showing a wrong verdict stays within {alpha:g} however many reports "
            f"the series holds and however often it is read (a new server version, speed class, scale or revision "
            f"starts a series of its own, with its own). A report whose precondition failed leaves the pool, "
            f"not the series. The newest report's own verdict is one look: a claim on its line shows a decided "
            f"verdict on some night far more often than {alpha:g}."
        )
        + f"</small></p>{_table(df[list(cols)].rename(columns=cols))}"
    )


def _table(df: pd.DataFrame) -> str:
    """The rows as HTML, escaped; the claim and the interval kept readable (the index's cells break anywhere), the
    headers wrapped, and the table scrolled on its own where a window is narrower than it still is."""
    words = "overflow-wrap:normal;"  # words whole: a verdict or a date never breaks inside
    wide = {"claim": "min-width:14em", "target": "min-width:7em", "standing [interval]": "min-width:10em",
            "standing verdict": "min-width:6em", "newest report (one look)": "min-width:6em",
            "series": "min-width:5em"}  # fmt: skip
    style = {c: words + wide.get(c, "white-space:nowrap") for c in df.columns}
    head = "".join(f'<th style="{words}white-space:normal">{html.escape(str(c))}</th>' for c in df.columns)
    rows = "".join(
        "<tr>" + "".join(f'<td style="{style[c]}">{html.escape(str(v))}</td>' for c, v in r.items()) + "</tr>"
        for _, r in df.iterrows()
    )
    return f'<div class="scroll"><table><tr>{head}</tr>{rows}</table></div>'  # ten columns: a narrow window scrolls it
