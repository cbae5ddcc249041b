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


def test_the_log_table_sets_each_approachs_records_hold_and_sink_beside_a():
    log = {"arm": "general_log", "tps": 400.0, "server_cpu_us_per_op": 4000.0, "log_io_us_per_txn": 500.0,
           "log_wait_share": 0.3, "audit_records_per_transaction": 20.0,
           "audit_bytes_per_transaction": 1500.0}  # fmt: skip
    binlog = {"arm": "binlog only", "tps": 480.0, "server_cpu_us_per_op": 3100.0, "audit_bytes_per_transaction": 900.0}
    base = {"arm": BASELINE, "tps": 500.0, "server_cpu_us_per_op": 3000.0}
    sinks = {"general_log": {"left": "the hook", "rounds": 2, "null": {"tps": 450.0, "server_cpu_us_per_op": 3400.0},
                             "real": {"tps": 400.0, "server_cpu_us_per_op": 4100.0}}}  # fmt: skip
    runs = pd.DataFrame([log, binlog, base])
    part = SimpleNamespace(runs=lambda: runs, extras={"null_sink": sinks})
    t = tables.log_table(part).set_index("arm")
    assert list(t.index) == ["general_log", "binlog only"]  # approaches only: A writes no log
    g = t.loc["general_log"]
    assert g["records per transaction"] == 20.0 and g["bytes per transaction"] == 1500.0
    assert g["their share of each second at A's TPS"] == pytest.approx(500e-6 * 500)  # A's TPS, not the arm's
    assert g["server CPU per transaction over A, µs"] == 1000.0
    assert g["hook: CPU over A with the sink discarding, µs"] == 400.0
    assert g["write: CPU the real log adds to it, µs"] == 700.0
    assert g["TPS, sink discarding / real log"] == pytest.approx(450 / 400)
    sinks["general_log"]["baseline"] = {"tps": 480.0, "server_cpu_us_per_op": 3200.0}  # A of the sink's minutes
    assert tables.log_table(part).set_index("arm").loc["general_log", "hook: CPU over A with the sink discarding, µs"] \
        == 200.0  # fmt: skip
    b = t.loc["binlog only"]  # no null sink, no text records, no timed log: blank, not zero
    assert math.isnan(b["records per transaction"]) and math.isnan(b["hook: CPU over A with the sink discarding, µs"])
    assert b["null sink: what is left"] == "" and math.isnan(b["TPS, sink discarding / real log"])
    no_base = pd.DataFrame([log])
    assert tables.log_table(SimpleNamespace(runs=lambda: no_base, extras={})).empty


def test_records_are_the_lines_a_log_gained_and_all_of_one_rotated_since(tmp_path):
    from secoverhead.studies.audit.runner import _lines_since

    grown, rotated, gone = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "c.log"
    grown.write_bytes(b"old 1\nold 2\n")
    rotated.write_bytes(b"x" * 100)
    sizes = {grown: grown.stat().st_size, rotated: rotated.stat().st_size, gone: 5}
    grown.write_bytes(b"old 1\nold 2\nnew 1\nnew 2\nnew 3\n")
    rotated.write_bytes(b"fresh\n")  # smaller than before: a new file, every line of it new
    assert _lines_since(sizes) == 3 + 1  # the missing file counts nothing


class _Cursor:
    def __init__(self, sql: list, value: str):
        self.sql, self.value = sql, value

    def execute(self, q, args=()):
        self.sql.append((q, args))

    def fetchone(self):
        return (self.value,)


def test_a_null_sink_is_put_back_to_the_servers_own_setting_even_when_its_run_fails():
    from secoverhead.studies.audit.declarations import NULL_SINKS
    from secoverhead.studies.audit.runner import _discarding

    sql: list = []
    conn = SimpleNamespace(cursor=lambda: _Cursor(sql, "FILE"), close=lambda: sql.append("closed"))
    db = SimpleNamespace(admin=lambda: conn)
    with pytest.raises(RuntimeError), _discarding(db, NULL_SINKS["general_log"]):
        assert sql[-1] == ("SET GLOBAL log_output = %s", ("NONE",))
        raise RuntimeError("the run failed")
    assert sql[-2:] == [("SET GLOBAL log_output = %s", ("FILE",)), "closed"]


def test_medians_over_sink_runs_leave_out_what_no_run_measured():
    from secoverhead.studies.audit.runner import _medians

    rows = [{"tps": 1.0, "log_io_us_per_txn": float("nan")}, {"tps": 3.0}, {"tps": 2.0}]
    assert _medians(rows) == {"tps": 2.0}


@pytest.mark.parametrize(("run_s", "sink_s"), [(1, 1), (2, 1), (4, 2), (300, 30)])
def test_a_null_sinks_run_is_half_a_run_and_never_a_full_scale_one(run_s, sink_s):
    from secoverhead.studies.audit.runner import _sink_seconds

    assert _sink_seconds(run_s) == sink_s
