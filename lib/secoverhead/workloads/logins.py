"""Seed 001's mechanism asked of mongod itself: per short connection (a new client, one SCRAM conversation where
auth is on), the server's CPU, user and system apart, measured untraced, and what the server asked of the kernel's
random source, counted by strace over as many connections again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pymongo

from secoverhead.host.metrics import CpuMeter, CpuSource
from secoverhead.host.syscalls import random_source_use
from secoverhead.servers.endpoints import MongoEndpoint

WARM = 3  # connections before any count: the first ones load code and fill caches


def _connect_once(endpoint: MongoEndpoint, mechanism: str | None) -> None:
    client = pymongo.MongoClient(**endpoint.client_args(mechanism=mechanism))
    try:
        client.admin.command("ping")
    finally:
        client.close()


def per_connection(
    endpoint: MongoEndpoint,
    *,
    mechanism: str | None,
    server_cpu: CpuSource | Sequence[int] | None,
    pids: Sequence[int],
    connections: int,
) -> dict[str, Any]:
    """Per short connection (plain TCP, so TLS draws nothing from the random source): server CPU per connection
    (untraced) and random-source opens, reads, getrandom calls and bytes per connection (traced)."""
    for _ in range(WARM):
        _connect_once(endpoint, mechanism)
    with CpuMeter(server_cpu) as meter:
        for _ in range(connections):
            _connect_once(endpoint, mechanism)
    cpu = {k: v for k, v in meter.metrics(connections).items() if k.endswith("_us_per_op") and "server" in k}
    use = random_source_use(pids, lambda: [_connect_once(endpoint, mechanism) for _ in range(connections)])
    return {"mechanism": mechanism or "auth off", "connections": connections} | cpu | use.per(connections)
