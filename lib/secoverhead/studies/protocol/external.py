"""How a study names a MySQL or MongoDB server it did not start (the user's), checked before anything starts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import urlsplit

from secoverhead.core.errors import ConfigError
from secoverhead.core.params import param
from secoverhead.servers import ExternalMongo, ExternalMySQL
from secoverhead.servers.remote_cpu import check_source
from secoverhead.studies.protocol.params import _check_host

CPU_SOURCES = (
    "ssh://[user@]host[:port][/process or PID] (/proc over SSH with server_cpu_ssh_key), or an exporter's "
    "http://host:port/metrics[#group] (process-exporter's group; node_exporter: the whole host's CPU)"
)


@dataclass
class ServerCpuParams:
    """Where a named server's CPU is read on its host: the key and known hosts an ssh:// source logs in with."""

    server_cpu_ssh_key: str = param("", "with an ssh:// CPU source: the private key file (a passphrase: ssh-agent)")
    server_cpu_ssh_known_hosts: str = param("", "with an ssh:// CPU source: a known_hosts file (else ssh's own)")

    def check_cpu_source(self, name: str, value: str, engine: str) -> None:
        check_source(name, value, engine, self.server_cpu_ssh_key)


@dataclass
class ExternalMySQLParams(ServerCpuParams):
    """How a study names a MySQL-protocol server it did not start (empty mysql_host: start MariaDB)."""

    mysql_host: str = param("", "your MySQL/MariaDB host (empty: the study starts its own)", pattern=r"[^\s/@]*")
    mysql_port: int = param(3306, "its port", min=1, max=65535)
    mysql_user: str = param("", "user the load runs as", pattern=r"[^\s]{0,80}")
    mysql_password_env: str = param(
        "", "environment variable holding that user's password", pattern=r"[A-Za-z_][A-Za-z0-9_]*"
    )
    mysql_password_file: str = param("", "or a file holding it (first line)")
    mysql_database: str = param(
        "sbtest", "database the load uses (created tables only there)", pattern=r"[A-Za-z0-9_$]{1,64}"
    )
    mysql_ca_file: str = param(
        "", "CA certificate to verify TLS with (without one, TLS is not verified: said in the report)"
    )
    mysql_tls: bool = param(
        False, "TDE and audit: run the load on your server over TLS (the tls and auth studies run both ways)"
    )
    mysql_client_cert_file: str = param(
        "", "with mysql_tls: a client certificate your server's CA signed (sysbench 1.0 connects over TLS only so)"
    )
    mysql_client_key_file: str = param("", "with mysql_tls: that certificate's key")
    mysql_server_cpu: str = param(
        "none",
        "where your MySQL's CPU is read: " + CPU_SOURCES + "; none: CPU claims not testable (its own statement CPU "
        "counter leaves out connections and TLS)",
        pattern=r"none|(ssh|https?)://\S+",
    )

    def check_mysql(self) -> None:
        _check_host("mysql_host", self.mysql_host)
        self.check_cpu_source("mysql_server_cpu", self.mysql_server_cpu, "MySQL")
        if self.mysql_tls and not (self.mysql_ca_file and self.mysql_client_cert_file and self.mysql_client_key_file):
            raise ConfigError(
                "mysql_tls: sysbench 1.0 connects over TLS only with your server's CA and a client certificate and "
                "key that CA signed: set mysql_ca_file, mysql_client_cert_file and mysql_client_key_file"
            )
        if self.mysql_host and not self.mysql_user:
            raise ConfigError("with mysql_host, set mysql_user (and mysql_password_env or mysql_password_file)")
        if self.mysql_host and not (self.mysql_password_env or self.mysql_password_file):
            raise ConfigError(
                "with mysql_host, name where the password lives: mysql_password_env or mysql_password_file"
            )

    def external_mysql(
        self,
        *,
        tls: bool | None = None,
        plain_too: bool = False,
        tables: Sequence[str] = (),
        instance_class: str = "",
        user: str = "",
        password_env: str = "",
        password_file: str = "",
    ) -> ExternalMySQL:
        """The user's server, unstarted. tls: None for mysql_tls; tables: what the run creates there (entering
        refuses when one of them exists and is not the project's)."""
        return ExternalMySQL(
            host=self.mysql_host,
            port=self.mysql_port,
            user=user or self.mysql_user,
            password_env=(password_env or self.mysql_password_env) or None,
            password_file=(password_file or self.mysql_password_file) or None,
            database=self.mysql_database or None,
            ca_file=self.mysql_ca_file or None,
            client_cert=self.mysql_client_cert_file or None,
            client_key=self.mysql_client_key_file or None,
            tls=self.mysql_tls if tls is None else tls,
            plain_too=plain_too,
            tables=tables,
            instance_class=instance_class or None,
            server_cpu=self.mysql_server_cpu,
            ssh_key=self.server_cpu_ssh_key,
            known_hosts=self.server_cpu_ssh_known_hosts,
        )


def check_mongo_uri(name: str, uri: str) -> None:
    """A MongoDB URI the user gives: its scheme, a host, a port in range, and no credentials in it."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"{name} is not a valid URI: {exc}") from None
    if parts.scheme not in ("mongodb", "mongodb+srv"):
        raise ConfigError(f"{name} must start with mongodb:// or mongodb+srv://, got {parts.scheme or 'no'} scheme")
    if "@" in parts.netloc:
        raise ConfigError(f"{name} must not hold credentials: use mongo_username and mongo_password_env")
    if not parts.hostname:
        raise ConfigError(f"{name} names no host")
    _check_host(f"{name} host", parts.hostname)
    if port is not None and not 0 < port < 65536:
        raise ConfigError(f"{name} port {port} is outside 1..65535")


@dataclass
class ExternalMongoParams(ServerCpuParams):
    """How a study names a MongoDB it did not start (empty mongo_uri: the study starts its own)."""

    mongo_uri: str = param(
        "", "mongodb://host:port/ of your MongoDB, without credentials (empty: the study starts its own)"
    )
    mongo_username: str = param("", "user to authenticate as", pattern=r"[^\s]{0,80}")
    mongo_password_env: str = param("", "environment variable holding its password", pattern=r"[A-Za-z_][A-Za-z0-9_]*")
    mongo_password_file: str = param("", "or a file holding it (first line)")
    mongo_ca_file: str = param("", "CA certificate to verify TLS with")
    mongo_server_cpu: str = param(
        "serverStatus",
        "where your MongoDB's CPU is read: its serverStatus (the mongod process's user and system time; the account "
        "needs clusterMonitor; everything the server does meanwhile is in it, its rate before the load recorded), "
        "or " + CPU_SOURCES + ", or none (CPU claims: not testable)",
        pattern=r"serverStatus|none|(ssh|https?)://\S+",
    )

    def check_mongo(self) -> None:
        if not self.mongo_uri:
            return
        self.check_cpu_source("mongo_server_cpu", self.mongo_server_cpu, "MongoDB")
        check_mongo_uri("mongo_uri", self.mongo_uri)
        if self.mongo_username and not (self.mongo_password_env or self.mongo_password_file):
            raise ConfigError(
                "with mongo_username, name where the password lives: mongo_password_env or mongo_password_file"
            )

    # collections (database.collection) the study creates or fills in the user's MongoDB
    MONGO_COLLECTIONS: ClassVar[tuple[str, ...]] = ()

    def external_mongo(self, mechanisms: Sequence[str] = ("SCRAM-SHA-256",)) -> ExternalMongo:
        """The user's MongoDB, unstarted; entering refuses when a collection the study fills exists and is not the
        project's."""
        return ExternalMongo(
            uri=self.mongo_uri,
            username=self.mongo_username or None,
            password_env=self.mongo_password_env or None,
            password_file=self.mongo_password_file or None,
            mechanisms=tuple(mechanisms),
            ca_file=self.mongo_ca_file or None,
            collections=self.MONGO_COLLECTIONS,
            server_cpu=self.mongo_server_cpu,
            ssh_key=self.server_cpu_ssh_key,
            known_hosts=self.server_cpu_ssh_known_hosts,
        )


class BothEngines(ExternalMySQLParams, ExternalMongoParams):
    """A study of MongoDB and MySQL: each engine embedded, or the user's server when named."""

    mongo_enabled: bool
    mysql_enabled: bool

    def mongo_mechanisms_used(self) -> tuple[str, ...]:
        raise NotImplementedError

    # tables the study creates in the user's MySQL database
    MYSQL_TABLES: ClassVar[tuple[str, ...]] = ()

    def both_ways_mysql(self) -> ExternalMySQL:
        """The user's MySQL for a study with plain and TLS arms: both must get through."""
        return self.external_mysql(tls=True, plain_too=True, tables=self.MYSQL_TABLES)

    def external_servers(self) -> list:
        out = []
        if self.mysql_enabled and self.mysql_host:
            out.append(self.both_ways_mysql())
        if self.mongo_enabled and self.mongo_uri:
            out.append(self.external_mongo(self.mongo_mechanisms_used()))
        return out

    def check_engines(self, *others: str) -> None:
        flags = ["mongo_enabled", "mysql_enabled", *others]
        if not any(getattr(self, f) for f in flags):
            raise ConfigError(f"enable at least one of {', '.join(flags)}")
        if self.mysql_tls:
            raise ConfigError("mysql_tls is for TDE and audit: this study runs its own plain and TLS arms")
        self.check_mysql()
        self.check_mongo()
