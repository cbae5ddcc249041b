"""reports/index.html: every run, newest first per study, with its status, parameters, data and headline
verdicts. A corrupt record is reported and skipped, never fatal; a run whose owner is gone shows as
interrupted; the page is written atomically."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.core.files import atomic_write_text, read_json, within
from secoverhead.core.owners import alive
from secoverhead.studies import STUDIES
from secoverhead.suite import history

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}
.ok{color:#176317}.failed{color:#a31515}.interrupted{color:#8a6d00}.reproduced{color:#176317}
.not-reproduced{color:#a31515}.inconclusive{color:#8a6d00}small{color:#555}"""


def run_status(meta: dict[str, Any]) -> str:
    """A run recorded as running whose owner is gone was interrupted (a crash, a SIGKILL)."""
    status = str(meta.get("status", "unknown"))
    if status == "running" and not alive(meta.get("owner_pid")):
        return "interrupted"
    return status


def runs_of(root: Path, study: str) -> list[Path]:
    d = root / study
    return sorted((p for p in d.glob("*") if p.is_dir() and not p.is_symlink()), reverse=True) if d.is_dir() else []


def build_index(reports_root: str | Path = "reports") -> Path:
    root = Path(reports_root)
    root.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>secoverhead reports</title>",
        f"<style>{_CSS}</style></head><body><h1>secoverhead reports</h1>",
    ]
    for study in STUDIES.values():
        parts.append(f"<h2>{html.escape(study.title)} <small>({study.id})</small></h2>")
        runs = runs_of(root, study.id)
        if not runs:
            parts.append("<p><small>no runs yet</small></p>")
            continue
        parts.append("<table><tr><th>run</th><th>status</th><th>duration</th><th>parameters</th><th>verdicts</th></tr>")
        for run in runs:
            outside = [f for f in ("run.json", "verdicts.json", "results/verdicts.json") if not within(run / f, root)]
            if outside:  # a link out of the reports tree is never read
                skipped += [f"{study.id}/{run.name}/{f} (a link out of the reports folder)" for f in outside]
                continue
            meta = read_json(run / "run.json")
            if not isinstance(meta, dict):
                skipped.append(f"{study.id}/{run.name}/run.json")
                meta = {}
            status = run_status(meta)
            links = " ".join(
                f"<a href='{study.id}/{run.name}/{f}'>{html.escape(f)}</a>"
                for f in ("report.html", "report.ipynb", "run.json")
                if (run / f).exists()
            )
            data = " ".join(
                f"<a href='{study.id}/{run.name}/{p.relative_to(run)}'>{html.escape(p.parent.name)}.csv</a>"
                for p in sorted(run.glob("results/*/results.csv"))
            )
            verdicts = read_verdicts(run)
            if verdicts is None and (run / "results" / "verdicts.json").exists():
                skipped.append(f"{study.id}/{run.name}/results/verdicts.json")
            listed = [v for v in (verdicts or {}).get("verdicts", []) if isinstance(v, dict)]
            # the originals' claims first, the suite's own hypotheses after and marked (counted apart)
            vhtml = "<br>".join(
                "<span "
                f"class='{str(v.get('verdict', '')).replace(' ', '-')}'>{html.escape(str(v.get('verdict')))}</span>: "
                f"{html.escape(str(v.get('claim')))}" + (" <small>(the suite's own)</small>" if own else "")
                for own in (False, True)
                for v in listed
                if (v.get("source") == "suite") == own
            )
            tally = _tally(listed)
            vhtml = f"<small>{html.escape(tally)}</small><br>{vhtml}" if tally else vhtml
            params = meta.get("parameters") or {}
            ptxt = html.escape(", ".join(f"{k}={v}" for k, v in params.items())) if isinstance(params, dict) else ""
            err = f"<br><small>{html.escape(str(meta.get('error')))}</small>" if meta.get("error") else ""
            parts.append(
                f"<tr><td>{html.escape(run.name)}<br>{links}<br><small>{data}</small></td>"
                f"<td class='{status}'>{status}{err}</td><td>{meta.get('duration_s', '')} s</td>"
                f"<td><small>{ptxt or 'profile defaults'}</small></td><td>{vhtml}</td></tr>"
            )
        parts.append("</table>")
        try:
            parts.append(history.section(root, study.id, study.title))
        except Exception as exc:  # history is a view; a corrupt old run must not cost the index
            parts.append(f"<p><small>history unavailable: {html.escape(str(exc)[:200])}</small></p>")
    if skipped:
        parts.append(
            "<p><small>skipped (unreadable, not a regular file, too large, or a link out): "
            + html.escape(", ".join(skipped))
            + "</small></p>"
        )
    parts.append("</body></html>")
    out = root / "index.html"
    atomic_write_text(out, "\n".join(parts))
    return out


def _tally(verdicts: list[dict]) -> str:
    """Decided counts, the originals' claims apart from the suite's own (a run from before the registry has
    no source: counted as published, which every claim then was taken to be)."""
    out = []
    for own, name in ((False, "published"), (True, "the suite's own")):
        mine = [v for v in verdicts if (v.get("source") == "suite") == own]
        if mine:
            decided = sum(v.get("verdict") in ("reproduced", "not reproduced") for v in mine)
            out.append(f"{name}: {decided} of {len(mine)} decided")
    return "; ".join(out)
