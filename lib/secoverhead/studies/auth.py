"""Study 2: what authentication costs when every request opens a connection.

MongoDB arms (FerretDB by default): auth off, SCRAM-SHA-1, SCRAM-SHA-256, each with TLS off and on, and a
pooled SCRAM-SHA-256 arm. MySQL arms (MariaDB by default): password auth without and with TLS, and pooled.
Factor: client concurrency (worker processes). Plus the original's mechanism measured directly: nonces from
a /dev/urandom read per request versus a seeded user-space generator, over 1-8 workers.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..calibration import CryptoBound
from ..claimcheck import RatioClaim
from ..design import ClaimPlan
from ..params import param
from ..verdicts import ClaimVerdict
from .base import BothEngines, Part, PartPlan, StudyParams, StudyResult, aa_copy, run_parts, study_verdicts

if TYPE_CHECKING:
    import pandas as pd

STUDY = "auth"
PRIMARY_METRICS = ("ops_per_s", "server_cpu_us_per_op", "client_cpu_us_per_op")
POOLED_FACTOR = 20  # a pooled arm runs this many queries per worker for each short connection of the others
DUET_COUNT_FACTOR = 10  # duets are time-bound; their counts are bounded at this many times ops_per_worker
# What the claims need. Noise priors: per-round sd of the claims' log ratios in the quick run of 2026-11-22
# (0.01-0.21 for CPU per connection, 0.1-0.4 for system CPU per nonce, whose effect is 8x or more).
PLANS = (
    ClaimPlan.from_aa("authentication raises CPU per short connection (+-25 %)", 0.21, 0.25, comparisons=2),
    ClaimPlan.from_aa("pooling removes most of the per-request server CPU (+-25 %)", 0.21, 0.25),
)
# The client derives the SCRAM key with PBKDF2 per new connection (pymongo, per MongoClient); a TLS arm adds a
# full handshake on the server (FerretDB: Go's crypto, priced with OpenSSL's speed: an estimate).
CRYPTO = (
    CryptoBound(
        "SCRAM-SHA-256", "auth off", "client_cpu_us_per_op", (("pbkdf2_sha256_15000_ms", 1),), "per connection, client"
    ),
    CryptoBound(
        "SCRAM-SHA-1", "auth off", "client_cpu_us_per_op", (("pbkdf2_sha1_10000_ms", 1),), "per connection, client"
    ),
    CryptoBound(
        "SCRAM-SHA-256 + TLS",
        "SCRAM-SHA-256",
        "server_cpu_us_per_op",
        (("rsa2048_sign_us", 1), ("x25519_derive_us", 2)),
        "per connection, server",
    ),
    CryptoBound(
        "password + TLS",
        "password",
        "server_cpu_us_per_op",
        (("rsa2048_sign_us", 1), ("x25519_derive_us", 2)),
        "per connection, server",
    ),
)


@dataclass(frozen=True)
class Arm:
    name: str
    engine: str  # mongo | mysql | nonce
    server: str = ""  # which server: "off" / "on" (FerretDB), "db" (MariaDB)
    mechanism: str | None = None
    tls: bool = False
    pooled: bool = False


def _mongo_arms(
    mechanisms: tuple[str, ...] = ("SCRAM-SHA-1", "SCRAM-SHA-256"), auth_off: bool = True
) -> tuple[Arm, ...]:
    arms = []
    for tls in (False, True):
        suffix = " + TLS" if tls else ""
        if auth_off:
            arms.append(Arm(f"auth off{suffix}", "mongo", "off", None, tls))
        arms += [Arm(f"{m}{suffix}", "mongo", "on", m, tls) for m in mechanisms]
    return (*arms, Arm("pooled SCRAM-SHA-256", "mongo", "on", "SCRAM-SHA-256", pooled=True))


ARMS: dict[str, tuple[Arm, ...]] = {
    "MongoDB": _mongo_arms(),
    "MySQL": (
        Arm("password", "mysql", "db"),
        Arm("password + TLS", "mysql", "db", tls=True),
        Arm("pooled password", "mysql", "db", pooled=True),
    ),
    "nonce": (Arm("syscall", "nonce", mechanism="syscall"), Arm("userspace", "nonce", mechanism="userspace")),
}


@dataclass
class Params(BothEngines, StudyParams):
    # Shares of the time budget. A MongoDB round (7 arms, 6 duets) takes several times a MySQL or nonce one, and
    # its server-CPU claim needs about 6 rounds (duet sd ~0.1 against a +-25 % precision); after the first look
    # only the undecided claim's duets run. (Shares by noise, 1.5 / 2 / 1.5, left it 3 rounds: inconclusive.)
    # MariaDB's CPU per connection is the noisiest metric (duet A/A per-round sd 0.11-0.17): its part gets more.
    PART_WEIGHTS: ClassVar[dict[str, float]] = {"MongoDB": 2.0, "MySQL": 1.5}
    # duet: each arm runs beside the part's baseline (auth off; password), every arm on a server of its own
    # (FerretDB, MariaDB); the nonce part, which has no server, stays interleaved
    DUET_ABLE = True
    experiment_id: str = param(
        "auth", "name of the experiment directories", pattern=r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}"
    )
    concurrency: list[int] = param(
        [1, 4], "client worker processes (the full profile: 1, 2, 4, 8)", min=1, max=64, min_items=1, max_items=8
    )
    ops_per_worker: int = param(
        8, "MongoDB short connections per worker per run (pooled: 20x as many queries)", min=1, max=100_000
    )
    mysql_ops_per_worker: int = param(60, "MySQL short connections per worker per run", min=1, max=1_000_000)
    max_seconds_per_run: float = param(60.0, "a run stops after this, whatever its count", min=1, max=3600)
    duet_seconds: float = param(
        1.0,
        "duet design: each run lasts this long, so both arms of a duet end together (counts up to 10x the "
        "ops_per_worker settings bound it as well)",
        min=0.5,
        max=3600,
    )
    mongo_enabled: bool = param(True, "measure MongoDB (two FerretDB, auth off and on; or mongo_uri)")
    mongo_mechanisms: list[str] = param(
        ["SCRAM-SHA-256"],
        "for an external MongoDB: mechanisms to try",
        choices=("SCRAM-SHA-1", "SCRAM-SHA-256"),
        min_items=1,
        max_items=2,
    )
    mysql_enabled: bool = param(True, "measure MySQL (MariaDB, or mysql_host)")
    nonce_enabled: bool = param(True, "measure the nonce mechanism on its own")
    nonce_workers: list[int] = param(
        [1, 4], "nonce worker processes (the full profile: 1, 2, 4, 8)", min=1, max=64, min_items=1, max_items=8
    )
    nonces_per_run: int = param(300_000, "nonces generated per run, over all workers", min=1, max=100_000_000)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_engines("nonce_enabled")

    def part_design(self, part: str) -> str:
        """Duets need a server per arm: the nonce part has none, and a user's server is one, so those parts run
        interleaved whatever the design (the report's design table says which ran how)."""
        external = (part == "MongoDB" and self.mongo_uri) or (part == "MySQL" and self.mysql_host)
        return "interleaved" if part == "nonce" or external else self.design

    def server_keys(self, part: str) -> dict[str, str]:
        """arm -> the server it runs on. A duet runs the baseline beside each other arm at once, so an arm
        that would share the baseline's server gets an identical one of its own (off2, on2)."""
        arms = self.arms(part)
        keys = {a.name: a.server for a in arms}
        if self.part_design(part) == "duet":
            keys |= {a.name: f"{a.server}2" for a in arms[1:] if a.server == arms[0].server}
        return keys

    def mongo_mechanisms_used(self) -> tuple[str, ...]:
        return tuple(self.mongo_mechanisms)

    def parts(self) -> list[str]:
        flags = {"MongoDB": self.mongo_enabled, "MySQL": self.mysql_enabled, "nonce": self.nonce_enabled}
        return [name for name, on in flags.items() if on]

    def arms(self, part: str) -> tuple[Arm, ...]:
        if self.aa:  # the arm whose cost the claims are about, and its identical copy
            base = {"MongoDB": ARMS["MongoDB"][2], "MySQL": ARMS["MySQL"][0], "nonce": ARMS["nonce"][0]}[part]
            if part == "MongoDB" and self.mongo_uri:
                base = self._external_mongo_arms()[0]
            return (base, replace(base, name=aa_copy(base.name)))
        if part == "MongoDB" and self.mongo_uri:
            return self._external_mongo_arms()
        return ARMS[part]

    def _external_mongo_arms(self) -> tuple[Arm, ...]:
        if not self.mongo_username:  # the server's own setting, whatever it is
            return (Arm("as configured", "mongo", "on"), Arm("as configured + TLS", "mongo", "on", tls=True))
        return _mongo_arms(tuple(self.mongo_mechanisms), auth_off=False)

    def planned_runs(self) -> int:
        rounds = self.repetitions + self.warmup + 1
        per_round = {e: len(self.arms(e)) * (2 if self.part_design(e) == "duet" else 1) for e in self.parts()}
        n = sum(per_round[e] * len(self.concurrency) for e in ("MongoDB", "MySQL") if e in per_round)
        return (n + (2 * len(self.nonce_workers) if self.nonce_enabled else 0)) * rounds


# -- running ------------------------------------------------------------------------------------------
def _strip_auth(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k not in ("username", "password", "authSource", "authMechanism")}


def _servers(p: Params, part: str, stack: contextlib.ExitStack) -> tuple[dict[str, Any], dict, list[str]]:
    from ..servers import FerretDBServer, MariaDBServer

    if part == "MongoDB":
        if p.mongo_uri:
            ext = stack.enter_context(p.external_mongo(tuple(p.mongo_mechanisms)))
            notes = [
                "external MongoDB: auth-off arms need a server without "
                "auth, so they are skipped; server CPU is not measured"
            ]
            return {"on": ext}, {"mongodb": ext.describe()}, notes
        keys = sorted(set(p.server_keys(part).values()))
        servers = {k: stack.enter_context(FerretDBServer(tls=True, auth=k.startswith("on"))) for k in keys}
        notes = [
            "auth on/off needs FerretDB processes of their own (FerretDB's --test-enable-new-auth); they are "
            "identical otherwise and all run throughout",
            "FerretDB stores SCRAM keys and does no PBKDF2 per login; the client (pymongo) does, per new client",
        ]
        if p.part_design(part) == "duet":
            notes.append(
                "duet: each arm ran at the same time as auth off, each server with its own client, so both met the "
                "same interference; arms that never ran together (pooling) are compared through auth off"
            )
        facts = {f"mongodb auth {_SERVER_NAMES[k]} (FerretDB)": srv.describe() for k, srv in servers.items()}
        return servers, facts, notes
    notes = [
        "password auth is mysql_native_password (MariaDB's default); MariaDB's ed25519 plugin is not an arm "
        "because mysql-connector-python cannot speak it"
    ]
    if p.mysql_host:
        ext = stack.enter_context(p.both_ways_mysql())
        return {"db": ext}, {"mysql": ext.describe()}, notes
    keys = sorted(set(p.server_keys(part).values()))
    dbs = {k: stack.enter_context(MariaDBServer(tls="on")) for k in keys}
    if p.part_design(part) == "duet":
        notes.append(
            "duet: each arm ran at the same time as password (no TLS, no pooling) on a MariaDB of its own, each "
            "server with its own client"
        )
    return (
        dbs,
        {f"mysql (MariaDB{', a second' if k.endswith('2') else ''})": d.describe() for k, d in dbs.items()},
        notes,
    )


_SERVER_NAMES = {"off": "off", "on": "on", "off2": "off (a second)", "on2": "on (a second)"}


def _measure(p: Params, part: str, servers: dict[str, Any]):
    from ..measurement import Measurement
    from ..workloads.nonce import nonce_benchmark
    from ..workloads.short_connections import ConnectSpec, run_short_connections

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
            spec, ops = ConnectSpec("mongo", args), p.ops_per_worker
        else:
            spec, ops = ConnectSpec("mysql", e.connect_args(tls=arm.tls)), p.mysql_ops_per_worker
        seconds = p.max_seconds_per_run
        if duet:  # time-bound: a count-bound auth-off run ended in half the time of its SCRAM partner, which then
            ops, seconds = ops * DUET_COUNT_FACTOR, min(seconds, p.duet_seconds)  # ran alone (duet sd 0.23)
        return run_short_connections(
            spec,
            concurrency=int(factors["concurrency"]),
            ops_per_worker=ops * (POOLED_FACTOR if arm.pooled else 1),
            max_seconds=seconds,
            pooled=arm.pooled,
            server_cpu=srv.cpu,
        )

    return measure


NONCE_NOTE = (
    "nonces of 24 bytes, as a SCRAM server nonce; Python workers, so per-call interpreter overhead is in the "
    "user time of both sources"
)


def run(p: Params) -> StudyResult:
    top, top_workers = max(p.concurrency), max(p.nonce_workers)

    def plan(name: str, stack: contextlib.ExitStack) -> PartPlan:
        servers, facts, notes = _servers(p, name, stack) if name != "nonce" else ({}, {}, [NONCE_NOTE])
        arms, keys = p.arms(name), p.server_keys(name) if name != "nonce" else {}
        refused = getattr(servers.get("on"), "tls_error", "") if name == "MongoDB" else ""
        if refused:  # a user's server without TLS (or one we cannot verify): its TLS arms cannot run
            arms = tuple(a for a in arms if not a.tls)
            notes = [*notes, f"TLS arms skipped: the server refused a TLS client ({refused})"]
        return PartPlan(
            arms=[a.name for a in arms],
            measure=_measure(p, name, servers),
            facts=facts,
            notes=notes,
            factors={"workers": p.nonce_workers} if name == "nonce" else {"concurrency": p.concurrency},
            servers={a.name: servers[keys[a.name]] for a in arms} if servers else {},
            judge=lambda runs, alpha: part_claims(name, runs, alpha, top=top, top_workers=top_workers),
            profile_factors=[{"concurrency": top}],
        )

    return run_parts(p, STUDY, p.parts(), plan)


# -- claims ---------------------------------------------------------------------------------------------
CLAIMS: dict[str, tuple[RatioClaim, ...]] = {  # words, metrics and readings: data/claims/registry.yaml
    "MongoDB": (
        RatioClaim(
            STUDY,
            "auth-server-cpu",
            "auth off",
            "SCRAM-SHA-256",
            measure="server CPU us per connection, per run",
            engine_note="FerretDB, not mongod",
            unit="us",
            at="concurrency",
        ),
        RatioClaim(
            STUDY,
            "auth-client-cpu",
            "auth off",
            "SCRAM-SHA-256",
            measure="client CPU us per connection, per run",
            engine_note="pymongo",
            unit="us",
            at="concurrency",
        ),
        RatioClaim(
            STUDY,
            "pooling",
            "SCRAM-SHA-256",
            "pooled SCRAM-SHA-256",
            measure="server CPU us per request, per run",
            engine_note="FerretDB, not mongod",
            through="auth off",
            unit="us",
            at="concurrency",
        ),
    ),
    "MySQL": (
        RatioClaim(
            STUDY,
            "pooling",
            "password",
            "pooled password",
            measure="server CPU us per request, per run",
            engine_note="MariaDB 10.11, not MySQL",
            unit="us",
            at="concurrency",
        ),
    ),
    "nonce": (
        RatioClaim(
            STUDY,
            "system-cpu",
            "userspace",
            "syscall",
            measure="system CPU ns per nonce, per run",
            engine_note="this kernel's /dev/urandom, Python workers",
            unit="ns",
            at="workers",
        ),
    ),
}


def part_claims(
    part: str, runs: pd.DataFrame, alpha: float = 0.05, *, top: int, top_workers: int = 8
) -> list[ClaimVerdict]:
    """The claims one part can check: MongoDB's auth and pooling costs, MySQL's pooling, the nonce mechanism;
    each at the highest concurrency (or worker count) measured."""
    out = []
    for claim in CLAIMS.get(part, ()):
        v = claim.check(runs, alpha, level=top_workers if claim.at == "workers" else top, part=part)
        if v is not None:
            out.append(v)
    return out


def claims(result: StudyResult) -> list[ClaimVerdict]:
    p = result.params
    top, top_workers = max(p.concurrency), max(p.nonce_workers)
    return study_verdicts(
        result,
        lambda part: lambda runs, alpha: part_claims(part.name, runs, alpha, top=top, top_workers=top_workers),
    )


# -- tables and figures ------------------------------------------------------------------------------------
SUMMARY = [
    "ops_per_s",
    "server_cpu_us_per_op",
    "server_user_us_per_op",
    "server_system_us_per_op",
    "client_cpu_us_per_op",
    "latency_median_ms",
]


def summary(part: Part) -> pd.DataFrame:
    from ..tables import summarize_runs

    if part.name == "nonce":
        return summarize_runs(
            part.runs(), ["nonces_per_s", "user_ns_per_nonce", "system_ns_per_nonce"], ["arm", "workers"]
        )
    return summarize_runs(part.runs(), SUMMARY, ["arm", "concurrency"])


def nonce_table(part: Part) -> pd.DataFrame:
    from ..compare import compare_arms, table

    return table(
        compare_arms(
            part.runs(),
            "system_ns_per_nonce",
            baseline="userspace",
            candidates=["syscall"],
            by=["workers"],
            confidence=1 - part.alpha,
        ),
        unit="ns",
    )


def published_table() -> pd.DataFrame:
    from .base import published

    return published(STUDY)


def figures(part: Part, top: int) -> list[tuple[Any, str]]:
    from .. import plots

    table = summary(part)
    if not len(table):
        return []
    if part.name == "nonce":
        return [
            (
                plots.lines(
                    table,
                    x="workers",
                    y="system_ns_per_nonce",
                    hue="arm",
                    lo="system_ns_per_nonce_ci_low",
                    hi="system_ns_per_nonce_ci_high",
                    title="System CPU per nonce",
                    ylabel="ns of system CPU per nonce",
                    logx=True,
                ),
                "A rising syscall line with more workers is the original's collapse; "
                "a flat one means this kernel does not serialise the reads.",
            )
        ]
    out = [
        (
            plots.lines(
                table,
                x="concurrency",
                y="ops_per_s",
                hue="arm",
                lo="ops_per_s_ci_low",
                hi="ops_per_s_ci_high",
                title=f"{part.name}: short connections per second",
                ylabel="operations / s",
                logx=True,
            ),
            "Throughput by client concurrency: lower lines pay more per connection.",
        )
    ]
    at_top = table[table["concurrency"] == top]
    if "server_user_us_per_op" in at_top:
        out.append(
            (
                plots.stacked_bar(
                    at_top,
                    x="arm",
                    parts=["server_user_us_per_op", "server_system_us_per_op"],
                    labels=["user", "system"],
                    title=f"{part.name}: server CPU per operation at concurrency {top}",
                    ylabel="CPU us per operation",
                ),
                "Where the server's time goes per request: the original's symptom was the system share.",
            )
        )
    return out
