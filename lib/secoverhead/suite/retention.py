"""Retention: nightly runs add up (one `make reports` is about 36 MB; a year of them, over 10 GB). `prune` keeps
the newest runs whole and, of older ones, what the index and the history read: run.json, the verdicts, the speed
reference, the rendered report and each experiment's run records and long table (results.csv). It drops what can
be remade or is only for pictures: raw samples, per-interval files, profiles and flame graphs, screenshots, the
executed notebook (the HTML holds what it showed) and the Parquet copy of the long table. A pruned run says so in
its run.json.

What it deletes it owns: nothing behind a symbolic link (a run's `results` linked elsewhere is left whole, and
said so), nothing of a run being written. A run in progress is one whose lock (run.lock) is held, on this
machine in any PID namespace, or whose run.json says running by an owner alive (core.runs.running: another
host's run by its lease); prune holds the run's lock while it deletes, so no resume starts under it. The dry run
plans the same list."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import atomic_write_json
from secoverhead.core.report import readable
from secoverhead.core.runlock import RunLock
from secoverhead.core.runs import running, runs_of, started_at
from secoverhead.suite.notebooks import NOTEBOOKS

DROP_DIRS = ("samples", "intervals", "profiles", "screens")
DROP_FILES = ("report.ipynb", "results.parquet")


@dataclass
class Pruned:
    run: Path
    freed: int  # bytes
    kept: int  # bytes left
    skipped: str = ""  # why nothing was deleted (its lock held, a link out of the run)


def _size(p: Path) -> int:
    """Bytes under p, links not followed."""
    if p.is_symlink() or not p.exists():
        return 0
    if p.is_file():
        return p.stat().st_size
    total = 0
    for top, _dirs, files in os.walk(p):  # followlinks=False
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(top, f)).st_size
    return total


def _own(p: Path, run: Path) -> bool:
    """p lies inside run with no link on the way (each component checked, not only the resolved path)."""
    try:
        rel = p.relative_to(run)
    except ValueError:
        return False
    q = run
    for part in rel.parts:
        q = q / part
        if q.is_symlink():
            return False
    return True


def droppable(run: Path) -> list[Path]:
    """What pruning removes from one run directory: never anything reached through a link."""
    out = [run / f for f in DROP_FILES]
    results = run / "results"
    if _own(results, run) and results.is_dir():
        for exp in sorted(results.iterdir()):
            if _own(exp, run) and exp.is_dir():
                out += [exp / d for d in DROP_DIRS] + [exp / f for f in DROP_FILES]
        out.append(results / "screens")
    return [p for p in out if _own(p, run) and (p.is_dir() if p.name in DROP_DIRS else p.is_file())]


def links_out(run: Path) -> list[Path]:
    """Links among the places pruning would look: left as they are, and said."""
    results = run / "results"
    found = [results] if results.is_symlink() else []
    if not found and results.is_dir():
        for exp in sorted(results.iterdir()):
            found += [exp] if exp.is_symlink() else [exp / d for d in DROP_DIRS if (exp / d).is_symlink()]
    return found


def _started(run: Path) -> dt.datetime | None:
    start = started_at(readable(run))
    return None if start is None else dt.datetime.fromtimestamp(start, dt.UTC)


def plan(root: Path, keep: int | None = None, older_than_days: float | None = None) -> list[Path]:
    """The runs to prune: per study, all but the `keep` newest, and (or) those started more than `older_than_days`
    ago; never one in progress, never one already pruned."""
    now = dt.datetime.now(dt.UTC)
    out = []
    for study in NOTEBOOKS:
        for i, run in enumerate(runs_of(root / study)):  # newest first
            report = readable(run)
            if report is None or report.recorded.get("pruned"):
                continue
            if running(run):
                continue
            old = keep is not None and i >= keep
            started = _started(run)
            aged = older_than_days is not None and started is not None and (now - started).days >= older_than_days
            if (keep is None or old) and (older_than_days is None or aged):
                out.append(run)
    return out


def prune(runs: list[Path], *, dry_run: bool = False) -> list[Pruned]:
    """Drop each run's droppable parts (or, dry, say what they weigh), each run under its lock."""
    done = []
    for run in runs:
        try:
            lock = RunLock(run).acquire()
        except ConfigError as exc:  # being written, here or in another PID namespace: not ours to touch now
            done.append(Pruned(run, 0, _size(run), skipped=str(exc)))
            continue
        try:
            done.append(_prune_one(run, dry_run))
        finally:
            lock.release()
    return done


def _prune_one(run: Path, dry_run: bool) -> Pruned:
    if running(run):  # started between plan and lock (another host's run, by its lease)
        return Pruned(run, 0, _size(run), skipped="being written")
    gone = droppable(run)
    freed = sum(_size(p) for p in gone)
    links = links_out(run)
    if not dry_run:
        for p in gone:
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        report = readable(run)
        if report is not None:
            pruned = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "freed_bytes": freed}
            atomic_write_json(run / "run.json", {**report.recorded, "pruned": pruned})
    skipped = f"links left as they are: {', '.join(str(p.relative_to(run)) for p in links)}" if links else ""
    return Pruned(run, freed, _size(run) - (freed if dry_run else 0), skipped=skipped)
