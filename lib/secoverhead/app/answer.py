"""A finished run's answer on the terminal, under its status line: a study's verdicts counted (the report has
the sentences), the cost calculator's sentences (they are its answer). Read from what the run recorded."""

from __future__ import annotations

import textwrap
from pathlib import Path

from secoverhead.core.files import read_json
from secoverhead.reporting.summary import tally

WIDTH = 100


def lines(run_dir: str | Path) -> list[str]:
    """Indented lines to print after `<study>: ok <run dir>`; none when the run recorded no answer."""
    results = Path(run_dir) / "results"
    cost = read_json(results / "cost.json")
    if isinstance(cost, dict) and isinstance(cost.get("headline"), list):
        origins = [str(o) for o in cost.get("priced_from") or []]
        return _wrapped(cost["headline"]) + (["  Priced from:", *_wrapped(origins, "    ")] if origins else [])
    verdicts = read_json(results / "verdicts.json")
    listed = verdicts.get("verdicts") if isinstance(verdicts, dict) else None
    if isinstance(listed, list) and listed:
        return [f"  {tally([v for v in listed if isinstance(v, dict)])}"]
    return []


def _wrapped(sentences: list, indent: str = "  ") -> list[str]:
    return [
        line
        for s in sentences
        for line in textwrap.wrap(str(s), WIDTH, initial_indent=indent, subsequent_indent=indent + "  ")
    ]
