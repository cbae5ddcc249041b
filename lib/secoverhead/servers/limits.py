"""Resource limits that emulate an instance size on a small machine: a CPU quota and an IOPS limit.

CPU: cgroup v1 `cpu.cfs_quota_us` where writable (fractional cores, all threads, honest), else affinity
(whole cores only). IOPS: cgroup v1 `blkio.throttle.{read,write}_iops_device` on the disk holding the
server's data (applies to direct I/O, which InnoDB uses for its data and log files). Which method was
applied is recorded, because they limit differently.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from secoverhead.core.errors import ConfigError
from secoverhead.host import cgroups

PERIOD_US = 100_000


@dataclass
class CpuLimit:
    """A CPU limit for one server: a cgroup to join, or CPUs to run on."""

    cores: float
    method: str  # "cgroup-v1-quota" | "affinity"
    group: cgroups.Group | None = None
    cpus: tuple[int, ...] = ()

    def describe(self) -> dict:
        d = {"cpu_limit_cores": self.cores, "cpu_limit_method": self.method}
        if self.group is not None:
            d["cpu_limit_cgroup"] = str(self.group.path)
            d["cpu_cfs_quota_us"] = int(self.group.read("cpu.cfs_quota_us"))
            d["cpu_cfs_period_us"] = int(self.group.read("cpu.cfs_period_us"))
        else:
            d["cpu_affinity"] = list(self.cpus)
        return d

    def set(self, cores: float) -> None:
        """Change the quota of a running server (cgroup method only; affinity is fixed at start)."""
        if self.group is None:
            raise ConfigError("a CPU limit by affinity cannot change while the server runs")
        self.group.write("cpu.cfs_quota_us", int(float(cores) * PERIOD_US))
        self.cores = float(cores)

    def remove(self) -> None:
        if self.group is not None:
            self.group.remove()


def check_cpu_limit(cores: float | None, prefer: str = "auto") -> float | None:
    """Validate a CPU limit without creating anything."""
    if cores is None:
        return None
    try:
        cores = float(cores)
    except (TypeError, ValueError):
        raise ConfigError(f"cpu_limit must be a number of cores, got {cores!r}") from None
    available = len(os.sched_getaffinity(0))
    if not 0 < cores <= available:
        raise ConfigError(f"cpu_limit={cores} must be > 0 and at most the {available} cores available")
    if prefer not in ("auto", "cgroup", "affinity"):
        raise ConfigError(f"cpu limit method {prefer!r} is not one of auto, cgroup, affinity")
    if prefer == "cgroup" and not cgroups.available("cpu"):
        raise ConfigError("cgroup v1 cpu controller is not writable here; use prefer='affinity'")
    return cores


def cpu_limit(cores: float | None, *, prefer: str = "auto", label: str = "server") -> CpuLimit | None:
    """A limit of `cores` CPUs, or None for no limit. prefer: auto | cgroup | affinity."""
    cores = check_cpu_limit(cores, prefer)
    if cores is None:
        return None
    if prefer in ("auto", "cgroup"):
        group = cgroups.create("cpu", label)
        if group is not None:
            group.write("cpu.cfs_period_us", PERIOD_US)
            group.write("cpu.cfs_quota_us", int(cores * PERIOD_US))
            return CpuLimit(cores=cores, method="cgroup-v1-quota", group=group)
    cpus = tuple(sorted(os.sched_getaffinity(0)))[: max(1, math.ceil(cores))]
    return CpuLimit(cores=float(len(cpus)), method="affinity", cpus=cpus)


@dataclass
class IopsLimit:
    """Read and write IOPS limits on the disk holding a directory."""

    read_iops: int
    write_iops: int
    device: str
    group: cgroups.Group

    def describe(self) -> dict:
        return {
            "iops_limit_method": "cgroup-v1-blkio-throttle",
            "iops_limit_device": self.device,
            "iops_limit_read": self.read_iops,
            "iops_limit_write": self.write_iops,
        }

    def set(self, read_iops: int | None, write_iops: int | None) -> None:
        """Change the limits of a running server; None lifts one (the disk's own)."""
        for name, value in (("read", read_iops), ("write", write_iops)):
            self.group.write(f"blkio.throttle.{name}_iops_device", f"{self.device} {int(value) if value else 0}")
        self.read_iops, self.write_iops = int(read_iops or 0), int(write_iops or 0)

    def serviced(self) -> tuple[int, int]:
        """(reads, writes) the group has issued to the device so far (blkio.throttle.io_serviced)."""
        reads = writes = 0
        for line in self.group.read("blkio.throttle.io_serviced").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == self.device:
                if parts[1] == "Read":
                    reads = int(parts[2])
                elif parts[1] == "Write":
                    writes = int(parts[2])
        return reads, writes

    def remove(self) -> None:
        self.group.remove()


def iops_limit(
    read_iops: int | None, write_iops: int | None, data_dir: str | Path, *, label: str = "server"
) -> IopsLimit | None:
    """An IOPS limit on the disk holding data_dir (None for one direction: unlimited), or None where blkio is
    not writable (recorded by callers)."""
    if any(x is not None and x < 1 for x in (read_iops, write_iops)) or not (read_iops or write_iops):
        raise ConfigError("IOPS limits must be >= 1 (or None: unlimited), not both unlimited")
    group = cgroups.create("blkio", label)
    if group is None:
        return None
    device = cgroups.blkio_device(data_dir)
    group.write("blkio.throttle.read_iops_device", f"{device} {int(read_iops or 0)}")  # 0: no limit
    group.write("blkio.throttle.write_iops_device", f"{device} {int(write_iops or 0)}")
    return IopsLimit(int(read_iops or 0), int(write_iops or 0), device, group)
