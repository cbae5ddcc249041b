"""Connection probes: what a client pays to set up a connection (TLS on/off, auth mechanism) versus what it
pays per query on a connection it keeps. Every iteration's timings are kept as raw samples; server and
client CPU are measured over the whole batch and divided by the number of operations."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import mysql.connector
import numpy as np
import pandas as pd
import pymongo
from pymongo import monitoring

from secoverhead.host.metrics import CpuMeter, CpuSource
from secoverhead.servers.endpoints import MongoEndpoint, MySQLEndpoint, session_tls
from secoverhead.servers.labels import LabelMismatch
from secoverhead.workloads.measurement import Measurement, check_operations, guarded, raise_failure, timed_in

_MS = 1e-6  # perf_counter_ns -> ms


def summarize(samples: pd.DataFrame, columns: list[str]) -> dict[str, float]:
    """mean, median and p99 of each timing column (ms)."""
    out = {}
    for c in columns:
        x = samples[c].dropna().to_numpy(dtype=float)
        if len(x):
            out |= {
                f"{c}_mean": float(x.mean()),
                f"{c}_median": float(np.median(x)),
                f"{c}_p99": float(np.percentile(x, 99)),
            }
    return out


class _PoolTimer:
    """CMAP listener: the first checkout's duration, and the first connection's ready duration."""

    def __init__(self) -> None:
        self.started: int | None = None
        self.checkout_ms: float | None = None
        self.ready_ms: float | None = None

    # pymongo calls these by name; the no-op ones complete the ConnectionPoolListener interface
    def connection_check_out_started(self, event: Any) -> None:
        if self.started is None:
            self.started = time.perf_counter_ns()

    def connection_checked_out(self, event: Any) -> None:
        if self.checkout_ms is None and self.started is not None:
            self.checkout_ms = (time.perf_counter_ns() - self.started) * _MS

    def connection_ready(self, event: Any) -> None:
        if self.ready_ms is None:
            self.ready_ms = getattr(event, "duration", float("nan")) * 1e3  # seconds -> ms; excludes TCP+TLS

    def __getattr__(self, name: str):
        if name.startswith(("pool_", "connection_")):
            return lambda event: None
        raise AttributeError(name)


def _pool_listener(timer: _PoolTimer):
    class Listener(monitoring.ConnectionPoolListener):
        def __getattribute__(self, name: str):
            if name.startswith(("pool_", "connection_")):
                return getattr(timer, name)
            return object.__getattribute__(self, name)

    return Listener()


def mongo_connection_probe(
    endpoint: MongoEndpoint,
    *,
    iterations: int,
    tls: bool = False,
    mechanism: str | None = None,
    server_cpu: CpuSource | Sequence[int] | None = None,
    database: str = "ycsb",
    collection: str = "usertable",
) -> Measurement:
    """Per iteration: build a MongoClient (construct_ms), its first find_one (first_query_ms), their sum
    (total_ms), the first pool checkout (checkout_ms, from CMAP events) and connection-ready time; close."""

    rows, where = [], mongo_where(endpoint)
    with CpuMeter(server_cpu) as meter:
        t0 = time.perf_counter_ns()
        try:
            for i in range(iterations):
                timer = _PoolTimer()
                t0 = time.perf_counter_ns()
                client = pymongo.MongoClient(
                    **endpoint.client_args(tls=tls, mechanism=mechanism, event_listeners=[_pool_listener(timer)])
                )
                t1 = time.perf_counter_ns()
                client[database][collection].find_one()
                t2 = time.perf_counter_ns()
                client.close()
                t3 = time.perf_counter_ns()
                rows.append(
                    {
                        "iteration": i,
                        "construct_ms": (t1 - t0) * _MS,
                        "first_query_ms": (t2 - t1) * _MS,
                        "total_ms": (t2 - t0) * _MS,
                        "checkout_ms": timer.checkout_ms,
                        "ready_ms": timer.ready_ms,
                        "close_ms": (t3 - t2) * _MS,
                    }
                )
        except Exception as exc:
            raise_failure(exc, t0, "connection", where)
    samples = pd.DataFrame(rows)
    check_operations(samples["total_ms"] + samples["close_ms"], "connection", where)
    metrics = summarize(samples, ["construct_ms", "first_query_ms", "total_ms", "checkout_ms", "ready_ms"])
    metrics |= meter.metrics(iterations) | {"connections": iterations}
    timed = float((samples["total_ms"] + samples["close_ms"]).sum()) / 1e3
    return Measurement(metrics, samples=samples, info=_mongo_info(tls, mechanism) | timed_in(timed, where))


def _time_reused(
    op: Any, iterations: int, warmup: int, server_cpu: CpuSource | Sequence[int] | None, where: str
) -> Measurement:
    """Time `iterations` calls of op on a kept connection after `warmup` untimed ones; CPU over the batch.
    One loop for every engine, so the probes' own overhead is the same everywhere."""
    t0 = time.perf_counter_ns()
    lat = np.empty(iterations)
    try:
        for _ in range(warmup):
            t0 = time.perf_counter_ns()
            op()
        with CpuMeter(server_cpu) as meter:
            for i in range(iterations):
                t0 = time.perf_counter_ns()
                op()
                lat[i] = (time.perf_counter_ns() - t0) * _MS
    except Exception as exc:
        raise_failure(exc, t0, "query", where)
    check_operations(lat, "query", where)
    samples = pd.DataFrame({"iteration": np.arange(iterations), "query_ms": lat})
    info = timed_in(float(lat.sum()) / 1e3, where)
    return Measurement(summarize(samples, ["query_ms"]) | meter.metrics(iterations), samples=samples, info=info)


def mongo_reused_probe(
    endpoint: MongoEndpoint,
    *,
    iterations: int,
    tls: bool = False,
    mechanism: str | None = None,
    server_cpu: CpuSource | Sequence[int] | None = None,
    warmup: int = 20,
    database: str = "ycsb",
    collection: str = "usertable",
) -> Measurement:
    """find_one() latency on one client kept open (after `warmup` untimed calls)."""
    client = endpoint.client(tls=tls, mechanism=mechanism)
    try:
        m = _time_reused(client[database][collection].find_one, iterations, warmup, server_cpu, mongo_where(endpoint))
    finally:
        client.close()
    m.info = _mongo_info(tls, mechanism) | m.info | {"where": mongo_where(endpoint)}
    return m


def mongo_where(endpoint: MongoEndpoint) -> str:
    """The server a MongoDB probe loads, as its stall or lost connection names it."""
    return f"the MongoDB server at {endpoint.uri or f'{endpoint.host}:{endpoint.port or endpoint.tls_port}'}"


def mysql_where(endpoint: MySQLEndpoint) -> str:
    return f"the MySQL server at {endpoint.host}:{endpoint.port}"


def _mongo_info(tls: bool, mechanism: str | None) -> dict[str, Any]:
    return {
        "client": f"pymongo {pymongo.version}",
        "pymongo_c_extensions": pymongo.has_c(),
        "tls": tls,
        "auth_mechanism": mechanism,
    }


def mysql_connection_probe(
    endpoint: MySQLEndpoint,
    *,
    iterations: int,
    tls: bool = False,
    query: str = "SELECT 1",
    server_cpu: CpuSource | Sequence[int] | None = None,
    use_pure: bool = False,
) -> Measurement:
    """Per iteration: connect (TCP + TLS + auth: connect_ms), run `query` (first_query_ms), their sum; close."""

    args = endpoint.connect_args(tls=tls, use_pure=use_pure)
    where = mysql_where(endpoint)
    # untimed: a MySQL 8 account's hash cached before the timed plain logins
    guarded(lambda: endpoint.connect(tls=tls).close(), "connection", where)
    impl = None
    rows = []
    with CpuMeter(server_cpu) as meter:
        t0 = time.perf_counter_ns()
        try:
            for i in range(iterations):
                t0 = time.perf_counter_ns()
                conn = mysql.connector.connect(**args)
                t1 = time.perf_counter_ns()
                cur = conn.cursor()
                cur.execute(query)
                cur.fetchall()
                t2 = time.perf_counter_ns()
                impl = impl or type(conn).__name__
                cur.close()
                conn.close()
                t3 = time.perf_counter_ns()
                rows.append(
                    {
                        "iteration": i,
                        "connect_ms": (t1 - t0) * _MS,
                        "first_query_ms": (t2 - t1) * _MS,
                        "total_ms": (t2 - t0) * _MS,
                        "close_ms": (t3 - t2) * _MS,
                    }
                )
        except Exception as exc:
            raise_failure(exc, t0, "connection", where)
    samples = pd.DataFrame(rows)
    check_operations(samples["total_ms"] + samples["close_ms"], "connection", where)
    metrics = summarize(samples, ["connect_ms", "first_query_ms", "total_ms"]) | meter.metrics(iterations)
    metrics["connections"] = iterations
    timed = float((samples["total_ms"] + samples["close_ms"]).sum()) / 1e3
    return Measurement(metrics, samples=samples, info=_mysql_info(endpoint, tls, impl, query) | timed_in(timed, where))


def mysql_reused_probe(
    endpoint: MySQLEndpoint,
    *,
    iterations: int,
    tls: bool = False,
    query: str = "SELECT 1",
    server_cpu: CpuSource | Sequence[int] | None = None,
    warmup: int = 20,
    use_pure: bool = False,
) -> Measurement:
    """`query` latency on one connection kept open."""
    conn = guarded(lambda: endpoint.connect(tls=tls, use_pure=use_pure), "connection", mysql_where(endpoint))
    impl = type(conn).__name__
    try:
        cur = conn.cursor()

        def op() -> None:
            cur.execute(query)
            cur.fetchall()

        m = _time_reused(op, iterations, warmup, server_cpu, mysql_where(endpoint))
    finally:
        conn.close()
    m.info = _mysql_info(endpoint, tls, impl, query) | m.info
    return m


def _mysql_info(endpoint: MySQLEndpoint, tls: bool, impl: str | None, query: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "client": f"mysql-connector-python {mysql.connector.__version__}",
        "client_implementation": "C extension" if impl == "CMySQLConnection" else "pure Python",
        "tls": tls,
        "query": query,
    }
    if impl != "CMySQLConnection":
        info["warning"] = (
            "pure-Python mysql-connector: a TLS connect is ~10x slower than with the C "
            "extension; this is a client artefact, not a server cost"
        )

    def negotiated() -> dict[str, str]:  # one extra connection, untimed, to record what TLS negotiated
        conn = endpoint.connect(tls=tls)
        try:
            return session_tls(conn)
        finally:
            conn.close()

    info.update(guarded(negotiated, "connection", mysql_where(endpoint)))
    check_session(tls, info["tls_version"], f"{endpoint.host}:{endpoint.port}")
    return info


def check_session(tls: bool, negotiated: str, where: str) -> None:
    """An arm's connection is the arm it claims to be: TLS negotiated in a TLS arm, none in a plain one (the
    connector upgrades to TLS, or stays plain, silently). A mismatch fails the run, naming the state."""
    if bool(tls) != bool(negotiated):
        state = f"negotiated {negotiated}" if negotiated else "negotiated no TLS"
        raise LabelMismatch(f"a {'TLS' if tls else 'plain'} arm's connection to {where} {state}: it is not that arm")


def combine(connection: Measurement, reused: Measurement) -> Measurement:
    """One run of the connection probe and one of the reused probe as a single Measurement: CPU metrics
    prefixed connection_/reused_, samples tagged by probe."""
    samples = pd.concat(
        [connection.samples.assign(probe="connection"), reused.samples.assign(probe="reused")], ignore_index=True
    )
    metrics = {
        f"connection_{k}" if k.startswith(("server_", "client_")) else k: v for k, v in connection.metrics.items()
    }
    metrics |= {f"reused_{k}" if k.startswith(("server_", "client_")) else k: v for k, v in reused.metrics.items()}
    metrics["operations"] = len(connection.samples) + len(reused.samples)
    timed = timed_in(connection.info.get("timed_s", 0.0) + reused.info.get("timed_s", 0.0), connection.info["where"])
    return Measurement(metrics, samples=samples, info=connection.info | {"reused": reused.info} | timed)
