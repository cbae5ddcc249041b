"""Child processes for embedded servers and load clients: ports, private directories, start, readiness, stop.

Every server process started here is registered until stopped. It is stopped when its context exits, at
interpreter exit (atexit), and on SIGTERM (turned into SystemExit so context managers unwind; SIGINT is
already KeyboardInterrupt). As a last resort children get PR_SET_PDEATHSIG, so a SIGKILLed parent does
not leave servers (or load clients) behind. Private directories are named with their owner's PID, so the
next start removes those whose owner is gone (`sweep_stale`), with whatever keys or data they held.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from secoverhead.core import owners
from secoverhead.core.environ import KEPT_ENV as KEPT_ENV  # re-exported: callers read them here as before
from secoverhead.core.environ import server_env as server_env
from secoverhead.core.errors import ConfigError, ServerStartError
from secoverhead.core.owners import alive
from secoverhead.host import cgroups
from secoverhead.host.ramdisk import sweep_stale as sweep_ramdisks  # unmount before removing (imports this module)
from secoverhead.host.rundirs import OWNED, run_base

_LIVE: dict[int, ServerProcess] = {}
_LOCK = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on host now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n distinct free ports: each probe socket stays bound until all are picked (one at a time, the kernel
    may hand a just-closed port out again, and a server's two listeners then collide)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(n)]
        for s in socks:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]


def ensure_port_free(port: int, host: str = "127.0.0.1") -> int:
    """Return port if nothing listens on it, else raise ConfigError naming it."""
    if not 0 < int(port) < 65536:
        raise ConfigError(f"port {port} is outside 1..65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, int(port)))
        except OSError as exc:
            raise ConfigError(f"port {port} on {host} is already in use ({exc.strerror})") from None
    return int(port)


def pick_port(port: int | None, host: str = "127.0.0.1") -> int:
    """The given port after checking it is free, or a free one."""
    return free_port(host) if port is None else ensure_port_free(port, host)


def sweep_stale(base: str | os.PathLike | None = None) -> list[Path]:
    """Remove private directories (and cgroups) whose owner process is gone: what a crash left behind."""

    roots = list({run_base(base), Path(tempfile.gettempdir())})
    removed = sweep_ramdisks(roots)
    for root in roots:
        if not root.is_dir():
            continue
        for d in root.iterdir():
            m = OWNED.match(d.name)
            if m and d.is_dir() and not d.is_symlink() and not alive(m.group(1)):
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
    removed += cgroups.sweep_stale()
    removed += owners.sweep()
    return removed


def tail(path: str | os.PathLike, lines: int = 25) -> str:
    """Last lines of a log file, or a note that it is missing."""
    p = Path(path)
    if not p.exists():
        return f"(no log at {p})"
    text = p.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:]) or f"(log {p} is empty)"


def _set_pdeathsig() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def dies_with_owner(groups: Sequence[cgroups.Group] = ()) -> Callable[[], None]:
    """A preexec_fn for load clients: SIGTERM when the owner dies, and join the given cgroups."""

    def preexec() -> None:
        _set_pdeathsig()
        for g in groups:
            g.join()

    return preexec


class ServerProcess:
    """One running child process whose output goes to a log file."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        cwd: Path,
        env: dict[str, str] | None = None,
        groups: Sequence[cgroups.Group] = (),
        affinity: Sequence[int] | None = None,
        pipes: bool = False,
    ) -> None:
        """pipes: stdin and stdout are pipes to talk to it over (`popen.stdin`, `popen.stdout`), stderr goes to
        the log; else stdin is empty and stdout and stderr go to the log. env: variables it needs, over the
        minimal environment every server gets (server_env)."""
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path

        def preexec() -> None:
            _set_pdeathsig()
            for g in groups:  # accounting and limits apply from the first instruction
                g.join()
            if affinity:
                os.sched_setaffinity(0, affinity)

        with open(log_path, "ab") as log:
            try:
                self.popen = subprocess.Popen(
                    self.argv,
                    cwd=cwd,
                    env=server_env(env),
                    stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                    stdout=subprocess.PIPE if pipes else log,
                    stderr=log if pipes else subprocess.STDOUT,
                    text=pipes,
                    start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop it in order
                    preexec_fn=preexec,
                )
            except FileNotFoundError:
                raise ServerStartError(f"{name}: executable {self.argv[0]} not found (run `make setup`)") from None
        with _LOCK:
            _LIVE[self.popen.pid] = self
        _install_signal_handlers()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait_ready(self, check: Callable[[], bool], timeout: float, error_log: Path | None = None) -> None:
        """Poll check() until it is true; raise ServerStartError quoting the log if the process dies
        or the timeout passes."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise ServerStartError(
                    f"{self.name} exited with code {self.popen.returncode} during start-up. {self._logs(error_log)}"
                )
            with contextlib.suppress(Exception):
                if check():
                    return
            if time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(f"{self.name} was not ready after {timeout:.0f} s. {self._logs(error_log)}")
            time.sleep(0.05)

    def _logs(self, error_log: Path | None) -> str:
        """The end of the error log, and of stdout/stderr when the error log says nothing (an option the
        server refused before it opened its log)."""
        logs = [p for p in (error_log, self.log_path) if p is not None]
        parts = [(p, tail(p)) for p in dict.fromkeys(logs)]
        said = [(p, t) for p, t in parts if t.strip()] or parts[:1]
        return " ".join(f"Its log ({p}) ends with:\n{t}" for p, t in said)

    def stop(self, timeout: float = 20.0) -> int | None:
        """Stop gracefully, then kill. Idempotent. Returns the exit code."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
        with _LOCK:
            _LIVE.pop(self.popen.pid, None)
        return self.popen.returncode


def live_processes() -> list[ServerProcess]:
    """Processes started by this library that have not been stopped yet."""
    with _LOCK:
        return [p for p in _LIVE.values() if p.alive()]


def stop_all() -> None:
    """Stop every process this library started and has not stopped."""
    with _LOCK:
        procs = list(_LIVE.values())
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.stop(timeout=10)


atexit.register(stop_all)

_handlers_installed = False


def _on_sigterm(signum: int, frame: object) -> None:
    # Unwind like Ctrl-C does, so every `with server:` block stops its server.
    raise SystemExit(128 + signum)


def _install_signal_handlers() -> None:
    """Make SIGTERM unwind the stack (only if nobody else handles it, and only from the main thread)."""
    global _handlers_installed
    if _handlers_installed or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _on_sigterm)
    _handlers_installed = True


def run_command(argv: Sequence[str], *, what: str, timeout: float = 120, log: Path | None = None, **kwargs) -> str:
    """Run a short helper command; on failure raise ServerStartError quoting its output (and log, if the
    command writes its errors there)."""
    kwargs.setdefault("env", server_env())  # a helper needs none of our secrets
    try:
        res = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, preexec_fn=_set_pdeathsig, **kwargs
        )
    except FileNotFoundError:
        raise ServerStartError(f"{what}: {argv[0]} not found (run `make setup`)") from None
    except subprocess.TimeoutExpired:
        raise ServerStartError(f"{what}: {argv[0]} did not finish within {timeout} s") from None
    if res.returncode != 0:
        logged = Path(log).read_text(errors="replace") if log is not None and Path(log).exists() else ""
        lines = (logged + res.stderr + res.stdout).strip().splitlines()
        # The cause is usually an "[ERROR] ..." line near the top, before pages of generic advice.
        errors = [line for line in lines if "error" in line.lower()][:10]
        quoted = [*errors, "...", *lines[-8:]] if errors else lines[-25:]
        raise ServerStartError(f"{what} failed (exit {res.returncode}):\n" + "\n".join(quoted))
    return res.stdout
