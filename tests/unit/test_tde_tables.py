"""TDE's concurrency table: what one thread against many changes per transaction, from the run summaries."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from secoverhead.studies.tde import declarations as tde_declarations
from secoverhead.studies.tde import mechanism as tde_mechanism


def _runs(merge_at_many: float) -> pd.DataFrame:
    rows = []
    for threads in (1, 4, 16):
        for arm in (tde_declarations.OFF, tde_declarations.ON):
            for r in range(3):
                many = threads == 16
                rows.append(
                    {
                        "workload": "oltp_write_only",
                        "arm": arm,
                        "threads": threads,
                        "round": r,
                        "pages_written_per_txn": 4.0,
                        "data_writes_per_txn": 4.0 / (merge_at_many if many else 1.0),
                        "data_written_bytes_per_txn": 4.0 * 16384,
                        "data_reads_per_txn": 0.0,
                        "fsyncs_per_txn": 0.5 if many else 2.0,
                        "server_cpu_us_per_op": 300.0 + r,
                    }
                )
    return pd.DataFrame(rows)


def test_concurrency_table_shows_merged_writes_and_shared_fsyncs_between_one_and_many_threads():
    t = tde_mechanism.concurrency_table(SimpleNamespace(runs=lambda: _runs(merge_at_many=4.0)))
    row = t[(t["arm"] == tde_declarations.ON) & (t["per transaction"] == "pages per write request")].iloc[0]
    assert row["1 thread"] == pytest.approx(1.0) and row["16 threads"] == pytest.approx(4.0)
    fsyncs = t[(t["arm"] == tde_declarations.OFF) & (t["per transaction"] == "fsyncs")].iloc[0]
    assert fsyncs["many / one"] == pytest.approx(0.25)
    assert set(t["workload"]) == {"oltp_write_only"} and len(t) == 2 * 5  # two arms x five quantities


def test_concurrency_table_is_empty_with_one_thread_count():
    runs = _runs(1.0)
    assert tde_mechanism.concurrency_table(SimpleNamespace(runs=lambda: runs[runs["threads"] == 4])).empty


def test_a_cells_regime_names_what_bounds_it():
    """The cap where the plain server reads at 0.9 of it or more, the quota where it uses 0.9 of its CPU, else the
    larger of the reads' wait and the CPU; a transaction's time splits into CPU, the reads' wait and the rest."""
    import pandas as pd

    from secoverhead.studies.tde.mechanism import _regime_row

    facts = {"iops_limit_read": 1000, "read_latency_us": 1000.0}

    def cell(iops, cpu_pct, reads, tps=50.0, cpu_us=2000.0):
        c = pd.Series({"tps": tps, "server_cpu_us_per_op": cpu_us, "data_reads_per_txn": reads,
                       "iops_read": iops, "server_cpu_pct_of_limit": cpu_pct})  # fmt: skip
        return _regime_row("4c16g", "oltp_read_only", 1, c, facts)

    assert cell(950, 30, 16)["bound by"] == "the IOPS cap"
    assert cell(500, 95, 16)["bound by"] == "the CPU quota"
    waits = cell(700, 30, 14)
    assert waits["bound by"] == "its reads' latency"
    assert waits["waiting for reads, ms"] == 14.0 and waits["server CPU, ms"] == 2.0
    assert waits["ms per transaction (a thread's)"] == 20.0 and waits["the rest, ms"] == 4.0
    assert waits["share of IOPS cap"] == 0.7
    assert cell(300, 30, 1)["bound by"] == "CPU"
