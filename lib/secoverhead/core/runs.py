"""Which run counts: a study's runs under reports/<study>/, their scale and status, and the one every view
uses (`latest`, the index's glance, the history's headline, the calculator's sources): the newest run that
finished ok, of the largest scale available. A smoke run is listed everywhere and never promoted over a
quick or full one: it checks that a study runs, not what a feature costs. Age is the start each run recorded, not
its folder's name (a copied-in run, or one from a host whose clock is ahead, may be named anything); a start in
the future is flagged and never counts."""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
from pathlib import Path

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import within
from secoverhead.core.owners import alive
from secoverhead.core.report import SCALES, Report, readable

# a parameter set of the user's own (4c16g, a file of theirs) ranks with quick: larger than a smoke run's
# check, and no claim to be the original's full scale
OTHER_RANK = 1
# A run recorded as running by another host (a shared reports folder) cannot be asked whether its owner lives:
# it counts as running until this long after its run.json was last written (a run writes it at every part's
# end; no part of a full-scale study takes a day), then as interrupted.
FOREIGN_LEASE_S = 24 * 3600
# A recorded start this far ahead of this host's clock is from the future (clocks disagree, or a record was made
# up): such a run is flagged, sorts as the oldest and never counts. Ten minutes covers clocks kept by NTP.
FUTURE_SKEW_S = 600


EMBEDDED = "this machine's servers"  # the target of a run on the servers the suite starts


def leaving(run_dir: Path) -> list[str]:
    """What under a run folder leads out of it, links followed (names relative to it): a report folder copied in
    from elsewhere, or made by someone else, whose report.html is a link to /etc/shadow must not have a reader
    print that file. Every reader of a report reads only inside it."""
    root, out = Path(run_dir), []
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(here) / name
            if path.is_symlink() and not within(path, root):
                out.append(str(path.relative_to(root)))
    return sorted(out)


def check_inside(run_dir: Path) -> None:
    """ConfigError, in one line, when something under the run folder (or the folder itself, through a link other
    than a study's `latest`) leads out of it."""
    out = leaving(run_dir)
    if out:
        more = f" (and {len(out) - 1} more)" if len(out) > 1 else ""
        raise ConfigError(
            f"{run_dir}: {out[0]}{more} is a link that leads out of the run folder; a report is read only inside "
            "itself: remove the link or copy the file in"
        )


def scale_rank(scale: str) -> int:
    return SCALES.index(scale) if scale in SCALES else OTHER_RANK


def status_of(report: Report | None, written: float | None = None) -> str:
    """A run's status; one recorded as running whose owner is gone was interrupted (a crash, a SIGKILL).
    `written`: when its run.json was last written (for another host's run, see FOREIGN_LEASE_S)."""
    if report is None:
        return "unknown"
    alive_now = report.status != "running" or _owner_alive(report, written)
    return report.status if alive_now else "interrupted"


def running(run_dir: Path) -> bool:
    """Whether a run is being written now, on this host or (by its lease) another."""
    return status_of(readable(run_dir), last_written(run_dir)) == "running"


def last_written(run_dir: Path) -> float | None:
    """When a run last showed life: its run.json written, or its lock's holder line renewed (a running run renews
    it every few minutes, runlock.RENEW_S), whichever is later."""
    times = []
    for name in ("run.json", "run.lock"):
        try:
            times.append((run_dir / name).stat().st_mtime)
        except OSError:
            continue
    return max(times) if times else None


def started_at(report: Report | None) -> float | None:
    """The start a run recorded (run.json's `started`), as a Unix time; None when it recorded none readable."""
    try:
        when = dt.datetime.fromisoformat(report.started.replace("Z", "+00:00"))  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        return None
    return when.timestamp() if when.tzinfo else None


def from_the_future(report: Report | None, now: float | None = None) -> bool:
    """Whether a run recorded a start more than FUTURE_SKEW_S ahead of this host's clock."""
    start = started_at(report)
    return start is not None and start > (time.time() if now is None else now) + FUTURE_SKEW_S


def _owner_alive(report: Report, written: float | None) -> bool:
    if report.host and report.host != socket.gethostname():
        return written is None or time.time() - written < FOREIGN_LEASE_S
    return alive(report.owner or report.owner_pid)


def runs_of(study_dir: Path) -> list[Path]:
    """A study's run directories, newest first by their recorded start (the `latest` link and other links not
    counted); runs with no readable start or one from the future come last, by name."""
    return [run for run, _ in _dated(study_dir)]


def _dated(study_dir: Path) -> list[tuple[Path, Report | None]]:
    """runs_of's runs with their records, each run.json read once (one of another schema: none)."""
    if not study_dir.is_dir():
        return []
    now = time.time()
    dated = []
    for run in (p for p in study_dir.iterdir() if p.is_dir() and not p.is_symlink()):
        report = readable(run)
        start = started_at(report)
        trusted = start is not None and not from_the_future(report, now)
        dated.append(((trusted, start if trusted else 0.0, run.name), run, report))
    return [(run, meta) for _, run, meta in sorted(dated, key=lambda d: d[0], reverse=True)]


def counting(study_dir: Path) -> Path | None:
    """The run that counts: the newest that finished ok among those of the largest scale that has one."""
    return next(iter(counting_runs(study_dir)), None)


def counting_runs(study_dir: Path) -> list[Path]:
    """The runs that finished ok at the largest scale that has one, newest first: the first counts; a part it did
    not run is read from the newest of the rest that ran it (the calculator)."""
    ranked = [
        (scale_rank(report.scale), run)
        for run, report in _dated(study_dir)  # newest first
        if report is not None and status_of(report) == "ok" and not from_the_future(report)
    ]
    best = max((rank for rank, _ in ranked), default=None)
    return [run for rank, run in ranked if rank == best]


def describe(run: Path) -> str:
    """A run as every view names it: its directory and its scale."""
    report = readable(run)
    return report.describe() if report is not None else f"{run.name} (scale unknown)"
