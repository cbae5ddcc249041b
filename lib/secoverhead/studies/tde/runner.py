"""TDE study: servers with encryption off and on, each instance applied, sysbench, the write-back."""

from __future__ import annotations

import contextlib
import functools
import math
import re
import secrets
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from secoverhead.host.metrics import CpuMeter
from secoverhead.host.ramdisk import RamDisk
from secoverhead.measurement.parts import StudyResult
from secoverhead.servers import labels
from secoverhead.servers.builds import ServerBuild, described, nearest, stand_in_note
from secoverhead.servers.endpoints import BENCH_DATABASE
from secoverhead.servers.labels import LabelMismatch
from secoverhead.studies.protocol.runner import PartPlan, run_parts
from secoverhead.studies.tde.claims import STALL_LOG, baseline_conditions, environment_conditions, part_claims
from secoverhead.studies.tde.declarations import (
    ON,
    PART_BUILDS,
    PURGE_THREADS,
    RECORD_ENGINE,
    STUDY,
    Params,
    engine_of,
    instance_of,
)
from secoverhead.studies.tde.instances import (
    EMULATED,
    ORIGINAL_SCALE_THREADS,
    SSD_FLUSH_LATENCY_US,
    SSD_READ_LATENCY_US,
    Emulated,
    Limits,
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


def _start(
    p: Params, opts, stack: contextlib.ExitStack, engine: str = RECORD_ENGINE
) -> tuple[dict[str, Rig], dict[str, Any]]:
    """One server per arm of the engine's build, loaded with identical data and flushed, its encryption read back
    from the server and its data files; the instances take turns on them. The data load runs on both servers at
    once, with their limits lifted: the limits emulate an instance for the measurement, and loading under a
    0.6-core quota and a read-IOPS limit doubled the study's set-up time."""

    first = EMULATED[p.instances[0]]
    iops = iops_limits(p.emulate_iops, next((EMULATED[n] for n in p.instances if EMULATED[n].iops), first))
    latency = p.emulate_latency and p.data_disk == "ram" and any(EMULATED[n].read_latency_us for n in p.instances)
    build, why = nearest(PART_BUILDS[engine])
    targets, disk = {}, {"stand_in": stand_in_note(PART_BUILDS[engine], build, why)}
    for arm in p.arm_names():
        base, disk_facts = _disk(p, stack)
        disk |= disk_facts
        db = stack.enter_context(
            build.server(
                tls=False,  # sysbench loads it over the private socket
                run_dir_base=base,
                encryption=arm == ON,
                cpu_limit=first.cores,
                iops=iops if any(iops) else None,
                read_latency_us=0.0 if latency else None,  # each instance sets its own (_apply)
                buffer_pool="64M",
                max_connections=max(600, 2 * max(p.threads) + 50),
                **_engine_options(build, p),
            )
        )
        sb = Sysbench(db.endpoint, via="socket")
        if (acct := sb.own_client_group()) is not None:
            stack.callback(acct.remove)
        targets[arm] = Rig(sb, db, db.admin)

    def load(arm: str, t: Rig) -> dict[str, Any]:
        with t.db.limits_lifted():
            t.sb.prepare(opts[p.workloads[0]][p.threads[0]])
            t.db.flush_dirty_pages()
            return encrypted_state(t.db, arm == ON, p.tables)

    with ThreadPoolExecutor(max_workers=len(targets)) as pool:  # re-raises the first failure
        checked = dict(zip(targets, pool.map(load, targets, targets.values()), strict=True))
    return targets, disk | {"build": build, "encryption_checked": checked}


def _engine_options(build: ServerBuild, p: Params) -> dict[str, Any]:
    """What each engine needs besides: the same InnoDB settings on both (durability, purge, the chunk that lets a
    pool of a few MiB resize), MySQL's binary log off as MariaDB's is, and its reads direct as MariaDB's are by
    default (O_DIRECT: a read from the page cache would be neither delayed by the device nor counted by its cap)."""
    innodb = {
        "innodb_buffer_pool_chunk_size": "1M" if build.kind == "mariadb" else 1 << 20,
        "innodb_flush_log_at_trx_commit": p.commit_flush,
        "innodb_purge_threads": PURGE_THREADS,
    }
    if build.kind == "mariadb":
        return {"extra_options": innodb}
    return {"binlog": False, "extra_options": innodb | {"innodb_flush_method": "O_DIRECT"}}


MARKER_TABLE = "tde_marker"


def encrypted_state(db: Any, encrypted: bool, tables: int) -> dict[str, Any]:
    """An arm's encryption read back before it is measured, two ways: the tablespaces' own flags (the server's
    records) and a marker row written, flushed and looked for in the data files' bytes (absent where the pages
    are encrypted). A server that is not what its arm says fails here, before any load is timed."""
    names = [f"sbtest{i}" for i in range(1, tables + 1)]
    marker = f"tde-marker-{secrets.token_hex(8)}"
    conn = db.admin()
    try:
        state = labels.encryption_state(conn, BENCH_DATABASE, [*names, MARKER_TABLE])
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE IF NOT EXISTS {BENCH_DATABASE}.{MARKER_TABLE} (id INT PRIMARY KEY, note CHAR(60))")
        cur.execute(f"REPLACE INTO {BENCH_DATABASE}.{MARKER_TABLE} VALUES (1, %s)", (marker,))
        cur.execute(f"FLUSH TABLES {BENCH_DATABASE}.{MARKER_TABLE} FOR EXPORT")
        cur.execute("UNLOCK TABLES")
        state = labels.encryption_state(conn, BENCH_DATABASE, [*names, MARKER_TABLE])
    finally:
        conn.close()
    files = sorted((db.run_dir / "data" / BENCH_DATABASE).glob(f"{MARKER_TABLE}*.ibd"))
    found = any(marker.encode() in f.read_bytes() for f in files)
    where = f"the {'encrypted' if encrypted else 'plain'} arm's {db.kind} server"
    labels.check_encryption(state, "on" if encrypted else "off", names, where)
    if not files or found == encrypted:
        seen = "no data file" if not files else ("in" if found else "absent from") + f" {files[0].name}"
        raise LabelMismatch(f"{where}: a marker row written and flushed is {seen}: it is not that arm")
    return state.as_dict() | {"marker": "absent from the data file" if encrypted else "readable in the data file"}


def _apply(p: Params, name: str, targets: dict[str, Rig], disk: dict[str, Any]) -> tuple[dict, list[str], Emulated]:
    """Put the servers under a instance's limits (CPU quota, IOPS, buffer pool); facts and notes as they took."""
    instance, build = EMULATED[instance_of(name)], disk["build"]
    facts = {"data disk": {k: v for k, v in disk.items() if k not in ("build", "encryption_checked", "stand_in")}}
    notes = [*disk["stand_in"], f"data on {disk['data_disk']}"]
    for t in targets.values():
        _limit_cell(p, t.db, instance.at(max(p.threads)))  # the emulated scale; each cell sets its own (_measure)
    pools = _size_buffer_pools({arm: t.db for arm, t in targets.items()}, instance)
    for arm, t in targets.items():
        sizing = pools[arm]
        checked = {"buffer_pool_sizing": sizing, "encryption_checked": disk["encryption_checked"][arm]}
        wanted = PART_BUILDS[engine_of(name)]
        facts[f"mysql {arm} ({build.label}, {instance.name})"] = described(t.db, build, wanted) | checked
        notes.append(
            f"{arm}: {sizing['data_bytes'] / 2**20:.1f} MiB of data, buffer pool "
            f"{sizing['buffer_pool_bytes'] / 2**20:.1f} MiB (ratio {sizing['data_to_buffer_pool']}; free-page "
            f"target innodb_lru_scan_depth {sizing['lru_scan_depth']}, scaled to the pool)"
        )
    notes.append("one buffer pool size for every arm, from their mean data size: the arms differ only in encryption")
    notes.append(_encryption_note(build, disk["encryption_checked"]))
    limit = next(v for k, v in facts.items() if k.startswith("mysql"))
    reads, writes = iops_limits(p.emulate_iops, instance)
    io = reads and limit.get("iops_limit_method", "").startswith("cgroup")
    notes.append(
        f"emulates {instance.name} ({instance.original}) with a CPU limit of "
        f"{limit.get('cpu_limit_cores', instance.cores):g} cores ({limit.get('cpu_limit_method')})"
        + (
            f", {reads} read{' and write' if writes else ''} IOPS ({limit.get('iops_limit_method')})"
            if io
            else ", no IOPS limit"
        )
        + " and the buffer pool above"
    )
    notes.append(_latency_note(p, limit, instance))
    return facts, notes, instance


def _encryption_note(build: ServerBuild, checked: dict[str, dict[str, Any]]) -> str:
    """How each arm's encryption was checked, in one line."""
    how = next(iter(checked.values()), {}).get("how", "")
    shown = "; ".join(f"{arm}: marker {c.get('marker')}" for arm, c in checked.items())
    return f"{build.label}: each arm's encryption read back before any load ({how}; {shown})"


def _latency_note(p: Params, limit: dict[str, Any], instance: Emulated) -> str:
    """What the data files' reads waited: the instance's device latency, or why they did not."""
    if limit.get("read_latency_us"):
        note = (
            f"each read of a data file took at least {limit['read_latency_us']:g} us and each flush "
            f"{limit.get('flush_latency_us', 0):g} us: a local SSD's {SSD_READ_LATENCY_US:g} and "
            f"{SSD_FLUSH_LATENCY_US:g} us dilated like the instance ({limit['read_latency_method']})"
        )
        if instance.source is None:
            return note
        own = instance.at(ORIGINAL_SCALE_THREADS[0])
        return note + (
            f"; at {', '.join(map(str, ORIGINAL_SCALE_THREADS))} thread the cells ran at the original's own scale "
            f"(the SSD's own latencies, {own.iops:,} read IOPS, a quota of {own.cores:g} cores that one thread "
            "cannot fill): one thread's CPU is not dilated, so its device is not either"
        )
    why = limit.get("read_latency_method") or (
        "emulate_latency is off" if not p.emulate_latency else "the data is not on the RAM-backed disk"
    )
    return f"no device latency under the data files' reads ({why}): a read costs the RAM disk's microseconds"


PURGE_DONE = 50  # undo records left: below this the purge backlog is noise


PURGE_WAIT_S = 20.0
PURGE_IDLE_S = 1.0  # MySQL 8.0's purge coordinator leaves a history shorter than its batch (300) where it is


def _purged(cur: Any) -> int:
    """Wait for purge to clear the run's undo records: until PURGE_DONE are left, or the history has not shrunk for
    PURGE_IDLE_S (MySQL's purge sleeps with a short history: waiting for 50 cost every run 20 s), or PURGE_WAIT_S."""
    start = time.monotonic()
    left = _history_length(cur)
    best, since = left, start
    while left > PURGE_DONE and time.monotonic() - start < PURGE_WAIT_S and time.monotonic() - since < PURGE_IDLE_S:
        time.sleep(0.05)
        left = _history_length(cur)
        if left < best:
            best, since = left, time.monotonic()
    return left


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
            left = _purged(cur)
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
        "server_cpu_fg_us_per_op": metrics["server_cpu_total_s"] / txn * 1e6,  # on the transactions' own path
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


def _limit_cell(p: Params, db: Any, limits: Limits) -> None:
    """A server under one cell's limits: its CPU quota, read IOPS cap and device latencies (Emulated.at)."""
    if db.limiter is not None and db.limiter.group is not None:
        db.limiter.set(limits.cores)
    if db.io_limiter is not None:
        db.io_limiter.set(*iops_limits(p.emulate_iops, limits))
    if db.read_latency is not None:
        db.read_latency.set(limits.read_latency_us or 0.0, limits.flush_latency_us or 0.0)


def _cell_facts(p: Params, db: Any, limits: Limits) -> dict[str, float]:
    """What a run ran under, recorded with it: the preconditions read a cell against its own cap and quota."""
    cap = iops_limits(p.emulate_iops, limits)[0] if db is not None and db.io_limiter is not None else None
    latency = db is not None and db.read_latency is not None
    return {
        "cell_scale": limits.scale,
        "cpu_quota_cores": limits.cores,
        "iops_cap_read": float(cap) if cap else float("nan"),
        "read_latency_us": float(limits.read_latency_us or 0.0) if latency else 0.0,
        "flush_latency_us": float(limits.flush_latency_us or 0.0) if latency else 0.0,
    }


def _measure(p: Params, targets: dict[str, Any], instance: Emulated, opts):
    def measure(arm: str, factors: dict) -> Measurement:
        sb, db, connect = targets[arm]
        limits = instance.at(int(factors["threads"]))
        if db is not None:
            _limit_cell(p, db, limits)
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
        if db is not None and db.kind == "mysql":
            m.metrics |= _tde_pages(m.metrics, arm == ON)
        if db is not None:
            m.metrics |= _cell_facts(p, db, limits)
        if "server_cpu_cores" in m.metrics and math.isfinite(limits.cores):
            m.metrics["server_cpu_pct_of_limit"] = m.metrics["server_cpu_cores"] / limits.cores * 100
        return m

    return measure


def _tde_pages(metrics: dict[str, Any], encrypted: bool) -> dict[str, float]:
    """MySQL counts no pages en- or decrypted: under TDE every page of an encrypted tablespace is decrypted as it is
    read from the data files and encrypted as it is written (MariaDB counts its own, Innodb_num_pages_*)."""
    read, written = metrics.get("pages_read_per_txn"), metrics.get("pages_written_per_txn")
    if read is None or written is None:
        return {}
    return {
        "pages_decrypted_per_txn": read if encrypted else 0.0,
        "pages_encrypted_per_txn": written if encrypted else 0.0,
    }


@contextlib.contextmanager
def as_instance(p: Params, name: str, opts) -> Iterator[tuple[dict[str, Rig], Callable[[str, dict], Measurement]]]:
    """The study's servers, loaded and put under one emulated instance, and its measure (write-back charged), for
    a workload no study ran: benchmarks/calculator_check.py paces sysbench through it."""
    with contextlib.ExitStack() as stack:
        targets, disk = _start(p, opts, stack, engine_of(name))
        _, _, instance = _apply(p, name, targets, disk)
        yield targets, _measure(p, targets, instance, opts)


class _Engines:
    """Each engine's servers, started for its first part and shared by its instances; the previous engine's are
    stopped first (two engines' four servers at once would share the host's memory and cores)."""

    def __init__(self, p: Params, opts: Any) -> None:
        self.p, self.opts, self.engine = p, opts, ""
        self.stack = contextlib.ExitStack()
        self.started: tuple[dict[str, Rig], dict[str, Any]] = ({}, {})

    def serving(self, engine: str) -> tuple[dict[str, Rig], dict[str, Any]]:
        if engine != self.engine:
            self.stack.close()
            self.engine = engine
            self.started = _start(self.p, self.opts, self.stack, engine)
        return self.started


def run(p: Params) -> StudyResult:
    opts = _options(p)
    engines = _Engines(p, opts)
    with engines.stack:

        def plan(name: str, stack: contextlib.ExitStack) -> PartPlan:
            if name == "external":
                targets, facts, notes, instance = _external(p, opts, stack)
            else:
                targets, disk = engines.serving(engine_of(name))
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
