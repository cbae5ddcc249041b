"""CPU limits for an embedded server, to emulate an instance size on a small machine.

cgroup v1 `cpu.cfs_quota_us` where writable (fractional cores, all threads, honest), else `taskset`-style
affinity (whole cores only). Which one was applied is recorded, because they limit differently.
"""

from __future__ import annotations

import contextlib
import math
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


@dataclass
class CpuLimiter:
    """Puts the process that calls apply_to_self() (a child before exec) under a CPU limit."""

    cores: float
    method: str  # "cgroup-v1-quota" | "affinity"
    cgroup: Path | None = None
    cpus: tuple[int, ...] = ()

    def apply_to_self(self) -> None:
        """Runs in the child between fork and exec: join the cgroup or set affinity."""
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))
        else:
            os.sched_setaffinity(0, self.cpus)

    def describe(self) -> dict:
        d = {"cpu_limit_cores": self.cores, "cpu_limit_method": self.method}
        if self.cgroup is not None:
            d["cpu_limit_cgroup"] = str(self.cgroup)
            d["cpu_cfs_quota_us"] = int((self.cgroup / "cpu.cfs_quota_us").read_text())
            d["cpu_cfs_period_us"] = int((self.cgroup / "cpu.cfs_period_us").read_text())
        else:
            d["cpu_affinity"] = list(self.cpus)
        return d

    def cleanup(self) -> None:
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()


def _cgroup_v1_writable() -> bool:
    return (CGROUP_V1_CPU / "cpu.cfs_quota_us").exists() and os.access(CGROUP_V1_CPU, os.W_OK)


def cpu_limiter(cores: float | None, *, prefer: str = "auto") -> CpuLimiter | None:
    """A limiter for `cores` CPUs, or None for no limit. prefer: auto | cgroup | affinity."""
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
    if prefer in ("auto", "cgroup") and _cgroup_v1_writable():
        group = CGROUP_V1_CPU / "secoverhead" / uuid.uuid4().hex[:12]
        group.mkdir(parents=True)
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(int(cores * PERIOD_US)))
        return CpuLimiter(cores=cores, method="cgroup-v1-quota", cgroup=group)
    if prefer == "cgroup":
        raise ConfigError("cgroup v1 cpu controller is not writable here; use prefer='affinity'")
    cpus = tuple(sorted(os.sched_getaffinity(0)))[: max(1, math.ceil(cores))]
    return CpuLimiter(cores=float(len(cpus)), method="affinity", cpus=cpus)
