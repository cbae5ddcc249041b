"""reports/index.html: every run, newest first per study, with its status, parameters, data and headline
verdicts. A corrupt record is reported and skipped, never fatal; a run whose owner is gone shows as
interrupted; the page is written atomically."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.core.files import SCHEMA, atomic_write_json, atomic_write_text, read_json
from secoverhead.core.report import Report, readable, why_unread
from secoverhead.core.runs import (
    EMBEDDED,
    counting,
    describe,
    from_the_future,
    leaving,
    runs_of,
    status_of,
)
from secoverhead.reporting import summary
from secoverhead.series import reports
from secoverhead.series.standing import with_standing
from secoverhead.studies import STUDIES
from secoverhead.suite import history, standing
from secoverhead.suite.notebooks import NOTEBOOKS


def build_index(reports_root: str | Path = "reports") -> Path:
    root = Path(reports_root)
    root.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    studies, summaries, everything = [], [], []
    detected: list[history.Change] = []
    tonight: list[pd.DataFrame] = []  # every study's series: their newest reports share one night's alpha
    for study in NOTEBOOKS.values():
        rows, glance = [], None
        counts = counting(root / study.id)
        for run in runs_of(root / study.id):
            if outside := leaving(run):  # a report is read only inside itself
                skipped += [f"{study.id}/{run.name}/{f} (a link out of its run folder)" for f in outside[:3]]
                continue
            row, listed = _row(root, study.id, run, skipped)
            row["counts"] = run == counts
            rows.append(row)
            if run == counts and (listed or row["headline"]):
                glance = (run, listed)
        if glance is not None:  # the run that counts: a smoke run never displaces a quick or full one
            run, listed = glance
            listed = _standing(run, study.id, listed, skipped)
            everything += listed
            summaries.append(
                {
                    "title": study.title,
                    "run": describe(run),
                    "link": f"{study.id}/{run.name}/report.html",
                    "claims": summary.claims_html(listed, details=False) if listed else "",
                    "headline": _headline(run),
                }
            )
        hist = ""
        if rows and study.id in STUDIES:
            try:
                df = reports.collect(root, study.id)
                if len(df):
                    history.export_csv(df, root / "history" / f"{study.id}.csv")
                    detected += history.changes(df, root)
                    tonight.append(df)
                hist = standing.section(root, study.id, df) + history.section(root, study.id, study.title, df)
            except Exception as exc:  # history is a view; a corrupt old run must not cost the index
                hist = f"<p><small>history unavailable: {html.escape(str(exc)[:200])}</small></p>"
        rows.sort(key=lambda r: (r["target"] != EMBEDDED, r["target"]))  # stable: newest first per target
        studies.append({"id": study.id, "title": study.title, "runs": rows, "history": hist})
    detected += _newest_steps(tonight, root, detected)
    page = summary.template("index.html.j2").render(
        studies=studies,
        summaries=summaries,
        tally=_glance_tally(everything),
        skipped=skipped,
        changes=sorted(detected, key=lambda c: (bool(c.expected), c.date), reverse=False),
    )
    out = root / "index.html"
    atomic_write_text(out, page)
    write_changes(root, detected)
    return out


def _newest_steps(dfs: list[pd.DataFrame], root: Path, found: list[history.Change]) -> list[history.Change]:
    """Each series' newest report against its predecessors (history.newest_steps), those E-divisive had not
    already found at that report."""
    if not dfs:
        return []
    seen = {(c.study, c.claim_id, c.scale, c.target, c.run) for c in found}
    steps = history.newest_steps(pd.concat(dfs, ignore_index=True), root)
    return [c for c in steps if (c.study, c.claim_id, c.scale, c.target, c.run) not in seen]


def write_changes(root: Path, detected: list[history.Change]) -> Path:
    """reports/history/changes.json: every change point detected, for a scheduler or CI to read (`index
    --fail-on-change` exits 1 on one not marked expected)."""
    path = root / "history" / "changes.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {"schema": SCHEMA, "changes": history.change_dicts(detected)})
    return path


def unexpected_changes(root: Path) -> list[dict[str, Any]]:
    """The changes of the last index not marked expected."""
    data = read_json(Path(root) / "history" / "changes.json")
    found = data.get("changes") if isinstance(data, dict) else None
    return [c for c in found or [] if isinstance(c, dict) and not c.get("expected")]


def glance(root: Path) -> dict[str, str | None]:
    """The run that counts of every study, by name (None where no run finished ok)."""
    out: dict[str, str | None] = {}
    for study in NOTEBOOKS.values():
        run = counting(Path(root) / study.id)
        out[study.id] = None if run is None else run.name
    return out


FUTURE = "its recorded start is in the future (its host's clock is ahead, or the record was altered): it never counts"


def _row(root: Path, study: str, run: Path, skipped: list[str]) -> tuple[dict[str, Any], list[dict]]:
    """One run's line of the index, and its verdicts."""
    report = readable(run)
    if report is None:
        skipped.append(f"{study}/{run.name}/run.json ({why_unread(run)})")
        report = Report(run, study, "")
    verdicts = read_verdicts(run)
    if verdicts is None and (run / "results" / "verdicts.json").exists():
        skipped.append(f"{study}/{run.name}/results/verdicts.json")
    listed = [v for v in (verdicts or {}).get("verdicts", []) if isinstance(v, dict)]
    # the originals' claims first, extensions and the suite's own hypotheses after and marked (counted apart)
    ordered = sorted(listed, key=summary.source_rank)
    params = report.parameters
    row = {
        "name": run.name,
        "scale": report.scale,
        "counts": False,
        "links": [
            (f, f"{study}/{run.name}/{f}") for f in ("report.html", "report.ipynb", "run.json") if (run / f).exists()
        ],
        "data": [
            (f"{p.parent.name}.csv", f"{study}/{run.name}/{p.relative_to(run)}")
            for p in sorted(run.glob("results/*/results.csv"))
        ],
        "status": status_of(report),
        "target": report.target or EMBEDDED,
        "clients": ", ".join(report.client_hosts),
        "error": "; ".join(filter(None, (report.error, FUTURE if from_the_future(report) else ""))),
        "duration": "" if report.duration_s is None else report.duration_s,
        "parameters": ", ".join(f"{k}={v}" for k, v in params.items()) if isinstance(params, dict) else "",
        "tally": _tally(listed),
        "headline": _headline(run),
        "verdicts": [
            {
                "verdict": str(v.get("verdict")),
                "colour": summary.COLOURS.get(str(v.get("verdict")), "#555"),
                "claim": str(v.get("claim")),
                "mark": summary.SOURCE_MARKS.get(str(v.get("source")), ""),
            }
            for v in ordered
        ],
    }
    return row, listed


def _glance_tally(verdicts: list[dict]) -> str:
    """The first screen's tally, and what it counted each claim by."""
    note = summary.counted_as(verdicts)
    return summary.tally(verdicts) + (f" ({note}.)" if note else "")


def _standing(run: Path, study: str, listed: list[dict], skipped: list[str]) -> list[dict]:
    """The run's verdicts with their series' standing verdicts; as they are where the series cannot be read (the
    history is a view: a corrupt old report must not cost the first screen)."""
    try:
        return with_standing(run, study, listed)
    except Exception as exc:
        skipped.append(f"{study}: standing verdicts unavailable ({str(exc)[:120]})")
        return listed


def _headline(run: Path) -> list[str]:
    """The cost calculator's sentences (results/cost.json), for the index; none for a study's run."""
    data = read_json(run / "results" / "cost.json")
    lines = data.get("headline") if isinstance(data, dict) else None
    return [str(x) for x in lines] if isinstance(lines, list) else []


def _tally(verdicts: list[dict]) -> str:
    """Decided counts per source (summary.SOURCES), those not testable here apart: they are neither decided nor
    undecided by the data."""
    out = []
    for rank, name in enumerate(summary.SOURCES.values()):
        mine = [v for v in verdicts if summary.source_rank(v) == rank]
        if mine:
            decided = sum(v.get("verdict") in ("reproduced", "not reproduced") for v in mine)
            untestable = sum(v.get("verdict") == "not testable here" for v in mine)
            text = f"{name}: {decided} of {len(mine)} decided"
            out.append(text + (f", {untestable} not testable here" if untestable else ""))
    return "; ".join(out)
