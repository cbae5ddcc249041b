"""Open-loop load at set rates, as an application sends it: each kind of operation started on its own schedule
(never ahead of it, catching up when late), several kinds at once, and the server's CPU over the round.

The studies' loads run operations back to back, so a server is as busy as the client can make it; a DBA's server
is paced by its users, and a statement paced on a quieter server costs more than one back to back (the wake-up, a
cold cache: benchmarks/README.md). This is the load that measures how a cost moves with the rate. The operations
are the studies' own (workloads/short_connections.py: a short connection, a query on a kept one); HTTP's are the
HTTPS study's requests over Python's client, a new connection doing one full handshake."""

from __future__ import annotations

import contextlib
import http.client
import ssl
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from secoverhead.host.metrics import CpuMeter, CpuSource
from secoverhead.workloads.short_connections import ConnectSpec, operation

Operation = Callable[[], Any]
KINDS = ("new", "query")  # a new connection (its set-up and one query), a query on a kept connection


def paced(rate: float, seconds: float, op: Operation, stop: threading.Event | None = None) -> int:
    """op() at `rate` a second for `seconds` (late ones run at once, none ahead): how many ran."""
    start, done = time.monotonic(), 0
    while not (stop is not None and stop.is_set()) and (now := time.monotonic()) - start < seconds:
        due = start + done / rate
        if due > now:
            time.sleep(min(due - now, 0.05))
            continue
        op()
        done += 1
    return done


@dataclass(frozen=True)
class PacedRound:
    """One round: how long it took, the server's cores over it, and per kind the rate met (operations a second)."""

    seconds: float
    server_cores: float
    met: dict[str, float]

    def cpu_us_per_op(self, kind: str) -> float:
        """The server's CPU per operation of `kind`, as if that kind were all it did (one kind per round)."""
        rate = self.met.get(kind, 0.0)
        return self.server_cores * 1e6 / rate if rate > 0 else float("nan")


def paced_round(kinds: Mapping[str, tuple[float, Operation]], seconds: float, server: CpuSource | Any) -> PacedRound:
    """Every kind at its rate at once for `seconds` (a rate of 0 leaves that kind out); the server's CPU over it.
    An operation that fails stops every kind and is raised here (a thread's exception would otherwise vanish)."""
    counts: dict[str, int] = {}
    failed: list[BaseException] = []
    stop = threading.Event()

    def drive(kind: str, rate: float, op: Operation) -> None:
        try:
            counts[kind] = paced(rate, seconds, op, stop)
        except BaseException as exc:
            failed.append(exc)
            stop.set()

    threads = [threading.Thread(target=drive, args=(k, r, op)) for k, (r, op) in kinds.items() if r > 0]
    with CpuMeter(server) as meter:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if failed:
        raise failed[0]
    wall = meter.server.wall_s if meter.server is not None else seconds
    cores = meter.server.cores if meter.server is not None else float("nan")
    return PacedRound(wall, cores, {k: counts.get(k, 0) / wall for k in kinds})


@contextlib.contextmanager
def sql_operations(spec: ConnectSpec, kinds: Collection[str] = KINDS) -> Iterator[dict[str, Operation]]:
    """A MySQL-family or MongoDB server's operations, as the studies run them: "new", a connection that runs the
    spec's query once and closes; "query", the query on a connection kept open for the block (opened only where
    asked: a kept MongoDB client's monitor would add its heartbeats to the server)."""
    ops: dict[str, Operation] = {}
    keep = None
    if "new" in kinds:
        ops["new"], _ = operation(spec, pooled=False)
    if "query" in kinds:
        ops["query"], keep = operation(spec, pooled=True)
    try:
        yield ops
    finally:
        if keep is not None:
            keep.close()


@contextlib.contextmanager
def http_operations(host: str, port: int, ca_file: Any | None = None) -> Iterator[dict[str, Operation]]:
    """nginx's two operations: a GET on a kept-alive connection, and a new connection (over TLS 1.3 a full
    handshake: no session is offered) that GETs once and closes. ca_file: over TLS, else plain HTTP."""
    context = None
    if ca_file is not None:
        context = ssl.create_default_context(cafile=str(ca_file))
        context.check_hostname = False  # the CA is checked; the name is the loopback address
        context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_3

    def connection() -> http.client.HTTPConnection:
        if context is None:
            return http.client.HTTPConnection(host, port, timeout=10)
        return http.client.HTTPSConnection(host, port, timeout=10, context=context)

    def new() -> None:
        conn = connection()
        try:
            _get(conn)
        finally:
            conn.close()

    kept = connection()
    try:
        yield {"new": new, "query": lambda: _get(kept)}
    finally:
        kept.close()


def _get(conn: http.client.HTTPConnection) -> None:
    conn.request("GET", "/")
    r = conn.getresponse()
    r.read()
    if r.status != 200:
        raise RuntimeError(f"nginx answered {r.status}")
