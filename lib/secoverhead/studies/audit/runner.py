"""Audit study: each approach switched on and verified, the load, and what each approach writes."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gzip
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import zstandard

from secoverhead.core.errors import SecoverheadError
from secoverhead.host.metrics import bytes_in
from secoverhead.host.threadwaits import WaitMeter
from secoverhead.measurement.parts import StudyResult
from secoverhead.servers import labels
from secoverhead.servers.builds import described, nearest, stand_in_note
from secoverhead.servers.journal import Journal, audit_state
from secoverhead.servers.logwaits import LogWaitMeter
from secoverhead.studies.audit.claims import (
    baseline_conditions,
    component_conditions,
    environment_conditions,
    part_claims,
)
from secoverhead.studies.audit.declarations import (
    BASELINE,
    LOAD_STATEMENT,
    NOT_RUN,
    NULL_SINKS,
    PART_BUILDS,
    STUDY,
    Arm,
    Params,
    Rig,
    load_curves,
)
from secoverhead.studies.protocol import load_runs, loads
from secoverhead.studies.protocol.runner import PartPlan, run_parts
from secoverhead.workloads import paced
from secoverhead.workloads.measurement import Measurement
from secoverhead.workloads.short_connections import ConnectSpec
from secoverhead.workloads.sysbench import Sysbench, SysbenchOptions


def verify_audit(db: Any, arm: Arm) -> str:
    """Prove the arm audits before measuring it: run marker statements as the bench user, find them."""
    marker = f"audit_check_{uuid.uuid4().hex[:10]}"
    conn = db.endpoint.connect(tls=False, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS audit_check (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(64))")
        cur.execute("INSERT INTO audit_check (note) VALUES (%s)", (marker,))
        cur.execute("SELECT note FROM audit_check WHERE note = %s", (marker,))
        cur.fetchall()
    finally:
        conn.close()
    time.sleep(0.3)
    found = []
    for log in db.audit_logs:
        files = [log] if log.is_file() else sorted(p for p in log.glob("*") if p.is_file())
        if any(marker.encode() in f.read_bytes() for f in files):
            found.append(log.name)
    if arm.audit == "init_connect_binlog":
        admin = db.admin()
        try:
            cur = admin.cursor()
            cur.execute("SELECT COUNT(*) FROM secoverhead_audit.accesslog WHERE user_host LIKE 'bench@%'")
            logins = cur.fetchone()[0]
        finally:
            admin.close()
        if not logins:
            raise SecoverheadError("init_connect recorded no login of the bench user")
        found.append(f"{logins} login row(s)")
    binlogs = (db.run_dir / "binlog").glob("*-bin.0*")  # mariadb-bin.000001, mysql-bin.000001
    if arm.binlog and arm.audit == "none" and any(marker.encode() in p.read_bytes() for p in binlogs):
        found.append("binlog")
    if arm.audit != "none" and not found:
        raise SecoverheadError(f"audit mode {arm.audit} wrote no record of the marker {marker}")
    if arm.audit == "none" and not arm.binlog and (db.audit_logs or found):
        raise SecoverheadError("the baseline unexpectedly audits")
    return ", ".join(found) or "no audit records (baseline)"


def _proc_io(pid: int) -> dict[str, int]:
    """write syscalls and bytes of a process (all its threads), from /proc/PID/io."""
    out = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            k, v = line.split(":")
            out[k] = int(v)
    return out


def run(p: Params) -> StudyResult:
    return run_parts(p, STUDY, p.parts(), lambda name, stack: _plan(p, name, stack))


def _plan(p: Params, part: str, stack: contextlib.ExitStack) -> PartPlan:
    """One part: its targets (the user's server with SQL-toggled arms, or one embedded server of the part's build
    per arm), a sysbench run per measurement, audit bytes and server writes per query beside TPS."""
    opts = SysbenchOptions(
        script="oltp_read_write",
        tables=p.tables,
        table_size=p.table_size,
        threads=p.threads,
        time=p.run_seconds,
        report_interval=p.report_interval,
    )
    notes = [f"{arm}: not run - {why}" for arm, why in NOT_RUN.items()] if part == "MySQL" else []
    verification: dict[str, Any] = {}
    if p.mysql_host:
        targets, facts = _external_targets(p, stack, opts, notes)
    else:
        targets, facts = _embedded_targets(p, part, stack, opts, notes, verification)
    return PartPlan(
        arms=list(targets),
        measure=functools.partial(_measure, targets, opts),
        # a profile needs samples, not a full run: half the run's length (thousands of samples at 200 threads)
        profile_measure=functools.partial(_measure, targets, dataclasses.replace(opts, time=max(1, opts.time // 2))),
        facts=facts,
        notes=notes,
        servers={a: t.db for a, t in targets.items() if t.db is not None},
        judge=functools.partial(part_claims, part),
        conditions=environment_conditions(p),
        baseline_conditions=functools.partial(baseline_conditions, p),
        component_conditions=component_conditions,
        ops_metric="queries",
        extras={"verification": verification},
        finish=lambda store: {
            "compression": {a: _compression(t.logs, p.compress_sample_mb << 20) for a, t in targets.items() if t.logs},
            "null_sink": _null_sinks(targets, dataclasses.replace(opts, time=_sink_seconds(opts.time)), p.sink_rounds),
            "load_curves": _load_curves(p, targets),
        },
    )


def _external_targets(
    p: Params, stack: contextlib.ExitStack, opts: SysbenchOptions, notes: list[str]
) -> tuple[dict[str, Rig], dict[str, Any]]:
    """The user's server: the baseline as it is, each arm toggled with the user's SQL around its runs."""
    ext = stack.enter_context(p.user_mysql())
    admin = stack.enter_context(p.admin()) if p.external_arms else None
    journal = stack.enter_context(Journal.for_target(admin, notes)) if admin is not None else None
    sb = Sysbench(ext.endpoint, tls=p.mysql_tls)
    sb.prepare(opts)
    targets = {BASELINE: Rig(sb, None, [], None)}
    baseline = audit_state(admin) if admin is not None else {}
    for name, spec in p.external_arms.items():
        targets[name] = Rig(sb, None, [], (admin, journal, spec, name, baseline))
    notes.append(
        "external server: arms are toggled with the given SQL around each run; every variable an arm sets is read "
        "before it runs, journaled, and set back to the value read on every exit (after the arm's disable "
        "statements); audit bytes and server CPU are not measured (not our files or process)"
    )
    return targets, {"mysql": ext.describe()}


def _embedded_targets(
    p: Params,
    part: str,
    stack: contextlib.ExitStack,
    opts: SysbenchOptions,
    notes: list[str],
    verification: dict[str, Any],
) -> tuple[dict[str, Rig], dict[str, Any]]:
    """One server of the part's build per arm, its audit mode verified, loaded at once."""
    build, why = nearest(PART_BUILDS[part])
    notes += stand_in_note(PART_BUILDS[part], build, why)
    if p.server_cpu_limit:
        notes.append(
            f"each server limited to {p.server_cpu_limit:g} core (the facts say how): CPU-bound at its quota while "
            "its sysbench client keeps room, as the original's server near its VM's CPU with the client elsewhere"
        )
    targets: dict[str, Rig] = {}
    for arm in p.arm_list(part):
        db = stack.enter_context(
            build.server(
                tls=False,  # sysbench loads it over the private socket
                buffer_pool="128M",
                max_connections=max(600, 2 * p.threads + 50),
                audit=arm.audit,
                binlog=arm.binlog,
                cpu_limit=p.server_cpu_limit or None,
                **({"log_waits": True} if build.kind == "mysql" else {}),  # MariaDB's audit log is not instrumented
            )
        )
        verification[arm.name] = verify_audit(db, arm)
        sb = Sysbench(db.endpoint, via="socket")
        if (acct := sb.own_client_group()) is not None:
            stack.callback(acct.remove)
        logs = list(db.audit_logs) or ([db.run_dir / "binlog"] if arm.binlog else [])
        targets[arm.name] = Rig(sb, db, logs, None)
    _load(targets, opts)
    return targets, {
        f"{part.lower()} {arm} ({build.label})": described(t.db, build, PART_BUILDS[part]) for arm, t in targets.items()
    }


def _measure(targets: dict[str, Rig], opts: SysbenchOptions, arm: str, factors: dict) -> Measurement:
    """One sysbench run on the arm's target: TPS, and what the audit wrote and the server's writes per query."""
    sb, db, logs, toggle = targets[arm]
    admin, journal, spec, name, baseline = toggle if toggle is not None else (None,) * 5
    with journal.applied(admin, spec, name) if toggle is not None else contextlib.nullcontext():
        if toggle is not None:  # the arm's label read back from the server before it is measured
            labels.check_audit_toggled(name, audit_state(admin), baseline)
        before, io0 = bytes_in(logs), _proc_io(db.pids[0]) if db is not None else {}
        text = {f: f.stat().st_size for f in logs if f.is_file()}
        meter = WaitMeter(db.pids if db is not None else [], within=_inside_load(opts))
        with meter as waits, LogWaitMeter(_log_reader(db)) as log_waits:
            m = sb.measure(opts, db.cpu if db is not None else None)
        written = bytes_in(logs) - before
        io1 = _proc_io(db.pids[0]) if db is not None else {}
    txn, queries = max(m.metrics["transactions"], 1), max(m.metrics["queries"], 1)
    # blocked vs run-queue time in the connections' threads: CPU or serialisation (contention_note)
    m.metrics |= waits.metrics(txn, load_s=m.metrics.get("duration_s"))
    m.metrics |= log_waits.metrics(txn, opts.threads, m.metrics.get("duration_s"))  # of that, on the logs
    if logs:
        m.metrics |= {
            "audit_bytes": written,
            "audit_bytes_per_transaction": written / txn,
            "audit_bytes_per_query": written / queries,
        }
    if text:  # a text log holds a record a line; the binary log's events are not lines
        m.metrics["audit_records_per_transaction"] = _lines_since(text) / txn
    if io0 and io1:
        m.metrics |= {
            "server_write_syscalls_per_query": (io1["syscw"] - io0["syscw"]) / queries,
            "server_write_bytes_per_query": (io1["wchar"] - io0["wchar"]) / queries,
        }
    return m


def _lines_since(sizes: dict[Path, int]) -> int:
    """Lines appended to each file since it had the size given (one rotated or truncated since: all of it)."""
    lines = 0
    for f, size in sizes.items():
        with contextlib.suppress(OSError), open(f, "rb") as fh:
            fh.seek(size if f.stat().st_size >= size else 0)
            while chunk := fh.read(1 << 20):
                lines += chunk.count(b"\n")
    return lines


# A null sink's runs compare CPU and log time per transaction, steady within seconds: half a run, as a profile's
# (hundreds of transactions at 200 threads), and never a full-scale 300-s run each, which would add an hour
SINK_SECONDS = 30


def _sink_seconds(run_seconds: int) -> int:
    return max(1, min(run_seconds // 2, SINK_SECONDS))


# What the hook apart from the write is read on: per transaction, of each run of A, of the sink discarding and of the
# real log (medians over the rounds)
SINK_METRICS = ("tps", "server_cpu_us_per_op", "log_io_us_per_txn", "log_wait_share", "audit_bytes_per_transaction")


def _load_curves(p: Params, targets: dict[str, Rig]) -> list[dict[str, Any]]:
    """Each approach in load_arms against the baseline, paced at the run's rates (protocol/loads.py), on the
    servers the rounds measured, before they stop."""
    base = targets.get(BASELINE)
    if base is None or base.db is None:
        return []
    cores = p.server_cpu_limit or float(os.cpu_count() or 1)

    def side(db: Any, kind: str) -> loads.Side:
        spec = ConnectSpec("mysql", db.endpoint.connect_args(tls=False), query=LOAD_STATEMENT)
        return loads.Side(functools.partial(paced.sql_operations, spec, kinds=(kind,)), db.cpu, cores)

    arms = [a for a in p.load_arms if a in targets and targets[a].db is not None]
    return [load_runs.measure(c, side(base.db, c.kind), side(targets[a].db, c.kind)) for a in arms
            for c in load_curves(p, a)]  # fmt: skip


def _null_sinks(targets: dict[str, Rig], opts: SysbenchOptions, rounds: int) -> dict[str, Any]:
    """Each approach with a null sink, after the rounds: `rounds` rounds of three runs, the baseline, the approach
    with its records discarded and with its real log, the order rotating round by round (a drift over them falls
    on all three alike, and the hook is read against a baseline of the same minutes); the setting is put back
    after each discarding run. Per approach: what is left with the sink discarding, and the medians of each."""
    out: dict[str, Any] = {}
    for arm, sink in NULL_SINKS.items():
        t = targets.get(arm)
        if t is None or t.db is None or BASELINE not in targets or not rounds:
            continue
        runs: dict[str, list[dict[str, float]]] = {"baseline": [], "null": [], "real": []}
        for k in range(rounds):
            kinds = list(runs)[k % 3 :] + list(runs)[: k % 3]
            for kind in kinds:
                with _discarding(t.db, sink) if kind == "null" else contextlib.nullcontext():
                    m = _measure(targets, opts, BASELINE if kind == "baseline" else arm, {}).metrics
                runs[kind].append({x: float(m[x]) for x in SINK_METRICS if x in m})
        out[arm] = {"left": sink.left, "rounds": rounds, **{kind: _medians(rs) for kind, rs in runs.items()}}
    return out


@contextlib.contextmanager
def _discarding(db: Any, sink: Any):
    """The server's records sent to the null sink for a while, its own setting put back after."""
    conn = db.admin()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT @@GLOBAL.{sink.variable}")
        (kept,) = cur.fetchone()
        cur.execute(f"SET GLOBAL {sink.variable} = %s", (sink.discard,))
        try:
            yield
        finally:
            cur.execute(f"SET GLOBAL {sink.variable} = %s", (kept,))
    finally:
        conn.close()


def _medians(rows: list[dict[str, float]]) -> dict[str, float]:
    """Each metric's median over the runs that have it (a metric none has is left out)."""
    each = {k: [r[k] for r in rows if k in r and np.isfinite(r[k])] for r in rows for k in r}
    return {k: float(np.median(v)) for k, v in sorted(each.items()) if v}


# The scheduler's counters are read 1 s into a run (sysbench's connections open) and 0.5 s before its end (still
# open): a connection's thread lives only as long as its connection, so readings at the run's edges miss it.
WAITS_LEAD_S, WAITS_TAIL_S = 1.0, 0.5


def _inside_load(opts: SysbenchOptions) -> tuple[float, float] | None:
    """The window the connection threads' counters are read over; None for a run too short to hold one (the
    readings are then taken at its edges and see only the threads that outlive it)."""
    length = float(opts.time) - WAITS_LEAD_S - WAITS_TAIL_S
    return (WAITS_LEAD_S, length) if opts.time and length >= 1 else None


def _log_reader(db: Any) -> Any:
    """How to read the server's log waits: its admin connection where it times them (MySQL 8.0), else None."""
    return db.admin if db is not None and getattr(db, "log_waits", False) else None


def _load(targets: dict[str, Rig], opts: SysbenchOptions) -> None:
    """sysbench's tables into every server at once, their limits lifted for the load (one server after another
    under a quota took 10 s of a quick run)."""

    def load(t: Rig) -> None:
        with t.db.limits_lifted():
            t.sb.prepare(opts)

    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        list(pool.map(load, targets.values()))  # re-raises the first failure


def _compression(logs: list[Path], limit: int) -> dict[str, float]:
    """gzip (level 6) and zstd (level 3, when the module is there) ratios of up to `limit` bytes of a real log."""

    data = bytearray()
    for log in logs:
        for f in [log] if log.is_file() else sorted(x for x in log.glob("*") if x.is_file()):
            with open(f, "rb") as fh:
                data += fh.read(limit - len(data))
            if len(data) >= limit:
                break
    if not data:
        return {}
    out = {"sample_bytes": len(data), "gzip_ratio": len(data) / len(gzip.compress(bytes(data), 6))}
    with contextlib.suppress(ImportError):
        out["zstd_ratio"] = len(data) / len(zstandard.ZstdCompressor(level=3).compress(bytes(data)))
    return out
