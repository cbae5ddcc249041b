"""The audit report's regime table: where a transaction's time goes in each arm, before any verdict."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from secoverhead.studies.audit import tables
from secoverhead.studies.audit.declarations import BASELINE


def _part(rows: list[dict], threads: int = 200):
    runs = pd.DataFrame(rows)
    return SimpleNamespace(runs=lambda: runs, metadata=lambda: {"parameters": {"threads": threads}})


def test_each_arm_splits_a_transactions_time_and_the_baseline_comes_first():
    log = {"arm": "general_log", "tps": 400.0, "server_cpu_us_per_op": 4000.0, "log_wait_us_per_txn": 50_000.0,
           "log_lock_us_per_txn": 45_000.0, "log_io_us_per_txn": 500.0, "log_wait_share": 0.1,
           "server_offcpu_us_per_txn": 90_000.0, "server_runqueue_us_per_txn": 300_000.0,
           "server_cpu_cores": 1.6}  # fmt: skip
    base = {"arm": BASELINE, "tps": 500.0, "server_cpu_us_per_op": 3000.0, "server_cpu_cores": 1.5,
            "server_offcpu_us_per_txn": 60_000.0}  # fmt: skip
    t = tables.regime_table(_part([log, dict(log, tps=420.0), base]))
    assert list(t["arm"]) == [BASELINE, "general_log"]
    g = t.set_index("arm").loc["general_log"]
    assert g["ms per transaction (a thread's)"] == pytest.approx(200 / 410 * 1000)  # the runs' median TPS
    assert g["server CPU, ms"] == 4.0 and g["waiting on the log, ms"] == 50.0 and g["of which its locks, ms"] == 45.0
    assert g["log utilisation"] == pytest.approx(500e-6 * 410)  # the log file's busy share of each second
    assert g["blocked, ms"] == 90.0 and g["blocked more than A, ms"] == 30.0  # the excess: what the log adds, at most
    a = t.set_index("arm").loc[BASELINE]
    assert a["blocked more than A, ms"] == 0.0
    assert math.isnan(a["waiting on the log, ms"]) and math.isnan(a["log utilisation"])  # not measured: blank


def test_no_runs_no_table():
    assert tables.regime_table(_part([])).empty


def test_the_tps_figure_draws_the_interval_each_arms_claim_judges():
    """The error bar of an approach against A is the claim's own interval, the between-run sd included."""
    import numpy as np

    from secoverhead.studies.audit import claims as audit_claims

    rng = np.random.default_rng(4)
    rows = []
    for rnd in range(6):
        drift = rng.lognormal(0, 0.1)
        for arm, x in ((BASELINE, 1.0), ("binlog only", 0.97), ("general_log", 0.75)):
            rows.append(
                {"run_id": len(rows), "arm": arm, "round": rnd, "tps": 1000 * x * drift * rng.lognormal(0, 0.02)}
            )
    runs = pd.DataFrame(rows)
    part = SimpleNamespace(runs=lambda: runs, alpha=0.05)
    drawn = tables.tps_vs_a(part).set_index("arm")
    verdicts = {v.registered["id"]: v for v in audit_claims.part_claims("MySQL", runs, 0.05)}
    (lo, hi), *_ = verdicts["binlog only-small"].judged[0]["intervals"]
    assert drawn.loc["binlog only", "CI low %"] == pytest.approx((lo - 1) * 100)
    assert drawn.loc["binlog only", "CI high %"] == pytest.approx((hi - 1) * 100)
    (loss_lo, loss_hi), *_ = verdicts["general_log-loss"].judged[0]["intervals"]  # a loss in %: the same interval
    assert drawn.loc["general_log", "CI low %"] == pytest.approx(-loss_hi)
    assert drawn.loc["general_log", "CI high %"] == pytest.approx(-loss_lo)


def test_an_arm_whose_log_is_not_timed_still_shows_its_blocked_time_and_no_baseline_leaves_the_excess_blank():
    audit = {"arm": "server_audit", "tps": 450.0, "server_cpu_us_per_op": 3500.0, "server_offcpu_us_per_txn": 80_000.0}
    base = {"arm": BASELINE, "tps": 500.0, "server_cpu_us_per_op": 3000.0, "server_offcpu_us_per_txn": 60_000.0}
    s = tables.regime_table(_part([audit, base])).set_index("arm").loc["server_audit"]
    assert s["blocked more than A, ms"] == 20.0 and math.isnan(s["waiting on the log, ms"])
    alone = tables.regime_table(_part([audit])).set_index("arm").loc["server_audit"]
    assert alone["blocked, ms"] == 80.0 and math.isnan(alone["blocked more than A, ms"])
