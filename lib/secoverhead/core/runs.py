"""Which run counts: a study's runs under reports/<study>/, their scale and status, and the one every view
uses (`latest`, the index's glance, the history's headline, the calculator's sources): the newest run that
finished ok, of the largest scale available. A smoke run is listed everywhere and never promoted over a
quick or full one: it checks that a study runs, not what a feature costs. Run directories start with their
UTC time, so their names sort by age."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from secoverhead.core.files import read_json
from secoverhead.core.owners import alive

SCALES = ("smoke", "quick", "full")
# a parameter set of the user's own (4c16g, a file of theirs) ranks with quick: larger than a smoke run's
# check, and no claim to be the original's full scale
OTHER_RANK = 1
# A run recorded as running by another host (a shared reports folder) cannot be asked whether its owner lives:
# it counts as running until this long after its run.json was last written (a run writes it at every part's
# end; no part of a full-scale study takes a day), then as interrupted.
FOREIGN_LEASE_S = 24 * 3600


def scale_of(params_name: Any) -> str:
    """A run's scale: the first parameter file of its set when it is one of SCALES, else the set's name."""
    first = str(params_name or "").split("+", 1)[0]
    return first if first in SCALES else str(params_name or "")


def scale_rank(scale: str) -> int:
    return SCALES.index(scale) if scale in SCALES else OTHER_RANK


def status_of(meta: Any, written: float | None = None) -> str:
    """A run's status; one recorded as running whose owner is gone was interrupted (a crash, a SIGKILL).
    `written`: when its run.json was last written (for another host's run, see FOREIGN_LEASE_S)."""
    if not isinstance(meta, dict):
        return "unknown"
    status = str(meta.get("status", "unknown"))
    return "interrupted" if status == "running" and not _owner_alive(meta, written) else status


def running(run_dir: Path) -> bool:
    """Whether a run is being written now, on this host or (by its lease) another."""
    meta = read_json(run_dir / "run.json")
    try:
        written = (run_dir / "run.json").stat().st_mtime
    except OSError:
        written = None
    return status_of(meta, written) == "running"


def _owner_alive(meta: dict[str, Any], written: float | None) -> bool:
    host = meta.get("host")
    if host and host != socket.gethostname():
        return written is None or time.time() - written < FOREIGN_LEASE_S
    return alive(meta.get("owner") or meta.get("owner_pid"))


def runs_of(study_dir: Path) -> list[Path]:
    """A study's run directories, newest first (the `latest` link and other links not counted)."""
    if not study_dir.is_dir():
        return []
    return sorted((p for p in study_dir.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True)


def counting(study_dir: Path) -> Path | None:
    """The run that counts: the newest that finished ok among those of the largest scale that has one."""
    best: tuple[int, Path] | None = None
    for run in runs_of(study_dir):  # newest first: the first of a rank is the newest of it
        meta = read_json(run / "run.json")
        if status_of(meta) != "ok":
            continue
        rank = scale_rank(scale_of(meta.get("params_name")))
        if best is None or rank > best[0]:
            best = (rank, run)
    return best[1] if best else None


def describe(run: Path) -> str:
    """A run as every view names it: its directory and its scale."""
    meta = read_json(run / "run.json")
    scale = scale_of(meta.get("params_name")) if isinstance(meta, dict) else ""
    return f"{run.name} ({scale or 'scale unknown'})"
