"""Oracle's MySQL 8.0 Community server (the builds `make setup` fetches: 8.0.31, and 8.0.33 with its keyrings) started
on loopback with TLS offered, as it ships: caching_sha2_password accounts, the binary log on with sync_binlog=1 (or
off, asked). The audit approaches MySQL has without a plugin (general_log; init_connect into a table, beside the
binary log) can be switched on; a CPU quota, an IOPS limit and a device's read latency emulate a smaller server. On
8.0.33, encryption at rest as MySQL's TDE does it: component_keyring_file, every table ENCRYPTION='Y'
(default_table_encryption), the redo and undo logs and the binary log encrypted. MariaDB's server_audit does not
load into it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from secoverhead.core.errors import ConfigError
from secoverhead.core.secrets import Secret, generate_password
from secoverhead.host.process import ServerProcess, pick_port, run_command, server_env
from secoverhead.servers import logwaits
from secoverhead.servers.base import Server
from secoverhead.servers.certs import KEY_TYPES, CertificateSet, make_certificates
from secoverhead.servers.endpoints import (
    BENCH_DATABASE,
    BENCH_USER,
    MYSQL_FACTS,
    MySQLEndpoint,
    bench_endpoint,
)
from secoverhead.servers.engines import MYSQL_8_0, MYSQL_BUILDS, Build
from secoverhead.servers.limits import check_cpu_limit
from secoverhead.servers.mysql_family import (
    InnoDBControls,
    audit_files,
    general_log_options,
    init_connect_statements,
    negotiated_tls,
    socket_path,
)

# The audit approaches MySQL 8.0 has without a plugin
AUDIT_MODES = ("none", "general_log", "init_connect_binlog")


def _initialised(build: Build, env: dict[str, str]) -> Path:
    """A data directory as `mysqld --initialize-insecure` leaves it, made once beside the build in the cache (like
    the build, it outlives every run, so nothing is left in a run's directories) and copied for every server:
    identical to initialising each, seconds faster (a quick run starts seven). Made aside and renamed into place,
    so two processes never see half of one."""
    home = build.root.parent / f"{build.name}-initialised"
    if (home / "data").is_dir():
        return home / "data"
    aside = Path(tempfile.mkdtemp(prefix=f".{home.name}-", dir=home.parent))
    try:
        init = [str(build.path), "--no-defaults", "--initialize-insecure", f"--basedir={build.root}"]
        init += [f"--datadir={aside / 'data'}"] + (["--user=root"] if os.geteuid() == 0 else [])
        run_command(init, what="mysqld --initialize-insecure", timeout=180, env=server_env(env))
        with contextlib.suppress(OSError):  # another process put one there first: theirs is as good
            aside.rename(home)
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    return home / "data"


KEYRING = "component_keyring_file"


def keyring_capable(build: Build) -> bool:
    """Whether a MySQL build carries the keyring component (8.0.33's whole build; the 8.0.31 tarball does not)."""
    return (build.root / "lib" / "plugin" / f"{KEYRING}.so").is_file()


@dataclass(eq=False, repr=False, kw_only=True)
class MySQLServer(InnoDBControls, Server):
    """A throwaway MySQL 8.0. build: mysql-8.0.31 or mysql-8.0.33; tls: offer TLS with an rsa or ecdsa server
    certificate of our own CA (cert_type), the versions mysqld allows by default or only those named (tls_versions,
    e.g. "TLSv1.2"); extra_options: more mysqld options (value None = bare flag). audit: none | general_log |
    init_connect_binlog; binlog: the binary log (on as MySQL 8.0 ships it; init_connect_binlog turns it on);
    encryption: at rest, with the keyring component (8.0.33); cpu_limit: a CPU quota in cores; iops: (read,
    write) IOPS limit on the data disk; read_latency_us: every read of a data file takes at least this long."""

    kind: ClassVar[str] = "mysql"

    tls: bool = True
    cert_type: str = "rsa"
    tls_versions: str | None = None
    buffer_pool: str = "64M"
    audit: str = "none"
    binlog: bool = True
    cpu_limit: float | None = None
    build: str = MYSQL_8_0.name
    encryption: bool = False
    iops: tuple[int | None, int | None] | None = None
    read_latency_us: float | None = None
    max_connections: int = 151
    log_waits: bool = False
    certificates: CertificateSet | None = None
    extra_options: dict[str, Any] | None = None
    port: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cert_type not in KEY_TYPES:
            raise ConfigError(f"cert_type={self.cert_type!r} is not one of {', '.join(KEY_TYPES)}")
        if self.audit not in AUDIT_MODES:
            raise ConfigError(f"audit={self.audit!r} is not one of {', '.join(AUDIT_MODES)} on MySQL 8.0")
        self.cpu_limit = check_cpu_limit(self.cpu_limit)
        if self.build not in MYSQL_BUILDS:
            raise ConfigError(f"build={self.build!r} is not a MySQL build ({', '.join(MYSQL_BUILDS)})")
        self.engine = MYSQL_BUILDS[self.build]
        self.binary = self.engine.require()
        if self.encryption and not keyring_capable(self.engine):
            raise ConfigError(f"{self.engine.server} has no keyring component: encryption at rest needs mysql-8.0.33")
        self.iops = tuple(int(x) if x else None for x in self.iops) if self.iops else None
        self.extra_options = dict(self.extra_options or {})
        self.endpoint: MySQLEndpoint | None = None
        self.socket_path = None
        self.limiter = None
        self.io_limiter = None
        self.read_latency = None
        self.audit_logs: list = []

    def _argv(self, port: int) -> list[str]:
        d = self.run_dir
        opts: dict[str, Any] = {
            "no-defaults": None,  # first, as mysqld requires; no my.cnf of the machine's is read
            "basedir": self.engine.root,
            "datadir": d / "data",
            "tmpdir": d / "tmp",
            "socket": self.socket_path,
            "port": port,
            "bind-address": "127.0.0.1",
            "mysqlx": "OFF",
            "skip-name-resolve": None,
            "pid-file": d / "mysqld.pid",
            "log-error": d / "error.log",
            "innodb_buffer_pool_size": self.buffer_pool,
            "max_connections": self.max_connections,
        }
        opts |= self._logs(d) | self._encryption_options()
        if os.geteuid() == 0:
            opts["user"] = "root"
        if self.tls:
            c = self.certificates
            opts |= {"ssl_ca": c.ca_cert, "ssl_cert": c.server_cert, "ssl_key": c.server_key}
            if self.tls_versions:
                opts["tls_version"] = self.tls_versions
        else:  # mysqld makes certificates of its own and offers TLS unless no TLS version is allowed
            opts |= {"tls_version": "", "admin_tls_version": ""}
        opts |= self.extra_options
        return [str(self.binary), *(f"--{k}" if v is None else f"--{k}={v}" for k, v in opts.items())]

    def _logs(self, d) -> dict[str, Any]:
        """The binary log (with the durability MySQL 8.0 ships: sync_binlog=1) or none, and the audit's log."""
        if self.binlog or self.audit == "init_connect_binlog":
            opts: dict[str, Any] = {"log-bin": d / "binlog" / "mysql-bin", "server-id": 1, "sync_binlog": 1}
        else:
            opts = {"disable-log-bin": None}
        return opts | (general_log_options(d / "audit") if self.audit == "general_log" else {})

    def _encryption_options(self) -> dict[str, Any]:
        """MySQL's TDE as an RDS instance turns it on: every new table and schema encrypted, and the redo, undo and
        binary logs (the keyring itself is the data directory's manifest: _keyring)."""
        if not self.encryption:
            return {}
        opts = {"default_table_encryption": "ON", "innodb_redo_log_encrypt": "ON", "innodb_undo_log_encrypt": "ON"}
        return opts | ({"binlog_encryption": "ON"} if self.binlog or self.audit == "init_connect_binlog" else {})

    def _keyring(self, d: Path) -> None:
        """The keyring component for this server alone: the build's global manifest and configuration say to read
        the data directory's (scripts/fetch-engines.sh), and its key file lives in the run directory."""
        if not self.encryption:
            return
        (d / "keyring").mkdir(mode=0o700)
        (d / "data" / "mysqld.my").write_text(json.dumps({"components": f"file://{KEYRING}"}))
        config = {"path": str(d / "keyring" / KEYRING), "read_only": False}
        (d / "data" / f"{KEYRING}.cnf").write_text(json.dumps(config))

    def _start(self) -> None:
        d = self.run_dir
        for sub in ("tmp", "binlog", "audit"):
            (d / sub).mkdir()
        if self.tls and self.certificates is None:
            self.certificates = make_certificates(d / "certs", self.cert_type)
        self.socket_path = socket_path(d, "mysqld.sock", self._cleanups)  # a deep run base: a short one
        env = {"LD_LIBRARY_PATH": self.engine.library_path()} if self.engine.libraries else {}
        shutil.copytree(_initialised(self.engine, env), d / "data", symlinks=True)
        self._keyring(d)
        port = pick_port(self.port)
        self._limit(d)
        env |= self.read_latency.env() if self.read_latency is not None else {}
        proc = ServerProcess(
            "mysqld", self._argv(port), log_path=d / "stdout.log", cwd=d, env=env,
            groups=self.groups(
                self.limiter.group if self.limiter else None, self.io_limiter.group if self.io_limiter else None
            ),
            affinity=self.limiter.cpus if self.limiter is not None and self.limiter.group is None else None,
        )  # fmt: skip
        self.processes.append(proc)
        proc.wait_ready(self._ping, self.startup_timeout, error_log=d / "error.log")
        password = generate_password()
        self._bootstrap(password)
        self.endpoint = self._endpoint(port, password)
        self._cache_bench_hash(password)
        self.audit_logs = audit_files(self.audit, d)

    def _cache_bench_hash(self, password: Secret) -> None:
        """One login of the bench account over the private socket (secure transport to MySQL), so the server caches
        its caching_sha2_password hash and plain-TCP logins take the fast path, as on a server in use; a server
        without TLS would otherwise refuse the Python client's first plain login (it cannot do the RSA exchange)."""
        import mysql.connector  # deferred: see admin()

        mysql.connector.connect(unix_socket=str(self.socket_path), user=BENCH_USER, password=password.reveal()).close()

    def _endpoint(self, port: int, password: Secret) -> MySQLEndpoint:
        return bench_endpoint(port, password, self.socket_path, self.certificates, tls=self.tls)

    def admin(self):
        """root over the private socket (no password: --initialize-insecure), for set-up and checks."""
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import mysql.connector

        return mysql.connector.connect(unix_socket=str(self.socket_path), user="root", autocommit=True)

    def _ping(self) -> bool:
        self.admin().close()
        return True

    def _bootstrap(self, password: Secret) -> None:
        conn = self.admin()
        try:
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {BENCH_DATABASE}")
            cur.execute(f"CREATE USER '{BENCH_USER}'@'%' IDENTIFIED BY %s", (password.reveal(),))
            # Database privileges only: no SUPER / CONNECTION_ADMIN, so init_connect applies to the bench user.
            cur.execute(f"GRANT ALL PRIVILEGES ON {BENCH_DATABASE}.* TO '{BENCH_USER}'@'%'")
            for sql in init_connect_statements() if self.audit == "init_connect_binlog" else []:
                cur.execute(sql)
            if self.log_waits:
                logwaits.enable(conn)
        finally:
            conn.close()

    def describe(self) -> dict[str, Any]:
        conn = self.admin()
        facts: dict[str, Any] = {"engine": "MySQL", "server": self.engine.server, "embedded": True, "kind": self.kind}
        try:
            cur = conn.cursor()
            for name in MYSQL_FACTS:
                try:
                    cur.execute(f"SELECT @@{name}")
                    facts[name] = cur.fetchone()[0]
                except Exception:
                    continue
        finally:
            conn.close()
        facts["openssl"] = self.engine.openssl
        facts["cpu_accounting"] = self.cpu_method
        facts["requested"] = {"tls": self.tls, "cert_type": self.cert_type if self.tls else None,
                              "tls_versions": self.tls_versions, "audit": self.audit, "binlog": self.binlog,
                              "log_waits": self.log_waits, "encryption": self.encryption,
                              "extra_options": self.extra_options}  # fmt: skip
        facts |= self.limit_facts()
        if self.encryption:
            facts["keyring"] = self.keyring_status()
        if self.tls and self.endpoint is not None:  # what a client actually negotiates
            facts["negotiated_tls"] = negotiated_tls(self.endpoint)
        facts["endpoint"] = self.endpoint.as_dict() if self.endpoint else None
        return facts

    def keyring_status(self) -> str:
        """The keyring component's status as the server reports it ("Active" once it has loaded its keys)."""
        conn = self.admin()
        try:
            cur = conn.cursor()
            cur.execute(
                "SELECT STATUS_VALUE FROM performance_schema.keyring_component_status "
                "WHERE STATUS_KEY='Component_status'"
            )
            row = cur.fetchone()
            return str(row[0]) if row else "not loaded"
        finally:
            conn.close()
