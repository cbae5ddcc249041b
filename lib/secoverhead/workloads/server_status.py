"""MySQL/MariaDB server counters around a run: what the server did per transaction (InnoDB pages read and
written, bytes, fsyncs, redo log, pages encrypted and decrypted), read with SHOW GLOBAL STATUS, which needs no
privilege. The mechanism behind a cost, not only its size."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

COUNTERS = {
    "Innodb_pages_read": "pages_read",
    "Innodb_pages_written": "pages_written",
    "Innodb_data_read": "data_read_bytes",
    "Innodb_data_written": "data_written_bytes",
    "Innodb_data_reads": "data_reads",
    "Innodb_data_writes": "data_writes",
    "Innodb_data_fsyncs": "fsyncs",
    "Innodb_os_log_written": "log_written_bytes",
    "Innodb_buffer_pool_reads": "buffer_pool_misses",
    "Innodb_buffer_pool_read_requests": "buffer_pool_read_requests",
    "Innodb_num_pages_encrypted": "pages_encrypted",
    "Innodb_num_pages_decrypted": "pages_decrypted",
    "Binlog_bytes_written": "binlog_bytes",
    "Com_select": "selects",
}


def snapshot(connect: Callable[[], Any]) -> dict[str, int]:
    """The counters now (those the server has; others are simply absent)."""
    conn = connect()
    try:
        cur = conn.cursor()
        names = ",".join(f"'{n}'" for n in COUNTERS)
        cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")
        return {COUNTERS[k]: int(v) for k, v in cur.fetchall() if str(v).lstrip("-").isdigit()}
    finally:
        conn.close()


def per_transaction(before: Mapping[str, int], after: Mapping[str, int], transactions: float) -> dict[str, float]:
    """Each counter's increase per transaction, as metrics named <counter>_per_txn."""
    if transactions <= 0:
        return {}
    return {f"{k}_per_txn": (after[k] - before[k]) / transactions for k in after if k in before}
