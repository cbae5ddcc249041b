"""The shape every server shares: a context manager that starts (or, for external targets, checks) a
server, exposes its endpoint and PIDs, describes what really runs, and always cleans up."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any, Self

from .process import ServerProcess, make_run_dir


class Server:
    """Base class. Subclasses implement _start() and describe()."""

    kind = "server"
    embedded = True

    def __init__(
        self, *, run_dir_base: str | Path | None = None, startup_timeout: float = 60.0, keep_run_dir: bool = False
    ) -> None:
        self.run_dir_base = run_dir_base
        self.startup_timeout = float(startup_timeout)
        self.keep_run_dir = keep_run_dir
        self.run_dir: Path | None = None
        self.processes: list[ServerProcess] = []
        self._cleanups: list = []

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Self:
        if self.embedded:
            self.run_dir = make_run_dir(self.kind, self.run_dir_base)
        self._start()
        return self

    def _start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Stop every process (newest first) and remove the private directory. Idempotent."""
        while self.processes:
            with contextlib.suppress(Exception):
                self.processes.pop().stop()
        while self._cleanups:
            with contextlib.suppress(Exception):
                self._cleanups.pop()()
        if self.run_dir is not None and not self.keep_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # -- facts -----------------------------------------------------------------------------------
    @property
    def pids(self) -> list[int]:
        """PIDs of the server processes (what CPU accounting should watch)."""
        return [p.pid for p in self.processes if p.alive()]

    def describe(self) -> dict[str, Any]:
        """What really runs: engine, version, TLS library, effective security settings."""
        raise NotImplementedError
