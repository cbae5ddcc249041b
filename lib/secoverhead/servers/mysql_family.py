"""What MariaDB and MySQL 8.0 share as the project starts them: the audit approaches the audit study switches on
(general_log, init_connect writing logins into a table beside the binary log), their files, and the limits
lifted while data loads."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from secoverhead.host.rundirs import make_run_dir
from secoverhead.servers.endpoints import BENCH_USER, MySQLEndpoint, session_tls

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
