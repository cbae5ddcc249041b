"""Owners: everything the library leaves on disk or in the kernel (private directories, cgroups, journals,
run records) carries the PID of the process that made it, so a later start can tell whether its owner is
still alive and clean up after one that crashed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def alive(pid: Any) -> bool:
    """Whether a process with this PID runs (a PID we cannot signal belongs to someone, so it is alive). A
    zombie is not: it has exited and will never clean up, and in containers whose init does not reap orphans
    a killed run's processes stay zombies indefinitely."""
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[-1].split()[:1] == [b"Z"]
