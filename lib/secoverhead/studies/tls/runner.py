"""TLS study: the servers of each engine, and the probes each arm runs."""

from __future__ import annotations

import contextlib
from typing import Any

from secoverhead.measurement.parts import StudyResult
from secoverhead.network import Link
from secoverhead.network.link import connect_ms
from secoverhead.servers import FerretDBServer, MariaDBServer
from secoverhead.studies.protocol.runner import PartPlan, run_parts
from secoverhead.studies.tls.claims import baseline_conditions, part_claims
from secoverhead.studies.tls.declarations import RTT_PART, SERVERS, STUDY, Params
from secoverhead.workloads import probes
from secoverhead.workloads.measurement import Measurement
from secoverhead.workloads.sysbench import sbtest_table
from secoverhead.workloads.ycsb import load_usertable


def _servers(p: Params, engine: str, stack: contextlib.ExitStack) -> tuple[dict[str, Any], dict, list[str]]:
    """Server key -> started (or checked) server; facts; notes."""

    notes: list[str] = []
    needed = {a.server for a in p.arms(engine)}
    if engine == "MongoDB" and p.mongo_uri:
        ext = stack.enter_context(p.external_mongo((p.mongo_auth_mechanism,)))
        notes.append(
            "external MongoDB: certificate type and TLS version are the server's own; server CPU is not measured"
        )
        return {"rsa": ext}, {"mongodb": ext.describe()}, notes
    if engine == "MySQL" and p.mysql_host:
        ext = stack.enter_context(p.both_ways_mysql())
        notes.append(
            "external MySQL: certificate type is the server's own; server CPU is not measured; the probe reads "
            "sbtest1 in the named database (created with 1000 rows if absent)"
        )
        if not p.mysql_ca_file:
            notes.append("no mysql_ca_file: TLS to the server is encrypted but its certificate is not verified")
        return {"rsa": ext}, {"mysql": ext.describe()}, notes
    servers, facts = {}, {}
    for key, kw in SERVERS[engine].items():
        if key not in needed:
            continue
        if engine == "MongoDB":
            servers[key] = stack.enter_context(FerretDBServer(tls=True, auth=True, **kw))
        else:
            servers[key] = stack.enter_context(MariaDBServer(tls="on", **kw))
        facts[f"{engine.lower()} {key} ({servers[key].describe()['engine']})"] = servers[key].describe()
    if engine == "MongoDB":
        notes.append("TLS 1.2 vs 1.3 is not an arm on MongoDB: pymongo offers no protocol-version setting")
        notes.append("auth on (SCRAM) in every arm, as a production MongoDB would have it; the original does not say")
    return servers, facts, notes


def _prepare(p: Params, engine: str, servers: dict[str, Any], notes: list[str]) -> None:
    for srv in servers.values():
        e = srv.endpoint
        if engine == "MySQL":
            sbtest_table(e)
            continue
        c = e.client(mechanism=p.mongo_auth_mechanism if e.users else None)
        try:
            loaded = load_usertable(c, p.mongo_record_count, seed=p.seed)
        finally:
            c.close()
        notes.append(
            f"YCSB load: {p.mongo_record_count} records"
            + (" (already present)" if loaded.skipped else f", {loaded.docs_per_s:.0f} docs/s")
        )


def _measure(p: Params, engine: str, servers: dict[str, Any], *, connections_only: bool = False):
    arms = {a.name: a for a in p.arms(engine)}

    def measure(arm_name: str, factors: dict) -> Measurement:
        arm = arms[arm_name]
        srv = servers[arm.server]
        e, cpu = srv.endpoint, srv.cpu
        if engine in ("MongoDB", RTT_PART):
            mech = p.mongo_auth_mechanism if e.users else None
            kw = {"tls": arm.tls, "mechanism": mech, "server_cpu": cpu}
            conn = probes.mongo_connection_probe(e, iterations=p.mongo_connect_iterations, **kw)
            if connections_only:
                return conn
            reused = probes.mongo_reused_probe(e, iterations=p.mongo_reused_iterations, **kw)
        else:
            kw = {"tls": arm.tls, "query": p.mysql_query, "server_cpu": cpu}
            conn = probes.mysql_connection_probe(e, iterations=p.mysql_connect_iterations, **kw)
            if connections_only:
                return conn
            reused = probes.mysql_reused_probe(e, iterations=p.mysql_reused_iterations, **kw)
        return probes.combine(conn, reused)

    return measure


def _rtt_servers(p: Params, stack: contextlib.ExitStack) -> tuple[dict[str, Any], dict, list[str]]:
    """FerretDB in a namespace of its own behind a link set to the original's round trip."""

    link = stack.enter_context(Link(p.rtt_ms))
    srv = stack.enter_context(FerretDBServer(tls=True, auth=True, link=link))
    facts = {f"mongodb rsa behind a {p.rtt_ms} ms link (FerretDB)": srv.describe()}
    notes = [
        f"round trip set to {p.rtt_ms} ms, measured {link.measured_ms:.3f} ms (median of {link.probes} TCP "
        f"connects; the path alone {link.floor_ms:.3f} ms): {link.describe()['how']}",
        "the client still shares the machine's 2 cores with the server: only the round trips are emulated",
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


def run(p: Params) -> StudyResult:
    """Start (or check) the servers, run each engine's experiment, return where the results are."""

    def plan(engine: str, stack: contextlib.ExitStack) -> PartPlan:
        if engine == RTT_PART:
            servers, facts, notes = _rtt_servers(p, stack)
            _prepare(p, "MongoDB", servers, notes)
            return PartPlan(
                arms=[a.name for a in p.arms(engine)],
                measure=_measure(p, engine, servers),
                facts=facts,
                notes=notes,
                extras={"link": servers["rsa"].link.describe()},
                judge=lambda runs, alpha: part_claims(engine, runs, alpha),
                conditions={"round_trip_ms": servers["rsa"].link.measured_ms},
                baseline_conditions=baseline_conditions,
            )
        servers, facts, notes = _servers(p, engine, stack)
        _prepare(p, engine, servers, notes)
        return PartPlan(
            arms=[a.name for a in p.arms(engine)],
            measure=_measure(p, engine, servers),
            facts=facts,
            notes=notes,
            servers={a.name: servers[a.server] for a in p.arms(engine)},
            judge=lambda runs, alpha: part_claims(engine, runs, alpha),
            conditions={"round_trip_ms": _round_trip(servers[p.arms(engine)[0].server])},
            baseline_conditions=baseline_conditions,
            profile_measure=_measure(p, engine, servers, connections_only=True),  # "per connection" is exact
            ops_metric="connections",
            # a profiling run's connections spend 0.02-0.5 s of server CPU; 1 sample per 200 us gives the arms
            # without TLS 100+ samples and the TLS arms 700+, where 1 ms gave 24 and 147-497
            profile_period_ns=200_003,
        )

    return run_parts(p, STUDY, p.parts(), plan)
