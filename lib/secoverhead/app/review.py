"""What a finished report looks like to the people who read it: its first screen in Chromium (every verdict's
numbers read back against verdicts.json) and its notebook signed for JupyterLab. Views, never failures of the
run: a browser that cannot start, a signature database that cannot be written, is said and nothing else."""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

from secoverhead.analysis.verdicts import read_verdicts


def first_screen(run_dir: Path) -> dict[str, Any]:
    """What a reviewer's first 1280x800 shows, measured in Chromium, its screenshot kept with the results, and
    the verdicts whose shown numbers differ from the recorded ones (`misread`)."""
    from secoverhead.reporting import browser  # deferred: Playwright
    from secoverhead.reporting.summary import misread, on_the_first_screen

    shot, error, t0 = run_dir / "results" / "screens" / "first-screen.png", "", time.monotonic()
    recorded = [v for v in (read_verdicts(run_dir) or {}).get("verdicts") or [] if isinstance(v, dict)]
    for _ in range(2):  # once more: a navigation to a report that has just finished can fail once
        try:
            seen = dataclasses.asdict(browser.first_screen(run_dir / "report.html", shot))
            took = round(time.monotonic() - t0, 1)  # what the review costs a run (make reports has 15 min)
            shown = [v for v in recorded if on_the_first_screen(v)]  # the builds beside fold below them
            return seen | {"misread": misread(seen.pop("claim_lines"), shown), "seconds": took}
        except Exception as exc:
            # Playwright's message is its first line; the lines after it are its call log
            first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
            error = f"{type(exc).__name__}: {first}"[:200]
    return {"error": error}


def sign(notebook: Path) -> None:
    """Signed after the secret scan (which may rewrite it), so JupyterLab draws its flame graphs."""
    from secoverhead.reporting.render import trust

    try:
        trust(notebook)
    except Exception as exc:  # a read-only home, a locked signature database: JupyterLab shows alt text then
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        logging.getLogger("secoverhead").warning("report not signed for JupyterLab: %s", first[:200])
