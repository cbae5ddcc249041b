"""Servers the user names (their MongoDB, MySQL, RDS): same interface as embedded ones, nothing started
or stopped. Credentials come from an environment variable or a file; entering the context checks that
the server is reachable and the credentials work, before any load."""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from secoverhead.core.errors import AuthenticationError, ConfigError, UnreachableServerError
from secoverhead.core.paths import file_problem
from secoverhead.core.secrets import Secret, redact, secret_from
from secoverhead.host.environment import loopback
from secoverhead.host.metrics import background_cores
from secoverhead.servers import labels, ownership
from secoverhead.servers.base import Server
from secoverhead.servers.builds import identified
from secoverhead.servers.counters import MYSQL_NOTE, WHOLE_HOST_HERE, mongo_server_cpu
from secoverhead.servers.endpoints import ER_BAD_DB_ERROR, MYSQL_FACTS, MongoEndpoint, MySQLEndpoint, session_tls
from secoverhead.servers.remote_cpu import CpuSpec, check_source, remote_cpu


def _check_reachable(host: str, port: int, timeout: float) -> None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except (OSError, UnicodeError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise UnreachableServerError(f"cannot reach {host}:{port}: {why}") from None


def _check_file(path: str | Path | None, what: str) -> Path | None:
    if path is None:
        return None
    if problem := file_problem(path):
        raise ConfigError(f"{what} {str(path)[:120]}: {problem}")
    return Path(path).expanduser().resolve()


def _check_ca(path: str | Path | None) -> Path | None:
    """A CA file that exists and holds at least one certificate."""
    p = _check_file(path, "CA certificate file")
    if p is not None:
        try:
            ssl.create_default_context(cafile=str(p))
        except (ssl.SSLError, ValueError, OSError) as exc:
            raise ConfigError(f"CA certificate file {p} holds no usable certificate: {exc}") from None
    return p


def _password(env: str | None, file: str | Path | None) -> Secret:
    if env is None and file is None:
        raise ConfigError("name where the password lives: password_env=VAR or password_file=PATH")
    return secret_from(env=env, file=file)


def _open_remote_cpu(server: Server, engine: str, hosts: Sequence[str]) -> None:
    """Server CPU from the DBA's host (/proc over SSH, an exporter), and its rate before any load of ours. A whole
    host's CPU (node_exporter) is the server's only on a host the load does not run on."""
    source = remote_cpu(CpuSpec.parse("server_cpu", server.server_cpu), engine, server.ssh_key, server.known_hosts)
    server._cleanups.append(source.close)
    if getattr(source, "whole_host", False) and any(loopback(h) for h in hosts):
        server.counters_note = WHOLE_HOST_HERE.format(url=source.spec.url)
        return
    server.background_cores = background_cores(source)
    server.counters = source


def uri_hosts(uri: str) -> list[str]:
    """The hosts a mongodb:// URI names (a mongodb+srv:// name is resolved by DNS: another host, as named)."""
    netloc = urlsplit(uri).netloc.rsplit("@", 1)[-1]
    return [h.rsplit(":", 1)[0] if not h.startswith("[") else h.split("]")[0] + "]" for h in netloc.split(",")]


@dataclass(eq=False, repr=False, kw_only=True)
class ExternalMySQL(Server):
    """A MySQL-protocol server the user names. tls: whether the load (and the checking connection) uses TLS;
    plain_too: the run also needs plain TCP (a TLS-off arm); tables: the tables the run will create, fill or
    drop in the database, refused at entry when one exists that the project did not create."""

    kind: ClassVar[str] = "external-mysql"
    embedded: ClassVar[bool] = False

    host: str
    port: int = 3306
    user: str
    password_env: str | None = None  # where the password is read (a variable's or a file's name, never the value)
    password_file: str | Path | None = None
    database: str | None = None
    ca_file: str | Path | None = None
    client_cert: str | Path | None = None
    client_key: str | Path | None = None
    tls: bool = False
    connect_timeout: float = 5.0
    instance_class: str | None = None
    plain_too: bool = False
    tables: Sequence[str] = ()
    encryption: str | None = None  # "on" / "off": the user's label, checked against the server before any load
    server_cpu: str = "none"  # where its CPU is read: ssh://host/mysqld, an exporter's http:// page, or "none"
    ssh_key: str = ""  # with ssh://: the private key file SSH logs in with (a passphrase: from ssh-agent)
    known_hosts: str = ""  # with ssh://: a known_hosts file (else ssh's own)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.port, self.tables = int(self.port), tuple(self.tables)
        self.ca_file = _check_ca(self.ca_file)
        self.client_cert = _check_file(self.client_cert, "client certificate file")
        self.client_key = _check_file(self.client_key, "client key file")
        self._password_source = (self.password_env, self.password_file)
        self.endpoint: MySQLEndpoint | None = None
        check_source("server_cpu", self.server_cpu, "MySQL", self.ssh_key)
        self.counters_note = MYSQL_NOTE

    def _start(self) -> None:
        password = _password(*self._password_source)
        _check_reachable(self.host, self.port, self.connect_timeout)
        self.endpoint = MySQLEndpoint(
            host=self.host,
            port=self.port,
            user=self.user,
            password=password,
            database=self.database,
            ca_file=self.ca_file,
            client_cert=self.client_cert,
            client_key=self.client_key,
            send_client_cert=self.client_cert is not None,
            tls_available=self.tls,
            tls_required=False,
        )
        self._facts = self._query_facts()
        if self.server_cpu != "none":
            _open_remote_cpu(self, "MySQL", [self.host])

    def _query_facts(self) -> dict[str, Any]:
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import mysql.connector

        conn = self._connect(self.tls)
        facts: dict[str, Any] = {}
        try:
            cur = conn.cursor()
            for name in MYSQL_FACTS:
                with contextlib.suppress(mysql.connector.Error):
                    cur.execute(f"SELECT @@{name}")
                    facts[name] = cur.fetchone()[0]
            facts.update({f"check_connection_{k}": v for k, v in session_tls(conn).items()})
            if self.tables:
                ownership.check(conn, self.database or "sbtest", self.tables)
            if self.encryption:
                facts["encryption_checked"] = self._check_encryption(conn)
        finally:
            conn.close()
        if self.tls and self.plain_too:
            self._connect(False).close()
        return facts

    def _check_encryption(self, conn: Any) -> dict[str, Any]:
        """The declared encryption state read back from the server (a mismatch: LabelMismatch, before any load)."""
        database = self.database or "sbtest"
        state = labels.encryption_state(conn, database, self.tables)
        labels.check_encryption(state, self.encryption, self.tables, f"{self.host}:{self.port}")
        return {"declared": self.encryption, **state.as_dict()}

    def _connect(self, tls: bool):
        """A checking connection; a refusal says whether TLS, the password or the network is the cause."""
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import mysql.connector
        from mysql.connector import errorcode

        try:
            return self.endpoint.connect(tls=tls, connection_timeout=int(self.connect_timeout))
        except mysql.connector.Error as exc:
            msg = redact(str(getattr(exc, "msg", "") or exc).splitlines()[0][:200])
            denied = exc.errno in (errorcode.ER_ACCESS_DENIED_ERROR, errorcode.ER_DBACCESS_DENIED_ERROR, 3159)
            if denied and not tls and self._tls_works():
                raise ConfigError(
                    f"{self.host}:{self.port} refuses plain TCP for user {self.user!r} and accepts TLS (it requires "
                    + (
                        "secure transport), and this study also runs a plain arm: run it against a server that "
                        "accepts both"
                        if self.tls
                        else "secure transport): set -p mysql_tls true"
                    )
                ) from None
            if exc.errno in (ER_BAD_DB_ERROR, errorcode.ER_DBACCESS_DENIED_ERROR):
                # MySQL 8 answers an account without rights on a database that does not exist with 1044, as for one
                # that exists: the cause is the database either way, and the login itself worked
                raise ConfigError(
                    f"{self.host}:{self.port}: user {self.user!r} logged in but has no database "
                    f"{self.endpoint.database!r} to use ({msg}): create it and grant it, or name another with "
                    "-p mysql_database"
                ) from None
            if denied:
                raise AuthenticationError(f"{self.host}:{self.port} rejected user {self.user!r}: {msg}") from None
            if "certificate" in msg.lower() or "ssl" in msg.lower() or "tls" in msg.lower():
                raise ConfigError(f"TLS to {self.host}:{self.port} failed (check mysql_ca_file): {msg}") from None
            raise UnreachableServerError(f"cannot connect to {self.host}:{self.port}: {msg}") from None

    def _tls_works(self) -> bool:
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import mysql.connector

        try:
            args = self.endpoint.connect_args(tls=False, connection_timeout=int(self.connect_timeout))
            args.update(ssl_disabled=False, ssl_verify_cert=False)
            mysql.connector.connect(**args).close()
            return True
        except mysql.connector.Error:
            return False

    def target_spec(self) -> dict[str, Any]:
        """How to reach this server again later (a journal's undo): never the password, only where it lives."""
        env, file = self._password_source
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password_env": env,
            "password_file": str(file) if file else None,
            "ca_file": str(self.ca_file) if self.ca_file else None,
            "tls": self.tls,
        }

    def describe(self) -> dict[str, Any]:
        version = str(self._facts.get("version", ""))
        return {
            "engine": "MariaDB" if "mariadb" in version.lower() else "MySQL",
            "build": identified("MySQL", version),
            "embedded": False,
            "kind": self.kind,
            "instance_class": self.instance_class,
            **self._facts,
            "server_cpu": self.cpu_method,
            "server_cpu_background_cores": self.background_cores,
            "endpoint": self.endpoint.as_dict(),
        }


def _without_auth(client: Any, uri: str) -> None:
    """A server said to run without authentication lists its databases to a client that did not log in."""
    from pymongo import errors

    try:
        client.admin.command("listDatabases", nameOnly=True)
    except errors.OperationFailure as exc:
        if exc.code != 13:  # Unauthorized
            raise
        raise ConfigError(
            f"the MongoDB at {uri} requires authentication (it refused listDatabases to a client that did not log "
            "in): name a server without it"
        ) from None


@dataclass(eq=False, repr=False, kw_only=True)
class ExternalMongo(Server):
    """A MongoDB the user names by a URI without credentials (e.g. mongodb://db.example:27017/?tls=false).

    TLS on/off is chosen per client (tls=True/False), so arms need a server that accepts both
    (net.tls.mode allowTLS/preferTLS) or a second URI run.
    """

    kind: ClassVar[str] = "external-mongo"
    embedded: ClassVar[bool] = False

    uri: str
    username: str | None = None
    password_env: str | None = None  # where the password is read (a variable's or a file's name, never the value)
    password_file: str | Path | None = None
    mechanisms: tuple[str, ...] = ("SCRAM-SHA-256",)
    auth_source: str = "admin"
    ca_file: str | Path | None = None
    connect_timeout: float = 5.0
    instance_class: str | None = None
    collections: Sequence[str] = ()  # database.collection the run fills: refused at entry if not the project's
    server_cpu: str = "serverStatus"  # where its CPU is read: serverStatus (servers/counters.py), ssh://, http://, none
    ssh_key: str = ""  # as ExternalMySQL's
    known_hosts: str = ""
    auth_off: bool = False  # the user says it runs without authentication: read back at entry, not trusted

    def __post_init__(self) -> None:
        super().__post_init__()
        self.collections = tuple(self.collections)
        parts = urlsplit(self.uri)
        if parts.scheme not in ("mongodb", "mongodb+srv"):
            raise ConfigError(f"MongoDB URI must start with mongodb:// or mongodb+srv://, got {parts.scheme!r}")
        if "@" in parts.netloc:
            raise ConfigError(
                "put no credentials in the MongoDB URI: give username= and password_env= or password_file= instead"
            )
        self.mechanisms = tuple(self.mechanisms)
        self.ca_file = _check_ca(self.ca_file)
        self._password_source = (self.password_env, self.password_file)
        self.endpoint: MongoEndpoint | None = None
        self.tls_error = ""
        check_source("server_cpu", self.server_cpu, "MongoDB", self.ssh_key)

    def _start(self) -> None:
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import pymongo
        from pymongo import errors

        password = _password(*self._password_source) if self.username else None
        users = {m: self.username for m in self.mechanisms} if self.username else {}
        self.endpoint = MongoEndpoint(
            host="",
            port=None,
            ca_file=self.ca_file,
            users=users,
            password=password,
            auth_source=self.auth_source,
            uri=self.uri,
        )
        kwargs = {"serverSelectionTimeoutMS": int(self.connect_timeout * 1000)}
        try:  # a mongodb+srv:// URI is resolved here (DNS SRV and TXT): a name that does not resolve ends here
            client = pymongo.MongoClient(
                **self.endpoint.client_args(mechanism=self.mechanisms[0] if users else None, **kwargs)
            )
        except (errors.ConfigurationError, errors.InvalidURI) as exc:
            why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise UnreachableServerError(f"cannot use MongoDB at {self.uri}: {why}") from None
        try:
            self._build_info = client.admin.command("buildInfo")
            if users:
                client.admin.command("connectionStatus")
            if self.auth_off:
                _without_auth(client, self.uri)
            ownership.mongo_check(client, self.collections)
        except errors.OperationFailure as exc:
            if exc.code == 18:
                raise AuthenticationError(f"MongoDB rejected user {self.username!r}: {exc}") from None
            why = str(exc.details.get("errmsg") if exc.details else exc).splitlines()[0][:200]
            raise ConfigError(
                f"MongoDB at {self.uri} refused user {self.username!r}: {why} (code {exc.code})"
            ) from None
        except errors.ServerSelectionTimeoutError as exc:
            raise UnreachableServerError(f"cannot reach MongoDB at {self.uri}: {exc}") from None
        finally:
            client.close()
        self.tls_error = self._probe_tls(kwargs)
        self._read_counters(self.mechanisms[0] if users else None)

    def _read_counters(self, mechanism: str | None) -> None:
        """Server CPU from its serverStatus or the DBA's host where asked for and allowed, and its rate before any
        load of ours."""
        if self.server_cpu == "none":
            self.counters_note = "server_cpu none"
            return
        if self.server_cpu != "serverStatus":
            _open_remote_cpu(self, "MongoDB", uri_hosts(self.uri))
            return
        source, self.counters_note = mongo_server_cpu(self.endpoint, mechanism)
        if source is not None:
            self._cleanups.append(source.close)
            self.background_cores = background_cores(source)
            self.counters = source

    def _probe_tls(self, kwargs: dict[str, Any]) -> str:
        """Whether a TLS client gets through ("" if so, else why): arms with TLS need it."""
        # deferred: studies import this; the CLI checks their parameters before heavy modules load
        import pymongo

        try:
            client = pymongo.MongoClient(**self.endpoint.client_args(tls=True, **kwargs))
        except Exception as exc:  # the URI resolved a moment ago; whatever stops it now stops TLS too
            return f"{type(exc).__name__}: {str(exc)[:200]}"
        try:
            client.admin.command("ping")
            return ""
        except Exception as exc:  # any refusal (no TLS listener, unverifiable certificate) means the same here
            why = str(exc).split(", Timeout")[0][:200]
            return f"{type(exc).__name__}: {why}" + ("" if self.ca_file else " (a CA file: mongo_ca_file)")
        finally:
            client.close()

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "MongoDB",
            "build": identified(
                "MongoDB", str(self._build_info.get("version", "")), ferretdb="ferretdbVersion" in self._build_info
            ),
            "embedded": False,
            "kind": self.kind,
            "instance_class": self.instance_class,
            "version": self._build_info.get("version"),
            "openssl": self._build_info.get("openssl"),
            "tls_accepted": not self.tls_error,
            "authentication": "off (read back: it lists databases to a client that did not log in)"
            if self.auth_off
            else (f"SCRAM as {self.username}" if self.username else "none given"),
            "server_cpu": self.cpu_method,
            "server_cpu_background_cores": self.background_cores,
            "endpoint": self.endpoint.as_dict(),
        }
