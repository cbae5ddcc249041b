"""Connection details handed to workloads. Passwords are Secrets; as_dict() never includes them."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from secoverhead.core.errors import ConfigError
from secoverhead.core.secrets import Secret

WAIT_BOUND_S = 120  # the longest a client waits to connect, or (pymongo) on one reply: ours take milliseconds


def _public(obj: Any) -> dict[str, Any]:
    out = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, Secret):
            continue
        out[f.name] = str(value) if isinstance(value, Path) else value
    return out


@dataclass(frozen=True)
class MySQLEndpoint:
    """A MySQL-protocol server: MariaDB started here, or a MySQL/MariaDB/RDS the user names."""

    host: str
    port: int
    user: str
    password: Secret = field(repr=False)
    database: str | None = None
    socket: Path | None = None
    ca_file: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    tls_available: bool = False
    tls_required: bool = False
    # a user's server may require one (REQUIRE X509); an embedded server's TLS arms are measured without
    send_client_cert: bool = False

    def connect_args(self, *, tls: bool, verify: bool = True, **extra: Any) -> dict[str, Any]:
        """Keyword arguments for mysql.connector.connect over TCP, TLS on or off explicitly: the connector
        upgrades to TLS silently when the server offers it, and (C extension) silently stays plain when
        it does not."""
        args: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password.reveal(),
            # bounds the connect (the C extension's statements are bounded by the run's own limit, the pipeline's)
            "connection_timeout": WAIT_BOUND_S,
        }
        if self.database:
            args["database"] = self.database
        if tls:
            if not self.tls_available:
                # mysql-connector's C extension would silently fall back to plain TCP.
                raise ConfigError(f"{self.host}:{self.port} does not offer TLS; cannot connect with tls=True")
            if self.ca_file is not None:
                args["ssl_ca"] = str(self.ca_file)
                args["ssl_verify_cert"] = verify
            else:
                args["ssl_verify_cert"] = False
            if self.send_client_cert and self.client_cert and self.client_key:
                args["ssl_cert"], args["ssl_key"] = str(self.client_cert), str(self.client_key)
            args["ssl_disabled"] = False
        else:
            args["ssl_disabled"] = True
        args.update(extra)
        return args

    def connect(self, *, tls: bool, **extra: Any):
        """A mysql.connector connection (C extension when it loads). A plain-TCP login that MySQL 8's
        caching_sha2_password refuses for want of a cached hash is retried once after `cache_login`."""
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import mysql.connector

        try:
            return mysql.connector.connect(**self.connect_args(tls=tls, **extra))
        except mysql.connector.Error as exc:
            if tls or not needs_cached_hash(exc):
                raise
        self.cache_login(**{k: v for k, v in extra.items() if k == "connection_timeout"})
        return mysql.connector.connect(**self.connect_args(tls=tls, **extra))

    def cache_login(self, **extra: Any) -> None:
        """One TLS login, so that the server caches the account's caching_sha2_password hash and later plain-TCP
        logins take its fast path. mysql-connector-python cannot do the RSA key exchange that MySQL 8 otherwise
        asks of a plain login (sysbench's libmariadb does it on its own); a login fills the server's cache and
        changes no setting. The certificate is verified when a CA file is given. A server that offers no TLS
        gets a one-line ConfigError naming the account and the remedies."""
        import mysql.connector

        args = self.connect_args(tls=False, **extra)
        args.update(ssl_disabled=False, ssl_verify_cert=self.ca_file is not None)
        if self.ca_file is not None:
            args["ssl_ca"] = str(self.ca_file)
        try:
            if not server_offers_tls(self.host, self.port):
                raise ConnectionError("the server offers no TLS")
            mysql.connector.connect(**args).close()
        except mysql.connector.Error as exc:
            if exc.errno in LOGGED_IN_BUT:  # the TLS login worked: what refused is the database, said as itself
                raise
            self._no_cached_hash(exc)
        except OSError as exc:
            self._no_cached_hash(exc)

    def _no_cached_hash(self, exc: Exception) -> None:
        why = str(getattr(exc, "msg", "") or exc).splitlines()[0][:160]
        raise ConfigError(
            f"{self.user!r}@{self.host}:{self.port} uses caching_sha2_password and the server has not cached its "
            "hash, so a plain-TCP login needs the RSA key exchange, which the Python MySQL client cannot do; a "
            f"TLS login to cache it failed ({why}). Remedies: let the server offer TLS, or log in once over TLS "
            f"before the run, or give the account mysql_native_password (ALTER USER '{self.user}'@'%' IDENTIFIED "
            "WITH mysql_native_password BY '...')"
        ) from None

    def as_dict(self) -> dict[str, Any]:
        return _public(self)


BENCH_USER = "bench"  # the account an embedded MySQL-family server's load runs as: database rights only
BENCH_DATABASE = "sbtest"


def bench_endpoint(port: int, password: Secret, socket_path: Path | None, certificates: Any, *, tls: bool,
                   tls_required: bool = False) -> MySQLEndpoint:  # fmt: skip
    """The bench account's endpoint on a MySQL-family server started here (MariaDB, MySQL 8)."""
    c = certificates
    return MySQLEndpoint(
        host="127.0.0.1",
        port=port,
        user=BENCH_USER,
        password=password,
        database=BENCH_DATABASE,
        socket=socket_path,
        ca_file=c.ca_cert if c else None,
        client_cert=c.client_cert if c else None,
        client_key=c.client_key if c else None,
        tls_available=tls,
        tls_required=tls_required,
    )


@dataclass(frozen=True)
class MongoEndpoint:
    """A MongoDB-wire server: FerretDB started here, or a MongoDB the user names."""

    host: str
    port: int | None
    tls_port: int | None = None
    ca_file: Path | None = None
    # mechanism ("SCRAM-SHA-1", "SCRAM-SHA-256") -> user name; empty when auth is off
    users: dict[str, str] = field(default_factory=dict)
    password: Secret | None = field(default=None, repr=False)
    auth_source: str = "admin"
    uri: str | None = None  # external servers and replica sets: a URI without credentials
    direct: bool = True  # talk to the one server named; False: discover the replica set the URI seeds

    @property
    def auth(self) -> bool:
        return bool(self.users)

    def client_args(self, *, tls: bool = False, mechanism: str | None = None, **extra: Any) -> dict[str, Any]:
        """Keyword arguments for pymongo.MongoClient (credentials passed as arguments, never in a URI)."""
        if tls and self.tls_port is None and self.uri is None:
            raise ConfigError("this MongoDB endpoint has no TLS listener")
        if not tls and self.port is None and self.uri is None:
            raise ConfigError("this MongoDB endpoint has no plain listener")
        if self.uri is not None:
            args: dict[str, Any] = {"host": self.uri}
        else:
            args = {"host": self.host, "port": self.tls_port if tls else self.port}
        args.update(serverSelectionTimeoutMS=5000, socketTimeoutMS=WAIT_BOUND_S * 1000)
        if self.direct:
            args["directConnection"] = True
        if tls:
            args["tls"] = True
            if self.ca_file is not None:
                args["tlsCAFile"] = str(self.ca_file)
        if mechanism is not None:
            if mechanism not in self.users:
                raise ConfigError(f"no user for auth mechanism {mechanism}; have {sorted(self.users) or 'none'}")
            args.update(
                username=self.users[mechanism],
                password=self.password.reveal(),
                authSource=self.auth_source,
                authMechanism=mechanism,
            )
        args.update(extra)
        return args

    def client(self, *, tls: bool = False, mechanism: str | None = None, **extra: Any):
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import pymongo

        return pymongo.MongoClient(**self.client_args(tls=tls, mechanism=mechanism, **extra))

    def as_dict(self) -> dict[str, Any]:
        return _public(self)

    def answers(self) -> bool:
        """Whether the server answers a ping within half a second (a readiness check while it starts)."""
        client = self.client(serverSelectionTimeoutMS=500, connectTimeoutMS=500)
        try:
            client.admin.command("ping")
            return True
        finally:
            client.close()


@dataclass(frozen=True)
class HttpEndpoint:
    """An HTTP(S) server: nginx started here."""

    host: str
    http_port: int
    https_port: int | None = None
    ca_file: Path | None = None
    path: str = "/"

    def url(self, *, tls: bool) -> str:
        if tls:
            if self.https_port is None:
                raise ConfigError("this HTTP endpoint has no HTTPS listener")
            return f"https://{self.host}:{self.https_port}{self.path}"
        return f"http://{self.host}:{self.http_port}{self.path}"

    def as_dict(self) -> dict[str, Any]:
        return _public(self)


# -- MySQL client helpers: facts a client can learn about its own connection ---------------------------
MYSQL_FACTS = (  # server variables every report records, embedded or external (missing ones are skipped)
    "version",
    "version_comment",
    "version_ssl_library",
    "have_ssl",
    "require_secure_transport",
    "tls_version",
    "ssl_cipher",
    "innodb_encrypt_tables",
    "innodb_encrypt_log",
    "innodb_encrypt_temporary_tables",
    "encrypt_tmp_files",
    "file_key_management_encryption_algorithm",
    "default_table_encryption",
    "general_log",
    "log_output",
    "log_bin",
    "binlog_format",
    "sync_binlog",
    "init_connect",
    "server_audit_logging",
    "server_audit_events",
    "audit_log_policy",
    "innodb_buffer_pool_size",
    "innodb_flush_log_at_trx_commit",
    "innodb_flush_method",
    "max_connections",
)

CLIENT_SSL = 0x0800
ER_BAD_DB_ERROR = 1049  # Unknown database
LOGGED_IN_BUT = (ER_BAD_DB_ERROR, 1044)  # the account logged in; the database is unknown or not its to use
CR_AUTH_PLUGIN_ERR = 2061  # a client-side auth plugin's refusal: caching_sha2_password's "requires secure connection"


def needs_cached_hash(exc: Exception) -> bool:
    """Whether a refused login is MySQL 8's caching_sha2_password asking for a secure channel or the RSA key
    exchange (the account's hash is not in the server's cache: after a restart or FLUSH PRIVILEGES)."""
    text = str(getattr(exc, "msg", "") or exc)
    return getattr(exc, "errno", None) == CR_AUTH_PLUGIN_ERR and "caching_sha2_password" in text


def server_offers_tls(host: str, port: int, timeout: float = 5.0) -> bool:
    """Whether a MySQL-protocol server advertises TLS (CLIENT_SSL in its initial handshake packet)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        packet = b""
        while len(packet) < 4 or len(packet) < 4 + int.from_bytes(packet[:3], "little"):
            chunk = s.recv(4096)
            if not chunk:
                break
            packet += chunk
    body = packet[4:]
    if not body or body[0] != 10:  # protocol version 10; 0xff is an error packet (e.g. host blocked)
        raise ConnectionError(f"{host}:{port} did not send a MySQL handshake: {body[:80]!r}")
    after_version = body.index(b"\0", 1) + 1
    caps_offset = after_version + 4 + 8 + 1  # connection id, auth data part 1, filler
    return bool(int.from_bytes(body[caps_offset : caps_offset + 2], "little") & CLIENT_SSL)


def session_tls(conn) -> dict[str, str]:
    """The TLS version and cipher of one MySQL client connection ('' for both when plain)."""
    cur = conn.cursor()
    cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')")
    rows = dict(cur.fetchall())
    cur.close()
    return {"tls_version": rows.get("Ssl_version", ""), "cipher": rows.get("Ssl_cipher", "")}
