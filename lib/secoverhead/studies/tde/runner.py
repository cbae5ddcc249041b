"""TDE study: servers with encryption off and on, each instance applied, sysbench, the write-back."""

from __future__ import annotations

import contextlib
import functools
import math
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from secoverhead.host.metrics import CpuMeter
from secoverhead.host.ramdisk import RamDisk
from secoverhead.measurement.parts import StudyResult
from secoverhead.servers import MariaDBServer
from secoverhead.servers.builds import MARIADB, described
from secoverhead.servers.mariadb import BENCH_DATABASE
from secoverhead.studies.protocol.runner import PartPlan, run_parts
from secoverhead.studies.tde.claims import STALL_LOG, baseline_conditions, environment_conditions, part_claims
from secoverhead.studies.tde.declarations import ON, PURGE_THREADS, STUDY, Params
from secoverhead.studies.tde.instances import (
    EMULATED,
    SSD_READ_LATENCY_US,
    Emulated,
    Rig,
    _size_buffer_pools,
    iops_limits,
)
from secoverhead.workloads import server_status
from secoverhead.workloads.measurement import Measurement
from secoverhead.workloads.sysbench import Sysbench, SysbenchOptions


def _options(p: Params) -> dict[str, dict[int, Any]]:
    return {
        w: {
            t: SysbenchOptions(script=w, tables=p.tables, table_size=p.table_size, threads=t, time=p.run_seconds)
            for t in p.threads
        }
        for w in p.workloads
    }


def _external(p: Params, opts, stack: contextlib.ExitStack) -> tuple[dict[str, Rig], dict, list[str], Emulated]:
    """The user's server as one arm (its encryption state), with the sysbench tables prepared if absent."""

    ext = stack.enter_context(p.user_mysql())
    sb = Sysbench(ext.endpoint, tls=p.mysql_tls)
    created = sb.prepare(opts[p.workloads[0]][p.threads[0]])
    arm = f"encryption {p.mysql_encryption}"
    instance = Emulated("external", float("nan"), None, None, p.mysql_instance_class or "as named by the user")
    notes = [
        f"external server, one arm ({arm}); sysbench tables {'prepared in' if created else 'found in'} "
        f"{p.mysql_database}. To compare, run again against the server in the other state and use "
        "`secoverhead compare RUN_A RUN_B`; server CPU is not measured"
    ]
    target = Rig(sb, None, lambda: ext.endpoint.connect(tls=p.mysql_tls))
    return {arm: target}, {"mysql": ext.describe()}, notes, instance


def _disk(p: Params, stack: contextlib.ExitStack) -> tuple[Any, dict[str, Any]]:
    """Where one server's data lives: a RAM-backed disk of its own (closed after the server stops), or the
    local disk. One per server: two servers on one file system share its journal, and in duets one of the pair
    would wait on the other's commits (measured: write-only pairs where one ran at half the TPS of the other,
    the slow one changing from round to round)."""

    if p.data_disk == "ram":
        data_mb = p.tables * p.table_size * 500 >> 20  # rows and indexes, generously
        disk = RamDisk.make(size_mb=max(2048, 4 * data_mb + 1024))
        if disk is not None:
            stack.callback(disk.close)
            return disk.path, disk.describe()
        return None, {"data_disk": "this machine's disk (a RAM-backed disk needs root, losetup and mkfs.ext4)"}
    return None, {"data_disk": "this machine's disk (data_disk: local)"}


def _start(p: Params, opts, stack: contextlib.ExitStack) -> tuple[dict[str, Rig], dict[str, Any]]:
    """One server per arm, loaded with identical data and flushed; the instances take turns on them. The data
    load runs on both servers at once, with their limits lifted: the limits emulate an instance for the
    measurement, and loading under a 0.6-core quota and a read-IOPS limit doubled the study's set-up time."""

    first = EMULATED[p.instances[0]]
    iops = iops_limits(p.emulate_iops, next((EMULATED[n] for n in p.instances if EMULATED[n].iops), first))
    latency = p.emulate_latency and p.data_disk == "ram" and any(EMULATED[n].read_latency_us for n in p.instances)
    targets, disk = {}, {}
    for arm in p.arm_names():
        base, disk = _disk(p, stack)
        db = stack.enter_context(
            MariaDBServer(
                run_dir_base=base,
                encryption=arm == ON,
                cpu_limit=first.cores,
                iops=iops if any(iops) else None,
                read_latency_us=0.0 if latency else None,  # each instance sets its own (_apply)
                buffer_pool="64M",
                max_connections=max(600, 2 * max(p.threads) + 50),
                extra_options={
                    "innodb_buffer_pool_chunk_size": "1M",
                    "innodb_flush_log_at_trx_commit": p.commit_flush,
                    "innodb_purge_threads": PURGE_THREADS,
                },
            )
        )
        sb = Sysbench(db.endpoint, via="socket")
        if (acct := sb.own_client_group()) is not None:
            stack.callback(acct.remove)
        targets[arm] = Rig(sb, db, db.admin)

    def load(t: Rig) -> None:
        with t.db.limits_lifted():
            t.sb.prepare(opts[p.workloads[0]][p.threads[0]])
            t.db.flush_dirty_pages()

    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        list(pool.map(load, targets.values()))  # re-raises the first failure
    return targets, disk


def _apply(p: Params, name: str, targets: dict[str, Rig], disk: dict[str, Any]) -> tuple[dict, list[str], Emulated]:
    """Put the servers under a instance's limits (CPU quota, IOPS, buffer pool); facts and notes as they took."""
    instance = EMULATED[name]
    facts, notes = {"data disk": disk}, [f"data on {disk['data_disk']}"]
    for t in targets.values():
        db = t.db
        if db.limiter is not None and db.limiter.group is not None:
            db.limiter.set(instance.cores)
        if db.io_limiter is not None:
            db.io_limiter.set(*iops_limits(p.emulate_iops, instance))
        if db.read_latency is not None:
            db.read_latency.set(instance.read_latency_us or 0.0)
    pools = _size_buffer_pools({arm: t.db for arm, t in targets.items()}, instance)
    for arm, t in targets.items():
        sizing = pools[arm]
        facts[f"mysql {arm} (MariaDB, {name})"] = described(t.db, MARIADB, MARIADB) | {"buffer_pool_sizing": sizing}
        notes.append(
            f"{arm}: {sizing['data_bytes'] / 2**20:.1f} MiB of data, buffer pool "
            f"{sizing['buffer_pool_bytes'] / 2**20:.1f} MiB (ratio {sizing['data_to_buffer_pool']}; free-page "
            f"target innodb_lru_scan_depth {sizing['lru_scan_depth']}, scaled to the pool)"
        )
    notes.append("one buffer pool size for every arm, from their mean data size: the arms differ only in encryption")
    limit = next(v for k, v in facts.items() if k.startswith("mysql"))
    reads, writes = iops_limits(p.emulate_iops, instance)
    io = reads and limit.get("iops_limit_method", "").startswith("cgroup")
    notes.append(
        f"emulates {name} ({instance.original}) with a CPU limit of {limit.get('cpu_limit_cores', instance.cores):g} "
        f"cores ({limit.get('cpu_limit_method')})"
        + (
            f", {reads} read{' and write' if writes else ''} IOPS ({limit.get('iops_limit_method')})"
            if io
            else ", no IOPS limit"
        )
        + " and the buffer pool above"
    )
    notes.append(_latency_note(p, limit, instance))
    return facts, notes, instance


def _latency_note(p: Params, limit: dict[str, Any], instance: Emulated) -> str:
    """What the data files' reads waited: the instance's device latency, or why they did not."""
    if limit.get("read_latency_us"):
        return (
            f"each read of a data file took at least {limit['read_latency_us']:g} us: a local SSD's "
            f"{SSD_READ_LATENCY_US:g} us dilated like the instance ({limit['read_latency_method']})"
        )
    why = limit.get("read_latency_method") or (
        "emulate_latency is off" if not p.emulate_latency else "the data is not on the RAM-backed disk"
    )
    return f"no device latency under the data files' reads ({why}): a read costs the RAM disk's microseconds"


PURGE_DONE = 50  # undo records left: below this the purge backlog is noise


PURGE_WAIT_S = 20.0


def _history_length(cur: Any) -> int:
    cur.execute("SHOW ENGINE INNODB STATUS")
    m = re.search(r"History list length (\d+)", cur.fetchone()[2])
    return int(m.group(1)) if m else 0


def _write_back(db: Any, tables: int) -> dict[str, float]:
    """Finish the run's writes now, with the IOPS limit lifted meanwhile: wait for purge to clear the undo
    records the run left (bounded), then write the sysbench tables' dirty pages (FLUSH TABLES ... FOR EXPORT:
    synchronous, unlike lowering innodb_max_dirty_pages_pct, whose page cleaner spins for seconds). What the
    run's writes cost the server beyond its own window, and nothing left for the next run: measured at quick
    scale, a write run's purge backlog spilling into the next read-only run made it read ~96 and write ~45
    pages per transaction instead of ~20 and 0, and its TPS fall tenfold."""

    names = ", ".join(f"{BENCH_DATABASE}.sbtest{i}" for i in range(1, tables + 1))
    conn = db.admin()
    try:
        cur = conn.cursor()
        with db.limits_lifted(cpu=False), CpuMeter(db.cpu) as meter:
            deadline = time.monotonic() + PURGE_WAIT_S
            while (left := _history_length(cur)) > PURGE_DONE and time.monotonic() < deadline:
                time.sleep(0.05)
            cur.execute(f"FLUSH TABLES {names} FOR EXPORT")
            cur.execute("UNLOCK TABLES")
    finally:
        conn.close()
    s = meter.server
    return {"cpu_s": s.total_s, "user_s": s.user_s, "system_s": s.system_s, "wall_s": s.wall_s, "undo_left": left}


def _charge(metrics: dict[str, Any], wb: dict[str, float]) -> None:
    """Add the write-back's CPU to the run's per-transaction costs (CPU utilisation stays the run's own)."""
    txn, queries = max(metrics["transactions"], 1), max(metrics["queries"], 1)
    total = metrics["server_cpu_total_s"] + wb["cpu_s"]
    metrics |= {
        "writeback_cpu_s": wb["cpu_s"],
        "writeback_s": wb["wall_s"],
        "purge_undo_left_count": wb["undo_left"],
        "server_cpu_total_s": total,
        "server_cpu_user_s": metrics["server_cpu_user_s"] + wb["user_s"],
        "server_cpu_system_s": metrics["server_cpu_system_s"] + wb["system_s"],
        "server_cpu_us_per_op": total / txn * 1e6,
        "server_user_us_per_op": (metrics["server_cpu_user_s"] + wb["user_s"]) / txn * 1e6,
        "server_system_us_per_op": (metrics["server_cpu_system_s"] + wb["system_s"]) / txn * 1e6,
        "server_cpu_us_per_query": total / queries * 1e6,
        "tps_per_server_core": txn / total if total > 0 else float("nan"),
    }


def _measure(p: Params, targets: dict[str, Any], instance: Emulated, opts):
    def measure(arm: str, factors: dict) -> Measurement:
        sb, db, connect = targets[arm]
        before = server_status.snapshot(connect)
        io0 = db.io_limiter.serviced() if db is not None and db.io_limiter else None
        m = sb.measure(opts[factors["workload"]][int(factors["threads"])], db.cpu if db is not None else None)
        if io0 is not None:  # the IOPS of the run's own window
            r, w = db.io_limiter.serviced()
            m.metrics["iops_read"] = (r - io0[0]) / m.metrics["duration_s"]
            m.metrics["iops_write"] = (w - io0[1]) / m.metrics["duration_s"]
        if db is not None and p.write_back and "server_cpu_total_s" in m.metrics:
            _charge(m.metrics, _write_back(db, p.tables))
        after = server_status.snapshot(connect)  # counters include the write-back: every page the run dirtied
        m.metrics |= server_status.per_transaction(before, after, m.metrics["transactions"])
        if "server_cpu_cores" in m.metrics and math.isfinite(instance.cores):
            m.metrics["server_cpu_pct_of_limit"] = m.metrics["server_cpu_cores"] / instance.cores * 100
        return m

    return measure


@contextlib.contextmanager
def as_instance(p: Params, name: str, opts) -> Iterator[tuple[dict[str, Rig], Callable[[str, dict], Measurement]]]:
    """The study's servers, loaded and put under one emulated instance, and its measure (write-back charged), for
    a workload no study ran: benchmarks/calculator_check.py paces sysbench through it."""
    with contextlib.ExitStack() as stack:
        targets, disk = _start(p, opts, stack)
        _, _, instance = _apply(p, name, targets, disk)
        yield targets, _measure(p, targets, instance, opts)


def run(p: Params) -> StudyResult:
    opts = _options(p)
    with contextlib.ExitStack() as servers:
        shared, disk = _start(p, opts, servers) if not p.mysql_host else ({}, {})

        def plan(name: str, stack: contextlib.ExitStack) -> PartPlan:
            if name == "external":
                targets, facts, notes, instance = _external(p, opts, stack)
            else:
                targets = shared
                facts, notes, instance = _apply(p, name, targets, disk)
            return PartPlan(
                arms=list(targets),
                measure=_measure(p, targets, instance, opts),
                facts=facts,
                notes=notes,
                factors={"workload": p.workloads, "threads": p.threads},
                servers={arm: t.db for arm, t in targets.items() if t.db is not None},
                judge=None if name == "external" else (lambda runs, alpha: part_claims(name, runs, alpha)),
                conditions=environment_conditions(p, name),
                baseline_conditions=functools.partial(baseline_conditions, p),
                profile_factors=[{"workload": p.workloads[0], "threads": max(p.threads)}],
                ops_metric="transactions",
                extras={"instance": instance},
                outlier=("tps", STALL_LOG),
            )

        return run_parts(p, STUDY, p.part_names(), plan)
