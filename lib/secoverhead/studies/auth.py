"""Study 2: what authentication costs when every request opens a connection.

MongoDB arms (FerretDB by default): auth off, SCRAM-SHA-1, SCRAM-SHA-256, each with TLS off and on, and a
pooled SCRAM-SHA-256 arm. MySQL arms (MariaDB by default): password auth without and with TLS, and pooled.
Factor: client concurrency (worker processes). Plus the original's mechanism measured directly: nonces from
a /dev/urandom read per request versus a seeded user-space generator, over 1-8 workers.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..measurement import Measurement
from ..results import ResultStore
from ..servers import ExternalMongo, FerretDBServer, MariaDBServer
from ..stats import Comparison, compare, compare_sweep
from ..workloads.nonce import nonce_benchmark
from ..workloads.short_connections import ConnectSpec, run_short_connections
from .common import ExternalMySQLParams, StudyParams, run_experiment


@dataclass
class AuthParams(StudyParams, ExternalMySQLParams):
    experiment_id: str = "auth"
    concurrency: list[int] = field(default_factory=lambda: [1, 2, 4, 8])
    ops_per_worker: int = 10
    mysql_ops_per_worker: int = 60  # a MySQL connect is ~20x cheaper than pymongo's: more per run for CPU ticks
    max_seconds_per_run: float = 60
    mongo_enabled: bool = True
    mongo_uri: str = ""
    mongo_username: str = ""
    mongo_password_env: str = ""
    mongo_mechanisms: list[str] = field(default_factory=lambda: ["SCRAM-SHA-256"])
    mysql_enabled: bool = True
    mysql_ca_file: str = ""
    nonce_enabled: bool = True
    nonce_workers: list[int] = field(default_factory=lambda: [1, 2, 4, 8])
    nonces_per_run: int = 300_000

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ops_per_worker < 1 or self.mysql_ops_per_worker < 1 or self.nonces_per_run < 1:
            raise ValueError("ops_per_worker, mysql_ops_per_worker and nonces_per_run must be >= 1")
        if not self.concurrency or min(self.concurrency) < 1 or max(self.concurrency) > 64:
            raise ValueError("concurrency levels must be between 1 and 64")


@dataclass
class StudyPart:
    name: str
    store: ResultStore
    arms: list[str]
    servers: dict[str, dict[str, Any]]
    notes: list[str]

    def runs(self) -> pd.DataFrame:
        return self.store.runs()


def _strip_auth(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k not in ("username", "password", "authSource", "authMechanism")}


def _mongo_arms(p: AuthParams, stack: contextlib.ExitStack):
    """arm -> (ConnectSpec, pooled, pids)."""
    if p.mongo_uri:
        ext = stack.enter_context(
            ExternalMongo(
                uri=p.mongo_uri,
                username=p.mongo_username or None,
                password_env=p.mongo_password_env or None,
                mechanisms=tuple(p.mongo_mechanisms),
            )
        )
        arms = {}
        for mech in p.mongo_mechanisms if p.mongo_username else [None]:
            label = mech or "as configured"
            for tls in (False, True):
                arms[f"{label}{' + TLS' if tls else ''}"] = (
                    ConnectSpec("mongo", ext.endpoint.client_args(tls=tls, mechanism=mech)),
                    False,
                    [],
                )
        notes = [
            "external MongoDB: auth-off arms need a server without auth, so they are skipped; server CPU is "
            "not measured (not our process)"
        ]
        return arms, {"mongodb": ext.describe()}, notes
    off = stack.enter_context(FerretDBServer(tls=True, auth=False))
    on = stack.enter_context(FerretDBServer(tls=True, auth=True))
    arms: dict[str, tuple[ConnectSpec, bool, list[int]]] = {}
    for tls in (False, True):
        suffix = " + TLS" if tls else ""
        arms[f"auth off{suffix}"] = (
            ConnectSpec("mongo", _strip_auth(off.endpoint.client_args(tls=tls))),
            False,
            off.pids,
        )
        for mech in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
            arms[f"{mech}{suffix}"] = (
                ConnectSpec("mongo", on.endpoint.client_args(tls=tls, mechanism=mech)),
                False,
                on.pids,
            )
    arms["pooled SCRAM-SHA-256"] = (
        ConnectSpec("mongo", on.endpoint.client_args(mechanism="SCRAM-SHA-256")),
        True,
        on.pids,
    )
    notes = [
        "auth on/off needs two FerretDB processes (FerretDB's --test-enable-new-auth); they are identical "
        "otherwise and both run throughout",
        "FerretDB stores SCRAM keys and does no PBKDF2 per login; the client (pymongo) does, per new client",
    ]
    return arms, {"mongodb auth off (FerretDB)": off.describe(), "mongodb auth on (FerretDB)": on.describe()}, notes


def _mysql_arms(p: AuthParams, stack: contextlib.ExitStack):
    if p.mysql_host:
        ext = stack.enter_context(p.external_mysql(tls=True, ca_file=p.mysql_ca_file))
        e, pids, facts = ext.endpoint, [], {"mysql": ext.describe()}
    else:
        db = stack.enter_context(MariaDBServer(tls="on"))
        e, pids, facts = db.endpoint, db.pids, {"mysql (MariaDB)": db.describe()}
    arms = {
        "password": (ConnectSpec("mysql", e.connect_args(tls=False)), False, pids),
        "password + TLS": (ConnectSpec("mysql", e.connect_args(tls=True)), False, pids),
        "pooled password": (ConnectSpec("mysql", e.connect_args(tls=False)), True, pids),
    }
    notes = [
        "password auth is mysql_native_password (MariaDB's default); MariaDB's ed25519 plugin is not an arm "
        "because mysql-connector-python cannot speak it"
    ]
    return arms, facts, notes


def run(p: AuthParams, *, progress: bool = True) -> dict[str, StudyPart]:
    out: dict[str, StudyPart] = {}
    for engine, enabled, make_arms in (
        ("MongoDB", p.mongo_enabled, _mongo_arms),
        ("MySQL", p.mysql_enabled, _mysql_arms),
    ):
        if not enabled:
            continue
        with contextlib.ExitStack() as stack:
            arms, facts, notes = make_arms(p, stack)

            ops = p.mysql_ops_per_worker if engine == "MySQL" else p.ops_per_worker

            def measure(arm: str, factors: dict, arms=arms, ops=ops) -> Measurement:
                spec, pooled, pids = arms[arm]
                return run_short_connections(
                    spec,
                    concurrency=int(factors["concurrency"]),
                    ops_per_worker=ops * (20 if pooled else 1),
                    max_seconds=p.max_seconds_per_run,
                    pooled=pooled,
                    server_pids=pids,
                )

            exp_id = f"{p.experiment_id}-{engine.lower()}"
            store = run_experiment(
                p,
                exp_id,
                arms=list(arms),
                measure=measure,
                servers=facts,
                factors={"concurrency": p.concurrency},
                progress=progress,
            )
            store.update_metadata(notes=notes)
            out[engine] = StudyPart(engine, store, list(arms), facts, notes)
    if p.nonce_enabled:

        def nonce(arm: str, factors: dict) -> Measurement:
            w = int(factors["workers"])
            return nonce_benchmark(arm, workers=w, nonces_per_worker=max(1, p.nonces_per_run // w))

        store = run_experiment(
            p,
            f"{p.experiment_id}-nonce",
            arms=["syscall", "userspace"],
            measure=nonce,
            servers={},
            factors={"workers": p.nonce_workers},
            progress=progress,
        )
        out["nonce"] = StudyPart(
            "nonce",
            store,
            ["syscall", "userspace"],
            {},
            [
                "nonces of 24 bytes, as a SCRAM server nonce; Python workers, so per-call "
                "interpreter overhead is in the user time of both sources"
            ],
        )
    return out


# -- analysis -------------------------------------------------------------------------------------------
def per_concurrency(
    part: StudyPart, metric: str, baseline: str, candidate: str, *, higher_is_better: bool = False, seed: int = 0
) -> dict[tuple[str, int], Comparison]:
    """candidate vs baseline at each concurrency level, Holm-corrected across levels."""
    runs = part.runs()
    pairs = {}
    for c, g in runs.groupby("concurrency"):
        a, b = g.loc[g["arm"] == baseline, metric], g.loc[g["arm"] == candidate, metric]
        if len(a) and len(b):
            pairs[(f"{candidate} vs {baseline}", int(c))] = (a, b)
    return compare_sweep(pairs, higher_is_better=higher_is_better, seed=seed)


def nonce_comparison(part: StudyPart, *, seed: int = 0) -> dict[tuple[str, int], Comparison]:
    """System CPU per nonce, syscall vs user-space, at each worker count."""
    runs = part.runs()
    return {
        ("system ns per nonce, syscall vs user-space", int(w)): compare(
            g.loc[g["arm"] == "userspace", "system_ns_per_nonce"],
            g.loc[g["arm"] == "syscall", "system_ns_per_nonce"],
            seed=seed,
        )
        for w, g in runs.groupby("workers")
    }


def published() -> pd.DataFrame:
    from . import PUBLISHED

    return pd.read_csv(PUBLISHED / "auth.csv")
