"""The shape every server shares: a context manager that starts (or, for external targets, checks) a
server, exposes its endpoint, PIDs and CPU source, describes what really runs, and always cleans up.

An embedded server runs in a cpuacct group of its own (where cgroup v1 allows), so its CPU is counted in
nanoseconds, user and system apart, exited threads included; else /proc ticks of its PIDs."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from secoverhead.core.errors import ServerStartError
from secoverhead.core.lifecycle import Started
from secoverhead.host.cgroups import CpuAccount, Group
from secoverhead.host.metrics import CgroupCpu, CpuSource, ProcCpu
from secoverhead.host.process import ServerProcess
from secoverhead.host.rundirs import make_run_dir

if TYPE_CHECKING:
    from secoverhead.network.link import Link


PORT_TAKEN = "ddress already in use"  # mysqld, mariadbd, mongod and nginx all say it so (EADDRINUSE)
PORT_TRIES = 3


@dataclass(eq=False, repr=False, kw_only=True)
class Server(Started):
    """Base class: a declaration of its settings (a dataclass: a setting is a field, checked in __post_init__).
    Subclasses implement _start() and describe()."""

    kind: ClassVar[str] = "server"
    embedded: ClassVar[bool] = True

    run_dir_base: str | Path | None = None
    startup_timeout: float = 60.0
    keep_run_dir: bool = False
    link: Link | None = None  # a link with a set round trip: the server runs in its namespace, on its far address

    def __post_init__(self) -> None:
        self.startup_timeout = float(self.startup_timeout)
        self.run_dir: Path | None = None
        self.processes: list[ServerProcess] = []
        self._cleanups: list = []
        self.account: CpuAccount | None = None
        self.counters: CpuSource | None = None  # a server we did not start: its own CPU counters, where it has them
        self.counters_note = ""  # why it has none (recorded)
        self.background_cores: float | None = None  # what the counters read with no load of ours

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> Self:
        """Start (or check) the server. A port picked free can be bound by another process before the server binds
        it (a test run's other worker took mysqld's once): that start is undone and made again on new ports."""
        settings = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for attempt in range(1, PORT_TRIES + 1):
            try:
                self._begin()
                self._start()
                return self
            except ServerStartError as exc:
                if attempt == PORT_TRIES or not self.embedded or PORT_TAKEN not in str(exc):
                    raise
                self.stop()
                for name, value in settings.items():  # what _start filled in (its certificates) made afresh
                    setattr(self, name, value)
        raise AssertionError("unreachable")

    def _begin(self) -> None:
        if self.embedded:
            self.run_dir = make_run_dir(self.kind, self.run_dir_base)
            self.account = CpuAccount.create(self.kind)
            if self.account is not None:
                self._cleanups.append(self.account.remove)  # cleanups run after the processes stopped

    @property
    def listen_host(self) -> str:
        """The address the server listens on: loopback, or the far end of its link."""
        return self.link.peer_addr if self.link is not None else "127.0.0.1"

    def command(self, argv: list[str]) -> list[str]:
        """argv as the server runs it: in the link's namespace when it has one."""
        return self.link.wrap(argv) if self.link is not None else argv

    def groups(self, *extra: Group | None) -> list[Group]:
        """The cgroups a server process joins before exec: its accounting group and any limits."""
        own = [self.account.group] if self.account is not None else []
        return own + [g for g in extra if g is not None]

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

    @property
    def cpu(self) -> CpuSource | None:
        """Where this server's CPU is read: its cgroup or /proc; a server we did not start, its own counters."""
        if not self.embedded:
            return self.counters
        if self.account is not None:
            return CgroupCpu(self.account)
        return ProcCpu(self.pids)

    @property
    def cpu_method(self) -> str:
        source = self.cpu
        return source.method if source is not None else f"not measured ({self.counters_note or 'external server'})"

    def describe(self) -> dict[str, Any]:
        """What really runs: engine, version, TLS library, effective security settings."""
        raise NotImplementedError
