"""Study 3: what data-at-rest encryption (MySQL's TDE; MariaDB's file_key_management here) costs sysbench.

Per instance profile, two servers run side by side, encryption off and on (tables, redo log, temporary
files), prepared with identical data. Factors: workload x threads; arms interleaved per round. A profile
emulates an instance size on this machine: a CPU limit in the original's 1:2 ratio, and a buffer pool sized to
keep the original's data-to-buffer-pool ratio (41 GB of data vs 12 GB or 24 GB); `in-memory` fits the data in
the buffer pool to separate CPU cost from I/O cost.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..measurement import Measurement
from ..report import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, ClaimVerdict, median_ci
from ..results import ResultStore
from ..servers import MariaDBServer
from ..stats import Comparison, bootstrap_medians, compare_sweep
from ..workloads.sysbench import Sysbench, SysbenchOptions
from .common import ExternalMySQLParams, StudyParams, run_experiment

DATA_GB = 41.0


@dataclass(frozen=True)
class Profile:
    name: str
    cpu_cores: float  # emulated instance: CPU limit on this machine
    data_to_buffer_pool: float | None  # None: the data fits in the buffer pool (in-memory)
    original: str


PROFILES = {
    "4c16g": Profile("4c16g", 0.6, DATA_GB / 12, "4 cores / 16 GB, buffer pool 12 GB, max 7,000 IOPS"),
    "8c32g": Profile("8c32g", 1.2, DATA_GB / 24, "8 cores / 32 GB, buffer pool 24 GB, max 12,000 IOPS"),
    "in-memory": Profile("in-memory", 1.2, None, "not in the original: data fits in the buffer pool (CPU cost only)"),
}
ARMS = ("encryption off", "encryption on")


@dataclass
class TdeParams(StudyParams, ExternalMySQLParams):
    experiment_id: str = "tde"
    profiles: list[str] = field(default_factory=lambda: ["4c16g", "8c32g"])
    workloads: list[str] = field(default_factory=lambda: ["oltp_read_write", "oltp_write_only"])
    threads: list[int] = field(default_factory=lambda: [1, 8])
    tables: int = 2
    table_size: int = 10_000
    run_seconds: int = 3
    mysql_instance_class: str = ""
    mysql_encryption: str = ""  # external only: "on" or "off", what the server has

    def __post_init__(self) -> None:
        super().__post_init__()
        unknown = [p for p in self.profiles if p not in PROFILES]
        if unknown:
            raise ValueError(f"unknown profile(s) {unknown}; known: {', '.join(PROFILES)}")
        for w in self.workloads:
            SysbenchOptions(script=w)  # validates the name
        if not self.threads or min(self.threads) < 1 or self.run_seconds < 1:
            raise ValueError("threads and run_seconds must be >= 1")
        if self.mysql_host and self.mysql_encryption not in ("on", "off"):
            raise ValueError("with mysql_host, set mysql_encryption to 'on' or 'off' (what that server has)")


@dataclass
class ProfileResult:
    profile: Profile
    store: ResultStore
    servers: dict[str, dict[str, Any]]
    notes: list[str]

    def runs(self) -> pd.DataFrame:
        return self.store.runs()


def _data_bytes(db: MariaDBServer, database: str = "sbtest") -> int:
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


def _size_buffer_pool(db: MariaDBServer, profile: Profile) -> dict[str, Any]:
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


def run(p: TdeParams, *, progress: bool = True) -> dict[str, ProfileResult]:
    out: dict[str, ProfileResult] = {}
    max_threads = max(p.threads)
    opts = {
        w: {
            t: SysbenchOptions(script=w, tables=p.tables, table_size=p.table_size, threads=t, time=p.run_seconds)
            for t in p.threads
        }
        for w in p.workloads
    }
    profiles = ["external"] if p.mysql_host else p.profiles
    for name in profiles:
        with contextlib.ExitStack() as stack:
            notes: list[str] = []
            if p.mysql_host:
                ext = stack.enter_context(p.external_mysql(instance_class=p.mysql_instance_class))
                arm = f"encryption {p.mysql_encryption}"
                targets = {arm: (Sysbench(ext.endpoint), [])}
                facts = {"mysql": ext.describe()}
                profile = Profile("external", float("nan"), None, p.mysql_instance_class or "as named by the user")
                notes.append(
                    f"external server, one arm ({arm}): run the study again against a server in the other "
                    "state to compare; server CPU is not measured"
                )
            else:
                profile = PROFILES[name]
                targets, facts = {}, {}
                for arm in ARMS:
                    db = stack.enter_context(
                        MariaDBServer(
                            encryption=arm.endswith("on"),
                            cpu_limit=profile.cpu_cores,
                            buffer_pool="64M",
                            max_connections=max(600, 2 * max_threads + 50),
                            extra_options={"innodb_buffer_pool_chunk_size": "1M"},
                        )
                    )
                    sb = Sysbench(db.endpoint, via="socket")
                    sb.prepare(opts[p.workloads[0]][p.threads[0]])
                    sizing = _size_buffer_pool(db, profile)
                    targets[arm] = (sb, db.pids)
                    facts[f"mysql {arm} (MariaDB, {name})"] = db.describe() | {"buffer_pool_sizing": sizing}
                    notes.append(
                        f"{arm}: {sizing['data_bytes'] / 2**20:.1f} MiB of data, buffer pool "
                        f"{sizing['buffer_pool_bytes'] / 2**20:.1f} MiB (ratio {sizing['data_to_buffer_pool']})"
                    )
                notes.append(
                    f"emulates {name} ({profile.original}) with a CPU limit of {profile.cpu_cores} cores "
                    f"({facts[next(iter(facts))].get('cpu_limit_method')}) and the buffer pool above"
                )

            def measure(arm: str, factors: dict, targets=targets, limit=profile.cpu_cores) -> Measurement:
                sb, pids = targets[arm]
                m = sb.measure(opts[factors["workload"]][int(factors["threads"])], pids)
                if pids and np.isfinite(limit):
                    m.metrics["server_cpu_pct_of_limit"] = m.metrics["server_cpu_cores"] / limit * 100
                return m

            exp_id = f"{p.experiment_id}-{name}"
            store = run_experiment(
                p,
                exp_id,
                arms=list(targets),
                measure=measure,
                servers=facts,
                factors={"workload": p.workloads, "threads": p.threads},
                progress=progress,
            )
            store.update_metadata(notes=notes)
            out[name] = ProfileResult(profile, store, facts, notes)
    return out


# -- analysis -------------------------------------------------------------------------------------------
def tps_comparisons(res: ProfileResult, *, seed: int = 0) -> dict[tuple[str, int], Comparison]:
    """TPS with encryption on vs off per workload x threads (Holm-corrected); ratio < 1 is a loss."""
    runs = res.runs()
    pairs = {}
    for (w, t), g in runs.groupby(["workload", "threads"], sort=False):
        a, b = g.loc[g["arm"] == ARMS[0], "tps"], g.loc[g["arm"] == ARMS[1], "tps"]
        if len(a) and len(b):
            pairs[(w, int(t))] = (a, b)
    return compare_sweep(pairs, higher_is_better=True, seed=seed)


def cpu_per_transaction(res: ProfileResult, *, seed: int = 0) -> dict[tuple[str, int], Comparison]:
    """Server CPU per transaction, encryption on vs off (Holm-corrected): the steadier cost figure here."""
    runs = res.runs()
    pairs = {}
    for (w, t), g in runs.groupby(["workload", "threads"], sort=False):
        a = g.loc[g["arm"] == ARMS[0], "server_cpu_us_per_op"]
        b = g.loc[g["arm"] == ARMS[1], "server_cpu_us_per_op"]
        if len(a) and len(b):
            pairs[(w, int(t))] = (a, b)
    return compare_sweep(pairs, seed=seed)


def loss_table(comps: dict[tuple[str, int], Comparison]) -> pd.DataFrame:
    """TPS loss % (off -> on) with its CI, per workload x threads."""
    rows = [
        {
            "workload": w,
            "threads": t,
            "loss %": (1 - c.ratio) * 100,
            "loss CI low %": (1 - c.ci_high) * 100,
            "loss CI high %": (1 - c.ci_low) * 100,
            "p (Holm)": c.p_value,
            "verdict": c.verdict,
        }
        for (w, t), c in comps.items()
    ]
    return pd.DataFrame(rows)


def cpu_delta(res: ProfileResult, *, seed: int = 0) -> pd.DataFrame:
    """Server CPU utilisation of the limit, on - off, in percentage points, with a bootstrap CI."""
    runs = res.runs()
    if "server_cpu_pct_of_limit" not in runs:
        return pd.DataFrame()
    rng = np.random.default_rng(seed)
    rows = []
    for (w, t), g in runs.groupby(["workload", "threads"], sort=False):
        a = np.sort(g.loc[g["arm"] == ARMS[0], "server_cpu_pct_of_limit"].to_numpy(dtype=float))
        b = np.sort(g.loc[g["arm"] == ARMS[1], "server_cpu_pct_of_limit"].to_numpy(dtype=float))
        if len(a) and len(b):
            d = bootstrap_medians(b, 4000, rng) - bootstrap_medians(a, 4000, rng)
            rows.append(
                {
                    "workload": w,
                    "threads": int(t),
                    "CPU off %": np.median(a),
                    "CPU on %": np.median(b),
                    "delta pp": np.median(b) - np.median(a),
                    "delta CI low": np.percentile(d, 2.5),
                    "delta CI high": np.percentile(d, 97.5),
                }
            )
    return pd.DataFrame(rows)


def claims(res: ProfileResult, *, seed: int = 0) -> list[ClaimVerdict]:
    """The original's three conclusions, checked on one profile."""
    comps = tps_comparisons(res, seed=seed)
    if not comps:
        return []
    loss = loss_table(comps)
    lo_t, hi_t = loss["threads"].min(), loss["threads"].max()
    name = res.profile.name
    out = []
    low = loss[loss["threads"] == lo_t]
    worst = low.loc[low["loss %"].idxmax()]
    ev = (
        f"largest loss at {lo_t} thread(s): {worst['workload']} {worst['loss %']:.1f} % "
        f"[CI {worst['loss CI low %']:.1f}, {worst['loss CI high %']:.1f}]"
    )
    if (low["loss CI high %"] < 0).all():
        v = NOT_REPRODUCED  # encryption was faster everywhere: no loss at all
    elif (low["loss CI low %"] > 0).any() and (low["loss CI low %"] <= 25).all():
        v = REPRODUCED
    elif (low["loss CI low %"] > 25).any():
        v = NOT_REPRODUCED
    else:
        v = INCONCLUSIVE
    out.append(
        ClaimVerdict(
            f"{name}: with few concurrent queries, encryption costs up to ~20 % TPS",
            v,
            ev,
            "TPS per run, off vs on, Holm-corrected Mann-Whitney",
        )
    )
    high = loss[loss["threads"] == hi_t]
    ev = "; ".join(
        f"{r['workload']}: {r['loss %']:.1f} % [CI {r['loss CI low %']:.1f}, {r['loss CI high %']:.1f}]"
        for _, r in high.iterrows()
    )
    if (high["loss CI high %"] < 5).all():
        v = REPRODUCED
    elif (high["loss CI low %"] > 5).any():
        v = NOT_REPRODUCED
    else:
        v = INCONCLUSIVE
    out.append(
        ClaimVerdict(
            f"{name}: with many concurrent queries ({hi_t} threads), the loss is under 5 %",
            v,
            ev,
            "TPS per run; the whole CI must lie under 5 %",
        )
    )
    writes = loss[loss["workload"].isin(["oltp_write_only", "oltp_update_index"])]
    reads = loss[loss["workload"].isin(["oltp_read_only", "oltp_point_select"])]
    if len(writes) and len(reads):
        w_med, r_med = writes["loss %"].median(), reads["loss %"].median()
        ev = f"median loss write-heavy {w_med:.1f} % vs read-only {r_med:.1f} %"
        separated = writes["loss CI low %"].median() > reads["loss CI high %"].median()
        v = (
            REPRODUCED
            if separated
            else (
                NOT_REPRODUCED
                if w_med < r_med and writes["loss CI high %"].median() < reads["loss CI low %"].median()
                else INCONCLUSIVE
            )
        )
        out.append(
            ClaimVerdict(
                f"{name}: write-heavy workloads lose the most", v, ev, "loss % per workload, medians of CIs compared"
            )
        )
    cpu = cpu_delta(res, seed=seed)
    if len(cpu):
        ev = f"delta {cpu['delta pp'].min():.1f} to {cpu['delta pp'].max():.1f} percentage points of the CPU limit"
        # Many cells, no multiplicity control on a difference CI: refute only when most cells rise > 10 pp.
        if (cpu["delta CI high"] < 10).all() and (cpu["delta CI low"] > -10).all():
            v = REPRODUCED
        elif (cpu["delta CI low"] > 10).mean() > 0.5:
            v = NOT_REPRODUCED
        else:
            v = INCONCLUSIVE
        out.append(
            ClaimVerdict(
                f"{name}: CPU utilisation rises only a few points (published 0.06-4.22 / 0.12-2.86 pp)",
                v,
                ev,
                "server CPU % of the emulated limit, per run; 'a few' taken as < 10 pp",
            )
        )
    return out


def percona_table(res: ProfileResult) -> pd.DataFrame:
    """Percona's 2019 oltp_read_only loss by threads beside ours, where we ran oltp_read_only."""
    published = {1: (423, 389), 4: (1673, 1531), 16: (6055, 5583), 32: (8480, 8251)}
    runs = res.runs()
    rows = []
    for t, (plain, enc) in published.items():
        row = {
            "threads": t,
            "Percona plain TPS": plain,
            "Percona encrypted TPS": enc,
            "Percona loss %": round((1 - enc / plain) * 100, 1),
        }
        g = runs[(runs.get("workload") == "oltp_read_only") & (runs["threads"] == t)] if "workload" in runs else []
        if len(g):
            off = median_ci(g.loc[g["arm"] == ARMS[0], "tps"].to_numpy())[0]
            on = median_ci(g.loc[g["arm"] == ARMS[1], "tps"].to_numpy())[0]
            row |= {"ours off TPS": off, "ours on TPS": on, "ours loss %": round((1 - on / off) * 100, 1)}
        rows.append(row)
    return pd.DataFrame(rows)


def published() -> pd.DataFrame:
    from . import PUBLISHED

    return pd.read_csv(PUBLISHED / "tde.csv")
