"""What MariaDB and MySQL 8.0 share as the project starts them: the audit approaches the audit study switches on
(general_log, init_connect writing logins into a table beside the binary log), their files, the limits that emulate
an instance (CPU quota, IOPS, a device's read latency) and those lifted while data loads, and InnoDB's controls a
study sets while the server runs (the buffer pool's size, its dirty pages written out)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from secoverhead.host import iodelay
from secoverhead.host.iodelay import ReadLatency
from secoverhead.host.rundirs import make_run_dir
from secoverhead.servers.endpoints import BENCH_USER, MySQLEndpoint, session_tls
from secoverhead.servers.limits import cpu_limit, iops_limit

AUDIT_TABLE = "secoverhead_audit.accesslog"


def general_log_options(audit_dir: Path) -> dict[str, Any]:
    """The general query log into a file of its own."""
    return {"general_log": "ON", "general_log_file": audit_dir / "general.log", "log_output": "FILE"}


def init_connect_statements() -> list[str]:
    """The table, the bench user's right to insert into it, then init_connect: every login of a user without
    CONNECTION ADMIN / SUPER (the bench user) inserts a row. The table exists first: a failing init_connect drops
    connections."""
    db = AUDIT_TABLE.split(".")[0]
    return [
        f"CREATE DATABASE IF NOT EXISTS {db}",
        f"CREATE TABLE {AUDIT_TABLE} (id BIGINT AUTO_INCREMENT PRIMARY KEY, conn_id BIGINT NOT NULL,"
        " login_time DATETIME(6) NOT NULL, user_host VARCHAR(255), matched_user VARCHAR(255),"
        " KEY (conn_id)) ENGINE=InnoDB",
        f"GRANT INSERT ON {AUDIT_TABLE} TO '{BENCH_USER}'@'%'",
        f"SET GLOBAL init_connect='INSERT INTO {AUDIT_TABLE} (conn_id, login_time, user_host,"
        " matched_user) VALUES (CONNECTION_ID(), NOW(6), USER(), CURRENT_USER())'",
    ]


def audit_files(audit: str, run_dir: Path) -> list[Path]:
    """Where an audit approach writes its records (init_connect's logins reach the binary log too)."""
    return {
        "general_log": [run_dir / "audit" / "general.log"],
        "server_audit": [run_dir / "audit" / "server_audit.log"],
        "init_connect_binlog": [run_dir / "binlog"],
    }.get(audit, [])


@contextlib.contextmanager
def limits_lifted(
    limiter: Any, io_limiter: Any = None, *, cpu: bool = True, io: bool = True, latency: Any = None
) -> Iterator[None]:
    """A server without its CPU quota (the host's cores), IOPS limit and read latency for a while, restored after:
    the limits emulate the original's server while it is measured, not while it is loaded or written back."""
    quota = limiter.cores if cpu and limiter is not None and limiter.group is not None else None
    iops = (
        (io_limiter.read_iops, io_limiter.write_iops)
        if io and io_limiter is not None and any((io_limiter.read_iops, io_limiter.write_iops))
        else None
    )
    if quota is not None:
        limiter.set(len(os.sched_getaffinity(0)))
    if iops is not None:
        io_limiter.set(None, None)
    try:
        with latency.lifted() if io and latency is not None else contextlib.nullcontext():
            yield
    finally:
        if quota is not None:
            limiter.set(quota)
        if iops is not None:
            io_limiter.set(iops[0] or None, iops[1] or None)


def negotiated_tls(endpoint: MySQLEndpoint) -> dict[str, str]:
    """What a client negotiates with the server over TLS (version, cipher), from the server's own report."""
    conn = endpoint.connect(tls=True)
    try:
        return session_tls(conn)
    finally:
        conn.close()


def socket_path(run_dir: Path, name: str, cleanups: list) -> Path:
    """The server's private socket in its run directory, or, when that path exceeds what a Unix socket address
    holds (108 bytes; a deep TMPDIR or run base), in a short private directory of the system's temp dir, removed
    with the server (its removal appended to `cleanups`)."""
    path = run_dir / name
    if len(os.fsencode(path)) < 100:
        return path
    short = make_run_dir("sock", tempfile.gettempdir())
    cleanups.append(lambda: shutil.rmtree(short, ignore_errors=True))
    return short / "m.sock"


def lru_scan_depth(pool_bytes: int) -> int:
    """InnoDB's free-page target for a pool: about 4 % of its pages (so about 2 % kept free), within InnoDB's
    range of 100 to the default 1,536 (a 12 GB pool's default keeps 0.1 % free)."""
    return max(100, min(1536, pool_bytes // (16 << 10) // 25))


class InnoDBControls:
    """What a study asks of a running InnoDB server of either family (mixed into MariaDBServer and MySQLServer,
    which give admin(), run_dir, kind, cpu_limit, iops and read_latency_us)."""

    limiter: Any
    io_limiter: Any
    read_latency: ReadLatency | None

    def _limit(self, d: Path) -> None:
        """The CPU limit, the data disk's IOPS limit and its read latency, removed when the server stops."""
        self.limiter = cpu_limit(self.cpu_limit, prefer=getattr(self, "cpu_limit_method", "auto"), label=self.kind)
        if self.limiter is not None:
            self._cleanups.append(self.limiter.remove)
        if self.iops:
            self.io_limiter = iops_limit(*self.iops, d / "data", label=self.kind)
            if self.io_limiter is not None:
                self._cleanups.append(self.io_limiter.remove)
        if self.read_latency_us is not None and iodelay.missing() is None:
            self.read_latency = ReadLatency.create(d / "data", d, self.read_latency_us)

    def limits_lifted(self, *, cpu: bool = True, io: bool = True):
        """The server without its CPU quota and IOPS limit for a while (limits_lifted)."""
        return limits_lifted(self.limiter, self.io_limiter, cpu=cpu, io=io, latency=self.read_latency)

    def limit_facts(self) -> dict[str, Any]:
        """How the limits took, for describe()."""
        facts: dict[str, Any] = self.limiter.describe() if self.limiter is not None else {"cpu_limit_method": "none"}
        if self.iops:
            facts |= self.io_limiter.describe() if self.io_limiter else {"iops_limit_method": "unavailable (no blkio)"}
        if self.read_latency_us is not None:
            facts |= (
                self.read_latency.describe()
                if self.read_latency
                else {"read_latency_method": f"unavailable ({iodelay.missing()})"}
            )
        return facts

    def flush_dirty_pages(self, timeout: float = 60.0) -> int:
        """Write every dirty buffer-pool page now (after loading data), so the page cleaner does not do it
        during a later measurement; returns the dirty pages left (0 unless the timeout passed)."""
        import time

        conn = self.admin()
        try:
            cur = conn.cursor()
            cur.execute(
                "SELECT @@innodb_max_dirty_pages_pct, @@innodb_max_dirty_pages_pct_lwm, @@innodb_io_capacity, "
                "@@innodb_io_capacity_max"
            )
            pct, lwm, capacity, capacity_max = cur.fetchone()
            # The page cleaner writes at most io_capacity_max pages a second (2,000 by default): a freshly loaded
            # 64 MiB pool took 13-19 s to flush. Raised for the flush only, then put back as it was.
            cur.execute("SET GLOBAL innodb_io_capacity_max = 1000000")
            cur.execute("SET GLOBAL innodb_io_capacity = 1000000")
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0.001")
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
            deadline = time.monotonic() + timeout
            while True:
                cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
                dirty = int(cur.fetchone()[1])
                if dirty == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {float(pct)}")
            cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct_lwm = {float(lwm)}")
            cur.execute(f"SET GLOBAL innodb_io_capacity = {int(capacity)}")
            cur.execute(f"SET GLOBAL innodb_io_capacity_max = {int(capacity_max)}")
            return dirty
        finally:
            conn.close()

    def set_buffer_pool(self, size: int) -> int:
        """Resize the buffer pool online; returns the size that took (InnoDB rounds to its chunk size).

        The page cleaner's free-page target (innodb_lru_scan_depth) is scaled with it: the default, 1,536
        pages, is sized for pools of GBs and InnoDB keeps about half of it free, so a pool of a few MiB stayed
        mostly empty (measured on a 13 MiB pool: 600-800 of 832 pages free, write-only TPS a quarter of
        what it is with the target at 100, with multi-second stalls)."""
        import time

        conn = self.admin()
        try:
            cur = conn.cursor()
            cur.execute("SET GLOBAL innodb_buffer_pool_size = %s", (int(size),))
            for _ in range(300):  # the resize runs in the background
                cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_resize_status'")
                row = cur.fetchone()
                done = ("complete", "finish", "not started")
                if not row or not row[1] or any(w in str(row[1]).lower() for w in done):
                    break
                time.sleep(0.1)
            cur.execute("SELECT @@innodb_buffer_pool_size")
            took = int(cur.fetchone()[0])
            cur.execute("SET GLOBAL innodb_lru_scan_depth = %s", (lru_scan_depth(took),))
            return took
        finally:
            conn.close()

    def variables(self, names: list[str]) -> dict[str, Any]:
        conn = self.admin()
        try:
            cur = conn.cursor()
            placeholders = ",".join(["%s"] * len(names))
            cur.execute(
                "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM performance_schema.global_variables "
                f"WHERE VARIABLE_NAME IN ({placeholders})"
                if self.kind == "mysql"
                else "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
                f"WHERE VARIABLE_NAME IN ({placeholders})",
                [n.lower() if self.kind == "mysql" else n.upper() for n in names],
            )
            return {str(k).lower(): v for k, v in cur.fetchall()}
        finally:
            conn.close()
