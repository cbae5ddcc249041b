"""Standing verdicts: every claim's reports of one series (series/reports.py: one scale, target, server version,
machine speed class and measurement revision) judged together by analysis/pooling.py's confidence sequence, valid
at every look however long the series runs, beside the newest report's own verdict (one look), for the index,
`secoverhead.load` and each report's conclusions.

A report whose precondition failed could not test the claim: it leaves the pool, not the series (a precondition
reads the environment and the baseline arm, never the effect, so leaving it out selects nothing on the effect),
and the row says how many of the series' reports tested it. A series of an older revision is shown superseded.
Reports that recorded no estimates (made before they were) are left out and counted. (reports.collect names a
report by its directory, `run`.)"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.analysis import claim_registry
from secoverhead.analysis.pooling import ALPHA, PooledVerdict, more_reports, pooled_verdict
from secoverhead.analysis.verdicts import Verdict, read_verdicts
from secoverhead.series.reports import SERIES, collect

KEY = [c for c in SERIES if c != "claim id"]
NOT_TESTABLE = Verdict.NOT_TESTABLE.value
NOT_YET = "not yet"  # fewer than two reports of the series tested the claim
FIRST_BOUNDED = 3  # reports before a confidence sequence (stats.sequence_half) is finite at alpha


def _judged_by_run(root: Path, study: str, runs: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """report directory -> verdict id -> its verdict (the registered claim and what was judged)."""
    out = {}
    for run in runs:
        data = read_verdicts(root / study / run) or {}
        out[run] = {str(v.get("id")): v for v in data.get("verdicts", []) if isinstance(v, dict) and v.get("id")}
    return out


@dataclass(frozen=True)
class Standing:
    """A claim's series: its reports with estimates, those that tested the claim, and their standing verdict."""

    reports: list[str]
    tested: list[str]
    judged: list[dict[str, Any]]  # the tested reports' verdicts, oldest first
    pv: PooledVerdict | None
    untested: list[dict[str, Any]]  # the verdicts of those that could not test it

    @property
    def verdict(self) -> str:
        if self.pv is not None:
            return self.pv.verdict.value
        return NOT_TESTABLE if len(self.reports) >= 2 and not self.tested else NOT_YET


def standing_of(
    runs: list[str], judged_of: dict[str, dict[str, Any]], registered: dict[str, Any], alpha: float
) -> Standing:
    """The series' reports that tested the claim, judged together at every look's level alpha."""
    tested = [r for r in runs if judged_of[r].get("verdict") != NOT_TESTABLE]
    judged = [judged_of[r] for r in tested]
    untested = [judged_of[r] for r in runs if r not in tested]
    pv = None
    if len(judged) >= 2 and registered.get("study") and registered.get("id"):
        pv = pooled_verdict(registered["study"], registered["id"], [v.get("judged") or [] for v in judged], alpha)
    return Standing(runs, tested, judged, pv, untested)


def table(root: Path, study: str, history_df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """One row per claim and series: its standing verdict and each cell's interval, how many of its reports tested
    it, the reports more it would take at this spread, and the newest report's own verdict."""
    if not len(history_df):
        return pd.DataFrame()
    first = history_df.drop_duplicates(["run", "claim id"]).copy()
    first["verdict id"] = first["claim id"].str.replace(r" \[.*\]$", "", regex=True)
    verdicts = _judged_by_run(root, study, list(dict.fromkeys(first["run"])))
    rows = []
    for (vid, *key), g in first.groupby(["verdict id", *KEY], sort=False):
        where = dict(zip(KEY, key, strict=True))
        runs = list(dict.fromkeys(g.sort_values(["date", "run"])["run"]))
        with_estimates = [r for r in runs if _has_estimates(verdicts[r].get(vid))]
        newest = verdicts[runs[-1]].get(vid) or {}
        registered = newest.get("registered") or {}
        s = standing_of(with_estimates, {r: verdicts[r][vid] for r in with_estimates}, registered, alpha)
        since = str(g[g["run"] == s.tested[0]]["started"].iloc[0])[:10] if s.tested else ""
        rows.append(
            {
                "verdict id": vid,
                "claim": newest.get("claim", vid),
                **where,
                "standing verdict": s.verdict,
                "standing": _interval_text(s.pv, registered) if s.pv is not None else _untested_text(s),
                "reports pooled": len(s.tested) if s.pv is not None else 0,
                "tested": f"{len(s.tested)} of {len(s.reports)}",
                "of reports": len(s.reports),
                "since": since,
                "series": _state(where["revision"], registered),
                "reports to decide": _to_decide(s, registered, alpha),
                "newest report's verdict": newest.get("verdict", ""),
                "reports without estimates": len(runs) - len(with_estimates),
                "reports": s.tested,  # of its series, that tested the claim (pooled when the verdict is)
                "why not pooled": _why_not(s),
            }
        )
    return pd.DataFrame(rows)


def _state(revision: int, registered: dict[str, Any]) -> str:
    """open; superseded when its claim is measured otherwise now (a higher registry revision)."""
    now = claim_registry.revision(str(registered.get("study")), str(registered.get("id")))
    return f"superseded: revision {revision} (measured as {now} now)" if revision != now else "open"


def _has_estimates(v: dict[str, Any] | None) -> bool:
    """A report that recorded estimates, or one that could not test the claim (it counts as untested either way)."""
    if not v:
        return False
    return v.get("verdict") == NOT_TESTABLE or all(j.get("estimates") for j in v.get("judged") or [{}])


def _to_decide(s: Standing, registered: dict[str, Any], alpha: float) -> str:
    """Reports more that would decide an undecided standing verdict, were its estimates and spread to stay ('' when
    decided, not pooled, or never)."""
    if s.pv is None or s.pv.verdict.decided:
        return ""
    more = more_reports(registered["study"], registered["id"], s.pv, alpha)
    return f"about {more} more" if more is not None else "none would: an estimate sits on a line"


def _untested_text(s: Standing) -> str:
    """What stands for an interval where none was pooled: which precondition failed, in every report."""
    if s.verdict != NOT_TESTABLE:
        return ""
    failed = {
        p.get("text") or p.get("condition")
        for v in s.untested
        for p in v.get("preconditions") or []
        if p.get("holds") is False
    }
    names = ", ".join(sorted(str(c) for c in failed if c))
    return f"in every report, precondition {names} not met" if names else "in every report, a precondition not met"


def _why_not(s: Standing) -> str:
    if s.pv is not None:
        return ""
    if s.verdict == NOT_TESTABLE:
        return "no report of its series could test it (a precondition failed in each)"
    if len(s.tested) < 2:
        n = len(s.tested)
        return f"{n or 'no'} report{'s' * (n != 1)} of its series tested it so far: a standing verdict needs two"
    return "its reports recorded no estimate to pool (a share won back, before 2026-11-28) or differ in their cells"


def _interval_text(pv: PooledVerdict | None, registered: dict[str, Any]) -> str:
    if pv is None:
        return ""
    readings = claim_registry.get(registered["study"], registered["id"]).readings()
    parts = []
    for reading, cells in zip(readings, pv.readings, strict=True):
        for c in cells:
            name = f"{c.name}: " if c.name else ""
            parts.append(f"{name}{reading.shown(c.point)} {_bounds(reading, c.low, c.high)}")
    return "; ".join(parts)


def _bounds(reading: Any, low: float, high: float) -> str:
    """A cell's interval as the reading shows it; unbounded while the reports are too few to bound their spread
    (two: the sequence takes the spread from the reports themselves, and two give it one difference)."""
    if not (math.isfinite(low) and math.isfinite(high)) or (reading.quantity == "ratio" and low <= 0):
        return f"[not bounded before {FIRST_BOUNDED} reports]"
    return f"[{reading.shown(low)}, {reading.shown(high)}]"


@dataclass(frozen=True)
class Line:
    """What a claim's series says over its reports, for the report being written: its standing verdict (None
    before two of its reports tested it), in words, and the night's own verdict, one look."""

    text: str
    verdict: str | None = None
    reports: int = 0

    @property
    def stands(self) -> bool:
        """Whether the standing verdict is the claim's headline (two or more reports judged it)."""
        return self.verdict is not None


def lines(report_dir: Path, study: str, alpha: float = ALPHA, df: pd.DataFrame | None = None) -> dict[str, Line]:
    """Verdict id -> what its claim's series says over its reports, the report in `report_dir` (being written or
    read back) included: the standing verdict and interval over two or more, else what it waits for. `df`: the
    study's reports as reports.collect read them, where the caller already has them (read again when it lacks
    this report: one still being written counts only as `this`)."""
    report_dir = report_dir.resolve()  # the kernel's is relative ("results/..", where the report is written)
    root = report_dir.parent.parent
    if df is None or not len(df) or report_dir.name not in set(df["run"]):
        df = collect(root, study, this=report_dir)
    if not len(df) or report_dir.name not in set(df["run"]):
        return {}  # not under reports/<study>/ (an interactive run), or no verdict recorded
    upto = df[df["run"].isin(_upto(df, report_dir.name))]  # as it stood when this report was the newest
    mine = upto[upto["run"] == report_dir.name]
    keys = {tuple(r[c] for c in SERIES) for _, r in mine.iterrows()}  # its claims' own series, nothing else
    rows = table(root, study, upto[upto[SERIES].apply(tuple, axis=1).isin(keys)], alpha)
    return {str(row["verdict id"]): _line(row) for row in rows.to_dict("records")}


def _upto(df: pd.DataFrame, run: str) -> list[str]:
    """The reports up to `run` (by start, then name): a report read back later shows what stood when it was made."""
    order = df.drop_duplicates("run").sort_values(["date", "run"])["run"].tolist()
    return order[: order.index(run) + 1]


def _line(row: dict[str, Any]) -> Line:
    k, word = int(row["reports pooled"]), str(row["standing verdict"])
    if k >= 2:
        more = f"; {row['reports to decide']} would decide it" if row["reports to decide"] else ""
        untested = "" if row["tested"].startswith(f"{k} of {k}") else f" ({row['tested']} tested it)"
        text = f"standing over {k} reports since {row['since']}{untested}: {word}, {row['standing']}{more}"
        return Line(text, word, k)
    if word == NOT_TESTABLE:
        return Line(f"standing: {NOT_TESTABLE} ({row['standing']})", word, 0)
    if row["of reports"] <= 1 and not row["reports without estimates"]:
        return Line("the first report of its series here: from the next one on, its standing verdict judges them all")
    if row["reports without estimates"] and row["of reports"] <= 1:
        return Line("no standing verdict yet: the reports before this one recorded no estimates")
    return Line(f"no standing verdict yet: {row['why not pooled']}")


def with_standing(
    report_dir: Path, study: str, verdicts: list[dict[str, Any]], df: pd.DataFrame | None = None
) -> list[dict[str, Any]]:
    """A report's verdicts with its claims' series lines as they stood at it (lines, then attach)."""
    return attach(verdicts, lines(report_dir, study, df=df))


def attach(verdicts: list[dict[str, Any]], by_id: dict[str, Line]) -> list[dict[str, Any]]:
    """The verdicts, each with its series' line as "standing" (its verdict None before it stands), which the first
    screen and the tallies lead with (reporting/summary.headline)."""
    out = []
    for v in verdicts:
        line = by_id.get(str(v.get("id")), Line(""))
        out.append(v | {"standing": {"verdict": line.verdict, "reports": line.reports, "text": line.text}})
    return out
