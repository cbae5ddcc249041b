"""One writer per run directory: `run.lock`, held with flock(2) for the run's life.

The kernel releases a flock when its holder exits in any way (SIGKILL included), so a lock is never stale, and it
holds across PID namespaces. The file also records the holder (PID, host, owner token, when), to say who holds
it, and because a flock does not reach from one host to another over most shared folders: a lock written by
another host is respected until that run's lease ends (core.runs.FOREIGN_LEASE_S after its run.json or lock was
last written). Two `--resume` of one run would otherwise both measure and overwrite each other's records."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
import time
from pathlib import Path

from secoverhead.core import owners
from secoverhead.core.errors import ConfigError
from secoverhead.core.runs import FOREIGN_LEASE_S, last_written

NAME = "run.lock"
RENEW_S = 300.0  # a running run renews its lock's date this often (far inside FOREIGN_LEASE_S)


class RunLock:
    """Held from acquire() until release() or the process's end."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / NAME
        self.fd: int | None = None
        self._renewing: threading.Event | None = None

    def acquire(self) -> RunLock:
        """Take the lock or raise ConfigError naming its holder."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise ConfigError(f"{self.path.parent}: cannot lock the run ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise ConfigError(_held_by(self.path, holder)) from None
        foreign = _foreign(fd, self.path)
        if foreign:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise ConfigError(_held_by(self.path, foreign)) from None
        self.fd = fd
        self._stamp()
        self._renewing = threading.Event()
        threading.Thread(target=self._renew, args=(self._renewing,), name="run-lease", daemon=True).start()
        return self

    def _stamp(self) -> None:
        """Who holds it and when it last said so: the next one's message, and another host's lease (the lock
        itself needs neither)."""
        with contextlib.suppress(OSError, TypeError):
            me = f"host {socket.gethostname()} owner {owners.me()} at {time.time():.0f}"
            line = f"pid {os.getpid()} (secoverhead) {me}\n".encode()
            os.pwrite(self.fd, line, 0)  # written over the old line, then cut to length: never empty in between
            os.ftruncate(self.fd, len(line))
            os.utime(self.fd)

    def _renew(self, stop: threading.Event) -> None:
        """While held, the holder line is renewed every RENEW_S: a run on another host sharing the folder stays
        leased for as long as it runs, not FOREIGN_LEASE_S after it started."""
        while not stop.wait(RENEW_S):
            self._stamp()

    def release(self) -> None:
        if self._renewing is not None:
            self._renewing.set()
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing drops the flock
            self.fd = None


def _held_by(path: Path, holder: str) -> str:
    return f"{path.parent.name} is being written by {holder[:160]}: wait for it to end, or stop it, then resume"


def _foreign(fd: int, path: Path) -> str:
    """The holder's line when another host wrote it and its lease has not ended, else ""."""
    text = os.pread(fd, 400, 0).decode(errors="replace").strip()
    words = text.split()
    fields = dict(zip(words[3::2], words[4::2], strict=False))  # pid N (secoverhead) host H owner T at S
    host = fields.get("host")
    if not host or host == socket.gethostname():
        return ""
    times = [float(fields["at"])] if fields.get("at", "").isdigit() else []
    if (written := last_written(path.parent)) is not None:
        times.append(written)
    if times and time.time() - max(times) < FOREIGN_LEASE_S:
        return (
            f"{text.splitlines()[0]} (another host's lock: kept until {FOREIGN_LEASE_S // 3600} h after its last write)"
        )
    return ""


def _holder(fd: int, wait_s: float = 1.0) -> str:
    """The holder's line. A holder that has just taken the lock writes its PID a moment later (seen empty, or
    still naming a holder that is gone, beside a busy core): read again for up to wait_s."""
    deadline = time.monotonic() + wait_s
    while True:
        text = os.pread(fd, 200, 0).decode(errors="replace").strip()
        pid = text.split()[1] if text.startswith("pid ") and len(text.split()) > 1 else ""
        if pid.isdigit() and Path(f"/proc/{pid}").exists() and int(pid) != os.getpid():
            return text.splitlines()[0]
        if time.monotonic() > deadline:
            return text.splitlines()[0] if text else "another process"
        time.sleep(0.05)
