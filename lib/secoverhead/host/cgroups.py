"""cgroup v1 groups this library makes for the processes it starts: CPU accounting (`cpuacct`, nanoseconds,
user and system, exited threads included), CPU quota (`cpu`) and I/O throttling (`blkio`).

Each group is named `secoverhead/<owner token>-<label>-<id>`, so the next start can remove the groups of an
owner that is gone (sweep_stale). Where a controller is not mounted or not writable, create() returns None and
callers fall back (to /proc ticks for CPU, to affinity for limits) and record which was used.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from secoverhead.core import owners
from secoverhead.core.owners import alive

ROOT = Path("/sys/fs/cgroup")
PREFIX = "secoverhead"
CONTROLLERS = ("cpuacct", "cpu", "blkio")


def available(controller: str) -> bool:
    base = ROOT / controller
    return (base / "cgroup.procs").exists() and os.access(base, os.W_OK)


@dataclass(frozen=True)
class Group:
    controller: str
    path: Path

    def join(self, pid: int = 0) -> None:
        """Move a process (default: the caller, e.g. a child between fork and exec) into the group."""
        (self.path / "cgroup.procs").write_text(str(pid or os.getpid()))

    def read(self, name: str) -> str:
        return (self.path / name).read_text()

    def write(self, name: str, value: str | int) -> None:
        (self.path / name).write_text(str(value))

    def remove(self, wait_s: float = 5.0) -> None:
        """rmdir once every task has left (an exiting process lingers briefly)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)


def create(controller: str, label: str) -> Group | None:
    """A new group under secoverhead/ in the controller's hierarchy, or None where that is not possible."""
    if not available(controller):
        return None
    path = ROOT / controller / PREFIX / f"{owners.me()}-{label}-{uuid.uuid4().hex[:8]}"
    try:
        path.mkdir(parents=True)
    except OSError:
        return None
    return Group(controller, path)


def sweep_stale() -> list[Path]:
    """Remove empty groups whose owner process is gone; returns what was removed."""
    removed = []
    for controller in CONTROLLERS:
        base = ROOT / controller / PREFIX
        if not base.is_dir():
            continue
        for d in base.iterdir():
            owner = d.name.split("-", 1)[0]
            if d.is_dir() and owners.TOKEN.match(owner) and not alive(owner):
                with contextlib.suppress(OSError):
                    d.rmdir()
                    removed.append(d)
    return removed


class CpuAccount:
    """CPU used by every process in a cpuacct group since it was made, in nanoseconds.

    cpuacct.usage is exact (the scheduler charges each run of a task); usage_user / usage_sys are sampled at
    ticks and do not quite add up to it, so the exact total is split in their proportion."""

    method = "cgroup-v1-cpuacct"

    def __init__(self, group: Group) -> None:
        self.group = group

    @classmethod
    def create(cls, label: str) -> CpuAccount | None:
        group = create("cpuacct", label)
        return cls(group) if group is not None else None

    def counters(self) -> tuple[int, int, int]:
        """(exact total, sampled user, sampled system) nanoseconds since the group was made."""
        return (
            int(self.group.read("cpuacct.usage")),
            int(self.group.read("cpuacct.usage_user")),
            int(self.group.read("cpuacct.usage_sys")),
        )

    def join(self, pid: int = 0) -> None:
        self.group.join(pid)

    def remove(self) -> None:
        self.group.remove()


def split(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int]:
    """(user, system) ns between two counters() readings: the exact total's change, split in the proportion of
    the sampled user and system changes over the same interval (splitting each cumulative reading instead lets
    a shift in the proportions show as negative system time in a short interval)."""
    total, user, system = (y - x for x, y in zip(a, b, strict=True))
    if user + system <= 0:
        return total, 0
    u = round(total * max(user, 0) / (max(user, 0) + max(system, 0)))
    return u, total - u


def blkio_device(path: str | os.PathLike) -> str:
    """major:minor of the whole disk holding path (blkio limits name whole devices, not partitions)."""
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    sysdev = Path(f"/sys/dev/block/{major}:{minor}")
    if (sysdev / "partition").exists():  # a partition: the limit goes on its parent disk
        parent = (sysdev / "..").resolve().name
        major, minor = (int(x) for x in Path(f"/sys/block/{parent}/dev").read_text().split(":"))
    return f"{major}:{minor}"
