"""CPU and I/O accounting from /proc: server CPU (user and system separately) of the server's PIDs over a
run, client CPU, CPU per operation, bytes written to files, and the client-bound flag.

Server CPU comes from utime/stime in /proc/PID/stat, which keep the time of threads that already exited
(per-thread schedstat would lose them: MariaDB ends connection threads). Resolution is one clock tick
(usually 10 ms), so a run should burn at least ~2 s of server CPU; `CpuUsage.low_resolution` says when not.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
CLIENT_BOUND_CORES = 0.8


def _read_ticks(pid: int) -> tuple[int, int]:
    """(utime, stime) in ticks for a whole process (all its threads, live and exited)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5), counted after "(comm)"


@dataclass(frozen=True)
class CpuSnapshot:
    wall: float
    ticks: dict[int, tuple[int, int]]

    @classmethod
    def take(cls, pids: Iterable[int]) -> CpuSnapshot:
        ticks = {}
        for pid in pids:
            try:
                ticks[pid] = _read_ticks(pid)
            except (OSError, IndexError):
                continue  # a process that is gone contributes nothing after this point
        return cls(time.monotonic(), ticks)


@dataclass(frozen=True)
class CpuUsage:
    """CPU seconds used between two snapshots."""

    wall_s: float
    user_s: float
    system_s: float

    @property
    def total_s(self) -> float:
        return self.user_s + self.system_s

    @property
    def cores(self) -> float:
        """Average number of cores busy over the interval."""
        return self.total_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def low_resolution(self) -> bool:
        """Fewer than 200 ticks: the figure is uncertain by more than 0.5 % from tick rounding alone."""
        return self.total_s < 200 * TICK_S

    def per_op_us(self, operations: int) -> dict[str, float]:
        """CPU microseconds per operation, total and split user/system."""
        if operations <= 0:
            return {"cpu_us_per_op": float("nan"), "user_us_per_op": float("nan"), "system_us_per_op": float("nan")}
        return {
            "cpu_us_per_op": self.total_s / operations * 1e6,
            "user_us_per_op": self.user_s / operations * 1e6,
            "system_us_per_op": self.system_s / operations * 1e6,
        }

    def as_dict(self, prefix: str = "") -> dict[str, float]:
        d = asdict(self) | {"total_s": self.total_s, "cores": self.cores}
        return {f"{prefix}{k}": v for k, v in d.items()}


def cpu_between(before: CpuSnapshot, after: CpuSnapshot) -> CpuUsage:
    """CPU used by the processes present in both snapshots."""
    user = system = 0
    for pid, (u1, s1) in after.ticks.items():
        if pid in before.ticks:
            u0, s0 = before.ticks[pid]
            user += u1 - u0
            system += s1 - s0
    return CpuUsage(after.wall - before.wall, user * TICK_S, system * TICK_S)


class CpuMeter:
    """Measure server CPU (given PIDs) and this process's own CPU over a `with` block.

    Child processes the block started and reaped (sysbench, ab, wrk) are counted as client CPU too.
    """

    def __init__(self, server_pids: Iterable[int]) -> None:
        self.server_pids = list(server_pids)
        self.server: CpuUsage | None = None
        self.client: CpuUsage | None = None

    def __enter__(self) -> CpuMeter:
        self._server0 = CpuSnapshot.take(self.server_pids)
        self._self0 = resource.getrusage(resource.RUSAGE_SELF)
        self._children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._wall0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.monotonic() - self._wall0
        self.server = cpu_between(self._server0, CpuSnapshot.take(self.server_pids))
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        self.client = CpuUsage(
            wall,
            (me.ru_utime - self._self0.ru_utime) + (kids.ru_utime - self._children0.ru_utime),
            (me.ru_stime - self._self0.ru_stime) + (kids.ru_stime - self._children0.ru_stime),
        )

    def metrics(self, operations: int) -> dict[str, float | bool]:
        """Server and client CPU totals, per operation, and the client-bound flag."""
        out: dict[str, float | bool] = {}
        out.update(self.server.as_dict("server_cpu_"))
        out.update({f"server_{k}": v for k, v in self.server.per_op_us(operations).items()})
        out.update(self.client.as_dict("client_cpu_"))
        out.update({f"client_{k}": v for k, v in self.client.per_op_us(operations).items()})
        out["server_cpu_low_resolution"] = self.server.low_resolution
        out["client_bound"] = client_bound(self.client, self.server)
        return out


def client_bound(client: CpuUsage, server: CpuUsage) -> bool:
    """The client, not the server, may have limited throughput: it used >= 0.8 core, or more CPU than the
    server (a loaded 2-core machine cannot give both sides a core each)."""
    return client.cores >= CLIENT_BOUND_CORES or client.total_s > server.total_s


def bytes_in(paths: Iterable[str | os.PathLike]) -> int:
    """Total size of files (directories: every file below them); missing ones count 0."""
    total = 0
    for p in map(Path, paths):
        if p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        elif p.exists():
            total += p.stat().st_size
    return total
