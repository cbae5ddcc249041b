"""TDE study: the original's two instance sizes (cores, memory, IOPS) and how this machine emulates them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

DATA_GB = 41.0


SCALE = 0.15  # this machine's share of an original instance: cores and IOPS alike


# A read from the original's local SSD (RDS local-SSD instances: 100-200 us), declared before any data. An emulated
# instance runs at SCALE of the original's cores and IOPS, so its reads are dilated by 1/SCALE as well: each cell's
# balance of CPU, waiting for reads and the IOPS cap is then the original's (one thread waits on each read in turn,
# well below the cap; sixteen reach the cap), not the RAM disk's microseconds. "Well below" fixes the end of the
# range: one thread reads at most 1/latency a second, 5,000 at 200 us, 0.71 of 4c16g's 7,000 IOPS and 0.42 of
# 8c32g's 12,000; at 150 us (taken until 2026-11-28, data/claims/CHANGES.md) it was 0.95 of 4c16g's.
SSD_READ_LATENCY_US = 200.0


# A flush (fsync) of the original's local SSD, declared before any data: the model of the original has assumed it
# since 2026-11-27 (mechanism.py). The RAM-backed disk flushes in microseconds, so a commit here waited on nothing;
# iodelay makes each fsync of a data-disk file take this long, dilated like the reads in an emulated cell.
SSD_FLUSH_LATENCY_US = 500.0


# The cells run at the original's own scale: one thread. One thread's CPU is not dilated by an emulated quota (it
# would need a core 1/SCALE times slower), so its device must not be either, or its transaction is almost all
# waiting: 11-18 % CPU where the model of the original gives 41-46 % (data/claims/CHANGES.md, 2026-12-02). At one
# thread the server runs without a binding quota (the original's instance has 4 or 8 cores, one thread uses at
# most one), at the SSD's own latencies and the original's IOPS cap (one thread reads at most 1/latency a second,
# 5,000 at 200 us: 0.71 of 4c16g's 7,000). Every other cell is emulated at SCALE.
ORIGINAL_SCALE_THREADS = (1,)


class Rig(NamedTuple):
    """One arm's load and server: sysbench, the server (None when external), how to read its counters."""

    sb: Any
    db: Any
    connect: Any


@dataclass(frozen=True)
class Instance:
    """One of the original's instances, as its report gives it (RDS for MySQL 8.0.28, local SSD, 41 GB of data)."""

    cores: int
    memory_gb: int
    buffer_pool_gb: float
    iops: int

    def describe(self) -> str:
        return (
            f"{self.cores} cores / {self.memory_gb} GB, buffer pool {self.buffer_pool_gb:g} GB, max {self.iops:,} IOPS"
        )


# The original's instances: declared once; the emulated instances below and the mechanism's prediction read them.
ORIGINAL = {"4c16g": Instance(4, 16, 12, 7000), "8c32g": Instance(8, 32, 24, 12000)}
ORIGINAL_THREADS = (1, 128)


@dataclass(frozen=True)
class Emulated:
    name: str
    cores: float  # emulated: CPU quota on this machine
    data_to_buffer_pool: float | None  # None: the data fits in the buffer pool (in-memory)
    iops: int | None  # emulated: read and write IOPS limit each (None: the disk's own)
    original: str
    read_latency_us: float | None = None  # emulated: each data-file read takes at least this long (None: the disk's)
    flush_latency_us: float | None = None  # emulated: each fsync of a data-disk file takes at least this long
    source: Instance | None = None  # the original's instance (None: not one of the original's)

    def at(self, threads: int) -> Limits:
        """The limits a cell runs under: the original's own at ORIGINAL_SCALE_THREADS, the emulated ones else."""
        if self.source is not None and threads in ORIGINAL_SCALE_THREADS:
            return Limits(float(self.source.cores), self.source.iops, SSD_READ_LATENCY_US, SSD_FLUSH_LATENCY_US, 1.0)
        return Limits(self.cores, self.iops, self.read_latency_us, self.flush_latency_us, SCALE)


class Limits(NamedTuple):
    """One cell's limits: the CPU quota (cores), the read IOPS cap, the device's read and flush latencies (us) and
    the share of the original it runs at (1: the original's own scale)."""

    cores: float
    iops: int | None
    read_latency_us: float | None
    flush_latency_us: float | None
    scale: float


def emulated(name: str, inst: Instance) -> Emulated:
    """The original's instance on this machine: its cores and IOPS scaled by SCALE, its reads' latency dilated by
    1/SCALE, its data-to-buffer-pool ratio kept."""
    return Emulated(
        name,
        inst.cores * SCALE,
        DATA_GB / inst.buffer_pool_gb,
        round(inst.iops * SCALE),
        inst.describe(),
        round(SSD_READ_LATENCY_US / SCALE, 1),
        round(SSD_FLUSH_LATENCY_US / SCALE, 1),
        inst,
    )


EMULATED = {name: emulated(name, inst) for name, inst in ORIGINAL.items()} | {
    "in-memory": Emulated(
        "in-memory", 8 * SCALE, None, None, "not in the original: data fits in the buffer pool (CPU cost only)"
    ),
}


def iops_limits(emulate: str, instance: Emulated | Limits | None) -> tuple[int | None, int | None]:
    """(read, write) IOPS limits of an instance (or one cell's limits) under the emulation chosen (emulate_iops:
    off, reads, both)."""
    if instance is None or not instance.iops or emulate == "off":
        return None, None
    return instance.iops, instance.iops if emulate == "both" else None


def _data_bytes(db: Any, database: str = "sbtest") -> int:
    """The tables' size as InnoDB counts it. MySQL 8.0 answers information_schema.TABLES from a cache a day old by
    default (information_schema_stats_expiry), which after a load still held the empty tables' 64 KiB: it is read
    afresh, after the statistics are, as MariaDB always reads it."""
    conn = db.admin()
    try:
        cur = conn.cursor()
        if db.kind == "mysql":
            cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s", (database,))
            names = [f"`{database}`.`{row[0]}`" for row in cur.fetchall()]
            if names:
                cur.execute(f"ANALYZE TABLE {', '.join(names)}")
                cur.fetchall()
            cur.execute("SET SESSION information_schema_stats_expiry = 0")
        cur.execute(
            "SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s",
            (database,),
        )
        return int(cur.fetchone()[0])
    finally:
        conn.close()


def buffer_pool_target(data_bytes: list[int], instance: Emulated) -> int:
    """One buffer pool size for every arm of an emulated instance, from the mean of their data sizes: the original's
    data-to-buffer-pool ratio (or twice the data for the in-memory instance), at least InnoDB's 6 MiB floor.
    One size, because the arms must differ only in encryption: sized from each server's own data (whose
    information_schema size differs by up to 1.5 % between identical loads), the 8c32g pools differed by 1-2 MiB
    in 6 of 11 quick runs, and the server with the smaller pool read 0.6-3.9 % more pages per transaction."""
    data = sum(data_bytes) / len(data_bytes)
    target = 2 * data + (16 << 20) if instance.data_to_buffer_pool is None else data / instance.data_to_buffer_pool
    return max(int(target), 6 << 20)


def _size_buffer_pools(dbs: dict[str, Any], instance: Emulated) -> dict[str, dict[str, Any]]:
    """Resize every arm's buffer pool online to one size (buffer_pool_target), write out what the change
    dirtied, and report what took, per arm."""
    data = {arm: _data_bytes(db) for arm, db in dbs.items()}
    target = buffer_pool_target(list(data.values()), instance)
    out = {}
    for arm, db in dbs.items():
        effective = db.set_buffer_pool(target)
        db.flush_dirty_pages()
        out[arm] = {
            "data_bytes": data[arm],
            "buffer_pool_bytes": effective,
            "data_to_buffer_pool": round(data[arm] / effective, 2) if effective else None,
            "lru_scan_depth": int(db.variables(["innodb_lru_scan_depth"]).get("innodb_lru_scan_depth", 0)),
        }
    return out


EMULATION_NOTE = (
    "instance types cannot be reproduced on 2 shared cores: each instance is a CPU quota, a read-IOPS limit (both "
    f"the original's scaled by {SCALE:g}) and a buffer pool keeping its data-to-buffer-pool ratio. The data lives "
    "on a RAM-backed disk (data_disk: ram) throttled by cgroup blkio: closer to RDS local SSD latency than this "
    "VM's shared virtual disk, whose erratic fsyncs made write throughput vary several-fold between runs. Writes "
    "are not throttled (emulate_iops: reads): throttled writes stall ext4's journal here (whole-server stalls of "
    "2-3 s with 16 writing threads, measured). Absolute TPS is not comparable, only losses, trends and costs "
    "per transaction are"
)
