"""Where a run goes: reports/<study>/<UTC time>-<host>-<params>/, never overwriting an earlier one, and
reports/<study>/latest pointing at the run that counts (core.runs.counting)."""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
from pathlib import Path

from secoverhead.core.errors import ConfigError
from secoverhead.core.paths import user_path
from secoverhead.core.report import read_report
from secoverhead.core.runs import check_inside, counting


def check_reports_root(root: str | os.PathLike, *, create: bool = True) -> Path:
    """The reports directory, writable; made when a run is to go there (create), else it must exist (index,
    prune, expect read one: a mistyped --reports is refused, not made)."""
    try:
        path = user_path(root)
        if path.exists() and not path.is_dir():
            raise ConfigError(f"--reports {path} is a file, not a directory")
        if not create and not path.is_dir():
            raise ConfigError(f"--reports {path}: no reports folder there")
        path.mkdir(parents=True, exist_ok=True)
        if create:
            from secoverhead.suite.notebooks import NOTEBOOKS  # deferred: the studies' registry (0.2 s)

            for child in path.iterdir():  # reports/<study> must be folders: a file there would fail a run midway
                if child.name in NOTEBOOKS and not child.is_dir():
                    raise ConfigError(f"--reports {path}: {child.name} is a file, not a study's folder; move it away")
    except (OSError, ValueError, RuntimeError) as exc:  # too long, NUL byte, ~nosuchuser
        why = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"--reports {str(root)[:120]} cannot be created: {why}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"--reports {path} is not writable")
    return path


def check_run_dir(run: str | os.PathLike) -> Path:
    """A run directory (a readable run.json naming its study), or ConfigError."""
    try:
        d = user_path(run)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    report = read_report(d)
    if report is None or not report.study:
        raise ConfigError(f"{d} is not a report directory (no readable run.json naming a study)")
    check_inside(d)
    return d


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0])[:24] or "host"


def new_run_dir(root: Path, study: str, name: str, secret_values: list[str]) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for v in secret_values:  # a file or parameter named like a password must not put it in a folder name
        if v and v in name:
            name = name.replace(v, "redacted")
    base = root / study / f"{stamp}-{_host()}-{name}"
    path, n = base, 1
    while True:
        try:
            path.mkdir(parents=True, exist_ok=False)  # never overwrite an earlier run
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")


def point_latest(study_dir: Path) -> Path | None:
    """reports/<study>/latest -> the run that counts (the newest finished ok of the largest scale), or no link
    while no run has finished ok; a `latest` that is not a link (a folder someone made) is left alone and said."""
    latest = study_dir / "latest"
    if latest.exists() and not latest.is_symlink():
        raise OSError(f"{latest} is not a link; left as it is")
    run = counting(study_dir)
    if run is None:
        latest.unlink(missing_ok=True)
        return None
    tmp = study_dir / f".latest-{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(run.name)
    os.replace(tmp, latest)
    return run
