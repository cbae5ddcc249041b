"""performance_schema's log waits, per transaction and as a share of the threads' time."""

from __future__ import annotations

import pytest

from secoverhead.servers import logwaits


def test_file_time_and_lock_time_are_split_and_only_the_window_counts():
    a = {"wait/io/file/sql/query_log": (10, 5_000_000), "wait/synch/mutex/sql/LOG::LOCK_log": (10, 1_000_000)}
    b = {
        "wait/io/file/sql/query_log": (110, 105_000_000),  # 100 us of writes in the window
        "wait/synch/mutex/sql/LOG::LOCK_log": (110, 301_000_000),  # 300 us waiting for the lock
        "wait/synch/cond/sql/MYSQL_BIN_LOG::COND_done": (4, 600_000_000),  # first seen in the window: all counts
    }
    m = logwaits.summarise(a, b, transactions=10, threads=2, window_s=0.001)
    assert m["log_io_us_per_txn"] == pytest.approx(10.0)
    assert m["log_lock_us_per_txn"] == pytest.approx(90.0)
    assert m["log_wait_us_per_txn"] == pytest.approx(100.0)
    assert m["log_wait_share"] == pytest.approx(1000 / 2000)  # 1 ms waited of 2 threads x 1 ms


def test_no_log_waits_no_time_and_an_empty_window_is_no_share():
    same = {"wait/io/file/sql/binlog": (3, 900)}
    m = logwaits.summarise(same, same, transactions=0, threads=0, window_s=0.0)
    assert m["log_wait_us_per_txn"] == 0.0
    assert m["log_wait_share"] != m["log_wait_share"]  # NaN: no window, no share


def test_a_server_that_does_not_time_its_log_measures_nothing():
    with logwaits.LogWaitMeter(None) as w:
        pass
    assert w.metrics(100, 8) == {}


class _Conn:
    """A connection whose performance_schema answers from a list of readings, one per query."""

    def __init__(self, readings: list[dict]) -> None:
        self.readings, self.closed = readings, 0

    def cursor(self):
        conn = self

        class Cur:
            def execute(self, sql, args=()):
                assert sql.count("%s") == len(args) and "EVENT_NAME LIKE" in sql
                self.rows = [(k, *v) for k, v in conn.readings.pop(0).items()]

            def fetchall(self):
                return self.rows

        return Cur()

    def close(self) -> None:
        self.closed += 1


def test_the_meter_reads_before_and_after_and_takes_the_loads_own_duration():
    conn = _Conn([{"wait/io/file/sql/binlog": (0, 0)}, {"wait/io/file/sql/binlog": (5, 2_000_000)}])
    with logwaits.LogWaitMeter(lambda: conn) as w:
        pass
    m = w.metrics(transactions=4, threads=1, window_s=0.004)
    assert conn.closed == 2 and m["log_io_us_per_txn"] == pytest.approx(0.5)
    assert m["log_wait_share"] == pytest.approx(2 / 4000)


def test_every_log_has_its_file_among_its_instruments():
    for log, patterns in logwaits.LOG_INSTRUMENTS.items():
        assert any(p.startswith("wait/io/file/sql/") for p in patterns), log
