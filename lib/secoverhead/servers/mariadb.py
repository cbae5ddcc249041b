"""MariaDB started on loopback with TLS, data-at-rest encryption, audit modes and CPU limits toggled.

MariaDB 10.11 stands in for MySQL 8 here (the only MySQL-family server installable); reports say so.
"""

from __future__ import annotations

import os
import re
import secrets as _stdlib_secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from secoverhead.core.errors import ConfigError, ServerStartError
from secoverhead.core.secrets import Secret, generate_password
from secoverhead.host.iodelay import ReadLatency
from secoverhead.host.process import ServerProcess, pick_port, run_command
from secoverhead.servers.base import Server
from secoverhead.servers.certs import KEY_TYPES, CertificateSet, make_certificates
from secoverhead.servers.endpoints import (
    BENCH_DATABASE,
    BENCH_USER,
    MYSQL_FACTS,
    MySQLEndpoint,
    bench_endpoint,
)
from secoverhead.servers.limits import check_cpu_limit
from secoverhead.servers.mysql_family import (
    InnoDBControls,
    audit_files,
    general_log_options,
    init_connect_statements,
    negotiated_tls,
    socket_path,
)

TLS_MODES = ("off", "on", "required")
AUDIT_MODES = ("none", "general_log", "server_audit", "init_connect_binlog")
_OPTION_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")
_SIZE = re.compile(r"^\d+[KMG]?$", re.IGNORECASE)


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise ServerStartError(f"{name} not found: install mariadb-server (run `make setup`)")
    return found


@dataclass(eq=False, repr=False, kw_only=True)
class MariaDBServer(InnoDBControls, Server):
    """A throwaway MariaDB instance.

    tls: off | on (TLS offered) | required (require_secure_transport: plain TCP refused)
    cert_type: rsa (RSA-2048) | ecdsa (P-256), or certificates=CertificateSet of your own
    encryption: data at rest (file_key_management; tables, redo log, temporary files)
    audit: none | general_log | server_audit | init_connect_binlog; binlog: binary log on its own
    buffer_pool: innodb_buffer_pool_size, e.g. "64M"; cpu_limit: cores (cgroup v1 quota, else affinity)
    iops: (read, write) IOPS limit on the data disk (cgroup v1 blkio), e.g. (7000, 7000); None: unlimited
    read_latency_us: every read of a data file takes at least this long (host/iodelay.py); None: the disk's own
    extra_options: more my.cnf options for [mariadbd] (value None = bare flag)
    """

    kind: ClassVar[str] = "mariadb"

    tls: str = "off"
    cert_type: str = "rsa"
    certificates: CertificateSet | None = None
    tls_versions: str | None = None
    encryption: bool = False
    audit: str = "none"
    binlog: bool = False
    buffer_pool: str = "64M"
    cpu_limit: float | None = None
    cpu_limit_method: str = "auto"
    iops: tuple[int | None, int | None] | None = None
    read_latency_us: float | None = None
    max_connections: int = 600
    extra_options: dict[str, Any] | None = None
    port: int | None = None  # the port asked for (None: a free one)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check()
        self.encryption, self.binlog = bool(self.encryption), bool(self.binlog)
        self.buffer_pool, self.max_connections = str(self.buffer_pool), int(self.max_connections)
        self.extra_options = dict(self.extra_options or {})
        self.cpu_limit = check_cpu_limit(self.cpu_limit, self.cpu_limit_method)
        self.iops = tuple(int(x) if x else None for x in self.iops) if self.iops else None
        self.limiter = None
        self.io_limiter = None
        self.read_latency: ReadLatency | None = None
        self.endpoint: MySQLEndpoint | None = None
        self.audit_logs: list[Path] = []
        self.socket_path: Path | None = None

    def _check(self) -> None:
        tls, cert_type, audit, buffer_pool = self.tls, self.cert_type, self.audit, self.buffer_pool
        tls_versions, iops, certificates = self.tls_versions, self.iops, self.certificates
        if tls not in TLS_MODES:
            raise ConfigError(f"tls={tls!r} is not one of {', '.join(TLS_MODES)}")
        if cert_type not in KEY_TYPES:
            raise ConfigError(f"cert_type={cert_type!r} is not one of {', '.join(KEY_TYPES)}")
        if audit not in AUDIT_MODES:
            raise ConfigError(f"audit={audit!r} is not one of {', '.join(AUDIT_MODES)}")
        if not _SIZE.match(str(buffer_pool)):
            raise ConfigError(f"buffer_pool={buffer_pool!r} is not a size like 64M or 1G")
        if tls_versions is not None and not re.fullmatch(r"TLSv1\.[0-3](,TLSv1\.[0-3])*", tls_versions):
            raise ConfigError(f"tls_versions={tls_versions!r} is not like 'TLSv1.2,TLSv1.3'")
        for name, value in (self.extra_options or {}).items():
            if not _OPTION_NAME.match(name) or (value is not None and "\n" in str(value)):
                raise ConfigError(f"extra option {name!r}={value!r} is not a valid my.cnf option")
        if certificates is not None:
            certificates.check()
        if iops is not None and (len(iops) != 2 or any(x is not None and x < 1 for x in iops) or not any(iops)):
            raise ConfigError(f"iops={iops!r} must be (read, write), each >= 1 or None (unlimited), not both None")
        if self.read_latency_us is not None and not 0 <= float(self.read_latency_us) <= 100_000:
            raise ConfigError(f"read_latency_us={self.read_latency_us!r} is outside 0..100000")

    # -- configuration ---------------------------------------------------------------------------
    def _options(self, port: int) -> dict[str, Any]:
        d = self.run_dir
        opts: dict[str, Any] = {
            "datadir": d / "data",
            "tmpdir": d / "tmp",
            "socket": self.socket_path,
            "port": port,
            "pid-file": d / "mariadb.pid",
            "log-error": d / "error.log",
            "bind-address": "127.0.0.1",
            "skip-name-resolve": None,
            "innodb_buffer_pool_size": self.buffer_pool,
            "aria_pagecache_buffer_size": "8M",
            "key_buffer_size": "1M",
            "max_connections": self.max_connections,
            "max_prepared_stmt_count": 1048576,
        }
        if os.geteuid() == 0:
            opts["user"] = "root"
        opts |= self._tls_options() | self._encryption_options() | self._audit_options()
        opts.update(self.extra_options)
        return opts

    def _tls_options(self) -> dict[str, Any]:
        if self.tls == "off":
            return {}
        c = self.certificates
        opts: dict[str, Any] = {"ssl_ca": c.ca_cert, "ssl_cert": c.server_cert, "ssl_key": c.server_key}
        if self.tls_versions:
            opts["tls_version"] = self.tls_versions
        if self.tls == "required":
            opts["require_secure_transport"] = "ON"
        return opts

    def _encryption_options(self) -> dict[str, Any]:
        """Data at rest: tables, redo log, temporary files and (with a binary log) the binary log."""
        d, opts = self.run_dir, {}
        if self.encryption:
            opts = {
                "plugin_load_add": "file_key_management",
                "file_key_management_filename": d / "keys" / "keys.enc",
                "file_key_management_filekey": f"FILE:{d / 'keys' / 'keys.key'}",
                "file_key_management_encryption_algorithm": "AES_CTR",
                "innodb_encrypt_tables": "ON",
                "innodb_encrypt_log": "ON",
                "innodb_encrypt_temporary_tables": "ON",
                "encrypt_tmp_files": "ON",
                "encrypt_tmp_disk_tables": "ON",
                "aria_encrypt_tables": "ON",
                "innodb_encryption_threads": 2,
            }
        if self.binlog or self.audit == "init_connect_binlog":
            opts |= {"log_bin": d / "binlog" / "mariadb-bin", "server_id": 1}
            if self.encryption:
                opts["encrypt_binlog"] = "ON"
        return opts

    def _audit_options(self) -> dict[str, Any]:
        d = self.run_dir
        if self.audit == "general_log":
            return general_log_options(d / "audit")
        if self.audit == "server_audit":
            return {
                # A second plugin_load_add line is fine: the option is cumulative.
                "plugin_load_add@audit": "server_audit",
                "server_audit_logging": "ON",
                "server_audit_events": "CONNECT,QUERY,TABLE",
                "server_audit_output_type": "file",
                "server_audit_file_path": d / "audit" / "server_audit.log",
                # Rotate late so a run's bytes can be counted from one file.
                "server_audit_file_rotate_size": "4294967295",
                "server_audit_file_rotations": 1,
            }
        return {}

    def _write_cnf(self, port: int) -> Path:
        lines = ["[mariadbd]"]
        for key, value in self._options(port).items():
            key = key.split("@")[0]
            lines.append(key if value is None else f"{key}={value}")
        lines += ["", "[client]", f"socket={self.socket_path}", "user=root", ""]
        cnf = self.run_dir / "my.cnf"
        cnf.write_text("\n".join(lines))
        return cnf

    def _make_keys(self) -> None:
        keys = self.run_dir / "keys"
        keys.mkdir(mode=0o700)
        filekey = keys / "keys.key"
        filekey.write_text(_stdlib_secrets.token_hex(32))
        filekey.chmod(0o600)
        plain = keys / "keys.txt"
        plain.write_text("".join(f"{i};{_stdlib_secrets.token_hex(32)}\n" for i in (1, 2)))
        plain.chmod(0o600)
        run_command(
            [
                "openssl",
                "enc",
                "-aes-256-cbc",
                "-md",
                "sha1",
                "-pass",
                f"file:{filekey}",
                "-in",
                plain,
                "-out",
                keys / "keys.enc",
            ],
            what="encrypting the key file",
        )
        plain.unlink()  # only the encrypted key file stays on disk

    # -- lifecycle -------------------------------------------------------------------------------
    def _start(self) -> None:
        d = self.run_dir
        for sub in ("data", "tmp", "binlog", "audit"):
            (d / sub).mkdir()
        if self.tls != "off" and self.certificates is None:
            self.certificates = make_certificates(d / "certs", self.cert_type)
        if self.encryption:
            self._make_keys()
        self.socket_path = socket_path(d, "mariadb.sock", self._cleanups)
        port = pick_port(self.port)
        cnf = self._write_cnf(port)
        run_command(
            [
                _binary("mariadb-install-db"),
                f"--defaults-file={cnf}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            what="mariadb-install-db",
            timeout=120,
            log=d / "error.log",
        )
        self._limit(d)
        proc = ServerProcess(
            "mariadbd",
            [_binary("mariadbd"), f"--defaults-file={cnf}"],
            log_path=d / "stdout.log",
            cwd=d,
            env=self.read_latency.env() if self.read_latency is not None else None,
            groups=self.groups(
                self.limiter.group if self.limiter else None, self.io_limiter.group if self.io_limiter else None
            ),
            affinity=self.limiter.cpus if self.limiter is not None and self.limiter.group is None else None,
        )
        self.processes.append(proc)
        proc.wait_ready(self._ping, self.startup_timeout, error_log=d / "error.log")
        password = generate_password()
        self._bootstrap(password)
        self.endpoint = self._endpoint(port, password)
        self.audit_logs = audit_files(self.audit, d)

    def _endpoint(self, port: int, password: Secret) -> MySQLEndpoint:
        return bench_endpoint(port, password, self.socket_path, self.certificates, tls=self.tls != "off",
                              tls_required=self.tls == "required")  # fmt: skip

    def admin(self):
        """A root connection over the private socket (for set-up and checks, not for load)."""
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import mysql.connector

        return mysql.connector.connect(unix_socket=str(self.socket_path), user="root", autocommit=True)

    def _ping(self) -> bool:
        conn = self.admin()
        conn.close()
        return True

    def _bootstrap(self, password: Secret) -> None:
        conn = self.admin()
        cur = conn.cursor()
        pw = password.reveal().replace("'", "''")
        statements = [
            "DELETE FROM mysql.global_priv WHERE User=''",  # anonymous users would shadow the bench user
            "FLUSH PRIVILEGES",
            f"CREATE DATABASE IF NOT EXISTS {BENCH_DATABASE}",
            f"CREATE USER '{BENCH_USER}'@'%' IDENTIFIED BY '{pw}'",
            # Database privileges only: no SUPER / CONNECTION ADMIN, so init_connect applies.
            f"GRANT ALL PRIVILEGES ON {BENCH_DATABASE}.* TO '{BENCH_USER}'@'%'",
        ]
        if self.audit == "init_connect_binlog":
            statements += init_connect_statements()
        try:
            for sql in statements:
                cur.execute(sql)
        finally:
            conn.close()

    # -- facts -----------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        names = list(MYSQL_FACTS)
        facts: dict[str, Any] = {
            "engine": "MariaDB",
            "embedded": True,
            "kind": self.kind,
            "emulates": "MySQL 8.0 (MariaDB 10.11 is the MySQL-family server installable here)",
        }
        facts.update(self.variables(names))
        facts["requested"] = {
            "tls": self.tls,
            "cert_type": self.cert_type if self.tls != "off" else None,
            "encryption": self.encryption,
            "audit": self.audit,
            "binlog": self.binlog,
            "buffer_pool": self.buffer_pool,
            "extra_options": self.extra_options,
        }
        facts |= self.limit_facts()
        facts["cpu_accounting"] = self.cpu_method
        if self.tls != "off" and self.endpoint is not None:  # what a client actually negotiates
            facts["negotiated_tls"] = negotiated_tls(self.endpoint)
        facts["endpoint"] = self.endpoint.as_dict() if self.endpoint else None
        return facts
