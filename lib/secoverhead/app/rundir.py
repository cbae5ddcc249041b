"""Where a run goes: reports/<study>/<UTC time>-<host>-<params>/, never overwriting an earlier one, and
reports/<study>/latest pointing at the newest."""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
from pathlib import Path


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


def point_latest(run_dir: Path) -> None:
    """reports/<study>/latest -> the newest run; a `latest` that is not a link (a folder someone made) is left
    alone and said."""
    latest = run_dir.parent / "latest"
    if latest.exists() and not latest.is_symlink():
        raise OSError(f"{latest} is not a link; left as it is")
    tmp = run_dir.parent / f".latest-{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(run_dir.name)
    os.replace(tmp, latest)
