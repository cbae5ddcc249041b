"""Keep what a reviewer and a DBA see of a `make reports`: each study's first screen (taken in Chromium when its
run finished), the index's, and one profiled report opened in JupyterLab, its flame graph in view.

    .venv/bin/python scripts/screens.py reports docs/screens
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from secoverhead.core.runs import counting
from secoverhead.reporting import browser


def main(reports: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    profiled = None
    for study in sorted(p for p in reports.iterdir() if p.is_dir() and p.name not in ("history", "screens")):
        run = counting(study)
        if run is None:
            continue
        shot = run / "results" / "screens" / "first-screen.png"
        if shot.exists():
            shutil.copy(shot, out / f"{study.name}-first-screen.png")
            print(f"{study.name}: {run.name}")
        seen = json.loads((run / "run.json").read_text()).get("first_screen") or {}
        profiled = profiled or (run if seen.get("flamegraphs") else None)
    if (reports / "index.html").exists():  # what the README links as the first page a user opens
        browser.first_screen(reports / "index.html", out / "index.png")
        print("index: index.png")
    if profiled is None:
        print("no profiled report to open in JupyterLab", file=sys.stderr)
        return 1
    view = browser.in_jupyterlab(profiled / "report.ipynb", out / f"jupyterlab-{profiled.parent.name}.png")
    print(f"JupyterLab: {profiled.parent.name}/{profiled.name}: {view}")
    return 0 if view.flamegraphs and view.first_visible else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
