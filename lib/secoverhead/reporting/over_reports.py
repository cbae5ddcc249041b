"""Verdicts over reports: every claim's reports of one series (reporting/series.py: one scale, target, server
version, machine speed class and measurement revision) pooled by analysis/pooling.py, beside the newest report's
own verdict, for the index, `secoverhead.load` and each report's conclusions. A series pools at most pooling.LOOKS
reports; the report after that opens the next (a closed series' decided verdict is shown until the next decides);
a series of an older revision is shown superseded. Reports that recorded no estimates (made before they
were) are left out and counted. (series.collect names a report by its directory, `run`.)"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.analysis import claim_registry
from secoverhead.analysis.pooling import ALPHA, LOOKS, PooledVerdict, pooled_verdict
from secoverhead.analysis.verdicts import Verdict, read_verdicts
from secoverhead.reporting.series import SERIES, collect

KEY = [c for c in SERIES if c != "claim id"]
NOT_TESTABLE = Verdict.NOT_TESTABLE.value


def _judged_by_run(root: Path, study: str, runs: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """report directory -> verdict id -> its verdict (the registered claim and what was judged)."""
    out = {}
    for run in runs:
        data = read_verdicts(root / study / run) or {}
        out[run] = {str(v.get("id")): v for v in data.get("verdicts", []) if isinstance(v, dict) and v.get("id")}
    return out


@dataclass(frozen=True)
class _Series:
    """A block of a claim's reports pooled: its reports, whether it is closed, their verdicts and the pooled one;
    `after`: what the series after it says so far, where that one is not shown yet."""

    reports: list[str]
    closed: bool
    judged: list[dict[str, Any]]
    pv: PooledVerdict | None
    after: str = ""
    after_reports: int = 0


def _shown_series(runs: list[str], judged_of: dict[str, dict[str, Any]], registered: dict[str, Any], alpha: float):
    """The series a claim's row shows: the newest block of LOOKS reports, or the closed one before it where that
    decided and the newest has not yet (by deciding, or finding the claim untestable in each report): a decided
    verdict stands until the next series says as much, its progress shown beside it."""
    blocks = [runs[i : i + LOOKS] for i in range(0, len(runs), LOOKS)] or [[]]
    shown = [_block(b, judged_of, registered, alpha) for b in blocks[-2:]]
    newest = shown[-1]
    if len(shown) == 1 or _decides(newest.pv) or _never_testable(newest.judged):
        return newest
    if len(newest.reports) >= 2 and not _decides(shown[0].pv):
        return newest  # nothing decided to keep: the newer says as much as the older
    n, word = len(newest.reports), _pooled_word(newest.pv, newest.judged)
    return replace(shown[0], after=f"{n} report{'s' * (n > 1)}, {word}", after_reports=n)


def _block(reports: list[str], judged_of: dict[str, dict[str, Any]], registered: dict[str, Any], alpha: float):
    judged = [judged_of[r] for r in reports]
    return _Series(reports, len(reports) == LOOKS, judged, _pool(registered, judged, alpha))


def _decides(pv: PooledVerdict | None) -> bool:
    return pv is not None and pv.verdict.decided


def pooled(root: Path, study: str, history_df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """One row per claim and series: the reports pooled, the pooled verdict and each cell's pooled interval, and
    the newest report's own verdict."""
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
        shown = _shown_series(with_estimates, {r: verdicts[r][vid] for r in with_estimates}, registered, alpha)
        chosen, judged, pv = shown.reports, shown.judged, shown.pv
        counted = pv is not None or _never_testable(judged)  # a series every report of which failed a precondition
        rows.append(
            {
                "verdict id": vid,
                "claim": newest.get("claim", vid),
                **where,
                "reports pooled": len(chosen) if counted else 0,
                "since": str(g[g["run"] == chosen[0]]["started"].iloc[0])[:10] if counted else "",
                "series": _state(shown.closed, where["revision"], registered)
                + (f" (the next: {shown.after})" if shown.after else ""),
                "pooled verdict": _pooled_word(pv, judged),
                "pooled": _interval_text(pv, registered) if pv is not None else _unpooled_text(judged, counted),
                "newest report's verdict": newest.get("verdict", ""),
                "reports without estimates": len(runs) - len(with_estimates),
                "reports": chosen,  # of its series, with estimates (pooled when the verdict is)
                "next series": shown.after,
                "next series reports": shown.after_reports,
                "why not pooled": _why_not(pv, judged),
            }
        )
    return pd.DataFrame(rows)


def _state(closed: bool, revision: int, registered: dict[str, Any]) -> str:
    """open or closed; superseded when its claim is measured otherwise now (a higher registry revision)."""
    now = claim_registry.revision(str(registered.get("study")), str(registered.get("id")))
    if revision != now:
        return f"superseded: revision {revision} (measured as {now} now)"
    return "closed" if closed else "open"


def _has_estimates(v: dict[str, Any] | None) -> bool:
    return bool(v) and all(j.get("estimates") for j in v.get("judged") or [{}])


def _pool(registered: dict[str, Any], judged: list[dict[str, Any]], alpha: float) -> PooledVerdict | None:
    if len(judged) < 2 or not registered.get("study") or not registered.get("id"):
        return None
    if _untestable(judged):  # a precondition failed: nothing to pool
        return None
    return pooled_verdict(registered["study"], registered["id"], [v.get("judged") or [] for v in judged], alpha)


def _untestable(judged: list[dict[str, Any]]) -> bool:
    return any(v.get("verdict") == NOT_TESTABLE for v in judged)


def _never_testable(judged: list[dict[str, Any]]) -> bool:
    """Two reports or more, and none could test the claim: the series' verdict is that, not a gap."""
    return len(judged) >= 2 and all(v.get("verdict") == NOT_TESTABLE for v in judged)


def _pooled_word(pv: PooledVerdict | None, judged: list[dict[str, Any]]) -> str:
    if pv is not None:
        return pv.verdict.value
    return NOT_TESTABLE if _never_testable(judged) else "not pooled"


def _unpooled_text(judged: list[dict[str, Any]], never_testable: bool) -> str:
    """What stands for an interval where none was pooled: which precondition failed, in every report."""
    if not never_testable:
        return ""
    failed = {p.get("condition") for v in judged for p in v.get("preconditions") or [] if p.get("holds") is False}
    names = ", ".join(sorted(str(c) for c in failed if c))
    return f"in every report, precondition {names} not met" if names else "in every report, a precondition not met"


def _why_not(pv: PooledVerdict | None, judged: list[dict[str, Any]]) -> str:
    if pv is not None:
        return ""
    if len(judged) < 2:
        return f"{len(judged) or 'no'} report of its series with estimates so far: a series pools from two"
    if _untestable(judged):
        return "a report of its series could not test it (a precondition failed)"
    return "its reports recorded no estimate to pool (a share won back, before 2026-11-28) or differ in their cells"


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


INLINE_FROM = 3  # reports pooled before the line shows beside the claim: two pool to an interval of t(1)


@dataclass(frozen=True)
class Line:
    """What a claim's series says over its reports, and whether it stands beside the claim (else in its detail):
    a pooled verdict that decides, or one over INLINE_FROM reports or more."""

    text: str
    beside: bool = False


def lines(report_dir: Path, study: str, alpha: float = ALPHA) -> dict[str, Line]:
    """Verdict id -> what its claim's series says over its reports, the report in `report_dir` (being written)
    included: the pooled verdict and interval over two or more, else that this report opens its series."""
    report_dir = report_dir.resolve()  # the kernel's is relative ("results/..", where the report is written)
    root = report_dir.parent.parent
    df = collect(root, study, this=report_dir)
    if not len(df) or report_dir.name not in set(df["run"]):
        return {}  # not under reports/<study>/ (an interactive run), or no verdict recorded
    mine = df[df["run"] == report_dir.name]
    keys = {tuple(r[c] for c in SERIES) for _, r in mine.iterrows()}  # its claims' own series, nothing else
    table = pooled(root, study, df[df[SERIES].apply(tuple, axis=1).isin(keys)], alpha)
    return {str(row["verdict id"]): _line(row, report_dir.name) for row in table.to_dict("records")}


def _line(row: dict[str, Any], me: str) -> Line:
    k = int(row["reports pooled"])
    if row["newest report's verdict"] == NOT_TESTABLE:
        return Line("not pooled: this report could not test it (a precondition failed)")
    if k >= 2 and me in row["reports"]:
        decided = row["pooled verdict"] in ("reproduced", "not reproduced")
        text = f"over {k} reports of its series since {row['since']}: {row['pooled verdict']}, {row['pooled']}"
        return Line(text, beside=decided or k >= INLINE_FROM)
    if k >= 2:
        opened = f"a new series ({row['next series']} so far)" if row["next series reports"] > 1 else ""
        return Line(
            f"{opened or 'the first report of a new series'}; the last ({k} reports since {row['since']}) closed "
            f"{row['pooled verdict']}, {row['pooled']}"
        )
    if len(row["reports"]) >= 2:
        return Line(f"not pooled: {row['why not pooled']}")
    if row["reports without estimates"]:
        return Line("not pooled: the reports before this one recorded no estimates")
    return Line("the first report of its series here: from the next one on, this line pools them")
