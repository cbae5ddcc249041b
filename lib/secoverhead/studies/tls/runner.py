"""TLS study: the servers of each engine, and the probes each arm runs."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from typing import Any

from secoverhead.measurement.parts import StudyResult
from secoverhead.network import Link
from secoverhead.network.link import connect_ms
from secoverhead.servers.builds import ServerBuild, described, nearest, stand_in_note
from secoverhead.servers.counters import cpu_note
from secoverhead.servers.labels import settled_transport
from secoverhead.studies.protocol import load_runs, loads
from secoverhead.studies.protocol.runner import PartPlan, run_parts
from secoverhead.studies.tls.claims import baseline_conditions, part_claims
from secoverhead.studies.tls.declarations import (
    BASELINE,
    MONGO_TLS_VERSION,
    PART_BUILDS,
    RTT_PART,
    SERVERS,
    STUDY,
    Arm,
    Params,
    _engine,
)
from secoverhead.workloads import paced, probes
from secoverhead.workloads.measurement import Measurement
from secoverhead.workloads.short_connections import ConnectSpec
from secoverhead.workloads.sysbench import sbtest_table
from secoverhead.workloads.ycsb import load_usertable


def _servers(p: Params, part: str, stack: contextlib.ExitStack) -> tuple[dict[str, Any], dict, list[str]]:
    """Server key -> started (or checked) server; facts; notes."""

    engine = _engine(part)
    if engine == "MongoDB" and p.mongo_uri:
        ext = stack.enter_context(p.external_mongo((p.mongo_auth_mechanism,)))
        notes = ["external MongoDB: certificate type and TLS version are the server's own", cpu_note(ext)]
        return {"rsa": ext}, {"mongodb": ext.describe()}, notes
    if engine == "MySQL" and p.mysql_host:
        ext = stack.enter_context(p.both_ways_mysql())
        notes = [
            "external MySQL: certificate type is the server's own; the probe reads sbtest1 in the named database "
            "(created with 1000 rows if absent)",
            cpu_note(ext),
        ]
        if not p.mysql_ca_file:
            notes.append("no mysql_ca_file: TLS to the server is encrypted but its certificate is not verified")
        return {"rsa": ext}, {"mysql": ext.describe()}, notes
    build, why = nearest(PART_BUILDS[part])
    needed = {a.server for a in p.arms(part)}
    servers, facts = {}, {}
    for key, kw in SERVERS[engine].items():
        if key in needed:
            settings = kw | ({"auth": True} if engine == "MongoDB" else {})
            servers[key] = stack.enter_context(build.server(tls=True, **settings))
            facts[f"{part.lower()} {key} ({build.label})"] = described(servers[key], build, PART_BUILDS[part])
    return servers, facts, _notes(p, part, engine, build, why)


def _notes(p: Params, part: str, engine: str, build: ServerBuild, why: str) -> list[str]:
    """What the part's report says of where it ran: a stand-in and why, the builds not run beside it."""
    notes = stand_in_note(PART_BUILDS[part], build, why)
    if part == engine and p.beside_builds:
        notes += [f"not run beside: {PART_BUILDS[b].label} ({PART_BUILDS[b].missing()})" for b in p.beside(engine)
                  if b not in p.parts()]  # fmt: skip
    if engine == "MongoDB":
        notes.append("TLS 1.2 vs 1.3 is not an arm on MongoDB: pymongo offers no protocol-version setting")
        notes.append("auth on (SCRAM) in every arm, as a production MongoDB would have it; the original does not say")
    return notes


def _prepare(p: Params, part: str, servers: dict[str, Any], notes: list[str]) -> None:
    for srv in servers.values():
        e = srv.endpoint
        if _engine(part) == "MySQL":
            sbtest_table(e)
            continue
        c = e.client(mechanism=p.mongo_auth_mechanism if e.users else None)
        try:
            loaded = load_usertable(c, p.mongo_record_count, seed=p.seed)
        finally:
            c.close()
        getattr(srv, "settle", lambda: None)()  # a replica set: every member holds the load before any read
        notes.append(
            f"YCSB load: {p.mongo_record_count} records"
            + (" (already present)" if loaded.skipped else f", {loaded.docs_per_s:.0f} docs/s")
        )


def _measure(p: Params, part: str, servers: dict[str, Any], *, connections_only: bool = False):
    arms = {a.name: a for a in p.arms(part)}

    def measure(arm_name: str, factors: dict) -> Measurement:
        arm = arms[arm_name]
        srv = servers[arm.server]
        e, cpu = srv.endpoint, srv.cpu
        if _engine(part) == "MongoDB":
            mech = p.mongo_auth_mechanism if e.users else None
            kw = {"tls": arm.tls, "mechanism": mech, "server_cpu": cpu}
            conn = _checked(
                srv, arm, lambda: probes.mongo_connection_probe(e, iterations=p.mongo_connect_iterations, **kw)
            )
            if connections_only:
                return conn
            reused = _checked(
                srv, arm, lambda: probes.mongo_reused_probe(e, iterations=p.mongo_reused_iterations, **kw)
            )
        else:
            kw = {"tls": arm.tls, "query": p.mysql_query, "server_cpu": cpu}
            conn = probes.mysql_connection_probe(e, iterations=p.mysql_connect_iterations, **kw)
            if connections_only:
                return conn
            reused = probes.mysql_reused_probe(e, iterations=p.mysql_reused_iterations, **kw)
        return probes.combine(conn, reused)

    return measure


def _checked(srv: Any, arm: Arm, run: Callable[[], Measurement]) -> Measurement:
    """The run, every connection it made checked against its arm where the server counts them per TLS version
    (mongod's serverStatus): a plain arm none over TLS, a TLS arm all over the declared version."""
    counts = getattr(srv, "transport", None)
    before = counts() if counts is not None else {}
    m = run()
    if before:
        version = MONGO_TLS_VERSION if arm.tls else None
        where = f"{srv.endpoint.host}:{srv.endpoint.port}"
        seen = settled_transport(version, before, counts, where, tls_only_client=arm.tls)  # pymongo's tls=True
        m.info["negotiated"] = seen._asdict() | {"tls": f"TLS {version}" if version else "none"}
    return m


def _rtt_servers(p: Params, stack: contextlib.ExitStack) -> tuple[dict[str, Any], dict, list[str]]:
    """The original's build (or the nearest here) in the original's topology where the build has it (a replica
    set, read from a secondary), in a namespace of its own behind a link set to the original's round trip."""

    build, why = nearest(PART_BUILDS[RTT_PART])
    link = stack.enter_context(Link(p.rtt_ms))
    topology = build.kind == "mongod"
    srv = stack.enter_context(build.server(tls=True, auth=True, link=link, replica_set=topology))
    shape = "replica set" if topology else "single server"
    facts = {
        f"mongodb rsa {shape} behind a {p.rtt_ms} ms link ({build.label})": described(srv, build, PART_BUILDS[RTT_PART])
    }
    notes = stand_in_note(PART_BUILDS[RTT_PART], build, why)
    notes += [
        f"round trip set to {p.rtt_ms} ms, measured {link.measured_ms:.3f} ms (median of {link.probes} TCP "
        f"connects; the path alone {link.floor_ms:.3f} ms): {link.describe()['how']}",
        (
            "the original's topology: a replica set of three members and a hidden read-only one, every client seeded "
            "with the three and reading from a secondary (its URI's replicaSet and readPreference=secondary); the "
            "members talk to each other inside the namespace, without the link's delay"
            if topology
            else f"{build.label} has no replica set here: a single server stands in for the original's topology"
        ),
        "the client still shares the machine's 2 cores with the servers: only the round trips are emulated",
    ]
    return {"rsa": srv}, facts, notes


def _round_trip(server: Any) -> float | None:
    """The round trip to the baseline's server (TCP connects), measured before any run; None where it cannot
    be (a server behind a Unix socket)."""
    e = getattr(server, "endpoint", None)
    addr, port = getattr(e, "host", ""), getattr(e, "port", 0)
    try:
        return round(connect_ms(addr, port), 4) if addr and port else None
    except OSError:
        return None


def _rtt_plan(p: Params, stack: contextlib.ExitStack) -> PartPlan:
    """Seed 000's table again, behind the original's round trip."""
    servers, facts, notes = _rtt_servers(p, stack)
    _prepare(p, RTT_PART, servers, notes)
    return PartPlan(
        arms=[a.name for a in p.arms(RTT_PART)],
        measure=_measure(p, RTT_PART, servers),
        facts=facts,
        notes=notes,
        extras={"link": servers["rsa"].link.describe()},
        judge=lambda runs, alpha: part_claims(RTT_PART, runs, alpha),
        conditions={"round_trip_ms": servers["rsa"].link.measured_ms},
        baseline_conditions=baseline_conditions,
    )


def _loopback_plan(p: Params, part: str, stack: contextlib.ExitStack) -> PartPlan:
    """An engine on one server build, on loopback (or the user's server)."""
    servers, facts, notes = _servers(p, part, stack)
    _prepare(p, part, servers, notes)
    arms = p.arms(part)
    record = part == _engine(part)  # a verdict-of-record part is profiled; the builds beside it are not
    return PartPlan(
        arms=[a.name for a in arms],
        measure=_measure(p, part, servers),
        facts=facts,
        notes=notes,
        servers={a.name: servers[a.server] for a in arms} if record else {},
        judge=lambda runs, alpha: part_claims(part, runs, alpha),
        conditions={"round_trip_ms": _round_trip(servers[arms[0].server])},
        baseline_conditions=baseline_conditions,
        profile_measure=_measure(p, part, servers, connections_only=True),  # "per connection" is exact
        ops_metric="connections",
        finish=lambda _store: {"load_curves": _load_curves(p, part, servers)},
        # a profiling run's connections spend 0.02-0.5 s of server CPU; 1 sample per 200 us gives the arms
        # without TLS 100+ samples and the TLS arms 700+, where 1 ms gave 24 and 147-497
        profile_period_ns=200_003,
    )


def _load_curves(p: Params, part: str, servers: dict[str, Any]) -> list[dict[str, Any]]:
    """MySQL 8.0's load curves (protocol/loads.py): the TLS arm's connections and queries paced against no TLS on
    the one server the arms share (TLS is the client's choice), before it stops; none elsewhere (a server the user
    named, a build beside)."""
    if part != "MySQL" or p.external(part) or not p.load_rates:
        return []
    arms = {a.name: a for a in p.arms(part)}
    base = arms[BASELINE]
    srv = servers[base.server]

    def side(tls: bool, kind: str) -> loads.Side:
        spec = ConnectSpec("mysql", srv.endpoint.connect_args(tls=tls), query=p.mysql_query)
        return loads.Side(functools.partial(paced.sql_operations, spec, kinds=(kind,)), srv.cpu, float(os.cpu_count()))

    return [load_runs.measure(c, side(False, c.kind), side(True, c.kind)) for a in p.load_arms if a in arms
            for c in p.curves(a, BASELINE)]  # fmt: skip


def run(p: Params) -> StudyResult:
    """Start (or check) the servers, run each part's experiment, return where the results are."""

    def plan(part: str, stack: contextlib.ExitStack) -> PartPlan:
        return _rtt_plan(p, stack) if part == RTT_PART else _loopback_plan(p, part, stack)

    return run_parts(p, STUDY, p.parts(), plan)
