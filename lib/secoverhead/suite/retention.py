"""Retention: nightly runs add up (one `make reports` is about 36 MB; a year of them, over 10 GB). `prune` keeps
the newest runs whole and, of older ones, what the index and the history read: run.json, the verdicts, the speed
reference, the rendered report and each experiment's run records and long table (results.csv). It drops what can
be remade or is only for pictures: raw samples, per-interval files, profiles and flame graphs, screenshots, the
executed notebook (the HTML holds what it showed) and the Parquet copy of the long table. A pruned run says so in
its run.json; a run still in progress is never touched."""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass
from pathlib import Path

from secoverhead.core.files import atomic_write_json, read_json
from secoverhead.core.owners import alive
from secoverhead.core.runs import runs_of
from secoverhead.suite.notebooks import NOTEBOOKS

DROP_DIRS = ("samples", "intervals", "profiles", "screens")
DROP_FILES = ("report.ipynb", "results.parquet")


@dataclass
class Pruned:
    run: Path
    freed: int  # bytes
    kept: int  # bytes left


def _size(p: Path) -> int:
    if p.is_symlink() or not p.exists():
        return 0
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file() and not f.is_symlink())


def droppable(run: Path) -> list[Path]:
    """What pruning removes from one run directory."""
    out = [run / f for f in DROP_FILES if (run / f).is_file()]
    results = run / "results"
    if results.is_dir():
        for exp in results.iterdir():
            if exp.is_dir() and not exp.is_symlink():
                out += [exp / d for d in DROP_DIRS if (exp / d).is_dir()]
                out += [exp / f for f in DROP_FILES if (exp / f).is_file()]
        if (results / "screens").is_dir():
            out.append(results / "screens")
    return out


def _started(run: Path) -> dt.datetime | None:
    meta = read_json(run / "run.json")
    try:
        return (
            dt.datetime.fromisoformat(str(meta.get("started")).replace("Z", "+00:00"))
            if isinstance(meta, dict)
            else None
        )
    except ValueError:
        return None


def plan(root: Path, keep: int | None = None, older_than_days: float | None = None) -> list[Path]:
    """The runs to prune: per study, all but the `keep` newest, and (or) those started more than `older_than_days`
    ago; never one in progress, never one already pruned."""
    now = dt.datetime.now(dt.UTC)
    out = []
    for study in NOTEBOOKS:
        for i, run in enumerate(runs_of(root / study)):  # newest first
            meta = read_json(run / "run.json")
            if not isinstance(meta, dict) or meta.get("pruned"):
                continue
            if meta.get("status") == "running" and alive(meta.get("owner_pid")):
                continue
            old = keep is not None and i >= keep
            started = _started(run)
            aged = older_than_days is not None and started is not None and (now - started).days >= older_than_days
            if (keep is None or old) and (older_than_days is None or aged):
                out.append(run)
    return out


def prune(runs: list[Path], *, dry_run: bool = False) -> list[Pruned]:
    """Drop each run's droppable parts (or, dry, say what they weigh)."""
    done = []
    for run in runs:
        gone = droppable(run)
        freed = sum(_size(p) for p in gone)
        if not dry_run:
            for p in gone:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            meta = read_json(run / "run.json")
            if isinstance(meta, dict):
                meta["pruned"] = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "freed_bytes": freed}
                atomic_write_json(run / "run.json", meta)
        done.append(Pruned(run, freed, _size(run) - (freed if dry_run else 0)))
    return done
