"""Audit study (seed 004): parameters, the audit approaches as arms, and the claims' plans."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from secoverhead.analysis.design import ClaimPlan
from secoverhead.core.errors import ConfigError
from secoverhead.core.params import override, param
from secoverhead.servers.builds import MARIADB, MYSQL_80, ServerBuild
from secoverhead.servers.journal import check_arm_changes, persists
from secoverhead.studies.protocol.external import ExternalMySQLParams
from secoverhead.studies.protocol.loads import Curve, LoadCurveParams
from secoverhead.studies.protocol.params import StudyParams, aa_copy
from secoverhead.studies.protocol.spec import Vocabulary

if TYPE_CHECKING:
    pass


STUDY = "audit"


PRIMARY_METRICS = ("tps", "tps_per_server_core", "server_cpu_us_per_query")


BASELINE = "A: no audit"


class Rig(NamedTuple):
    """One arm's load and server: sysbench, the server (None when external), its audit logs, and the SQL
    that switches it on and off on an external server (None when embedded)."""

    sb: Any
    db: Any
    logs: list[Path]
    toggle: Any


# The parts, each on its server build: the approaches MySQL has without a plugin on MySQL 8.0 (the original
# measured MySQL; 8.0.31 is the MySQL build here, with the binary log's durability as it ships, sync_binlog=1),
# and server_audit, MariaDB's own plugin (it does not load into MySQL 8.0), on MariaDB against MariaDB's own
# no-audit arm: an approach is only ever compared with the baseline of its own engine.
PART_BUILDS: dict[str, ServerBuild] = {"MySQL": MYSQL_80, "MariaDB": MARIADB}


@dataclass(frozen=True)
class Arm:
    name: str
    audit: str = "none"  # the server's audit mode (MySQLServer, MariaDBServer)
    binlog: bool = False
    is_audit: bool = True  # binlog alone is a control, not an audit approach
    part: str = "MySQL"  # the part (server build) it runs on


ARMS = (
    Arm(BASELINE, is_audit=False),
    Arm("binlog only", binlog=True, is_audit=False),
    Arm("init_connect + binlog", "init_connect_binlog"),
    Arm("general_log", "general_log"),
    Arm("server_audit", "server_audit", part="MariaDB"),
)


def part_arms(part: str, names: list[str] | tuple[str, ...] | None = None) -> tuple[Arm, ...]:
    """A part's arms (of those named), its own baseline first."""
    mine = tuple(a for a in ARMS[1:] if a.part == part and (names is None or a.name in names))
    return (replace(ARMS[0], part=part), *mine) if mine or part == "MySQL" else ()


# The names other code asks for by role (the calculator prices an audit approach from them).
VOCABULARY = Vocabulary(
    parts={part: tuple(a.name for a in part_arms(part)) for part in PART_BUILDS},
    roles={"no audit": BASELINE},
    metrics={"server cpu per query": "server_cpu_us_per_query"},
    groups={"approaches": tuple(a.name for a in ARMS[1:])},
)


NOT_RUN = {
    "McAfee audit plugin": "not installable here: the McAfee (Trellix) plugin is distributed as GitHub release zips "
    "built per MySQL minor (v1.2.2 for 8.0.35: trellix-enterprise/mysql-audit issue 277), none for the MySQL 8.0.31 "
    "or 8.0.33 this project runs, and none for MariaDB",
    "Percona audit_log": "ships only with Percona Server, which is in no reachable registry; against an external "
    "Percona Server, define it as an SQL arm (external_arms)",
    "Alibaba RDS (no audit)": "a cloud service; point mysql_host at an RDS instance to measure it",
}


# The statement a load curve paces: a point select, as a DBA's lightest statement (the calculator prices
# per statement; its cost at a rate is what a statement adds, not what sysbench's mix costs)
LOAD_STATEMENT = "SELECT c FROM sbtest1 WHERE id = 1"


def load_curves(p: Params, arm: str) -> list[Curve]:
    """An approach's load curves against its part's baseline at the run's rates: a statement on a kept
    connection (the calculator prices per statement)."""
    return p.curves(arm, BASELINE, {"query": "statement"})


SIX_MONTHS_S = 182.5 * 86400


class NullSink(NamedTuple):
    """An approach with its records sent where nothing is kept, beside its real log, so a report can say how much
    of its cost is the hook and how much the writing of the record: the server variable that sends them, the
    value that discards them, and what is then left of the approach."""

    variable: str
    discard: str
    left: str


NULL_SINKS = {
    "general_log": NullSink(
        "log_output",
        "NONE",
        "the logger called per statement, nothing formatted or written (MySQL refuses /dev/null "
        "as its general_log_file)",
    ),
    "server_audit": NullSink(
        "server_audit_file_path", "/dev/null", "every record formatted and written, to a device that discards it"
    ),
}


# What the claims need (they are read on TPS: data/claims/registry.yaml). Noise prior: sysbench TPS in duet
# rounds at the quick settings varied 1-3 % between rounds in every TDE cell (per-round sd of log on/off,
# 2026-11-23); the audit duets run the same sysbench on the same machine, so TPS is taken at 3 % until an audit
# A/A run on TPS measures it (server CPU per query varied 1.8 % here).
PLANS = (
    ClaimPlan.from_aa("each approach against A, within or beyond 10 % (+-5 %)", 0.03, 0.05, comparisons=4),
    ClaimPlan.from_aa("general_log about 30 %, 15-45 % (+-10 %)", 0.03, 0.10),
)


@dataclass
class Params(StudyParams, ExternalMySQLParams, LoadCurveParams):
    STUDY, PLANS, PRIMARY_METRICS = STUDY, PLANS, PRIMARY_METRICS  # the study's facts, declared above
    repetitions: int = override(StudyParams, "repetitions", 2)
    min_rounds: int = override(StudyParams, "min_rounds", 2)
    arms: list[str] = param(
        [a.name for a in ARMS],
        "embedded arms to run (the baseline is always needed)",
        choices=tuple(a.name for a in ARMS),
        items=(1, len(ARMS)),
    )
    tables: int = param(2, "sysbench tables (the original: 10)", min=1, max=128)
    table_size: int = param(5000, "rows per table (the original: 2,000,000)", min=100, max=100_000_000)
    threads: int = param(8, "sysbench threads (the original: 200)", min=1, max=1024)
    run_seconds: int = param(2, "seconds per sysbench run (the original: 300)", min=1, max=3600)
    report_interval: int = param(1, "sysbench report interval, s (the original: 5)", min=1, max=60)
    server_cpu_limit: float = param(
        0.0,
        "each embedded server's CPU quota in cores (0: none): a server CPU-bound at its quota while its client "
        "has room, as the original's server near its VM's CPU",
        min=0.0,
        max=64.0,
    )
    sink_rounds: int = param(
        1,
        "rounds of three runs after the rounds, A, an approach with a null sink (NULL_SINKS) and with its real log: "
        "the hook apart from the write (0: none)",
        min=0,
        max=20,
    )
    load_arms: list[str] = param(
        ["server_audit"], "the approaches a load curve measures", choices=tuple(a.name for a in ARMS[1:]), items=(0, 4)
    )
    compress_sample_mb: int = param(
        16, "MiB of each arm's real log compressed to measure gzip and zstd ratios", min=1, max=1024
    )
    # external only: {"arm name": {"enable": [SQL, ...], "disable": [SQL, ...]}}, run by mysql_admin_user
    external_arms: dict[str, Any] = param(
        {}, "external: arms as SQL, {name: {enable: [...], disable: [...]}}", items=(0, 10)
    )
    mysql_admin_user: str = param("", "external: who runs those statements", pattern=r"[^\s]{0,80}")
    mysql_admin_password_env: str = param(
        "", "external: environment variable holding that user's password", pattern=r"[A-Za-z_][A-Za-z0-9_]*"
    )
    mysql_admin_password_file: str = param("", "external: or a file holding it")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_mysql()
        if not self.mysql_host and BASELINE not in self.arms:
            raise ConfigError(f"the baseline arm {BASELINE!r} is needed for comparisons")
        self.check_loads()
        for name, spec in self.external_arms.items():
            if (
                not isinstance(spec, dict)
                or set(spec) - {"enable", "disable"}
                or not all(
                    isinstance(spec.get(k, []), list) and all(isinstance(s, str) for s in spec.get(k, []))
                    for k in ("enable", "disable")
                )
            ):
                raise ConfigError(f"external arm {name!r} must be {{enable: [SQL, ...], disable: [SQL, ...]}}")
            if sql := persists(spec.get("enable", [])):
                raise ConfigError(
                    f"external arm {name!r}: {sql[:80]!r} writes the server's persisted settings (mysqld-auto.cnf), "
                    "which the run could not put back as it read them: use SET GLOBAL"
                )
        if self.external_arms and not self.mysql_host:
            raise ConfigError("external_arms need mysql_host (embedded arms are chosen with arms)")
        if self.external_arms and not (
            self.mysql_admin_user and (self.mysql_admin_password_env or self.mysql_admin_password_file)
        ):
            raise ConfigError("external_arms need mysql_admin_user and mysql_admin_password_env (or _file)")

    def external_servers(self) -> list:
        if not self.mysql_host:
            return []
        out = [self.user_mysql()]
        if self.external_arms:
            out.append(self.admin())
        return out

    def check_clients(self) -> None:
        from secoverhead.workloads.sysbench import Sysbench  # deferred, as in user_mysql

        with self.user_mysql() as ext:
            Sysbench(ext.endpoint, tls=self.mysql_tls).check_login()
        if self.external_arms:  # each arm applied once, read back and restored: one that audits nothing is refused
            with self.admin() as admin:
                for name, spec in self.external_arms.items():
                    check_arm_changes(admin, spec, name)

    def user_mysql(self):
        from secoverhead.workloads.sysbench import (
            table_names,  # deferred: pandas, which `secoverhead params` never needs
        )

        return self.external_mysql(tables=table_names(self.tables))

    def admin(self):
        return self.external_mysql(
            user=self.mysql_admin_user,
            password_env=self.mysql_admin_password_env,
            password_file=self.mysql_admin_password_file,
        )

    DUET_ABLE = True
    # a part's share of the time budget by its comparisons: MySQL's three approaches against A, MariaDB's one
    PART_WEIGHTS: ClassVar[dict[str, float]] = {"MySQL": 3.0, "MariaDB": 1.0}

    def parts(self) -> list[str]:
        """The parts with an approach asked for (MySQL's, MariaDB's server_audit), or the baseline's alone; the
        user's server is one part."""
        if self.mysql_host or self.aa:
            return ["MySQL"]
        return [part for part in PART_BUILDS if len(part_arms(part, self.arms)) > 1] or ["MySQL"]

    def arm_list(self, part: str = "MySQL") -> list[Arm]:
        if self.aa:
            return [ARMS[0], replace(ARMS[0], name=aa_copy(BASELINE))]
        return list(part_arms(part, self.arms))

    def arm_names(self, part: str = "MySQL") -> list[str]:
        return [BASELINE, *self.external_arms] if self.mysql_host else [a.name for a in self.arm_list(part)]

    def planned_runs(self) -> int:
        return sum(len(self.arm_names(part)) for part in self.parts()) * (self.repetitions + self.warmup + 1)
