"""Where a MySQL 8.0 server's threads wait on its logs, from the server's own performance_schema: the time they
spend writing and syncing a log file and the time they wait for a log's lock or for the group commit's leader.

The file instruments are on and timed as MySQL 8.0 ships; the log's mutexes and the group commit's condition
are turned on (and timed) when a server is started for a study, in every arm alike, so the arms differ only in
the log they keep. A DBA's sys schema reads the same table (`sys.waits_global_by_latency`). What a thread does
between two waits (formatting the log record) is CPU, counted with the rest of the server's CPU.

MariaDB's server_audit keeps its log with its own file logger, built without instrumentation (FLOGGER_NO_PSI):
performance_schema cannot see its waits, so they are not measured there."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

# Each log's instruments as MySQL 8.0.31 names them: its file (writes and fsyncs), the locks held around them,
# the condition a group commit's followers wait on while the leader syncs. LIKE patterns.
LOG_INSTRUMENTS: dict[str, tuple[str, ...]] = {
    "general log": (
        "wait/io/file/sql/query_log",
        "wait/synch/mutex/sql/LOG::LOCK_log",
        "wait/synch/rwlock/sql/LOGGER::LOCK_logger",
    ),
    "binary log": (
        "wait/io/file/sql/binlog",
        "wait/synch/mutex/sql/MYSQL_BIN_LOG::%",
        "wait/synch/cond/sql/MYSQL_BIN_LOG::%",
    ),
}

# ps per us (performance_schema's timers count picoseconds)
PS_PER_US = 1_000_000

# event name -> (waits, picoseconds waited)
Reading = dict[str, tuple[int, int]]


def _where(patterns: tuple[str, ...]) -> str:
    return " OR ".join("NAME LIKE %s" for _ in patterns)


def _all_patterns() -> tuple[str, ...]:
    return tuple(p for ps in LOG_INSTRUMENTS.values() for p in ps)


def enable(conn: Any) -> int:
    """Turn on and time every log instrument (a server this project started); returns how many it turned on."""
    patterns = _all_patterns()
    cur = conn.cursor()
    cur.execute(
        f"UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' WHERE {_where(patterns)}",
        patterns,
    )
    return cur.rowcount


def read(conn: Any) -> Reading:
    """Every log instrument's waits and time waited so far."""
    patterns = _all_patterns()
    cur = conn.cursor()
    cur.execute(
        "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT"
        " FROM performance_schema.events_waits_summary_global_by_event_name"
        f" WHERE {_where(patterns).replace('NAME', 'EVENT_NAME')}",
        patterns,
    )
    return {name: (int(n), int(ps)) for name, n, ps in cur.fetchall()}


def summarise(a: Reading, b: Reading, *, transactions: int, threads: int, window_s: float) -> dict[str, float]:
    """Per transaction: us the threads waited on the logs, split into file I/O and locks (mutexes, rwlocks and
    the commit's condition); and the share of the threads' time (threads x window) spent waiting on a log."""
    io = lock = 0.0
    for event, (_, ps1) in b.items():
        waited = (ps1 - a.get(event, (0, 0))[1]) / PS_PER_US
        if event.startswith("wait/io/file/"):
            io += waited
        else:
            lock += waited
    txn = max(transactions, 1)
    return {
        "log_io_us_per_txn": io / txn,
        "log_lock_us_per_txn": lock / txn,
        "log_wait_us_per_txn": (io + lock) / txn,
        "log_wait_share": (io + lock) / (max(threads, 1) * window_s * 1e6) if window_s > 0 else float("nan"),
    }


@dataclass
class LogWaitMeter:
    """with LogWaitMeter(admin_connect) as w: ...; w.metrics(transactions, threads) -> summarise() over the block.
    admin_connect opens a connection as a user who can read performance_schema; None measures nothing."""

    connect: Any

    def __enter__(self) -> LogWaitMeter:
        self.a, self.t0 = self._read(), time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.b, self.window_s = self._read(), time.monotonic() - self.t0

    def _read(self) -> Reading | None:
        if self.connect is None:
            return None
        conn = self.connect()
        try:
            return read(conn)
        finally:
            conn.close()

    def metrics(self, transactions: int, threads: int, window_s: float | None = None) -> dict[str, float]:
        """window_s: the load's own duration (sysbench's), when known; the block's otherwise."""
        if self.a is None or self.b is None:
            return {}
        window = window_s or self.window_s
        return summarise(self.a, self.b, transactions=transactions, threads=threads, window_s=window)
