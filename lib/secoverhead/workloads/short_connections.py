"""Short-connection load: every operation opens a connection, authenticates, runs one query and closes it,
from `concurrency` worker processes (processes, so the client is not GIL-bound). A pooled variant keeps one
connection per worker, to show what reuse saves. Bounded by operations per worker and by a deadline. Client CPU
is what the workers report of themselves over the clocked part, so two loads at once (a duet) never count each
other's."""

from __future__ import annotations

import multiprocessing as mp
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import mysql.connector
import numpy as np
import pandas as pd
import pymongo

from secoverhead.core.errors import SecoverheadError
from secoverhead.core.secrets import secret_from
from secoverhead.host.metrics import CpuMeter, CpuSource
from secoverhead.host.process import _set_pdeathsig
from secoverhead.workloads import mongo_wire
from secoverhead.workloads.measurement import Measurement, check_operations


@dataclass(frozen=True)
class ConnectSpec:
    """How a worker connects: engine 'mongo' or 'mysql', and the client library's keyword arguments; wire: each
    short MongoDB operation one connection of its own (workloads/mongo_wire.py), not a pymongo client's two or
    three."""

    engine: str
    client_args: dict[str, Any]
    query: str = "SELECT 1"  # mysql; mongo runs find_one() on ycsb.usertable
    wire: bool = False

    def without_secret(self, kind: str, where: str) -> ConnectSpec:
        """The spec to send to another host: the password left out, named by where it lives (an environment
        variable or a file, which that host has too); never the password itself over the wire or in a log."""
        args = {k: v for k, v in self.client_args.items() if k != "password"}
        return replace(self, client_args=args | {"__secret__": (kind, where)})

    def with_secret(self) -> ConnectSpec:
        """On the host that loads: the password read from where the spec names."""
        ref = self.client_args.get("__secret__")
        if ref is None:
            return self
        kind, where = ref
        secret = (secret_from(env=where) if kind == "env" else secret_from(file=where)).reveal()
        args = {k: v for k, v in self.client_args.items() if k != "__secret__"} | {"password": secret}
        return replace(self, client_args=args)


def client_of(spec: ConnectSpec, pooled: bool) -> str:
    """What made a run's connections, as its record says."""
    if spec.engine != "mongo":
        return "mysql-connector-python, " + ("one connection per worker" if pooled else "one per operation")
    if pooled:
        return "pymongo, one client per worker, its connection reused"
    if spec.wire:
        return "one connection per operation (the suite's wire client: handshake, SCRAM, find)"
    return "pymongo, a client per operation (its monitor connections beside the one that queries)"


def _one_op_mongo(args: dict[str, Any]) -> None:
    client = pymongo.MongoClient(**args)
    try:
        client["ycsb"]["usertable"].find_one()
    finally:
        client.close()


def _one_op_mysql(args: dict[str, Any], query: str) -> None:
    conn = mysql.connector.connect(**args)
    try:
        cur = conn.cursor()
        cur.execute(query)
        cur.fetchall()
    finally:
        conn.close()


def _own_cpu() -> tuple[float, float]:
    """This worker's user and system seconds so far, its client library's threads included."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def operation(spec: ConnectSpec, pooled: bool) -> tuple[Callable[[], Any], Any]:
    """One operation of the load, and the connection it keeps (pooled: one per worker, opened before the clock
    starts; otherwise none, each operation connecting afresh)."""
    if not pooled:
        if spec.engine == "mongo":
            one = mongo_wire.one_request if spec.wire else _one_op_mongo
            return (lambda: one(spec.client_args)), None
        return (lambda: _one_op_mysql(spec.client_args, spec.query)), None
    if spec.engine == "mongo":
        keep = pymongo.MongoClient(**spec.client_args)
        coll = keep["ycsb"]["usertable"]
        coll.find_one()
        return coll.find_one, keep
    keep = mysql.connector.connect(**spec.client_args)
    cur = keep.cursor()

    def op() -> None:
        cur.execute(spec.query)
        cur.fetchall()

    return op, keep


def _worker(spec: ConnectSpec, ops: int, deadline: float, pooled: bool, start: Any, out: Any) -> None:
    """Run its share of the load once `start` is set; report latencies, errors and its own CPU from then on."""
    _set_pdeathsig()  # a SIGKILLed owner takes its load with it
    lat: list[float] = []
    errors, first_error = 0, None
    keep = cpu0 = None
    try:
        op, keep = operation(spec, pooled)
        start.wait()
        cpu0 = _own_cpu()
        for _ in range(ops):
            if time.monotonic() > deadline:
                break
            t0 = time.perf_counter_ns()
            try:
                op()
                lat.append((time.perf_counter_ns() - t0) / 1e6)
            except Exception as exc:
                errors += 1
                first_error = first_error or f"{type(exc).__name__}: {exc}"[:300]
    except Exception as exc:  # set-up failed (e.g. the pooled connection): report it, do not print a traceback
        errors += 1
        first_error = f"{type(exc).__name__}: {exc}"[:300]
        start.wait(5)
    finally:
        if keep is not None:
            keep.close()
        cpu = tuple(b - a for a, b in zip(cpu0, _own_cpu(), strict=True)) if cpu0 else (0.0, 0.0)
        out.put((lat, errors, first_error, cpu))


def _where(spec: ConnectSpec) -> str:
    """The server a short-connection load goes to, as a stall names it."""
    args = spec.client_args
    engine = "MongoDB" if spec.engine == "mongo" else "MySQL"
    at = args.get("host") if "://" in str(args.get("host", "")) else f"{args.get('host')}:{args.get('port')}"
    return f"the {engine} server at {at}"


def _load_metrics(lat: np.ndarray, errors: int, wall: float) -> dict[str, Any]:
    n = len(lat)
    return {
        "operations": n,
        "errors": errors,
        "wall_s": wall,
        "ops_per_s": n / wall if wall else 0,
        "latency_median_ms": float(np.median(lat)),
        "latency_p99_ms": float(np.percentile(lat, 99)),
    }


def run_short_connections(
    spec: ConnectSpec,
    *,
    concurrency: int,
    ops_per_worker: int,
    max_seconds: float = 60,
    pooled: bool = False,
    server_cpu: CpuSource | Sequence[int] | None = None,
    ready: Callable[[], None] | None = None,
) -> Measurement:
    """Run the load; metrics: connections (or queries) per second, latency, server/client CPU per op. `ready`, when
    given, is called once every worker is prepared and before the clock starts (a barrier with other hosts)."""
    if concurrency < 1 or ops_per_worker < 1 or max_seconds <= 0:
        raise ValueError("concurrency and ops_per_worker must be >= 1, max_seconds > 0")
    spec = spec.with_secret()
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    deadline = time.monotonic() + max_seconds
    procs = [
        ctx.Process(target=_worker, args=(spec, ops_per_worker, deadline, pooled, start, out), daemon=True)
        for _ in range(concurrency)
    ]
    with CpuMeter(server_cpu) as meter:
        for p in procs:
            p.start()
        time.sleep(0.2)  # let every worker import and (pooled) connect before the clock starts
        if ready is not None:
            ready()
        t0, wall_started = time.perf_counter(), time.time()
        start.set()
        results = [out.get(timeout=max_seconds + 60) for _ in procs]
        wall = time.perf_counter() - t0
        wall_ended = time.time()
        for p in procs:
            p.join(10)
    meter.count_client(*map(sum, zip(*(r[3] for r in results), strict=True)))  # its own workers', never a partner's
    lat = np.concatenate([np.asarray(r[0], dtype=float) for r in results]) if results else np.array([])
    first_error = next((r[2] for r in results if r[2]), None)
    where = _where(spec)
    if len(lat) == 0:
        raise SecoverheadError(f"every short-connection operation to {where} failed: {first_error}")
    check_operations(lat, "short-connection operation", where)
    metrics = _load_metrics(lat, sum(r[1] for r in results), wall) | meter.metrics(len(lat))
    samples = pd.DataFrame({"latency_ms": lat})
    info = {
        "engine": spec.engine,
        "client": client_of(spec, pooled),
        "pooled": pooled,
        "concurrency": concurrency,
        "first_error": first_error,
        "wall_started": wall_started,
        "wall_ended": wall_ended,
    }
    return Measurement(metrics, samples=samples, info=info)
