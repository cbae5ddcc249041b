"""Study 5: audit approaches compared under sysbench oltp_read_write (the original's "complex" mode).

Arms, each its own MariaDB with identical data, verified to write audit records before it is measured:
A (no audit, the baseline), binlog only (a control: the next arm includes it), init_connect + binlog,
general_log, and the server_audit plugin (CONNECT,QUERY,TABLE). The load runs as an unprivileged user,
because init_connect is skipped for users with SUPER / CONNECTION ADMIN. Arms that cannot run here are
listed with the reason; against an external server, arms are SQL statements the user gives.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SecoverheadError
from ..measurement import Measurement
from ..metrics import bytes_in
from ..report import ClaimVerdict, claim_direction
from ..results import ResultStore
from ..servers import ExternalMySQL, MariaDBServer
from ..stats import Comparison, compare_sweep
from ..workloads.sysbench import Sysbench, SysbenchOptions
from .common import ExternalMySQLParams, StudyParams, run_experiment

BASELINE = "A: no audit"
EMBEDDED_ARMS = {
    BASELINE: {"audit": "none"},
    "binlog only": {"audit": "none", "binlog": True},
    "init_connect + binlog": {"audit": "init_connect_binlog"},
    "general_log": {"audit": "general_log"},
    "server_audit": {"audit": "server_audit"},
}
NOT_RUN = {
    "McAfee audit plugin": "not installable here: no build for MariaDB 10.11 in Debian or any reachable registry, and "
    "it targets Oracle MySQL 5.x",
    "Percona audit_log": "ships only with Percona Server, which is in no reachable registry; against an external "
    "Percona Server, define it as an SQL arm (external_arms)",
    "Alibaba RDS (no audit)": "a cloud service; point mysql_host at an RDS instance to measure it",
}
SIX_MONTHS_S = 182.5 * 86400


@dataclass
class AuditParams(StudyParams, ExternalMySQLParams):
    experiment_id: str = "audit"
    arms: list[str] = field(default_factory=lambda: list(EMBEDDED_ARMS))
    tables: int = 2
    table_size: int = 5000
    threads: int = 8
    run_seconds: int = 3
    report_interval: int = 1
    # external only: {"arm name": {"enable": [SQL, ...], "disable": [SQL, ...]}}, run by mysql_admin_user
    external_arms: dict[str, Any] = field(default_factory=dict)
    mysql_admin_user: str = ""
    mysql_admin_password_env: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.mysql_host:
            unknown = [a for a in self.arms if a not in EMBEDDED_ARMS]
            if unknown:
                raise ValueError(f"unknown arm(s) {unknown}; embedded arms: {list(EMBEDDED_ARMS)}")
            if BASELINE not in self.arms:
                raise ValueError(f"the baseline arm {BASELINE!r} is needed for comparisons")
        for name, spec in self.external_arms.items():
            if not isinstance(spec, dict) or not isinstance(spec.get("enable", []), list):
                raise ValueError(f"external arm {name!r} must be {{'enable': [SQL...], 'disable': [SQL...]}}")
        if self.threads < 1 or self.run_seconds < 1:
            raise ValueError("threads and run_seconds must be >= 1")


@dataclass
class AuditResult:
    store: ResultStore
    arms: list[str]
    servers: dict[str, dict[str, Any]]
    verification: dict[str, str]
    notes: list[str]

    def runs(self) -> pd.DataFrame:
        return self.store.runs()


def verify_audit(db: MariaDBServer, mode: str, binlog: bool) -> str:
    """Prove the arm audits before measuring it: run marker statements as the bench user, find them."""
    marker = f"audit_check_{uuid.uuid4().hex[:10]}"
    conn = db.endpoint.connect(tls=False, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS audit_check (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(64))")
        cur.execute("INSERT INTO audit_check (note) VALUES (%s)", (marker,))
        cur.execute("SELECT note FROM audit_check WHERE note = %s", (marker,))
        cur.fetchall()
    finally:
        conn.close()
    import time

    time.sleep(0.3)
    found = []
    for log in db.audit_logs:
        files = [log] if log.is_file() else sorted(p for p in log.glob("*") if p.is_file())
        if any(marker.encode() in f.read_bytes() for f in files):
            found.append(log.name)
    if mode == "init_connect_binlog":
        admin = db.admin()
        cur = admin.cursor()
        cur.execute("SELECT COUNT(*) FROM secoverhead_audit.accesslog WHERE user_host LIKE 'bench@%'")
        logins = cur.fetchone()[0]
        admin.close()
        if not logins:
            raise SecoverheadError("init_connect recorded no login of the bench user")
        found.append(f"{logins} login row(s)")
    if binlog and mode == "none":
        binlog_dir = db.run_dir / "binlog"
        if any(marker.encode() in p.read_bytes() for p in binlog_dir.glob("mariadb-bin.0*")):
            found.append("binlog")
    if mode != "none" and not found:
        raise SecoverheadError(f"audit mode {mode} wrote no record of the marker {marker}")
    if mode == "none" and not binlog and (db.audit_logs or found):
        raise SecoverheadError("the baseline unexpectedly audits")
    return ", ".join(found) or "no audit records (baseline)"


def run(p: AuditParams, *, progress: bool = True) -> AuditResult:
    opts = SysbenchOptions(
        script="oltp_read_write",
        tables=p.tables,
        table_size=p.table_size,
        threads=p.threads,
        time=p.run_seconds,
        report_interval=p.report_interval,
    )
    notes = [f"{arm}: not run - {why}" for arm, why in NOT_RUN.items()]
    with contextlib.ExitStack() as stack:
        targets: dict[str, tuple[Sysbench, list[int], list[Path], Any]] = {}
        facts, verification = {}, {}
        if p.mysql_host:
            ext = stack.enter_context(p.external_mysql())
            admin = None
            if p.external_arms:
                admin = stack.enter_context(
                    replace(
                        p, mysql_user=p.mysql_admin_user, mysql_password_env=p.mysql_admin_password_env
                    ).external_mysql()
                )
            sb = Sysbench(ext.endpoint)
            sb.prepare(opts)
            targets[BASELINE] = (sb, [], [], None)
            for name, spec in p.external_arms.items():
                targets[name] = (sb, [], [], (admin, spec))
            facts["mysql"] = ext.describe()
            notes.append(
                "external server: arms are toggled with the given SQL around each run; audit bytes and "
                "server CPU are not measured (not our files or process)"
            )
        else:
            for arm in p.arms:
                kw = EMBEDDED_ARMS[arm]
                db = stack.enter_context(
                    MariaDBServer(buffer_pool="128M", max_connections=max(600, 2 * p.threads + 50), **kw)
                )
                verification[arm] = verify_audit(db, kw["audit"], kw.get("binlog", False))
                sb = Sysbench(db.endpoint, via="socket")
                sb.prepare(opts)
                targets[arm] = (
                    sb,
                    db.pids,
                    list(db.audit_logs) or ([db.run_dir / "binlog"] if kw.get("binlog") else []),
                    None,
                )
                facts[f"mysql {arm} (MariaDB)"] = db.describe()

        def measure(arm: str, factors: dict) -> Measurement:
            sb, pids, logs, toggle = targets[arm]
            if toggle is not None:
                _run_sql(*toggle, "enable")
            try:
                before = bytes_in(logs)
                m = sb.measure(opts, pids)
                written = bytes_in(logs) - before
            finally:
                if toggle is not None:
                    _run_sql(*toggle, "disable")
            if logs:
                m.metrics["audit_bytes"] = written
                m.metrics["audit_bytes_per_transaction"] = written / max(m.metrics["transactions"], 1)
            return m

        store = run_experiment(
            p, p.experiment_id, arms=list(targets), measure=measure, servers=facts, progress=progress
        )
    store.update_metadata(notes=notes, verification=verification)
    return AuditResult(store, list(targets), facts, verification, notes)


def _run_sql(admin: ExternalMySQL, spec: dict[str, Any], which: str) -> None:
    conn = admin.endpoint.connect(tls=False, autocommit=True)
    try:
        cur = conn.cursor()
        for sql in spec.get(which, []):
            cur.execute(sql)
    finally:
        conn.close()


# -- analysis -------------------------------------------------------------------------------------------
def versus_baseline(res: AuditResult, metric: str = "tps", *, seed: int = 0) -> dict[str, Comparison]:
    """Each arm against A on a throughput metric, Holm-corrected; (X - A) / A is the comparison's change."""
    runs = res.runs()
    base = runs.loc[runs["arm"] == BASELINE, metric]
    pairs = {arm: (base, runs.loc[runs["arm"] == arm, metric]) for arm in res.arms if arm != BASELINE}
    return compare_sweep(pairs, higher_is_better=True, seed=seed)


def difference_table(res: AuditResult, *, seed: int = 0) -> pd.DataFrame:
    rows = []
    for metric in ("qps", "tps", "server_cpu_cores"):
        if metric not in res.runs():
            continue
        for arm, c in versus_baseline(res, metric, seed=seed).items():
            rows.append(
                {
                    "arm": arm,
                    "metric": metric,
                    "A median": c.baseline_median,
                    "arm median": c.candidate_median,
                    "(X - A) / A %": c.change_pct,
                    "CI low %": (c.ci_low - 1) * 100,
                    "CI high %": (c.ci_high - 1) * 100,
                    "p (Holm)": c.p_value,
                }
            )
    return pd.DataFrame(rows)


def storage_table(res: AuditResult) -> pd.DataFrame:
    """Audit bytes per transaction, ranked, and six months of log at the measured rate and at the original's."""
    runs = res.runs()
    if "audit_bytes_per_transaction" not in runs:
        return pd.DataFrame()
    rows = []
    for arm, g in runs.groupby("arm"):
        b = g["audit_bytes_per_transaction"].dropna()
        if not len(b):
            continue
        bpt, tps = float(np.median(b)), float(np.median(g["tps"]))
        rows.append(
            {
                "arm": arm,
                "bytes per transaction": bpt,
                "measured TPS": tps,
                "6 months at the measured TPS (GB)": bpt * tps * SIX_MONTHS_S / 1e9,
                "6 months at the original's 1150 TPS (GB)": bpt * 1150 * SIX_MONTHS_S / 1e9,
            }
        )
    return pd.DataFrame(rows).sort_values("bytes per transaction", ascending=False)


def claims(res: AuditResult, *, seed: int = 0) -> list[ClaimVerdict]:
    comps = versus_baseline(res, "tps", seed=seed)
    out = []
    if "general_log" in comps:
        g = comps["general_log"]
        others = {a: c for a, c in comps.items() if a != "general_log"}
        costliest = all(g.ratio <= c.ratio for c in others.values())
        from ..report import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

        if g.verdict == "slower" and costliest:
            v = REPRODUCED
        elif g.verdict in ("faster", "no change") or (
            g.verdict == "slower" and any(c.ci_high < g.ci_low for c in others.values())
        ):
            v = NOT_REPRODUCED
        else:
            v = INCONCLUSIVE
        ev = "; ".join(
            f"{a}: {c.change_pct:+.1f} % [CI {(c.ci_low - 1) * 100:+.1f}, {(c.ci_high - 1) * 100:+.1f}]"
            for a, c in comps.items()
        )
        out.append(
            ClaimVerdict(
                "general_log costs the most throughput of the audit approaches (original: ~30 % TPS)",
                v,
                ev,
                "TPS per run vs A, Holm-corrected Mann-Whitney",
                "MariaDB 10.11, not MySQL",
            )
        )
    if "server_audit" in comps:
        out.append(
            claim_direction(
                "server_audit costs little throughput (within 10 % of no audit)",
                comps["server_audit"],
                expect="similar",
                min_ratio=0.9,
                max_ratio=1.1,
                measure="TPS per run vs A",
                engine_note="MariaDB's own plugin on MariaDB (the original ran it on MySQL)",
            )
        )
    return out


def not_run_table() -> pd.DataFrame:
    return pd.DataFrame([{"arm": a, "why it is not run here": w} for a, w in NOT_RUN.items()])


def published() -> pd.DataFrame:
    from . import PUBLISHED

    return pd.read_csv(PUBLISHED / "audit.csv")
