"""The two ways a report section puts something on the page: a sentence, or a table."""

from __future__ import annotations

import pandas as pd
from IPython.display import Markdown, display

from secoverhead.reporting import tables


def say(text: str) -> None:
    display(Markdown(text))


def show(df: pd.DataFrame, precision: int = 3, caption: str = "") -> None:
    if df is None or not len(df):
        return
    display(tables.show(df, precision=precision))
    if caption:
        say(f"*{caption}*")
