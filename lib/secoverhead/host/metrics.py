"""CPU and I/O accounting: server CPU (user and system apart) over a run, client CPU, CPU per operation,
bytes written to files, and the client-bound flag.

Server CPU comes from the server's own cgroup v1 `cpuacct` group where the library could make one
(nanoseconds; threads and processes that exited stay counted), else from utime/stime in /proc/PID/stat
(clock ticks, usually 10 ms: a run should then burn >= 2 s of server CPU, and `low_resolution` says when
not). Each run records which method measured it. Client CPU is this process's and its reaped children's, the
load's own cgroup's, or what the load's worker processes reported of themselves (`CpuMeter.count_client`).

Either way the user/system split is sampled: at each kernel tick the whole tick is charged to the mode the CPU
was in (CONFIG_TICK_CPU_ACCOUNTING). A split is a sample of that many ticks, so a run records their count
(`*_user_ticks`, `*_system_ticks`) and a split read from few of them is shown with its sampling interval.
"""

from __future__ import annotations

import functools
import gzip
import os
import re
import resource
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from secoverhead.host.cgroups import CpuAccount, split

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
KERNEL_CONFIGS = (Path("/proc/config.gz"), Path(f"/boot/config-{os.uname().release}"))
CLIENT_BOUND_CORES = 0.8


def hz_of(config: str) -> int | None:
    """CONFIG_HZ from a kernel config's text, or None where it is not set."""
    m = re.search(r"^CONFIG_HZ=(\d+)$", config, re.M)
    return int(m.group(1)) if m else None


@functools.cache
def kernel_tick_s(configs: tuple[Path, ...] = KERNEL_CONFIGS) -> float:
    """The kernel's tick, the step user and system time are sampled at: 1/CONFIG_HZ from the running kernel's
    config, else USER_HZ's 10 ms, the coarsest tick Linux builds with (counting in too long a tick finds fewer
    samples than there were, so a split's interval comes out wider, never narrower)."""
    for path in configs:
        try:
            raw = path.read_bytes()
            hz = hz_of((gzip.decompress(raw) if path.suffix == ".gz" else raw).decode(errors="replace"))
        except (OSError, EOFError):  # absent, unreadable, or not gzip after all
            continue
        if hz:
            return 1.0 / hz
    return TICK_S


def ticks_in(seconds: float) -> int:
    """Whole kernel ticks in a sampled time (a tick that lost part of itself to steal counts as none)."""
    return int(max(seconds, 0.0) / kernel_tick_s() + 1e-6)


class CpuSource(Protocol):
    """Where a server's CPU is read: take() a reading, seconds(a, b) -> (user, system) between two; resolution_s,
    the counter's step (a /proc tick, a microsecond), where the source has one; ticks(a, b) -> (user, system)
    kernel ticks behind the split, where the source can count them."""

    method: str

    def take(self) -> Any: ...

    def seconds(self, a: Any, b: Any) -> tuple[float, float]: ...


def _read_ticks(pid: int) -> tuple[int, int]:
    """(utime, stime) in ticks for a whole process (all its threads, live and exited)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5), counted after "(comm)"


class ProcCpu:
    """/proc ticks of a fixed set of processes; a process gone by the second reading counts nothing."""

    method = "proc-ticks"
    resolution_s = TICK_S

    def __init__(self, pids: Iterable[int]) -> None:
        self.pids = list(pids)

    def take(self) -> dict[int, tuple[int, int]]:
        ticks = {}
        for pid in self.pids:
            try:
                ticks[pid] = _read_ticks(pid)
            except (OSError, IndexError):
                continue
        return ticks

    def seconds(self, a: dict, b: dict) -> tuple[float, float]:
        user = sum(u1 - a[pid][0] for pid, (u1, _) in b.items() if pid in a)
        system = sum(s1 - a[pid][1] for pid, (_, s1) in b.items() if pid in a)
        return user * TICK_S, system * TICK_S

    def ticks(self, a: dict, b: dict) -> tuple[int, int]:
        """utime and stime split a process's exact run time in its sampled ticks' proportion: about as many ticks
        as the time holds."""
        user, system = self.seconds(a, b)
        return ticks_in(user), ticks_in(system)


class CgroupCpu:
    """A cpuacct group's nanosecond counters."""

    method = CpuAccount.method
    resolution_s = 1e-9

    def __init__(self, account: CpuAccount) -> None:
        self.account = account

    def take(self) -> tuple[int, int, int]:
        return self.account.counters()

    def seconds(self, a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[float, float]:
        user, system = split(a, b)
        return user / 1e9, system / 1e9

    def ticks(self, a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int]:
        """usage_user and usage_sys are the sampled ticks, in nanoseconds."""
        return ticks_in((b[1] - a[1]) / 1e9), ticks_in((b[2] - a[2]) / 1e9)


def background_cores(source: CpuSource, seconds: float = 1.0) -> float:
    """Cores a source reads with no load of ours (a server's own counters, a host's): what every reading of a run
    also holds, recorded beside it."""
    a, t0 = source.take(), time.monotonic()
    time.sleep(seconds)
    user, system = source.seconds(a, source.take())
    return (user + system) / (time.monotonic() - t0)


def cpu_source(server: CpuSource | Sequence[int] | None) -> CpuSource | None:
    """A CpuSource from a server's source, a list of PIDs (/proc), or None (nothing to measure)."""
    if server is None:
        return None
    if hasattr(server, "take"):
        return server  # type: ignore[return-value]
    pids = list(server)  # type: ignore[arg-type]
    return ProcCpu(pids) if pids else None


@dataclass(frozen=True)
class CpuUsage:
    """CPU seconds used over an interval."""

    wall_s: float
    user_s: float
    system_s: float
    method: str = "rusage"
    resolution_s: float = 0.0  # the counter's step: 0 for one far finer than a run
    ticks: tuple[int, int] | None = None  # kernel ticks (user, system) the split was sampled from, where counted

    @property
    def total_s(self) -> float:
        return self.user_s + self.system_s

    @property
    def cores(self) -> float:
        """Average number of cores busy over the interval."""
        return self.total_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def low_resolution(self) -> bool:
        """Counted in steps of a millisecond or more (/proc ticks, here or on the DBA's host) and fewer than 200 of
        them: uncertain by more than 0.5 % from rounding alone."""
        return self.resolution_s >= 1e-3 and self.total_s < 200 * self.resolution_s

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
        kept = {k: v for k, v in asdict(self).items() if k not in ("method", "resolution_s", "ticks")}
        d = kept | {"total_s": self.total_s, "cores": self.cores}
        return {f"{prefix}{k}": v for k, v in d.items()}


class CpuMeter:
    """Measure server CPU (from its source) and this process's own CPU over a `with` block.

    Child processes the block started and reaped (sysbench, ab, wrk) are counted as client CPU too."""

    def __init__(self, server: CpuSource | Sequence[int] | None, client: CpuSource | None = None) -> None:
        self.source = cpu_source(server)
        self.client_source = client  # the load client's own group (runs at once must not share rusage)
        self.server: CpuUsage | None = None
        self.client: CpuUsage | None = None

    def __enter__(self) -> CpuMeter:
        self._server0 = self.source.take() if self.source is not None else None
        self._client0 = self.client_source.take() if self.client_source is not None else None
        self._self0 = resource.getrusage(resource.RUSAGE_SELF)
        self._children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._wall0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.monotonic() - self._wall0
        if self.source is not None:
            self.server = _usage(self.source, self._server0, wall)
        if self.client_source is not None:
            self.client = _usage(self.client_source, self._client0, wall)
            return
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        self.client = CpuUsage(
            wall,
            (me.ru_utime - self._self0.ru_utime) + (kids.ru_utime - self._children0.ru_utime),
            (me.ru_stime - self._self0.ru_stime) + (kids.ru_stime - self._children0.ru_stime),
        )

    def count_client(self, user_s: float, system_s: float, method: str = "workers' own rusage") -> None:
        """The client's CPU as the load's own worker processes measured it (NaN: not measurable), in place of this
        process's rusage. A duet runs its two loads as threads of one process, and RUSAGE_CHILDREN counts whichever
        workers were reaped in the window, the partner's too: an arm then read up to twice its own client CPU."""
        self.client = CpuUsage(self.client.wall_s, user_s, system_s, method)

    def metrics(self, operations: int) -> dict[str, float | bool]:
        """Server (when measured) and client CPU totals, per operation, and the client-bound flag."""
        out: dict[str, float | bool] = {}
        if self.server is not None:
            out.update(self.server.as_dict("server_cpu_"))
            out.update({f"server_{k}": v for k, v in self.server.per_op_us(operations).items()})
            out["server_cpu_low_resolution"] = self.server.low_resolution
            out["server_cpu_ns_resolution"] = self.server.method == CgroupCpu.method
            if self.server.ticks is not None:
                out["server_cpu_user_ticks"], out["server_cpu_system_ticks"] = self.server.ticks
        out.update(self.client.as_dict("client_cpu_"))
        out.update({f"client_{k}": v for k, v in self.client.per_op_us(operations).items()})
        out["client_bound"] = client_bound(self.client, self.server)
        return out


def _usage(source: CpuSource, start: Any, wall: float) -> CpuUsage:
    """What a source read since `start`, with its method, its step and the ticks behind its split."""
    end = source.take()
    user, system = source.seconds(start, end)
    ticks = source.ticks(start, end) if hasattr(source, "ticks") else None
    return CpuUsage(wall, user, system, source.method, getattr(source, "resolution_s", 0.0), ticks)


def client_bound(client: CpuUsage, server: CpuUsage | None) -> bool:
    """The client, not the server, may have limited throughput: it used >= 0.8 core, or more CPU than the
    server (a loaded 2-core machine cannot give both sides a core each)."""
    return client.cores >= CLIENT_BOUND_CORES or (server is not None and client.total_s > server.total_s)


def bytes_in(paths: Iterable[str | os.PathLike]) -> int:
    """Total size of files (directories: every file below them); missing ones count 0."""
    total = 0
    for p in map(Path, paths):
        if p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        elif p.exists():
            total += p.stat().st_size
    return total
