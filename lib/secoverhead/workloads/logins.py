"""Seed 001's mechanism asked of mongod itself: per short connection (a new client, one SCRAM conversation where
auth is on), the server's CPU, user and system apart, measured untraced, and what the server asked of the kernel's
random source, counted by strace over as many connections again. The split of the server's CPU is sampled at
kernel ticks (host/metrics.py), and a login costs the server well under one, so the untraced batch goes on until
its split rests on enough of them."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from secoverhead.host.metrics import CpuMeter, CpuSource, cpu_source
from secoverhead.host.syscalls import random_source_use
from secoverhead.servers.endpoints import MongoEndpoint
from secoverhead.workloads import mongo_wire
from secoverhead.workloads.measurement import guarded
from secoverhead.workloads.probes import mongo_where

WARM = 3  # connections before any count: the first ones load code and fill caches
SPLIT_CAP_S = 5.0  # the untraced batch's longest run when it waits for ticks: a split short of them says so
CHECK_EVERY = 10  # connections between readings of the ticks (a reading is three file reads)
PING = {"ping": 1, "$db": "admin"}


def _connect_once(endpoint: MongoEndpoint, mechanism: str | None) -> None:
    """One connection, one login, one ping, by the wire client as the study's short connections (a pymongo client's
    monitor connections would add CPU no login causes); only servers the study started are asked this."""
    args = endpoint.client_args(mechanism=mechanism)
    guarded(lambda: mongo_wire.one_request(args, PING), "login", mongo_where(endpoint))


def per_connection(
    endpoint: MongoEndpoint,
    *,
    mechanism: str | None,
    server_cpu: CpuSource | Sequence[int] | None,
    pids: Sequence[int],
    connections: int,
    split_ticks: int = 0,
) -> dict[str, Any]:
    """Per short connection (plain TCP, so TLS draws nothing from the random source): server CPU per connection,
    untraced, over at least `connections` and until its user/system split rests on `split_ticks` kernel ticks or
    SPLIT_CAP_S passed (`cpu_connections` says how many); then random-source opens, reads, getrandom calls and
    bytes per connection, traced, over `connections`."""
    for _ in range(WARM):
        _connect_once(endpoint, mechanism)
    cpu = untraced_cpu(lambda: _connect_once(endpoint, mechanism), server_cpu, connections, split_ticks)
    use = random_source_use(pids, lambda: [_connect_once(endpoint, mechanism) for _ in range(connections)])
    return {"mechanism": mechanism or "auth off", "connections": connections} | cpu | use.per(connections)


def untraced_cpu(
    once: Callable[[], object],
    server_cpu: CpuSource | Sequence[int] | None,
    at_least: int,
    split_ticks: int,
    cap_s: float = SPLIT_CAP_S,
) -> dict[str, Any]:
    """The server's CPU per call of `once`, with the ticks behind its split and how many calls it took."""
    source = cpu_source(server_cpu)
    with CpuMeter(source) as meter:
        start, t0, made = source.take() if source is not None else None, time.monotonic(), 0
        while made < at_least or _short_of_ticks(source, start, split_ticks, made, time.monotonic() - t0 < cap_s):
            once()
            made += 1
    kept = ("_us_per_op", "_ticks")
    server = {k: v for k, v in meter.metrics(made).items() if k.startswith("server_") and k.endswith(kept)}
    return {"cpu_connections": made} | server


def _short_of_ticks(source: CpuSource | None, start: Any, wanted: int, made: int, in_time: bool) -> bool:
    """Whether the batch should go on for its split: in time, a source that counts ticks, and too few yet (read
    every CHECK_EVERY calls)."""
    if not (wanted and in_time and source is not None and hasattr(source, "ticks")):
        return False
    return made % CHECK_EVERY != 0 or sum(source.ticks(start, source.take())) < wanted
