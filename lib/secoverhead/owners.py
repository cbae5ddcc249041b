"""Owners: everything the library leaves on disk or in the kernel (private directories, cgroups, journals,
run records) carries the PID of the process that made it, so a later start can tell whether its owner is
still alive and clean up after one that crashed."""

from __future__ import annotations

import os
from typing import Any


def alive(pid: Any) -> bool:
    """Whether a process with this PID exists (a PID we cannot signal belongs to someone, so it is alive)."""
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
    return True
