"""Study 1: what TLS costs a connection (set-up vs a reused client), on MongoDB and on MySQL.

Arms per engine: no TLS, TLS with an RSA-2048 certificate, and the extras TLS with ECDSA P-256 and (MySQL)
TLS 1.2 instead of 1.3. Each run measures, for one arm, `connect_iterations` fresh clients (build, first
query, their sum, first checkout) and `reused_iterations` queries on one kept client. Arms are interleaved
per round; every connection's timings are kept.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..measurement import Measurement
from ..results import ResultStore
from ..servers import ExternalMongo, FerretDBServer, MariaDBServer
from ..stats import Comparison, compare
from ..workloads import probes
from ..workloads.ycsb import load_usertable
from . import PUBLISHED
from .common import ExternalMySQLParams, StudyParams, run_experiment

# what each engine's probe calls its timings -> the original's row names
MONGO_MEASURES = {
    "construct_ms": "build connection",
    "first_query_ms": "first query after building",
    "total_ms": "build + first query",
    "query_ms": "query on a reused client",
}
MYSQL_MEASURES = {
    "connect_ms": "build connection",
    "first_query_ms": "first query after building",
    "total_ms": "build + first query",
    "query_ms": "query on a reused client",
}


@dataclass
class TlsParams(StudyParams, ExternalMySQLParams):
    experiment_id: str = "tls"
    extra_arms: bool = True
    mongo_enabled: bool = True
    mongo_uri: str = ""
    mongo_username: str = ""
    mongo_password_env: str = ""
    mongo_auth_mechanism: str = "SCRAM-SHA-256"
    mongo_record_count: int = 1000
    mongo_connect_iterations: int = 20
    mongo_reused_iterations: int = 200
    mysql_enabled: bool = True
    mysql_ca_file: str = ""
    mysql_connect_iterations: int = 20
    mysql_reused_iterations: int = 200
    mysql_query: str = "SELECT id, k, c, pad FROM sbtest1 WHERE id = 1"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in (
            "mongo_record_count",
            "mongo_connect_iterations",
            "mongo_reused_iterations",
            "mysql_connect_iterations",
            "mysql_reused_iterations",
        ):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1")
        if not (self.mongo_enabled or self.mysql_enabled):
            raise ValueError("enable at least one of mongo_enabled, mysql_enabled")


@dataclass
class EngineResult:
    engine: str  # "MongoDB" / "MySQL"
    store: ResultStore
    servers: dict[str, dict[str, Any]]
    arms: list[str]
    notes: list[str] = field(default_factory=list)

    def samples(self) -> pd.DataFrame:
        return self.store.samples()

    def runs(self) -> pd.DataFrame:
        return self.store.runs()


def _mongo_arms(p: TlsParams, stack: contextlib.ExitStack) -> tuple[dict[str, tuple[Any, bool, list[int]]], dict, list]:
    """arm -> (endpoint, tls, pids); server facts; notes."""
    notes = []
    if p.mongo_uri:
        ext = stack.enter_context(
            ExternalMongo(
                uri=p.mongo_uri,
                username=p.mongo_username or None,
                password_env=p.mongo_password_env or None,
                mechanisms=(p.mongo_auth_mechanism,),
            )
        )
        notes.append(
            "external MongoDB: certificate type and TLS version are the server's own; extra arms skipped; "
            "server CPU is not measured (not our process)"
        )
        arms = {"no TLS": (ext.endpoint, False, []), "TLS": (ext.endpoint, True, [])}
        return arms, {"mongodb": ext.describe()}, notes
    rsa = stack.enter_context(FerretDBServer(tls=True, auth=True, cert_type="rsa"))
    arms = {"no TLS": (rsa.endpoint, False, rsa.pids), "TLS": (rsa.endpoint, True, rsa.pids)}
    facts = {"mongodb (FerretDB, RSA)": rsa.describe()}
    if p.extra_arms:
        ec = stack.enter_context(FerretDBServer(tls=True, auth=True, cert_type="ecdsa"))
        arms["TLS ECDSA"] = (ec.endpoint, True, ec.pids)
        facts["mongodb (FerretDB, ECDSA)"] = ec.describe()
        notes.append(
            "TLS 1.2 vs 1.3 is not an arm on MongoDB: pymongo offers no protocol-version setting, and "
            "FerretDB negotiates TLS 1.3 with it"
        )
    notes.append("auth on (SCRAM) in every arm, as a production MongoDB would have it; the original does not say")
    return arms, facts, notes


def _mysql_arms(p: TlsParams, stack: contextlib.ExitStack) -> tuple[dict[str, tuple[Any, bool, list[int]]], dict, list]:
    notes = []
    if p.mysql_host:
        ext = stack.enter_context(p.external_mysql(tls=True, ca_file=p.mysql_ca_file))
        notes.append(
            "external MySQL: certificate type is the server's own; server CPU is not measured; the "
            "probe reads sbtest1 in the named database (created with 1000 rows if absent)"
        )
        _sysbench_style_table(ext.endpoint)
        arms = {"no TLS": (ext.endpoint, False, []), "TLS": (ext.endpoint, True, [])}
        return arms, {"mysql": ext.describe()}, notes
    rsa = stack.enter_context(MariaDBServer(tls="on", cert_type="rsa"))
    _sysbench_style_table(rsa.endpoint)
    arms = {"no TLS": (rsa.endpoint, False, rsa.pids), "TLS": (rsa.endpoint, True, rsa.pids)}
    facts = {"mysql (MariaDB, RSA)": rsa.describe()}
    if p.extra_arms:
        ec = stack.enter_context(MariaDBServer(tls="on", cert_type="ecdsa"))
        _sysbench_style_table(ec.endpoint)
        t12 = stack.enter_context(MariaDBServer(tls="on", cert_type="rsa", tls_versions="TLSv1.2"))
        _sysbench_style_table(t12.endpoint)
        arms["TLS ECDSA"] = (ec.endpoint, True, ec.pids)
        arms["TLS 1.2"] = (t12.endpoint, True, t12.pids)
        facts["mysql (MariaDB, ECDSA)"] = ec.describe()
        facts["mysql (MariaDB, TLS 1.2 only)"] = t12.describe()
    return arms, facts, notes


def _sysbench_style_table(endpoint, rows: int = 1000) -> None:
    """sbtest1 with sysbench's schema (id, k, c char(120), pad char(60)) so the probe query reads a real row.
    Idempotent: an existing table with rows is left alone."""
    conn = endpoint.connect(tls=endpoint.tls_required)
    try:
        cur = conn.cursor()
        cur.execute(
            "CREATE TABLE IF NOT EXISTS sbtest1 (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0,"
            " c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k)) ENGINE=InnoDB"
        )
        cur.execute("SELECT COUNT(*) FROM sbtest1")
        if cur.fetchone()[0] == 0:
            cur.executemany(
                "INSERT INTO sbtest1 (k, c, pad) VALUES (%s, %s, %s)",
                [(i * 7 % rows, f"{i:011d}-" * 10, f"{i:011d}-" * 5) for i in range(rows)],
            )
            conn.commit()
    finally:
        conn.close()


def _combine(conn: Measurement, reused: Measurement) -> Measurement:
    samples = pd.concat(
        [conn.samples.assign(probe="connection"), reused.samples.assign(probe="reused")], ignore_index=True
    )
    metrics = {f"connection_{k}" if k.startswith(("server_", "client_")) else k: v for k, v in conn.metrics.items()}
    metrics |= {f"reused_{k}" if k.startswith(("server_", "client_")) else k: v for k, v in reused.metrics.items()}
    return Measurement(metrics, samples=samples, info=conn.info | {"reused": reused.info})


def run(p: TlsParams, *, progress: bool = True) -> dict[str, EngineResult]:
    """Start (or check) the servers, run both engines' experiments, return where the results are."""
    out: dict[str, EngineResult] = {}
    for engine, enabled in (("MongoDB", p.mongo_enabled), ("MySQL", p.mysql_enabled)):
        if not enabled:
            continue
        with contextlib.ExitStack() as stack:
            if engine == "MongoDB":
                arms, facts, notes = _mongo_arms(p, stack)
                for endpoint in {id(a[0]): a[0] for a in arms.values()}.values():  # each server once
                    c = endpoint.client(mechanism=p.mongo_auth_mechanism if endpoint.users else None)
                    try:
                        loaded = load_usertable(c, p.mongo_record_count, seed=p.seed)
                    finally:
                        c.close()
                    notes.append(
                        f"YCSB load: {p.mongo_record_count} records"
                        + (" (already present)" if loaded.skipped else f", {loaded.docs_per_s:.0f} docs/s")
                    )
                mech = p.mongo_auth_mechanism

                def measure(arm: str, factors: dict, arms=arms, mech=mech) -> Measurement:
                    endpoint, tls, pids = arms[arm]
                    m = mech if endpoint.users else None
                    c = probes.mongo_connection_probe(
                        endpoint, iterations=p.mongo_connect_iterations, tls=tls, mechanism=m, server_pids=pids
                    )
                    r = probes.mongo_reused_probe(
                        endpoint, iterations=p.mongo_reused_iterations, tls=tls, mechanism=m, server_pids=pids
                    )
                    return _combine(c, r)
            else:
                arms, facts, notes = _mysql_arms(p, stack)

                def measure(arm: str, factors: dict, arms=arms) -> Measurement:
                    endpoint, tls, pids = arms[arm]
                    c = probes.mysql_connection_probe(
                        endpoint, iterations=p.mysql_connect_iterations, tls=tls, query=p.mysql_query, server_pids=pids
                    )
                    r = probes.mysql_reused_probe(
                        endpoint, iterations=p.mysql_reused_iterations, tls=tls, query=p.mysql_query, server_pids=pids
                    )
                    return _combine(c, r)

            exp_id = f"{p.experiment_id}-{engine.lower()}"
            store = run_experiment(p, exp_id, arms=list(arms), measure=measure, servers=facts, progress=progress)
            store.update_metadata(notes=notes)
            out[engine] = EngineResult(engine, store, facts, list(arms), notes)
    return out


# -- analysis -------------------------------------------------------------------------------------------
def comparisons(result: EngineResult, *, seed: int = 0) -> dict[tuple[str, str], Comparison]:
    """(measure, arm) -> comparison of that arm against no TLS, on every connection's / query's sample."""
    s = result.samples()
    measures = MONGO_MEASURES if result.engine == "MongoDB" else MYSQL_MEASURES
    out = {}
    for col, label in measures.items():
        probe = "reused" if col == "query_ms" else "connection"
        sub = s[s["probe"] == probe]
        base = sub.loc[sub["arm"] == "no TLS", col]
        for arm in result.arms:
            if arm != "no TLS":
                out[(label, arm)] = compare(base, sub.loc[sub["arm"] == arm, col], seed=seed)
    return out


def cpu_comparisons(result: EngineResult, *, seed: int = 0) -> dict[tuple[str, str], Comparison]:
    """Server CPU per connection and per reused query, per run (CPU is only measurable over a batch)."""
    runs = result.runs()
    out = {}
    for col, label in (
        ("connection_server_cpu_us_per_op", "server CPU per connection (us)"),
        ("reused_server_cpu_us_per_op", "server CPU per reused query (us)"),
        ("connection_client_cpu_us_per_op", "client CPU per connection (us)"),
    ):
        if col not in runs or runs[col].isna().all():
            continue
        base = runs.loc[runs["arm"] == "no TLS", col]
        for arm in result.arms:
            if arm != "no TLS":
                out[(label, arm)] = compare(base, runs.loc[runs["arm"] == arm, col], seed=seed)
    return out


def reproduction_table(result: EngineResult) -> pd.DataFrame:
    """The original's four rows x (no TLS, TLS): published means beside our means, medians and CIs."""
    from ..report import median_ci

    pub = pd.read_csv(PUBLISHED / "tls.csv")
    s = result.samples()
    measures = MONGO_MEASURES if result.engine == "MongoDB" else MYSQL_MEASURES
    rows = []
    for col, label in measures.items():
        probe = "reused" if col == "query_ms" else "connection"
        row: dict[str, Any] = {"measure (ms)": label}
        for arm in ("no TLS", "TLS"):
            x = s.loc[(s["probe"] == probe) & (s["arm"] == arm), col].dropna()
            published = pub.loc[(pub["measure"] == label) & (pub["arm"] == arm), "value"]
            med, lo, hi = median_ci(x.to_numpy())
            row[f"published {arm} (mean)"] = float(published.iloc[0]) if len(published) else None
            row[f"ours {arm} mean"] = round(float(x.mean()), 3) if len(x) else None
            row[f"ours {arm} median [95 % CI]"] = f"{med:.3f} [{lo:.3f}, {hi:.3f}]" if len(x) else ""
        pm, pt = row["published no TLS (mean)"], row["published TLS (mean)"]
        row["published TLS / no TLS"] = round(pt / pm, 2) if pm else None
        om, ot = row["ours no TLS mean"], row["ours TLS mean"]
        row["ours TLS / no TLS (means)"] = round(ot / om, 2) if om else None
        rows.append(row)
    return pd.DataFrame(rows)


def engine_notes(result: EngineResult) -> dict[str, str]:
    """How the local engine and set-up differ from the original's, to print next to the numbers."""
    notes = {}
    embedded = any(f.get("embedded") for f in result.servers.values())
    if result.engine == "MongoDB" and embedded:
        notes["engine"] = (
            "FerretDB v1.24.0 (SQLite backend) stands in for mongod 4.2: its TLS is Go's crypto/tls, "
            "its SCRAM its own; absolute times are FerretDB's, only the shape is comparable"
        )
    if result.engine == "MySQL" and embedded:
        notes["engine"] = "MariaDB 10.11 stands in for MySQL 8.0 (OpenSSL 3.0 in both server and client)"
    if embedded:
        notes["network"] = (
            "client and server share a 2-core machine over loopback; the original used a separate "
            "client VM, so its round trips cost more, and TLS's extra round trips more still"
        )
    return notes | {f"note {i + 1}": n for i, n in enumerate(result.notes)}
