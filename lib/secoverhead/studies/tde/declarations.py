"""TDE study (seed 002): parameters, arms, workloads and the claims' plans."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from secoverhead.analysis.design import ClaimPlan
from secoverhead.core.errors import ConfigError
from secoverhead.core.params import override, param
from secoverhead.servers.builds import BESIDE_MARK, MARIADB, MYSQL_8033, ServerBuild
from secoverhead.studies.protocol.external import ExternalMySQLParams
from secoverhead.studies.protocol.params import StudyParams, aa_copy
from secoverhead.studies.protocol.spec import Vocabulary
from secoverhead.studies.tde.instances import EMULATED, ORIGINAL

STUDY = "tde"


PRIMARY_METRICS = ("tps", "latency_avg_ms", "server_cpu_us_per_op")


OFF, ON = "encryption off", "encryption on"


ARMS = (OFF, ON)


# The engines a part runs on: MySQL 8.0.33's TDE (component_keyring_file, ENCRYPTION='Y', the redo and undo logs
# encrypted) is the original's engine and gives the verdicts of record; MariaDB's file_key_management runs beside it,
# its parts named "<instance> on MariaDB".
PART_BUILDS: dict[str, ServerBuild] = {"MySQL": MYSQL_8033, "MariaDB": MARIADB}
RECORD_ENGINE = "MySQL"


def beside_part(instance: str, engine: str) -> str:
    """A part's name: the instance alone on the engine of record, "<instance> on <engine>" beside it."""
    return instance if engine == RECORD_ENGINE else f"{instance}{BESIDE_MARK}{engine}"


def instance_of(part: str) -> str:
    """The emulated instance a part measures ("4c16g on MariaDB" measures 4c16g)."""
    return part.split(BESIDE_MARK, 1)[0]


def engine_of(part: str) -> str:
    """The engine a part runs on (MySQL for the instance's own name)."""
    return part.split(BESIDE_MARK, 1)[1] if BESIDE_MARK in part else RECORD_ENGINE


# The names other code asks for by role (the calculator prices encryption at rest from them).
VOCABULARY = Vocabulary(
    parts={beside_part(i, e): ARMS for e in PART_BUILDS for i in EMULATED},
    roles={"not encrypted": OFF, "encrypted": ON},
    metrics={"server cpu per transaction": "server_cpu_us_per_op", "transactions per second": "tps"},
    groups={"original instances": tuple(ORIGINAL)},
)


WRITE_HEAVY = ("oltp_write_only", "oltp_update_index", "oltp_update_non_index", "oltp_insert")


READ_ONLY = ("oltp_read_only", "oltp_point_select", "select_random_points", "select_random_ranges")


WORKLOADS = (
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_point_select",
    "oltp_insert",
    "oltp_delete",
)


# InnoDB's purge runs as tasks of its own thread pool, beside the I/O completions. With MariaDB's default of
# 4 purge tasks under a 0.6-1.2-core quota, write runs stalled for 2-3 s with every thread waiting and pages
# "pending write" inside InnoDB (in 10-20 % of 4-s write runs, in either arm; also with data on tmpfs, without
# an IOPS limit and without native AIO); with 1 or 2 purge tasks none in 4 x 48 write runs (2026-11-23). The
# original's 4 purge threads served 4-8 cores: 2 is the emulated instance's share.
PURGE_THREADS = 2


# What the claims need, with noise priors measured at the quick settings (duet, 3-s runs, RAM-backed disk,
# 4 x 200,000 rows, 2 purge threads; 2026-11-23): per-round sd of log(on/off) of TPS 0.01-0.03 in every cell,
# of capacity 0.01-0.04 (0.065 once); the ratio of ratios averaged over the two thread counts 0.02-0.04. Every
# claim reads TPS (data/claims/registry.yaml); "every workload under the bound" needs no correction over the
# workloads (IUT_NOTE). The low-concurrency contrast is a ratio of two thread counts' ratios (sd about 1.4x one's);
# the original's contrast (up to ~20 % against under 5 %) is some 15 points, so +-5 % tells one of its size from
# the 2-point line.
PLANS = (
    ClaimPlan.from_aa("few concurrent queries lose more than many, by 2 points or more (+-5 %)", 0.045, 0.05),
    ClaimPlan.from_aa("many concurrent queries: loss under 5 % (+-4 %)", 0.03, 0.04),
    ClaimPlan.from_aa("write-heavy lose the most (write-heavy excess 3-7 %: +-4 %)", 0.035, 0.04, comparisons=2),
)


@dataclass
class Params(StudyParams, ExternalMySQLParams):
    STUDY, PLANS, PRIMARY_METRICS = STUDY, PLANS, PRIMARY_METRICS  # the study's facts, declared above
    RENAMED: ClassVar[dict[str, str]] = {"profiles": "instances", "interleaved_profiles": "interleaved_instances"}
    AA_CELLS = ("workload", "threads")  # each workload and thread count its own noise floor
    repetitions: int = override(StudyParams, "repetitions", 2)
    min_rounds: int = override(StudyParams, "min_rounds", 2)
    warmup: int = override(StudyParams, "warmup", 0)
    instances: list[str] = param(["4c16g"], "emulated instances", choices=tuple(EMULATED), items=(1, 3))
    engines: list[str] = param(
        [RECORD_ENGINE],
        "engines each instance runs on: MySQL (8.0.33 with component_keyring_file: the original's engine, the verdicts "
        "of record) and MariaDB (10.11's file_key_management, beside them)",
        choices=tuple(PART_BUILDS),
        items=(1, 2),
    )
    interleaved_instances: list[str] = param(
        [],
        "instances whose arms take turns even under design duet: a duet of two servers at their quotas must leave "
        "the host room for both clients, or the instance is not the one declared",
        choices=tuple(EMULATED),
        items=(0, 3),
    )
    workloads: list[str] = param(
        ["oltp_write_only", "oltp_read_only"], "sysbench workloads", choices=WORKLOADS, items=(1, 8)
    )
    threads: list[int] = param([1, 8], "sysbench threads (the original: 1 ... 256)", min=1, max=512, items=(1, 8))
    tables: int = param(2, "sysbench tables", min=1, max=128)
    table_size: int = param(10000, "rows per table", min=100, max=100_000_000)
    run_seconds: int = param(2, "seconds per sysbench run (the original: 60)", min=1, max=3600)
    data_disk: str = param(
        "ram",
        "where the servers' data lives: ram (a RAM-backed disk, throttled to the instance's IOPS: a local SSD's "
        "latency, not a shared virtual disk's erratic fsyncs) or local (this machine's disk)",
        choices=("ram", "local"),
    )
    emulate_iops: str = param(
        "reads",
        "limit the instances' IOPS (scaled like their cores) with cgroup blkio: reads, both (reads and writes; "
        "throttled writes stall the filesystem journal here), or off",
        choices=("reads", "both", "off"),
    )
    emulate_latency: bool = param(
        True,
        "make each read of the servers' data files on the RAM-backed disk take the instance's device latency (a "
        "local SSD's 200 us, dilated like the instance's cores and IOPS; host/iodelay.py)",
    )
    write_back: bool = param(
        True,
        "after each run, write back the table pages it dirtied (IOPS limit lifted meanwhile) and charge that CPU "
        "to its transactions, so no run inherits another's dirty pages",
    )
    commit_flush: int = param(
        1,
        "innodb_flush_log_at_trx_commit: 1 fsyncs the redo log at every commit (durable); 2 once a second",
        choices=(0, 1, 2),
    )
    mysql_instance_class: str = param(
        "", "external: the instance class you point at (recorded in the report)", pattern=r"[\w.\-]{0,64}"
    )
    mysql_encryption: str = param("", "external: what that server has, on or off", choices=("", "on", "off"))

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_mysql()
        if self.mysql_host and self.mysql_encryption not in ("on", "off"):
            raise ConfigError("with mysql_host, set mysql_encryption to on or off (what that server has)")

    def external_servers(self) -> list:
        return [self.user_mysql()] if self.mysql_host else []

    def part_design(self, part: str) -> str:
        return "interleaved" if instance_of(part) in self.interleaved_instances else self.design

    def check_clients(self) -> None:
        from secoverhead.workloads.sysbench import Sysbench  # deferred, as in user_mysql

        with self.user_mysql() as ext:
            Sysbench(ext.endpoint, tls=self.mysql_tls).check_login()

    def user_mysql(self):
        from secoverhead.workloads.sysbench import (
            table_names,  # deferred: pandas, which `secoverhead params` never needs
        )

        ext = self.external_mysql(instance_class=self.mysql_instance_class, tables=table_names(self.tables))
        ext.encryption = self.mysql_encryption or None  # the label, read back from the server before any load
        return ext

    DUET_ABLE = True

    def arm_names(self) -> list[str]:
        return [OFF, aa_copy(OFF)] if self.aa else list(ARMS)

    def part_names(self) -> list[str]:
        """Every instance on each engine, the engine of record's first (they share its servers)."""
        if self.mysql_host:
            return ["external"]
        return [beside_part(i, e) for e in PART_BUILDS if e in self.engines for i in self.instances]

    def planned_runs(self) -> int:
        arms = 1 if self.mysql_host else 2
        return (
            len(self.part_names())
            * arms
            * len(self.workloads)
            * len(self.threads)
            * (self.repetitions + self.warmup + 1)
        )
