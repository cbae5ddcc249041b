"""The ways a report section puts something on the page: a sentence, a table, or a long table folded under
a one-line count (the story reads on; the rows are a click away)."""

from __future__ import annotations

import base64
import html
import io
import re
from typing import Any

import pandas as pd
from IPython.display import HTML, Markdown, display

from secoverhead.reporting import plots, tables


def say(text: str) -> None:
    """A sentence in Markdown. Its `<` outside code spans is escaped: a name it carries (an arm, a parameter, a
    server's) is data, and Markdown would pass `<iframe ...>` through as markup."""
    display(Markdown(as_text(text)))


def as_text(markdown: str) -> str:
    parts = re.split(r"(`[^`]*`)", markdown)  # code spans show their characters as they are
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in parts)


def show(what: Any, caption: str = "", *, precision: int = 3, alt: str = "") -> None:
    """The one way a notebook puts a table or a figure on the page, with its caption. A table longer than LONG
    rows is folded under its caption's first sentence; a figure goes as PNG with alt text the HTML keeps."""
    if what is None:
        return
    if hasattr(what, "savefig"):
        _figure(what, caption, alt)
        return
    if not len(what):
        return
    if len(what) > LONG:
        show_folded(what, caption.split(". ")[0].rstrip(".") or "the table", precision=precision, fold_over=LONG)
    else:
        display(tables.styled(what, precision=precision))
    if caption:
        say(f"*{caption}*")


def _figure(fig: Any, caption: str, alt: str) -> None:
    """A figure as PNG and its caption, then freed. The labels that overlap as drawn are recorded in the output's
    metadata (`overlaps`), which the report checks read."""
    import matplotlib.pyplot as plt  # deferred: a table needs none of it

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    clashes = plots.overlaps(fig)
    plt.close(fig)
    text = alt or plots.title_of(fig) or caption.split(".")[0] or "figure"
    png = base64.b64encode(buf.getvalue()).decode()
    meta = {"alt": text, "overlaps": clashes}
    display({"image/png": png, "text/plain": f"[figure: {text}]"}, raw=True, metadata={"image/png": meta})
    if caption:
        display(Markdown(as_text(f"*{caption}*")))


FOLD_ROWS = 10  # a longer list of exceptions is folded: 94 noisy runs in the middle of the story hid it
LONG = 20  # any table longer than this is folded under its caption


def show_folded(df: pd.DataFrame, summary: str, precision: int = 3, fold_over: int = FOLD_ROWS) -> None:
    """A table, folded under `summary` (its count said) when longer than `fold_over` rows."""
    if df is None or not len(df):
        return
    if len(df) <= fold_over:
        display(tables.styled(df, precision=precision))
        return
    body = tables.styled(df, precision=precision).to_html()
    display(HTML(f"<details><summary>{html.escape(summary)} ({len(df)} rows)</summary>{body}</details>"))
