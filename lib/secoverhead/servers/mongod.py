"""A real mongod (4.2.6 or 6.0.5, the builds `make setup` fetches) started on loopback: one port that accepts plain
and TLS clients (preferTLS, no client certificate needed), and with auth on, one SCRAM user per mechanism plus an
administrator made through the localhost exception."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pymongo.errors import OperationFailure

from secoverhead.core.errors import ConfigError, ServerStartError
from secoverhead.core.secrets import generate_password
from secoverhead.host.process import ServerProcess, pick_port
from secoverhead.servers.base import Server
from secoverhead.servers.certs import KEY_TYPES, CertificateSet, make_certificates, probe_tls
from secoverhead.servers.endpoints import MongoEndpoint
from secoverhead.servers.engines import BUILDS, MONGOD_6_0, Build
from secoverhead.servers.labels import transport_counts

USERS = {"SCRAM-SHA-256": "bench_sha256", "SCRAM-SHA-1": "bench_sha1"}
ADMIN = "secoverhead_admin"
USER_EXISTS = 51003  # mongod's error code for createUser of a user that exists


@dataclass(eq=False, repr=False, kw_only=True)
class MongodServer(Server):
    """A throwaway mongod. build: "mongod-6.0.5" or "mongod-4.2.6"; tls: accept TLS too (preferTLS) with an
    rsa or ecdsa certificate (cert_type); auth: SCRAM enforced, with a user per mechanism (readWrite on every
    database) and an administrator (root)."""

    kind: ClassVar[str] = "mongod"

    build: str = MONGOD_6_0.name
    tls: bool = True
    cert_type: str = "rsa"
    auth: bool = False
    certificates: CertificateSet | None = None
    port: int | None = None
    cache_gb: float = 0.25

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.build not in BUILDS or not self.build.startswith("mongod"):
            raise ConfigError(f"build={self.build!r} is not a mongod build ({', '.join(BUILDS)})")
        if self.cert_type not in KEY_TYPES:
            raise ConfigError(f"cert_type={self.cert_type!r} is not one of {', '.join(KEY_TYPES)}")
        self.engine: Build = BUILDS[self.build]
        self.binary = self.engine.require()
        self.endpoint: MongoEndpoint | None = None
        self.admin_endpoint: MongoEndpoint | None = None
        self._status_client: Any = None

    def _start(self) -> None:
        port = pick_port(self.port)
        argv = self.base_argv(port, "data", tls_mode="preferTLS")
        self._prepare_certificates()
        self.endpoint = MongoEndpoint(host=self.listen_host, port=port, tls_port=port if self.tls else None,
                                      ca_file=self.certificates.ca_cert if self.certificates else None)  # fmt: skip
        if self.auth and self.link is not None:
            # Behind a link the client is not on the server's localhost, so the localhost exception that creates
            # the first user does not apply: the users are made before auth is on, then it restarts with auth.
            self._launch(argv, self.endpoint)
            self._create_users()
            self.processes.pop().stop()
        self._launch(argv + (["--auth"] if self.auth else []), self.endpoint)
        if self.auth and self.link is None:
            self._create_users()

    def base_argv(self, port: int, data: str, *, tls_mode: str) -> list[str]:
        """mongod on `port` with its data in the run directory's `data` folder, its log beside it, and TLS offered
        in `tls_mode` (preferTLS, allowTLS) when the server has TLS."""
        d = self.run_dir
        (d / data).mkdir()
        argv = [str(self.binary), "--dbpath", str(d / data), "--bind_ip", self.listen_host, "--port", str(port)]
        argv += ["--wiredTigerCacheSizeGB", str(self.cache_gb), "--nounixsocket", "--logpath", str(d / f"{data}.log")]
        if self.tls:
            argv += ["--tlsMode", tls_mode, "--tlsCertificateKeyFile", str(d / "certs" / "server-both.pem")]
            argv += ["--tlsAllowConnectionsWithoutCertificates"]
        return argv

    def _prepare_certificates(self) -> None:
        if not self.tls:
            return
        d = self.run_dir
        if self.certificates is None:
            self.certificates = make_certificates(d / "certs", self.cert_type, hosts=(self.listen_host,))
        both = d / "certs" / "server-both.pem"
        both.write_bytes(self.certificates.server_cert.read_bytes() + self.certificates.server_key.read_bytes())
        both.chmod(0o600)

    def _launch(self, argv: list[str], ready: MongoEndpoint) -> None:
        """One mongod process, waited for until `ready` answers (its log quoted when it does not start)."""
        d = self.run_dir
        env = {"LD_LIBRARY_PATH": self.engine.library_path()} if self.engine.libraries else {}
        log = Path(argv[argv.index("--logpath") + 1])
        proc = ServerProcess("mongod", self.command(argv), log_path=log.with_suffix(".stdout"), cwd=d, env=env,
                             groups=self.groups())  # fmt: skip
        self.processes.append(proc)
        proc.wait_ready(ready.answers, self.startup_timeout, error_log=log)

    def _create_users(self) -> None:
        """The administrator (through the localhost exception when auth is on), then a user per mechanism through
        it."""
        admin_pw, bench_pw = generate_password(), generate_password()
        e = self.endpoint
        common = {"host": e.host, "port": e.port, "tls_port": e.tls_port, "ca_file": e.ca_file}
        first = self.endpoint  # through the localhost exception
        self._on_primary(functools.partial(self._user, first, ADMIN, admin_pw.reveal(), roles=["root"]))
        self.admin_endpoint = MongoEndpoint(**common, users={"SCRAM-SHA-256": ADMIN}, password=admin_pw)
        roles = [{"role": "readWriteAnyDatabase", "db": "admin"}]
        try:
            for mech, user in USERS.items():
                made = functools.partial(self._user, None, user, bench_pw.reveal(), roles=roles, mechanisms=[mech])
                self._on_primary(made)
        except Exception as exc:
            raise ServerStartError(f"{self.engine.server}: creating the SCRAM users failed: {exc}") from None
        self.endpoint = MongoEndpoint(**common, users=dict(USERS), password=bench_pw)

    def _user(self, through: MongoEndpoint | None, name: str, pwd: str, **spec: Any) -> None:
        """The user made (through `through`, else as the administrator), or set to this password and these roles
        where it exists: a retried write whose first try was applied (its answer lost to an election) ends as the
        first try would have."""
        client = through.client() if through is not None else self.admin()
        try:
            try:
                client.admin.command("createUser", name, pwd=pwd, **spec)
            except OperationFailure as exc:
                if exc.code != USER_EXISTS:
                    raise
                client.admin.command("updateUser", name, pwd=pwd, **spec)
        finally:
            client.close()

    def _on_primary(self, write: Callable[[], None]) -> None:
        """A set-up write (one server: its only member is its primary; a replica set retries it after an
        election)."""
        write()

    def transport(self) -> dict[str, int]:
        """Connections created so far and, of them, those per TLS version (servers.labels.transport_counts), read
        on one kept client so that reading adds no connection of its own."""
        if self._status_client is None:  # polled, so it opens no second (round-trip) monitoring connection later
            self._status_client = self.admin(serverMonitoringMode="poll")
        return transport_counts(self._status_client.admin.command("serverStatus"))

    def stop(self) -> None:
        """The kept client first (closed while its server still answers), then the server."""
        if self._status_client is not None:
            self._status_client, client = None, self._status_client
            client.close()
        super().stop()

    def admin(self, **extra: Any):
        """A client with every right (the administrator when auth is on), for set-up and checks."""
        if self.admin_endpoint is None:
            return self.endpoint.client(**extra)
        return self.admin_endpoint.client(mechanism="SCRAM-SHA-256", **extra)

    def describe(self) -> dict[str, Any]:
        client = self.admin()
        try:
            info = client.admin.command("buildInfo")
        finally:
            client.close()
        return {
            "engine": "MongoDB",
            "server": self.engine.server,
            "embedded": True,
            "kind": self.kind,
            "version": info.get("version"),
            "openssl": (info.get("openssl") or {}).get("running", self.engine.openssl),
            "tls": self.tls,
            "cert_type": self.cert_type if self.tls else None,
            "auth": self.auth,
            "auth_mechanisms": sorted(USERS) if self.auth else [],
            "cpu_accounting": self.cpu_method,
            "endpoint": self.endpoint.as_dict(),
        } | self._negotiated()

    def _negotiated(self) -> dict[str, Any]:
        """What a client negotiates with the TLS port, and the link the server sits behind."""
        facts: dict[str, Any] = {}
        if self.tls:
            e = self.endpoint
            facts["negotiated_tls"] = probe_tls(e.host, e.tls_port, e.ca_file).as_dict()
        if self.link is not None:
            facts["link"] = self.link.describe()
        return facts
