"""Study 3: what data-at-rest encryption (MySQL's TDE; MariaDB's file_key_management here) costs sysbench.

Per instance profile, two servers run side by side, encryption off and on (tables, redo log, temporary
files), prepared with identical data. Factors: workload x threads; arms interleaved per round. A profile
emulates an instance size on this machine with three limits scaled by one factor (0.15: 4 cores -> 0.6):
a CPU quota, an IOPS limit on the data disk, and a buffer pool keeping the original's data-to-buffer-pool
ratio (41 GB of data vs 12 GB or 24 GB); `in-memory` fits the data in the buffer pool (CPU cost only, as
Percona's reference did). Every run also records what InnoDB did per transaction: pages read and written,
bytes, fsyncs, redo log, and pages encrypted and decrypted (the mechanism).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..params import param
from ..verdicts import ClaimVerdict, Verdict, bound_verdict
from .base import ExternalMySQLParams, Part, PartPlan, StudyParams, StudyResult, published, run_parts

if TYPE_CHECKING:
    import pandas as pd

STUDY = "tde"
PRIMARY_METRICS = ("tps", "latency_avg_ms", "server_cpu_us_per_op")
DATA_GB = 41.0
SCALE = 0.15  # this machine's share of an original instance: cores and IOPS alike
OFF, ON = "encryption off", "encryption on"
ARMS = (OFF, ON)
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
LOW_LOSS_MAX = 25.0  # "up to ~20 %": a loss whose whole CI lies above 25 % is more than the claim says
HIGH_LOSS_MAX = 5.0  # "under 5 %"
CPU_FEW_PP = 10.0  # "a few percentage points"


@dataclass(frozen=True)
class Profile:
    name: str
    cores: float  # emulated: CPU quota on this machine
    data_to_buffer_pool: float | None  # None: the data fits in the buffer pool (in-memory)
    iops: int | None  # emulated: read and write IOPS limit each (None: the disk's own)
    original: str
    original_cores: int = 0
    original_buffer_pool_gb: float = 0.0
    original_iops: int = 0


PROFILES = {
    "4c16g": Profile(
        "4c16g",
        4 * SCALE,
        DATA_GB / 12,
        round(7000 * SCALE),
        "4 cores / 16 GB, buffer pool 12 GB, max 7,000 IOPS",
        4,
        12,
        7000,
    ),
    "8c32g": Profile(
        "8c32g",
        8 * SCALE,
        DATA_GB / 24,
        round(12000 * SCALE),
        "8 cores / 32 GB, buffer pool 24 GB, max 12,000 IOPS",
        8,
        24,
        12000,
    ),
    "in-memory": Profile(
        "in-memory", 8 * SCALE, None, None, "not in the original: data fits in the buffer pool (CPU cost only)", 8, 0, 0
    ),
}


@dataclass
class Params(StudyParams, ExternalMySQLParams):
    repetitions: int = param(2, "measured rounds at most (each runs every arm once per cell)", min=1, max=1000)
    min_rounds: int = param(2, "rounds before the first look at the claims (sequential design)", min=2, max=1000)
    warmup: int = param(0, "warm-up rounds, kept and marked, never analysed", min=0, max=10)
    experiment_id: str = param("tde", "name of the experiment directories", pattern=r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
    profiles: list[str] = param(
        ["4c16g"], "emulated instance profiles", choices=tuple(PROFILES), min_items=1, max_items=3
    )
    workloads: list[str] = param(
        ["oltp_write_only", "oltp_read_only"], "sysbench workloads", choices=WORKLOADS, min_items=1, max_items=8
    )
    threads: list[int] = param(
        [1, 8], "sysbench threads (the original: 1 ... 256)", min=1, max=512, min_items=1, max_items=8
    )
    tables: int = param(2, "sysbench tables", min=1, max=128)
    table_size: int = param(10000, "rows per table", min=100, max=100_000_000)
    run_seconds: int = param(2, "seconds per sysbench run (the original: 60)", min=1, max=3600)
    emulate_iops: bool = param(True, "limit the profiles' IOPS (scaled like their cores) with cgroup blkio")
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
        return [self.external_mysql(instance_class=self.mysql_instance_class)] if self.mysql_host else []

    def part_names(self) -> list[str]:
        return ["external"] if self.mysql_host else list(self.profiles)

    def planned_runs(self) -> int:
        arms = 1 if self.mysql_host else 2
        return (
            len(self.part_names())
            * arms
            * len(self.workloads)
            * len(self.threads)
            * (self.repetitions + self.warmup + 1)
        )


# -- running ------------------------------------------------------------------------------------------
def _data_bytes(db: Any, database: str = "sbtest") -> int:
    conn = db.admin()
    try:
        cur = conn.cursor()
        cur.execute(
            "SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s",
            (database,),
        )
        return int(cur.fetchone()[0])
    finally:
        conn.close()


def _size_buffer_pool(db: Any, profile: Profile) -> dict[str, Any]:
    """Resize the buffer pool online to keep the original's data-to-buffer-pool ratio; report what took."""
    data = _data_bytes(db)
    target = 2 * data + (16 << 20) if profile.data_to_buffer_pool is None else int(data / profile.data_to_buffer_pool)
    target = max(target, 6 << 20)  # InnoDB's floor
    conn = db.admin()
    try:
        cur = conn.cursor()
        cur.execute("SET GLOBAL innodb_buffer_pool_size = %s", (target,))
        cur.execute("SELECT @@innodb_buffer_pool_size")
        effective = int(cur.fetchone()[0])
    finally:
        conn.close()
    return {
        "data_bytes": data,
        "buffer_pool_bytes": effective,
        "data_to_buffer_pool": round(data / effective, 2) if effective else None,
    }


def _options(p: Params) -> dict[str, dict[int, Any]]:
    from ..workloads.sysbench import SysbenchOptions

    return {
        w: {
            t: SysbenchOptions(script=w, tables=p.tables, table_size=p.table_size, threads=t, time=p.run_seconds)
            for t in p.threads
        }
        for w in p.workloads
    }


def _targets(
    p: Params, name: str, opts, stack: contextlib.ExitStack
) -> tuple[dict[str, Any], dict, list[str], Profile]:
    """arm -> (sysbench, server or None, status connect fn); facts; notes; profile."""
    from ..servers import MariaDBServer
    from ..workloads.sysbench import Sysbench

    first = opts[p.workloads[0]][p.threads[0]]
    notes: list[str] = []
    if name == "external":
        ext = stack.enter_context(p.external_mysql(instance_class=p.mysql_instance_class))
        sb = Sysbench(ext.endpoint)
        created = sb.prepare(first)
        arm = f"encryption {p.mysql_encryption}"
        profile = Profile("external", float("nan"), None, None, p.mysql_instance_class or "as named by the user")
        notes.append(
            f"external server, one arm ({arm}); sysbench tables {'prepared in' if created else 'found in'} "
            f"{p.mysql_database}. To compare, run again against the server in the other state and use "
            "`secoverhead compare RUN_A RUN_B`; server CPU is not measured"
        )
        return {arm: (sb, None, lambda: ext.endpoint.connect(tls=False))}, {"mysql": ext.describe()}, notes, profile
    profile = PROFILES[name]
    targets, facts = {}, {}
    for arm in ARMS:
        db = stack.enter_context(
            MariaDBServer(
                encryption=arm == ON,
                cpu_limit=profile.cores,
                iops=(profile.iops, profile.iops) if profile.iops and p.emulate_iops else None,
                buffer_pool="64M",
                max_connections=max(600, 2 * max(p.threads) + 50),
                extra_options={"innodb_buffer_pool_chunk_size": "1M"},
            )
        )
        sb = Sysbench(db.endpoint, via="socket")
        sb.prepare(first)
        sizing = _size_buffer_pool(db, profile)
        targets[arm] = (sb, db, db.admin)
        facts[f"mysql {arm} (MariaDB, {name})"] = db.describe() | {"buffer_pool_sizing": sizing}
        notes.append(
            f"{arm}: {sizing['data_bytes'] / 2**20:.1f} MiB of data, buffer pool "
            f"{sizing['buffer_pool_bytes'] / 2**20:.1f} MiB (ratio {sizing['data_to_buffer_pool']})"
        )
    limit = facts[next(iter(facts))]
    notes.append(
        f"emulates {name} ({profile.original}) with a CPU limit of {profile.cores:g} cores "
        f"({limit.get('cpu_limit_method')})"
        + (f", {profile.iops} IOPS ({limit.get('iops_limit_method')})" if profile.iops and p.emulate_iops else "")
        + " and the buffer pool above"
    )
    return targets, facts, notes, profile


def _measure(p: Params, targets: dict[str, Any], profile: Profile, opts):
    import math

    from ..measurement import Measurement
    from ..workloads import server_status

    def measure(arm: str, factors: dict) -> Measurement:
        sb, db, connect = targets[arm]
        before = server_status.snapshot(connect)
        io0 = db.io_limiter.serviced() if db is not None and db.io_limiter else None
        m = sb.measure(opts[factors["workload"]][int(factors["threads"])], db.cpu if db is not None else None)
        after = server_status.snapshot(connect)
        txn = m.metrics["transactions"]
        m.metrics |= server_status.per_transaction(before, after, txn)
        if io0 is not None:
            r, w = db.io_limiter.serviced()
            m.metrics["iops_read"] = (r - io0[0]) / m.metrics["duration_s"]
            m.metrics["iops_write"] = (w - io0[1]) / m.metrics["duration_s"]
        if "server_cpu_cores" in m.metrics and math.isfinite(profile.cores):
            m.metrics["server_cpu_pct_of_limit"] = m.metrics["server_cpu_cores"] / profile.cores * 100
        return m

    return measure


def run(p: Params) -> StudyResult:
    opts = _options(p)

    def plan(name: str, stack: contextlib.ExitStack) -> PartPlan:
        targets, facts, notes, profile = _targets(p, name, opts, stack)
        return PartPlan(
            arms=list(targets),
            measure=_measure(p, targets, profile, opts),
            facts=facts,
            notes=notes,
            factors={"workload": p.workloads, "threads": p.threads},
            servers={arm: t[1] for arm, t in targets.items() if t[1] is not None},
            judge=None if name == "external" else (lambda runs, alpha: part_claims(name, runs, alpha)),
            profile_factors=[{"workload": p.workloads[0], "threads": max(p.threads)}],
            ops_metric="transactions",
            extras={"profile": profile},
        )

    return run_parts(p, STUDY, p.part_names(), plan)


# -- claims ---------------------------------------------------------------------------------------------
def losses(runs: pd.DataFrame, alpha: float = 0.05, *, threads: int | None = None) -> dict:
    """TPS with encryption on vs off per workload (at one thread count, or every), one family."""
    from ..compare import compare_arms

    sub = runs if threads is None else runs[runs["threads"] == threads]
    return compare_arms(
        sub,
        "tps",
        baseline=OFF,
        candidates=[ON],
        by=["workload", "threads"],
        higher_is_better=True,
        confidence=1 - alpha,
    )


def _loss_text(c) -> str:
    loss, lo, hi = (1 - c.ratio) * 100, (1 - c.ci_high) * 100, (1 - c.ci_low) * 100
    return f"{c.cell['workload']} x{c.cell['threads']}: {loss:+.1f} % [{lo:+.1f}, {hi:+.1f}]"


def _needs(comps) -> list[dict[str, Any]]:
    return [{"arm": a, **c.cell} for c in comps for a in (OFF, ON)]


def part_claims(name: str, runs: pd.DataFrame, alpha: float = 0.05) -> list[ClaimVerdict]:
    """The original's conclusions on one profile's runs. Loss = 1 - TPS(on) / TPS(off), per workload."""
    from ..compare import compare_arms, interaction

    if not len(runs) or "threads" not in runs or runs["arm"].nunique() < 2:
        return []
    out: list[ClaimVerdict] = []
    lo_t, hi_t = int(runs["threads"].min()), int(runs["threads"].max())
    engine = "MariaDB 10.11 file_key_management (AES-CTR) for MySQL 8.0 TDE; instance emulated"

    # 1. few concurrent queries: a loss, of at most ~20 %
    low = list(losses(runs, alpha, threads=lo_t).values())
    if low:
        lo_loss = [(1 - c.ci_high) * 100 for c in low]  # lower bound of each loss
        hi_loss = [(1 - c.ci_low) * 100 for c in low]
        if all(h < 0 for h in hi_loss):
            v = Verdict.NOT_REPRODUCED  # encryption faster everywhere: no loss at all
        elif any(lo > LOW_LOSS_MAX for lo in lo_loss):
            v = Verdict.NOT_REPRODUCED
        elif any(lo > 0 for lo in lo_loss) and all(h <= LOW_LOSS_MAX for h in hi_loss):
            v = Verdict.REPRODUCED
        else:
            v = Verdict.INCONCLUSIVE
        out.append(
            ClaimVerdict(
                f"{name}: with few concurrent queries ({lo_t} thread), encryption costs up to ~20 % TPS",
                v,
                "; ".join(map(_loss_text, low))
                + f" (loss %, {low[0].confidence * 100:.4g} % CIs; {low[0].n_text}, {low[0].test})",
                "TPS per run, on vs off, paired by round",
                engine,
                id=f"{name}:low-concurrency-loss",
                needs=_needs(low),
            )
        )
    # 2. many concurrent queries: under 5 %
    high = list(losses(runs, alpha, threads=hi_t).values()) if hi_t != lo_t else []
    if high:
        v = bound_verdict(
            min((1 - c.ci_high) * 100 for c in high), max((1 - c.ci_low) * 100 for c in high), at_most=HIGH_LOSS_MAX
        )
        if v == Verdict.INCONCLUSIVE and any((1 - c.ci_high) * 100 > HIGH_LOSS_MAX for c in high):
            v = Verdict.NOT_REPRODUCED
        out.append(
            ClaimVerdict(
                f"{name}: with many concurrent queries ({hi_t} threads), the loss is under 5 %",
                v,
                "; ".join(map(_loss_text, high)) + f" (loss %, {high[0].confidence * 100:.4g} % CIs; {high[0].n_text})",
                "TPS per run, on vs off, paired by round; every workload's whole CI must lie under 5 %",
                engine,
                id=f"{name}:high-concurrency-loss",
                needs=_needs(high),
            )
        )
    # 3. write-heavy workloads lose the most: per round, TPS ratio (on/off) of each write-heavy workload
    #    against each read-only one, at every thread count
    writes = [w for w in runs["workload"].unique() if w in WRITE_HEAVY]
    reads = [w for w in runs["workload"].unique() if w in READ_ONLY]
    pairs = {}
    for w in writes:
        for r in reads:
            got = interaction(
                runs,
                "tps",
                baseline=OFF,
                candidate=ON,
                factor="workload",
                level=w,
                reference=r,
                by=["threads"],
                confidence=1 - alpha,
                family=len(writes) * len(reads) * runs["threads"].nunique(),
            )
            pairs.update(got)
    if pairs:
        comps = list(pairs.values())
        if all(c.ci_high < 1 for c in comps):
            v = Verdict.REPRODUCED
        elif any(c.ci_low > 1 for c in comps):
            v = Verdict.NOT_REPRODUCED
        else:
            v = Verdict.INCONCLUSIVE
        ev = "; ".join(
            f"{c.cell['workload']} x{c.cell['threads']}: ratio of TPS "
            f"ratios {c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]"
            for c in comps
        )
        out.append(
            ClaimVerdict(
                f"{name}: write-heavy workloads lose the most",
                v,
                ev + " (< 1: the write-heavy workload loses more; "
                f"{comps[0].confidence * 100:.4g} % CIs, {comps[0].n_text}, {comps[0].test})",
                "TPS ratio on/off of a write-heavy workload over that of a read-only one, per round",
                engine,
                id=f"{name}:write-heavy-worst",
                needs=[
                    {"arm": a, "workload": wl, "threads": c.cell["threads"]}
                    for c in comps
                    for a in ARMS
                    for wl in (c.cell["workload"].split(" vs "))
                ],
            )
        )
    # 4. CPU utilisation rises only a few points
    if "server_cpu_pct_of_limit" in runs:
        cpu = compare_arms(
            runs,
            "server_cpu_pct_of_limit",
            baseline=OFF,
            candidates=[ON],
            by=["workload", "threads"],
            confidence=1 - alpha,
            scale="difference",
        )
        comps = list(cpu.values())
        if comps:
            if all(c.ci_low > -CPU_FEW_PP and c.ci_high < CPU_FEW_PP for c in comps):
                v = Verdict.REPRODUCED
            elif sum(c.ci_low > CPU_FEW_PP for c in comps) > len(comps) / 2:
                v = Verdict.NOT_REPRODUCED
            else:
                v = Verdict.INCONCLUSIVE
            out.append(
                ClaimVerdict(
                    f"{name}: CPU utilisation rises only a few points (published 0.06-4.22 / 0.12-2.86 pp)",
                    v,
                    "; ".join(
                        f"{c.cell['workload']} x{c.cell['threads']}: "
                        f"{c.ratio:+.1f} pp [{c.ci_low:+.1f}, {c.ci_high:+.1f}]"
                        for c in comps
                    )
                    + f" ({comps[0].confidence * 100:.4g} % CIs, {comps[0].n_text})",
                    "server CPU % of the emulated limit, on minus off, paired by round; 'a few' taken as < 10 pp",
                    engine,
                    id=f"{name}:cpu-pp",
                    needs=_needs(comps),
                )
            )
    return out


def claims(result: StudyResult) -> list[ClaimVerdict]:
    return [v for part in result if part.name != "external" for v in part_claims(part.name, part.runs(), part.alpha)]


def cross_claims(experiment: str, runs: pd.DataFrame) -> list[ClaimVerdict]:
    """The claims on two one-arm runs put together (`secoverhead compare`: your server off, then on)."""
    return part_claims(experiment.rsplit("-", 1)[-1], runs)


# -- tables and figures ------------------------------------------------------------------------------------
EMULATION_NOTE = (
    "instance types cannot be reproduced on 2 shared cores: each profile is a CPU quota, an IOPS limit (both the "
    f"original's scaled by {SCALE:g}) and a buffer pool keeping its data-to-buffer-pool ratio; the disk is this VM's "
    "virtual disk, not RDS local SSD; absolute TPS is not comparable, only losses, trends and costs per transaction are"
)


def conclusion_notes(result: StudyResult) -> list[str]:
    return []


def cpu_table(part: Part) -> pd.DataFrame:
    from ..compare import table

    return table(cpu_per_transaction(part), unit="us")


def loss_table(part: Part) -> pd.DataFrame:
    """TPS loss % (off -> on) with its CI, per workload x threads."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "workload": c.cell["workload"],
                "threads": c.cell["threads"],
                "loss %": (1 - c.ratio) * 100,
                "loss CI low %": (1 - c.ci_high) * 100,
                "loss CI high %": (1 - c.ci_low) * 100,
                "n": c.n_text,
                "change": str(c.change),
            }
            for c in losses(part.runs(), part.alpha).values()
        ]
    )


def cpu_per_transaction(part: Part) -> dict:
    """Server CPU per transaction, encryption on vs off: the steadier cost figure."""
    from ..compare import compare_arms

    return compare_arms(
        part.runs(),
        "server_cpu_us_per_op",
        baseline=OFF,
        candidates=[ON],
        by=["workload", "threads"],
        confidence=1 - part.alpha,
    )


def summary(part: Part) -> pd.DataFrame:
    from ..tables import summarize_runs

    return summarize_runs(
        part.runs(),
        ["tps", "latency_avg_ms", "latency_p95_ms", "server_cpu_cores", "server_cpu_us_per_op"],
        ["workload", "threads", "arm"],
    )


def figures(part: Part) -> list[tuple[Any, str]]:
    from .. import plots

    table = summary(part)
    out = []
    for workload, g in table.groupby("workload", sort=False):
        out.append(
            (
                plots.lines(
                    g,
                    x="threads",
                    y="tps",
                    hue="arm",
                    lo="tps_ci_low",
                    hi="tps_ci_high",
                    title=f"{part.name}: {workload}",
                    ylabel="transactions / s",
                    logx=True,
                ),
                "TPS by threads, encryption off vs on: a gap between the lines is "
                "the cost of encryption; bands are 95 % CIs of the median over runs.",
            )
        )
    loss = loss_table(part)
    if len(loss):
        out.append(
            (
                plots.heatmap(
                    loss,
                    index="workload",
                    columns="threads",
                    values="loss %",
                    title=f"{part.name}: TPS loss with encryption (%)",
                    label="loss %",
                ),
                "Red cells lose throughput with encryption on, blue ones "
                "gain (noise or caching); the table gives each cell's CI.",
            )
        )
    return out


def percona_table(part: Part) -> pd.DataFrame:
    """Percona's 2019 oltp_read_only loss by threads beside ours, where we ran oltp_read_only."""
    import pandas as pd

    from ..stats import median_ci

    reference = {1: (423, 389), 4: (1673, 1531), 16: (6055, 5583), 32: (8480, 8251)}
    runs = part.runs()
    rows = []
    for t, (plain, enc) in reference.items():
        row = {
            "threads": t,
            "Percona plain TPS": plain,
            "Percona encrypted TPS": enc,
            "Percona loss %": round((1 - enc / plain) * 100, 1),
        }
        g = (
            runs[(runs["workload"] == "oltp_read_only") & (runs["threads"] == t)]
            if "workload" in runs
            else runs.iloc[0:0]
        )
        if len(g):
            off = median_ci(g.loc[g["arm"] == OFF, "tps"].to_numpy())[0]
            on = median_ci(g.loc[g["arm"] == ON, "tps"].to_numpy())[0]
            row |= {"ours off TPS": off, "ours on TPS": on, "ours loss %": round((1 - on / off) * 100, 1)}
        rows.append(row)
    return pd.DataFrame(rows)


def published_table() -> pd.DataFrame:
    return published(STUDY)
