"""reports/index.html: every run, newest first per study, with its status and headline verdicts."""

from __future__ import annotations

import html
import json
from pathlib import Path

from .report import read_verdicts
from .studies import STUDIES

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}
.ok{color:#176317}.failed{color:#a31515}.reproduced{color:#176317}.not-reproduced{color:#a31515}
.inconclusive{color:#8a6d00}small{color:#555}"""


def build_index(reports_root: str | Path = "reports") -> Path:
    root = Path(reports_root)
    root.mkdir(parents=True, exist_ok=True)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>secoverhead reports</title>",
        f"<style>{_CSS}</style></head><body><h1>secoverhead reports</h1>",
    ]
    for study in STUDIES.values():
        parts.append(f"<h2>{html.escape(study.title)} <small>({study.id})</small></h2>")
        runs = (
            sorted((p for p in (root / study.id).glob("*") if p.is_dir() and not p.is_symlink()), reverse=True)
            if (root / study.id).is_dir()
            else []
        )
        if not runs:
            parts.append(
                "<p><small>no runs yet" + ("" if study.available else " (notebook not written yet)") + "</small></p>"
            )
            continue
        parts.append("<table><tr><th>run</th><th>status</th><th>duration</th><th>verdicts</th></tr>")
        for run in runs:
            meta = json.loads((run / "run.json").read_text()) if (run / "run.json").exists() else {}
            status = meta.get("status", "unknown")
            links = " ".join(
                f"<a href='{study.id}/{run.name}/{f}'>{f.split('.')[-1]}</a>"
                for f in ("report.html", "report.ipynb")
                if (run / f).exists()
            )
            verdicts = read_verdicts(run)
            vhtml = "<br>".join(
                f"<span class='{v['verdict'].replace(' ', '-')}'>{html.escape(v['verdict'])}</span>: "
                f"{html.escape(v['claim'])}"
                for v in (verdicts or {}).get("verdicts", [])
            )
            err = f"<br><small>{html.escape(str(meta.get('error')))}</small>" if meta.get("error") else ""
            parts.append(
                f"<tr><td>{html.escape(run.name)}<br>{links}</td><td class='{status}'>{status}{err}</td>"
                f"<td>{meta.get('duration_s', '')} s</td><td>{vhtml}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    out = root / "index.html"
    out.write_text("\n".join(parts))
    return out
