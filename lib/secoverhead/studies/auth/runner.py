"""Auth study: servers with and without authentication, short connections and pooled ones."""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Any

from secoverhead.measurement.parts import StudyResult
from secoverhead.servers import MariaDBServer
from secoverhead.servers.builds import MARIADB, described, nearest, stand_in_note
from secoverhead.servers.counters import cpu_note
from secoverhead.studies.auth.claims import OUTLIER, baseline_conditions, part_claims
from secoverhead.studies.auth.declarations import (
    DUET_COUNT_FACTOR,
    PART_BUILDS,
    POOLED_FACTOR,
    STUDY,
    Params,
    engine_of,
    one_build,
)
from secoverhead.studies.protocol import load_runs, loads
from secoverhead.studies.protocol.runner import PartPlan, run_parts
from secoverhead.workloads import mongo_wire, paced
from secoverhead.workloads.logins import per_connection
from secoverhead.workloads.measurement import Measurement
from secoverhead.workloads.multihost import run_on_hosts
from secoverhead.workloads.nonce import nonce_benchmark
from secoverhead.workloads.short_connections import ConnectSpec, run_short_connections

MONGOD_BUILDS = tuple(PART_BUILDS.values())  # the original's before (4.2) and a later mongod: each is asked


def _strip_auth(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k not in ("username", "password", "authSource", "authMechanism")}


def _servers(p: Params, part: str, stack: contextlib.ExitStack) -> tuple[dict[str, Any], dict, list[str]]:
    if engine_of(part) == "MongoDB":
        if p.mongo_uri:
            return _named_mongos(p, stack)
        keys = sorted(set(p.server_keys(part).values()))
        build, why = nearest(PART_BUILDS[part])
        servers = {k: stack.enter_context(build.server(tls=True, auth=k.startswith("on"))) for k in keys}
        notes = stand_in_note(PART_BUILDS[part], build, why)
        notes += [
            f"auth on/off needs {build.label} processes of their own; they are identical otherwise and all run "
            "throughout",
            f"{build.label} keeps each user's SCRAM keys (derived once, at creation): a login costs the server a "
            "server nonce and HMACs; the client derives its key with PBKDF2 per new connection",
            WIRE_NOTE,
        ]
        if p.part_design(part) == "duet":
            notes.append(
                "duet: each arm ran at the same time as auth off, each server with its own client, so both met the "
                "same interference; arms that never ran together (pooling) are compared through auth off"
            )
        facts = {
            f"mongodb auth {_SERVER_NAMES[k]} ({build.label})": described(srv, build, PART_BUILDS[part])
            for k, srv in servers.items()
        }
        return servers, facts, notes
    if p.mysql_host:
        ext = stack.enter_context(p.both_ways_mysql())
        return {"db": ext}, {"mysql": ext.describe()}, ["password auth is the account's own plugin", cpu_note(ext)]
    notes = [
        "password auth is mysql_native_password (MariaDB's default); MariaDB's ed25519 plugin is not an arm "
        "because mysql-connector-python cannot speak it"
    ]
    keys = sorted(set(p.server_keys(part).values()))
    dbs = {k: stack.enter_context(MariaDBServer(tls="on")) for k in keys}
    if p.part_design(part) == "duet":
        notes.append(
            "duet: each arm ran at the same time as password (no TLS, no pooling) on a MariaDB of its own, each "
            "server with its own client"
        )
    return (
        dbs,
        {
            f"mysql (MariaDB{', a second' if k.endswith('2') else ''})": described(d, MARIADB, MARIADB)
            for k, d in dbs.items()
        },
        notes,
    )


def _named_mongos(p: Params, stack: contextlib.ExitStack) -> tuple[dict[str, Any], dict, list[str]]:
    """The user's MongoDB, and the one without auth they name for the auth-off arms (else those are skipped)."""
    on = stack.enter_context(p.external_mongo(tuple(p.mongo_mechanisms)))
    client = WIRE_NOTE if mongo_wire.usable(on.endpoint.client_args()) else PYMONGO_NOTE
    if not p.mongo_noauth_uri:
        notes = ["external MongoDB: auth-off arms need a server without auth (mongo_noauth_uri), so they are skipped"]
        return {"on": on}, {"mongodb": on.describe()}, [*notes, cpu_note(on), client]
    off = stack.enter_context(p.noauth_mongo())
    facts = {"mongodb": on.describe(), "mongodb auth off": off.describe()}
    one_build(facts["mongodb"], facts["mongodb auth off"])  # checked before the kernel too: a server may change
    notes = [
        f"auth off ran on {p.mongo_noauth_uri}, a server of yours without authentication (read back), SCRAM on "
        f"{p.mongo_uri}: one build, but two servers, so what else differs between them (hardware, data, load) is "
        "in the comparison too",
        f"auth on: {cpu_note(on)}",
        f"auth off: {cpu_note(off)}",
        client,
    ]
    return {"on": on, "off": off}, facts, notes


WIRE_NOTE = (
    "short connections: one server connection per operation (handshake, SCRAM, one find), as the original's driver "
    "made them; a pymongo client per operation would add its own monitor connections (one on mongod 4.2, two on "
    "4.4 and later), unauthenticated, to every operation's server CPU. The pooled arm is pymongo's"
)
PYMONGO_NOTE = (
    "short connections: a pymongo client per operation (the URI names a set to discover), so each operation's "
    "server CPU includes its monitor connections (one on mongod 4.2, two on 4.4 and later), unauthenticated: a "
    "ratio per connection reads lower than one connection's own"
)
_SERVER_NAMES = {"off": "off", "on": "on", "off2": "off (a second)", "on2": "on (a second)"}


def _measure(p: Params, part: str, servers: dict[str, Any]):
    arms = {a.name: a for a in p.arms(part)}
    keys = p.server_keys(part) if part != "nonce" else {}
    duet = p.part_design(part) == "duet"

    def measure(arm_name: str, factors: dict) -> Measurement:
        arm = arms[arm_name]
        if arm.engine == "nonce":
            w = int(factors["workers"])
            source = arm.mechanism or arm.name  # the source, also under an A/A copy's name
            return nonce_benchmark(source, workers=w, nonces_per_worker=max(1, p.nonces_per_run // w))
        srv = servers[keys[arm_name]]
        e = srv.endpoint
        if arm.engine == "mongo":
            args = (
                e.client_args(tls=arm.tls, mechanism=arm.mechanism)
                if arm.mechanism
                else _strip_auth(e.client_args(tls=arm.tls))
            )
            # one connection per short operation, as the original's driver: a pymongo client's own monitor
            # connections, unauthenticated, are not in the server CPU per connection (workloads/mongo_wire.py)
            spec, ops = ConnectSpec("mongo", args, wire=mongo_wire.usable(args)), p.ops_per_worker
        else:
            spec, ops = ConnectSpec("mysql", e.connect_args(tls=arm.tls)), p.mysql_ops_per_worker
        seconds = p.max_seconds_per_run
        if duet:  # time-bound: a count-bound auth-off run ended in half the time of its SCRAM partner, which then
            ops, seconds = ops * DUET_COUNT_FACTOR, min(seconds, p.duet_seconds)  # ran alone (duet sd 0.23)
        load = dict(
            concurrency=int(factors["concurrency"]),
            ops_per_worker=ops * (POOLED_FACTOR if arm.pooled else 1),
            max_seconds=seconds,
            pooled=arm.pooled,
        )
        if p.load_hosts:  # several client hosts at once, met at a barrier; server CPU measured here
            remote = spec.without_secret(*p.secret_reference(arm.engine))
            return run_on_hosts(p.load_hosts, run_short_connections, remote, server_cpu=srv.cpu, **load)
        return run_short_connections(spec, server_cpu=srv.cpu, **load)

    return measure


def _random_source(p: Params, part: str, servers: dict[str, Any], asked: dict[str, Any]) -> dict[str, Any]:
    """Seed 001's mechanism asked of each mongod build here: per short connection, auth off and per SCRAM
    mechanism, the server's CPU (user, system) and its calls into the kernel's random source. A part's own
    servers answer for its build; the record part also starts each build no part of this run runs on, after its
    runs, for this alone."""
    if p.mongo_uri or p.aa or not p.random_source_connections:
        return {}
    own = nearest(PART_BUILDS[part])[0]
    out = {own.label: _ask(p, servers["off"], servers["on"])} if {"off", "on"} <= set(servers) else {}
    if part == "MongoDB":
        scram = [r["random_calls_per_op"] for r in out.get(own.label, []) if r["mechanism"].startswith("SCRAM")]
        asked["server_random_calls_per_login"] = min(scram) if scram else None  # what the nonce part's claim reads
        ran = {nearest(PART_BUILDS[q])[0] for q in p.parts() if q in PART_BUILDS}
        for build in (b for b in MONGOD_BUILDS if b not in ran and b.missing() is None):
            with build.server(tls=False, auth=False) as off, build.server(tls=False, auth=True) as on:
                out[build.label] = _ask(p, off, on)
    return {"random_source": out} if out else {}


def _ask(p: Params, off: Any, on: Any) -> list[dict[str, Any]]:
    """Auth off on one server, then each SCRAM mechanism on the other: per connection."""
    counts = {"connections": p.random_source_connections, "split_ticks": p.random_source_split_ticks}
    rows = [per_connection(off.endpoint, mechanism=None, server_cpu=off.cpu, pids=off.pids, **counts)]
    for mechanism in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
        rows.append(per_connection(on.endpoint, mechanism=mechanism, server_cpu=on.cpu, pids=on.pids, **counts))
    return rows


def _load_curves(p: Params, part: str, servers: dict[str, Any]) -> dict[str, Any]:
    """mongod's load curves (protocol/loads.py): each mechanism's logins paced against auth off, each on its own
    server, one connection a login as the study's short connections (workloads/mongo_wire.py), before they stop;
    none on a server the user named or a build beside."""
    if part != "MongoDB" or p.mongo_uri or p.aa or not p.load_rates or not {"off", "on"} <= set(servers):
        return {}
    off, on = servers["off"], servers["on"]

    def side(srv: Any, mechanism: str | None, kind: str) -> loads.Side:
        e = srv.endpoint
        args = e.client_args(tls=False, mechanism=mechanism) if mechanism else _strip_auth(e.client_args(tls=False))
        spec = ConnectSpec("mongo", args, wire=mongo_wire.usable(args))
        return loads.Side(functools.partial(paced.sql_operations, spec, kinds=(kind,)), srv.cpu, float(os.cpu_count()))

    baseline = p.arms(part)[0].name  # auth off
    curves = [(m, c) for m in p.load_arms for c in p.curves(m, baseline, {"new": "connection"})]
    return {"load_curves": [load_runs.measure(c, side(off, None, c.kind), side(on, m, c.kind)) for m, c in curves]}


NONCE_NOTE = (
    "nonces of 24 bytes, as a SCRAM server nonce; Python workers, so per-call interpreter overhead is in the "
    "user time of both sources"
)


def run(p: Params) -> StudyResult:
    top, top_workers = max(p.concurrency), max(p.nonce_workers)
    asked: dict[str, Any] = {}  # the MongoDB part's count of random-source calls, for the nonce part's claim

    def plan(name: str, stack: contextlib.ExitStack) -> PartPlan:
        servers, facts, notes = _servers(p, name, stack) if name != "nonce" else ({}, {}, [NONCE_NOTE])
        arms, keys = p.arms(name), p.server_keys(name) if name != "nonce" else {}
        mongods = servers.values() if engine_of(name) == "MongoDB" else ()
        refused = next((e for e in (getattr(s, "tls_error", "") for s in mongods) if e), "")
        if refused:  # a user's server without TLS (or one we cannot verify): its TLS arms cannot run
            arms = tuple(a for a in arms if not a.tls)
            notes = [*notes, f"TLS arms skipped: the server refused a TLS client ({refused})"]
        return PartPlan(
            arms=[a.name for a in arms],
            measure=_measure(p, name, servers),
            facts=facts,
            notes=notes,
            factors={"workers": p.nonce_workers} if name == "nonce" else {"concurrency": p.concurrency},
            # a verdict-of-record part is profiled; the build beside it is not (as in tls)
            servers={a.name: servers[keys[a.name]] for a in arms} if servers and engine_of(name) == name else {},
            judge=lambda runs, alpha: part_claims(name, runs, alpha, top=top, top_workers=top_workers),
            baseline_conditions=baseline_conditions,
            profile_factors=[{"concurrency": top}],
            outlier=OUTLIER if p.part_design(name) == "duet" else None,
            conditions=dict(asked) if name == "nonce" else {},
            finish=(lambda store: _random_source(p, name, servers, asked) | _load_curves(p, name, servers))
            if name in PART_BUILDS
            else None,
        )

    return run_parts(p, STUDY, p.parts(), plan)
