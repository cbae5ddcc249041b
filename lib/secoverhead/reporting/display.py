"""The ways a report section puts something on the page: a sentence, a table, or a long table folded under
a one-line count (the story reads on; the rows are a click away)."""

from __future__ import annotations

import html
import re

import pandas as pd
from IPython.display import HTML, Markdown, display

from secoverhead.reporting import tables


def say(text: str) -> None:
    """A sentence in Markdown. Its `<` outside code spans is escaped: a name it carries (an arm, a parameter, a
    server's) is data, and Markdown would pass `<iframe ...>` through as markup."""
    display(Markdown(as_text(text)))


def as_text(markdown: str) -> str:
    parts = re.split(r"(`[^`]*`)", markdown)  # code spans show their characters as they are
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in parts)


def show(df: pd.DataFrame, precision: int = 3, caption: str = "") -> None:
    """A table and its caption; one longer than LONG rows is folded under its caption's first sentence."""
    if df is None or not len(df):
        return
    if len(df) > LONG:
        show_folded(df, caption.split(". ")[0].rstrip(".") or "the table", precision=precision, fold_over=LONG)
    else:
        display(tables.show(df, precision=precision))
    if caption:
        say(f"*{caption}*")


FOLD_ROWS = 10  # a longer list of exceptions is folded: 94 noisy runs in the middle of the story hid it
LONG = 20  # any table longer than this is folded under its caption


def show_folded(df: pd.DataFrame, summary: str, precision: int = 3, fold_over: int = FOLD_ROWS) -> None:
    """A table, folded under `summary` (its count said) when longer than `fold_over` rows."""
    if df is None or not len(df):
        return
    if len(df) <= fold_over:
        display(tables.show(df, precision=precision))
        return
    body = tables.show(df, precision=precision).to_html()
    display(HTML(f"<details><summary>{html.escape(summary)} ({len(df)} rows)</summary>{body}</details>"))
