"""Owners: everything the library leaves on disk or in the kernel (private directories, cgroups, network
namespaces, journals, run records) carries its owner's token, so a later start can tell whether the owner is
still alive and clean up after one that crashed.

A PID alone does not say that: a process in another PID namespace on this machine (a container, `unshare -p`)
has PIDs of its own, and a PID is reused. So a token is `PID.NS.START`: the PID, the inode of the owner's PID
namespace and its start time in clock ticks since boot. In our own namespace the PID and start time say it;
across namespaces each owner holds a flock(2) on a file named by its token in a machine-wide directory, which
the kernel drops when the owner ends in any way. Bare PIDs (records written before tokens) are read as before."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
from pathlib import Path
from typing import Any

TOKEN = re.compile(r"^(\d+)(?:\.(\d+)\.(\d+))?$")  # PID, or PID.NS.START
TOKEN_PART = r"\d+(?:\.\d+\.\d+)?"  # for patterns naming a leftover by its owner


def _registry() -> Path:
    """Machine-wide, on every PID namespace's file system, emptied at boot (PIDs and start times are per boot)."""
    shm = Path("/dev/shm")
    return (shm if shm.is_dir() else Path(tempfile.gettempdir())) / "secoverhead-owners"


_mine: dict[int, tuple[str, int | None]] = {}  # pid -> (token, fd of the held lock); a forked child makes its own


def me() -> str:
    """This process's token, registered (its lock held) on first use."""
    pid = os.getpid()
    if pid not in _mine:
        token = f"{pid}.{_pidns()}.{_start(pid) or 0}"
        _mine.clear()
        _mine[pid] = (token, _register(token))
    return _mine[pid][0]


def alive(owner: Any) -> bool:
    """Whether the owner of a token (or of a bare PID) still runs. When it cannot be told (another namespace's
    owner and no registry here) it is taken as alive: a leftover kept is cheaper than a live run's files lost."""
    m = TOKEN.match(str(owner).strip()) if owner is not None else None
    if not m:
        return False
    pid, ns, start = int(m.group(1)), m.group(2), m.group(3)
    if pid <= 0:
        return False
    if ns is None:
        return _pid_alive(pid)
    if int(ns) == _pidns():
        return _pid_alive(pid) and (int(start) == 0 or _start(pid) == int(start))
    return _lock_held(f"{pid}.{ns}.{start}")


def sweep() -> list[Path]:
    """Remove lock files no owner holds."""
    removed = []
    root = _registry()
    for f in root.glob("*.lock") if root.is_dir() else []:
        if not f.is_symlink() and not _lock_held(f.stem):
            with contextlib.suppress(OSError):
                f.unlink()
                removed.append(f)
    return removed


def _pid_alive(pid: int) -> bool:
    """A PID we cannot signal belongs to someone, so it is alive. A zombie is not: it has exited and will never
    clean up, and in containers whose init does not reap orphans a killed run's processes stay zombies."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return _stat(pid)[:1] != [b"Z"]


def _stat(pid: int) -> list[bytes]:
    """Fields of /proc/PID/stat after the command name (state first), or []."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()
    except OSError:
        return []


def _start(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[19]) if len(fields) > 19 else None


def _pidns() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _register(token: str) -> int | None:
    """Hold the token's lock for this process's life (closed on exec: a child runs under a token of its own).
    Re-opened if a sweep unlinked the file between our open and our lock."""
    root = _registry()
    try:
        root.mkdir(mode=0o1777, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(root, 0o1777)
    except OSError:
        return None
    path = root / f"{token}.lock"
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except OSError:
            pass
        os.close(fd)
    return None


def _lock_held(token: str) -> bool:
    root = _registry()
    if not root.is_dir():
        return True  # no registry on this machine: nothing can tell
    try:
        fd = os.open(root / f"{token}.lock", os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False  # every owner registers before its token is written anywhere
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # a lock we took is dropped with it
    return False
