"""Auth study (seed 001): parameters, arms and the claims' plans."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from secoverhead.analysis.design import ClaimPlan
from secoverhead.core.errors import ConfigError
from secoverhead.core.params import param
from secoverhead.core.paths import SCHEDULER_ENV
from secoverhead.host.calibration import CryptoBound, full_handshake
from secoverhead.servers import ExternalMongo, builds
from secoverhead.servers.builds import MONGOD_42, MONGOD_60, ServerBuild
from secoverhead.studies.protocol.external import BothEngines, check_mongo_uri
from secoverhead.studies.protocol.loads import LoadCurveParams
from secoverhead.studies.protocol.params import StudyParams, aa_copy
from secoverhead.studies.protocol.spec import Vocabulary

if TYPE_CHECKING:
    pass


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
        full_handshake("rsa"),
        "per connection, server",
    ),
    CryptoBound(
        "password + TLS",
        "password",
        "server_cpu_us_per_op",
        full_handshake("rsa"),
        "per connection, server",
    ),
)


# Seed 001 measured mongod (its SCRAM code, its nonce): the MongoDB part runs on the original's major version, or the
# nearest build here, said so, and its verdicts are the verdicts of record; a later mongod runs the same claims beside
# it ("MongoDB on mongod 6.0"), counted apart: the original's before and after.
BESIDE = MONGOD_60.beside
PART_BUILDS: dict[str, ServerBuild] = {"MongoDB": MONGOD_42, BESIDE: MONGOD_60}
MONGO_BUILD = PART_BUILDS["MongoDB"]


def engine_of(part: str) -> str:
    """The protocol family a part measures ("MongoDB on mongod 6.0" measures MongoDB)."""
    return builds.engine_of(part, PART_BUILDS)


@dataclass(frozen=True)
class Arm:
    name: str
    engine: str  # mongo | mysql | nonce
    server: str = ""  # which server: "off" / "on" (mongod), "db" (MariaDB)
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
# the build beside runs the arms its claims read (auth off, SCRAM-SHA-256, pooled): both mechanisms' server CPU and
# random-source calls per login are asked of it after the runs (runner._random_source)
ARMS[BESIDE] = tuple(a for a in ARMS["MongoDB"] if not a.tls and a.mechanism in (None, "SCRAM-SHA-256"))


# The names other code asks for by role (the calculator prices SCRAM from the MongoDB part's mechanisms).
VOCABULARY = Vocabulary(
    parts={part: tuple(a.name for a in arms) for part, arms in ARMS.items()},
    roles={"mongodb": "MongoDB", "no authentication": "auth off"}
    | {f"mechanism {a.mechanism}": a.name for a in ARMS["MongoDB"] if a.mechanism and not a.tls and not a.pooled},
    metrics={"server cpu per connection": "server_cpu_us_per_op", "client cpu per connection": "client_cpu_us_per_op"},
    groups={"mechanisms": tuple(a.mechanism for a in ARMS["MongoDB"] if a.mechanism and not a.tls and not a.pooled)},
    crypto=CRYPTO,
)


@dataclass
class Params(BothEngines, StudyParams, LoadCurveParams):
    # Shares of the time budget. A MongoDB round (7 arms, 6 duets) takes several times a MySQL or nonce one, and
    # its server-CPU claim needs about 6 rounds (duet sd ~0.1 against a +-25 % precision); after the first look
    # only the undecided claim's duets run. (Shares by noise, 1.5 / 2 / 1.5, left it 3 rounds: inconclusive.)
    # MariaDB's CPU per connection is the noisiest metric (duet A/A per-round sd 0.11-0.17): its part gets more.
    STUDY, PLANS, PRIMARY_METRICS = STUDY, PLANS, PRIMARY_METRICS  # the study's facts, declared above
    AA_METRICS = ("system_ns_per_nonce",)  # the nonce part's: the syscall's cost per nonce
    PART_WEIGHTS: ClassVar[dict[str, float]] = {"MongoDB": 2.0, BESIDE: 1.0, "MySQL": 1.5}
    # duet: each arm runs beside the part's baseline (auth off; password), every arm on a server of its own
    # (FerretDB, MariaDB); the nonce part, which has no server, stays interleaved
    DUET_ABLE = True
    concurrency: list[int] = param(
        [1, 4], "client worker processes (the full scale: 1, 2, 4, 8)", min=1, max=64, items=(1, 8)
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
    mongo_enabled: bool = param(True, "measure MongoDB (two mongod 4.2, auth off and on; or mongo_uri)")
    beside_builds: bool = param(
        True, "also the MongoDB claims on mongod 6.0 beside mongod 4.2, counted apart from the verdicts of record"
    )
    mongo_mechanisms: list[str] = param(
        ["SCRAM-SHA-256"],
        "for an external MongoDB: mechanisms to try",
        choices=("SCRAM-SHA-1", "SCRAM-SHA-256"),
        items=(1, 2),
    )
    mongo_noauth_uri: str = param(
        "",
        "with mongo_uri: mongodb://host:port/ of a MongoDB like it but without authentication (a staging copy of "
        "the same build): the auth-off arms run there, so SCRAM's cost is judged on your servers (empty: skipped)",
    )
    mongo_noauth_server_cpu: str = param(
        "serverStatus",
        "where that server's CPU is read, as mongo_server_cpu (serverStatus needs no account without auth)",
        pattern=r"serverStatus|none|(ssh|https?)://\S+",
    )
    mysql_enabled: bool = param(True, "measure MySQL (MariaDB, or mysql_host)")
    nonce_enabled: bool = param(True, "measure the nonce mechanism on its own")
    random_source_connections: int = param(
        40,
        "MongoDB: short connections per mongod build and mechanism whose server CPU (untraced) and random-source "
        "calls (strace) are counted after the part's runs (0: none)",
        min=0,
        max=10_000,
    )
    random_source_split_ticks: int = param(
        0,
        "MongoDB: kernel ticks the user/system split of those connections' server CPU should rest on; the untraced "
        "batch goes on, for up to 5 s, until it does (its table shows the split's sampling interval either way)",
        min=0,
        max=10_000,
    )
    nonce_workers: list[int] = param(
        [1, 4], "nonce worker processes (the full scale: 1, 2, 4, 8)", min=1, max=64, items=(1, 8)
    )
    nonces_per_run: int = param(300_000, "nonces generated per run, over all workers", min=1, max=100_000_000)
    load_hosts: list[str] = param(
        [],
        "client hosts (Dask workers, by name) that load your server at once, each with concurrency workers: "
        "one host cannot load a big server (a SCRAM client spends several times the server's CPU). Needs "
        "`secoverhead fleet --scheduler` (it sets SECOVERHEAD_SCHEDULER) and mysql_host or mongo_uri",
        pattern=r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}",
        items=(0, 64),
    )

    load_arms: list[str] = param(
        ["SCRAM-SHA-256"],
        "the mechanisms a load curve measures on mongod (load_rates 'new': logins a second)",
        choices=("SCRAM-SHA-1", "SCRAM-SHA-256"),
        items=(0, 2),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_engines("nonce_enabled")
        self.check_loads()
        self._check_noauth()
        if self.load_hosts:
            if not os.environ.get(SCHEDULER_ENV):
                raise ConfigError(
                    "load_hosts needs a Dask scheduler: run it through `secoverhead fleet --scheduler ADDRESS` (or "
                    f"set {SCHEDULER_ENV})"
                )
            if (self.mysql_enabled and not self.mysql_host) or (self.mongo_enabled and not self.mongo_uri):
                raise ConfigError(
                    "load_hosts loads a server of yours from several hosts: name it (mysql_host, mongo_uri) and "
                    "leave the embedded engines off"
                )
            if self.design == "duet":
                raise ConfigError("load_hosts: a server of yours runs interleaved, not in duets")

    def _check_noauth(self) -> None:
        """A server without auth is the auth-off arms' server: only beside a named MongoDB whose user logs in."""
        if not self.mongo_noauth_uri:
            return
        if not (self.mongo_uri and self.mongo_username):
            raise ConfigError(
                "mongo_noauth_uri is the auth-off side of your MongoDB: set mongo_uri and mongo_username too"
            )
        if self.mongo_noauth_uri.rstrip("/") == self.mongo_uri.rstrip("/"):
            raise ConfigError("mongo_noauth_uri must name another server than mongo_uri (one without auth)")
        check_mongo_uri("mongo_noauth_uri", self.mongo_noauth_uri)
        self.check_cpu_source("mongo_noauth_server_cpu", self.mongo_noauth_server_cpu, "MongoDB")

    def check_servers(self, described: list[dict[str, Any]]) -> None:
        mongos = [d for d in described if d.get("engine") == "MongoDB"]
        off = [d for d in mongos if str(d.get("authentication", "")).startswith("off")]
        on = [d for d in mongos if d not in off]
        if off and on:
            one_build(on[0], off[0])

    def noauth_mongo(self) -> ExternalMongo:
        """The user's MongoDB without auth, unstarted; entering reads back that it lets a client in unlogged."""
        return ExternalMongo(
            uri=self.mongo_noauth_uri,
            ca_file=self.mongo_ca_file or None,
            collections=self.MONGO_COLLECTIONS,
            server_cpu=self.mongo_noauth_server_cpu,
            ssh_key=self.server_cpu_ssh_key,
            known_hosts=self.server_cpu_ssh_known_hosts,
            auth_off=True,
        )

    def external_servers(self) -> list:
        """Every server of the user's the run needs, checked before anything starts: the auth-off one too."""
        noauth = [self.noauth_mongo()] if self.mongo_enabled and self.mongo_noauth_uri else []
        return [*super().external_servers(), *noauth]

    def secret_reference(self, engine: str) -> tuple[str, str]:
        """Where the load hosts read the password: the same environment variable or file as here."""
        if engine == "mysql":
            return ("env", self.mysql_password_env) if self.mysql_password_env else ("file", self.mysql_password_file)
        return ("env", self.mongo_password_env) if self.mongo_password_env else ("file", self.mongo_password_file)

    def part_design(self, part: str) -> str:
        """Duets need a server per arm: the nonce part has none, and a user's server is one, so those parts run
        interleaved whatever the design (the report's design table says which ran how)."""
        external = (engine_of(part) == "MongoDB" and self.mongo_uri) or (part == "MySQL" and self.mysql_host)
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
        """MongoDB (the build beside it too, on the embedded servers of a run that is not A/A), MySQL, nonce."""
        beside = self.beside_builds and not self.aa and not self.mongo_uri and PART_BUILDS[BESIDE].missing() is None
        flags = {
            "MongoDB": self.mongo_enabled,
            BESIDE: self.mongo_enabled and beside,
            "MySQL": self.mysql_enabled,
            "nonce": self.nonce_enabled,
        }
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
        return _mongo_arms(tuple(self.mongo_mechanisms), auth_off=bool(self.mongo_noauth_uri))

    def planned_runs(self) -> int:
        rounds = self.repetitions + self.warmup + 1
        per_round = {e: len(self.arms(e)) * (2 if self.part_design(e) == "duet" else 1) for e in self.parts()}
        n = sum(n * len(self.concurrency) for e, n in per_round.items() if e != "nonce")
        return (n + (2 * len(self.nonce_workers) if self.nonce_enabled else 0)) * rounds


def one_build(on: dict[str, Any], off: dict[str, Any]) -> None:
    """SCRAM's cost is judged between two servers of one build: the auth-on and the auth-off MongoDB's facts."""
    if on.get("build") != off.get("build"):
        raise ConfigError(
            f"mongo_noauth_uri runs {off.get('build')}, mongo_uri {on.get('build')}: auth's cost is judged between "
            "two servers of one build"
        )
