"""Changes marked expected: a DBA who upgraded OpenSSL, moved to a new instance class or switched a setting knows
the history will show a step there; marking it (`secoverhead expect`) keeps it listed, with the reason, but not
as an alarm. Kept in reports/expected.yaml beside the runs, so it travels with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import atomic_write_text
from secoverhead.core.params import read_yaml
from secoverhead.core.report import read_report

FILE = "expected.yaml"


def load(root: Path, *, strict: bool = False) -> list[dict[str, Any]]:
    """The marks, read bounded (core.params.read_yaml): an unreadable file is no marks (the index then shows
    every change as an alarm), or with strict a ConfigError (`expect` must not write over marks it cannot read)."""
    path = Path(root) / FILE
    if not path.exists() and not path.is_symlink():
        return []
    try:
        data = read_yaml(path, "the expectations file")
    except ConfigError:
        if strict:
            raise
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def problem(root: Path) -> str:
    """Why the marks cannot be read, in one line ("" when they can, or there are none): `index` says it, since
    every change then shows as an alarm."""
    path = Path(root) / FILE
    if not path.exists() and not path.is_symlink():
        return ""
    try:
        data = read_yaml(path, "the expectations file")
    except ConfigError as exc:
        why = str(exc)
    else:
        if data is None or (isinstance(data, list) and all(isinstance(d, dict) for d in data)):
            return ""
        why = f"the expectations file {path} holds something other than a list of marks"
    return f"{why}; every change is shown as not expected until it is mended"


def why(marks: list[dict[str, Any]], study: str, claim_id: str, target: str, run: str) -> str:
    """The reason a change at `run` was marked expected ("" when it was not). A mark without a claim or target
    covers every claim or target of the study at that run; a mark of a claim covers each of its cells' series
    ('id [cell]')."""
    for m in marks:
        if (
            m.get("study") == study
            and str(m.get("run")) == run
            and m.get("claim", claim_id) in (claim_id, claim_id.split(" [")[0], "*")
            and m.get("target", target) in (target, "*")
        ):
            return str(m.get("why") or "expected")
    return ""


def mark(root: Path, study: str, run: str, why_text: str, claim: str = "*", target: str = "*") -> Path:
    """Record that the change at `run` (the first run after it) is expected, and why."""
    root = Path(root)
    if Path(run).name != run or run in (".", ".."):  # a path would leave the study's folder (an audit run for tls)
        raise ConfigError(f"{run[:120]!r}: name a run by its folder under {study}/, not by a path")
    report = read_report(root / study / run)
    if report is None or report.study != study:
        raise ConfigError(f"{root / study / run} is not a run of study {study!r}")
    if not why_text.strip():
        raise ConfigError("say why the change is expected (--why)")
    marks = [
        m
        for m in load(root, strict=True)
        if not (
            m.get("study") == study
            and str(m.get("run")) == run
            and m.get("claim", "*") == claim
            and m.get("target", "*") == target
        )
    ]
    marks.append({"study": study, "run": run, "claim": claim, "target": target, "why": why_text.strip()[:300]})
    path = root / FILE
    atomic_write_text(path, yaml.safe_dump(marks, sort_keys=False, allow_unicode=True))
    return path
