"""A finished run's answer on the terminal, under its status line: a study's verdicts counted as its report's
first screen counts them (by each claim's standing verdict where its series has one; the report has the
sentences), the cost calculator's sentences (they are its answer). Read from what the run recorded."""

from __future__ import annotations

import textwrap
from pathlib import Path

from secoverhead.core.files import read_json
from secoverhead.core.report import readable
from secoverhead.reporting.summary import counted_as, tally
from secoverhead.series.standing import with_standing

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
        shown = _standing(Path(run_dir), [v for v in listed if isinstance(v, dict)])
        note = counted_as(shown)
        return [f"  {tally(shown)}", *([f"  ({note})"] if note else [])]
    return []


def _standing(run_dir: Path, listed: list[dict]) -> list[dict]:
    """The verdicts with their series' standing verdicts, where the run's folder holds a series (a report outside
    reports/<study>/, or one whose series cannot be read, is counted by its own)."""
    report = readable(run_dir)
    if report is None or not report.study:
        return listed
    try:
        return with_standing(run_dir, report.study, listed)
    except Exception:  # a view: a corrupt neighbour must not cost the answer
        return listed


def _wrapped(sentences: list, indent: str = "  ") -> list[str]:
    return [
        line
        for s in sentences
        for line in textwrap.wrap(str(s), WIDTH, initial_indent=indent, subsequent_indent=indent + "  ")
    ]
