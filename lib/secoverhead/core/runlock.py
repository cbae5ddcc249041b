"""One writer per run directory: `run.lock`, held with flock(2) for the run's life.

The kernel releases a flock when its holder exits in any way (SIGKILL included), so a lock is never stale, and it
holds across PID namespaces. The file also records the holder (PID, host, owner token, when), to say who holds
it, and because a flock does not reach from one host to another over most shared folders: a lock written by
another host is respected until that run's lease ends (core.runs.FOREIGN_LEASE_S after its run.json or lock was
last written). Two `--resume` of one run would otherwise both measure and overwrite each other's records."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

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


# -- one run at a time on a user's server --------------------------------------------------------------------
TARGET_LOCKS = Path("/dev/shm/secoverhead-targets")  # machine-wide, emptied at boot (a flock never outlives it)
HELD_ENV = "SECOVERHEAD_TARGETS_HELD"  # the servers a run's own process holds: its kernel does not take them again
_held: dict[str, list[int]] = {}  # address -> [fd, holders in this process]


def server_addresses(values: Any) -> list[str]:
    """The user's servers a run's parameters name (none for the servers a study starts itself): MySQL by host and
    port, MongoDB by its URI's hosts, HTTPS by its URL's host and port."""
    get = (lambda k: values.get(k)) if isinstance(values, dict) else (lambda k: getattr(values, k, None))
    out = []
    if get("mysql_host"):
        out.append(f"mysql {str(get('mysql_host')).lower()}:{get('mysql_port') or 3306}")
    if get("mongo_uri"):
        hosts = str(get("mongo_uri")).split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
        out.append(f"mongodb {hosts.lower()}")
    if get("https_url"):
        out.append(f"https {str(get('https_url')).split('://', 1)[-1].split('/', 1)[0].lower()}")
    return out


def hold_servers(addresses: list[str], what: str) -> Any:
    """Hold every address's lock for this process (re-entrant: `run --all` prepares each study against one server),
    or raise ConfigError naming who holds one: two runs that load one server at the same moments each measure the
    other. A fleet's jobs take them too (its own lock orders them). Returns the release function."""
    taken: list[str] = []
    try:
        for address in addresses:
            _hold(address, what)
            taken.append(address)
    except BaseException:
        _release(taken)
        raise

    def release() -> None:  # once, however often it is called (explicitly, then by a finaliser)
        _release(taken)
        taken.clear()

    return release


def _hold(address: str, what: str) -> None:
    if address in _held:
        _held[address][1] += 1
        return
    TARGET_LOCKS.mkdir(mode=0o1777, parents=True, exist_ok=True)
    name = hashlib.sha256(address.encode()).hexdigest()[:20]
    fd = os.open(TARGET_LOCKS / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 300, 0).decode(errors="replace").strip() or "another secoverhead process"
        os.close(fd)
        host = address.split(" ", 1)[-1]
        raise ConfigError(
            f"{host} is being loaded by another run ({holder[:160]}): two runs at once would each measure the "
            "other's load; wait for it to end, or run them as a fleet, which orders them"
        ) from None
    line = f"pid {os.getpid()}, {what}, since {time.strftime('%H:%M:%S')}"
    os.pwrite(fd, line.encode(), 0)
    os.ftruncate(fd, len(line))
    _held[address] = [fd, 1]


def _release(addresses: list[str]) -> None:
    for address in addresses:
        entry = _held.get(address)
        if entry is None:
            continue
        entry[1] -= 1
        if entry[1] <= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(entry[0], 0)
            os.close(entry[0])  # closing drops the flock
            del _held[address]
