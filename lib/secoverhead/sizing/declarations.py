"""The calculator's inputs: a DBA's workload, the features to switch on, their hardware, and where the measured
costs come from. Every input is optional; the defaults are a readable example (a mid-sized MySQL server behind
an HTTPS API), save the machine's size: it is what the DBA gives or what `calibrate` measured, never assumed.
Checked before anything runs: a mistake is one line and exit 2."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from secoverhead.core import paths
from secoverhead.core.errors import ConfigError
from secoverhead.core.params import param
from secoverhead.sizing.scaling import REFERENCES
from secoverhead.studies import STUDIES
from secoverhead.studies.protocol.params import NotebookParams, absolute_path

STUDY = "cost"

# feature -> the study whose runs price it
FEATURES: dict[str, str] = {
    "tls": "tls",  # TLS on database connections: set-up and queries on reused connections
    "scram": "auth",  # SCRAM authentication on new connections (MongoDB)
    "encryption_at_rest": "tde",  # data-at-rest encryption of tables, redo log and temporary files
    "audit": "audit",  # an audit approach, and its log
    "https": "https",  # HTTPS in front: full handshakes, resumptions, keep-alive
}

AUDIT_APPROACHES = STUDIES["audit"].vocabulary.group("approaches")
TDE_INSTANCES = ("auto", *STUDIES["tde"].vocabulary.group("original instances"))
SCRAM_MECHANISMS = STUDIES["auth"].vocabulary.group("mechanisms")
MAX_RATE = 1e9


def _rate(default: float, help: str) -> float:
    return param(default, help, min=0.0, max=MAX_RATE)


def _share(default: float, help: str) -> float:
    return param(default, help, min=0.0, max=1.0)


@dataclass
class Params(NotebookParams):
    # -- the workload
    new_connections_per_s: float = _rate(500.0, "database connections the application asks for per second")
    pooled_share: float = _share(0.0, "share of those served by a connection pool (no new connection is made)")
    reused_queries_per_s: float = _rate(20_000.0, "queries per second on connections already open")
    read_only_tps: float = _rate(1_500.0, "read-only transactions per second (sysbench oltp_read_only's shape)")
    read_write_tps: float = _rate(400.0, "read-write transactions per second (oltp_read_write's shape)")
    write_only_tps: float = _rate(100.0, "write-only transactions per second (oltp_write_only's shape)")
    concurrency: int = param(32, "client threads running transactions at once", min=1, max=100_000)
    https_requests_per_s: float = _rate(3_000.0, "HTTPS requests per second at the front end")
    https_new_share: float = _share(0.10, "share of HTTPS requests that open a connection with a full handshake")
    https_resumed_share: float = _share(0.15, "share that open a connection resuming a TLS session")
    audited_statements_per_s: float = _rate(22_000.0, "statements per second the audit records")
    retention_months: float = param(6.0, "months of audit log kept (MLPS 2.0 asks for six)", min=0.0, max=1200.0)
    # -- the features
    features: list[str] = param(
        ["tls", "encryption_at_rest", "audit", "https"],
        "features switched on: tls, scram, encryption_at_rest, audit, https",
        choices=tuple(FEATURES),
        items=(0, len(FEATURES)),
    )
    engine: str = param(
        "mysql",
        "the database: mysql (measured on MySQL 8.0 and MariaDB) or mongodb (on mongod 4.2)",
        choices=("mysql", "mongodb"),
    )
    tls_version: str = param("1.3", "TLS version, database and HTTPS", choices=("1.3", "1.2"))
    tls_key: str = param("rsa", "certificate key: rsa (RSA-2048) or ecdsa (P-256)", choices=("rsa", "ecdsa"))
    resumption: str = param("ticket", "how HTTPS sessions resume", choices=("ticket", "session cache"))
    scram_mechanism: str = param("SCRAM-SHA-256", "SCRAM mechanism (MongoDB)", choices=SCRAM_MECHANISMS)
    audit_approach: str = param("server_audit", "how statements are audited", choices=AUDIT_APPROACHES)
    tde_instance: str = param(
        "auto",
        f"which emulated instance's TDE costs: auto (the one nearest your cores), {', '.join(TDE_INSTANCES[1:])}",
        choices=TDE_INSTANCES,
    )
    rtt_ms: float = param(0.5, "network round trip between client and server, ms", min=0.0, max=10_000.0)
    # -- the hardware
    cores: float = param(
        0.0,
        "the server's cores (0: those `secoverhead calibrate` recorded in calibration_file; with neither, the "
        "answer is in cores, not a share of your machine)",
        min=0.0,
        max=100_000.0,
    )
    target_utilisation: float = param(0.7, "the CPU utilisation you plan for", min=0.05, max=1.0)
    calibration_file: str = param(
        "", "your machine's speed reference, saved by `secoverhead calibrate` (empty: the measuring machine's)"
    )
    speed: dict = param({}, "speed references typed in, e.g. {rsa2048_sign_us: 600} (override the file)")
    # -- where the costs come from
    reports_dir: str = param("", "the reports the costs are read from (empty: the reports this run goes to)")
    runs: dict = param({}, "run directories to read a study's costs from, e.g. {tde: reports/tde/<run>}")
    confidence: float = param(
        0.95, "confidence of each interval (a total's holds at least as often)", min=0.5, max=0.999
    )
    joint: bool = param(False, "widen every interval so that all of them hold together at that confidence")

    STUDY: ClassVar[str] = STUDY
    MEASURES: ClassVar[bool] = False  # it reads other runs' measurements: no speed reference of its own
    RENAMED: ClassVar[dict[str, str]] = {"tde_profile": "tde_instance"}  # the old name, read for a release

    def __post_init__(self) -> None:
        if self.https_new_share + self.https_resumed_share > 1.0 + 1e-9:
            raise ConfigError(
                f"https_new_share + https_resumed_share is {self.https_new_share + self.https_resumed_share:g}: "
                "the shares of HTTPS requests cannot add up to more than 1"
            )
        if "scram" in self.features and self.engine != "mongodb":
            raise ConfigError(
                "scram is MongoDB's authentication (engine mongodb); MySQL's password check is in "
                "every measured arm already"
            )
        for feature in ("encryption_at_rest", "audit"):
            if feature in self.features and self.engine != "mysql":
                raise ConfigError(
                    f"{feature} is measured on the MySQL family only (MySQL 8.0, MariaDB): use engine mysql, or "
                    "leave it out"
                )
        for key, value in self.speed.items():
            if key not in REFERENCES:
                raise ConfigError(f"speed: unknown reference {key[:60]!r}; known: {', '.join(REFERENCES)}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
                raise ConfigError(f"speed: {key} must be a positive number")
        for study, run in self.runs.items():
            if study not in FEATURES.values():
                raise ConfigError(
                    f"runs: {study[:60]!r} is not a study the calculator reads "
                    f"({', '.join(sorted(set(FEATURES.values())))})"
                )
            if not isinstance(run, str) or not run:
                raise ConfigError(f"runs: {study} must name a run directory")

    def path_values(self) -> dict[str, Any]:
        out = super().path_values()
        if self.reports_dir and (absolute := absolute_path(self.reports_dir)) != self.reports_dir:
            out["reports_dir"] = absolute
        runs = {k: absolute_path(v) for k, v in self.runs.items()}
        if runs != self.runs:
            out["runs"] = runs
        return out

    def studies(self) -> list[str]:
        """The studies whose runs this calculation reads."""
        return list(dict.fromkeys(FEATURES[f] for f in self.features))

    def reports_root(self) -> Path:
        """Where the reports are: the one named, else the one this run is written into (<root>/cost/<run>/results),
        else the checkout's."""
        if self.reports_dir:
            return paths.user_path(self.reports_dir)
        if self.output_dir:
            return Path(self.output_dir).resolve().parents[2]
        return paths.ROOT / "reports"
