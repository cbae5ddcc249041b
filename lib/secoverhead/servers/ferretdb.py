"""FerretDB (MongoDB wire protocol, SQLite backend) started on loopback: plain and TLS listeners in one
process, auth off or on with SCRAM-SHA-1 and SCRAM-SHA-256 users.

FerretDB stands in for mongod, which is not installable here. It reports itself as MongoDB 7.0, but its
costs are Go's crypto/tls, its own SCRAM and SQLite: results are labelled as FerretDB's.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from secoverhead.core.environ import server_env
from secoverhead.core.errors import ConfigError, ServerStartError
from secoverhead.core.paths import ferretdb_binary
from secoverhead.core.secrets import generate_password
from secoverhead.host.process import ServerProcess, free_ports, pick_port
from secoverhead.servers.base import Server
from secoverhead.servers.certs import KEY_TYPES, CertificateSet, make_certificates, probe_tls
from secoverhead.servers.endpoints import MongoEndpoint
from secoverhead.servers.limits import check_cpu_limit, cpu_limit

MECHANISMS = ("SCRAM-SHA-1", "SCRAM-SHA-256")
USERS = {"SCRAM-SHA-256": "bench_sha256", "SCRAM-SHA-1": "bench_sha1"}


@dataclass(eq=False, repr=False, kw_only=True)
class FerretDBServer(Server):
    """A throwaway FerretDB.

    tls: also open a TLS listener (server certificate only; clients need no certificate)
    cert_type: rsa | ecdsa, or certificates=CertificateSet of your own
    auth: SCRAM enforced (FerretDB's --test-enable-new-auth), with one user per mechanism
    """

    kind: ClassVar[str] = "ferretdb"

    tls: bool = False
    cert_type: str = "rsa"
    certificates: CertificateSet | None = None
    auth: bool = False
    cpu_limit: float | None = None
    port: int | None = None  # the ports asked for (None: free ones)
    tls_port: int | None = None
    binary: str | Path | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        tls, auth, cert_type = self.tls, self.auth, self.cert_type
        if not isinstance(tls, bool) or not isinstance(auth, bool):
            raise ConfigError(f"tls and auth must be true or false, got tls={tls!r} auth={auth!r}")
        if cert_type not in KEY_TYPES:
            raise ConfigError(f"cert_type={cert_type!r} is not one of {', '.join(KEY_TYPES)}")
        if self.certificates is not None:
            self.certificates.check()
        self.binary = Path(self.binary) if self.binary else ferretdb_binary()
        if not self.binary.is_file():
            raise ConfigError(
                f"FerretDB binary not found at {self.binary}: run `make setup` to build it, or set SECOVERHEAD_FERRETDB"
            )
        self.cpu_limit = check_cpu_limit(self.cpu_limit)
        self.limiter = None
        self.endpoint: MongoEndpoint | None = None

    def _start(self) -> None:
        d = self.run_dir
        for sub in ("data", "state"):
            (d / sub).mkdir()
        spare = iter(free_ports(3))  # listener, debug and TLS ports, distinct
        port = pick_port(self.port) if self.port else next(spare)
        argv = [
            str(self.binary),
            "--handler=sqlite",
            f"--sqlite-url=file:{d / 'data'}/",
            f"--state-dir={d / 'state'}",
            f"--listen-addr={self.listen_host}:{port}",
            f"--debug-addr={self.listen_host}:{next(spare)}",
            "--telemetry=disable",
            "--log-level=warn",
        ]
        tls_port = None
        if self.tls:
            if self.certificates is None:
                self.certificates = make_certificates(d / "certs", self.cert_type, hosts=(self.listen_host,))
            tls_port = pick_port(self.tls_port) if self.tls_port else next(spare)
            # No --listen-tls-ca-file: that would make client certificates mandatory.
            argv += [
                f"--listen-tls={self.listen_host}:{tls_port}",
                f"--listen-tls-cert-file={self.certificates.server_cert}",
                f"--listen-tls-key-file={self.certificates.server_key}",
            ]
        env: dict[str, str] = {}  # over the minimal environment of every server (host.process.server_env)
        password = None
        if self.auth:
            password = generate_password()
            argv += ["--test-enable-new-auth", "--setup-database=admin", f"--setup-username={USERS['SCRAM-SHA-256']}"]
            env["FERRETDB_SETUP_PASSWORD"] = password.reveal()  # env, not argv: /proc/*/cmdline is public
        self.limiter = cpu_limit(self.cpu_limit, label=self.kind)
        if self.limiter is not None:
            self._cleanups.append(self.limiter.remove)
        proc = ServerProcess(
            "ferretdb",
            self.command(argv),
            log_path=d / "ferretdb.log",
            cwd=d,
            env=env,
            groups=self.groups(self.limiter.group if self.limiter else None),
            affinity=self.limiter.cpus if self.limiter is not None and self.limiter.group is None else None,
        )
        self.processes.append(proc)
        self.endpoint = MongoEndpoint(
            host=self.listen_host,
            port=port,
            tls_port=tls_port,
            ca_file=self.certificates.ca_cert if self.certificates else None,
            users=dict(USERS) if self.auth else {},
            password=password,
        )
        proc.wait_ready(self.endpoint.answers, self.startup_timeout)
        if self.auth:
            self._create_users()

    def _create_users(self) -> None:
        client = self.endpoint.client(mechanism="SCRAM-SHA-256")
        try:
            client.admin.command(
                "createUser",
                USERS["SCRAM-SHA-1"],
                pwd=self.endpoint.password.reveal(),
                roles=[],
                mechanisms=["SCRAM-SHA-1"],
            )
        except Exception as exc:
            raise ServerStartError(f"FerretDB: creating the SCRAM-SHA-1 user failed: {exc}") from None
        finally:
            client.close()

    def describe(self) -> dict[str, Any]:
        version = subprocess.run(
            [str(self.binary), "--version"], capture_output=True, text=True, env=server_env()
        ).stdout
        ferret_version = next(
            (line.split(":", 1)[1].strip() for line in version.splitlines() if line.startswith("version:")), "unknown"
        )
        facts: dict[str, Any] = {
            "engine": "FerretDB",
            "embedded": True,
            "kind": self.kind,
            "version": ferret_version,
            "backend": "sqlite",
            "emulates": "mongod (FerretDB speaks the MongoDB wire protocol; its costs "
            "are Go crypto/tls, its own SCRAM and SQLite)",
            "tls_library": "Go crypto/tls",
            "tls": self.tls,
            "cert_type": self.cert_type if self.tls else None,
            "auth": self.auth,
            "auth_mechanisms": sorted(USERS) if self.auth else [],
        }
        client = self.endpoint.client()
        try:
            info = client.admin.command("buildInfo")
            facts["reports_mongodb_version"] = info.get("version")
        except Exception as exc:  # buildInfo may need auth on some servers
            facts["reports_mongodb_version"] = f"unavailable ({type(exc).__name__})"
        finally:
            client.close()
        facts.update(self.limiter.describe() if self.limiter else {"cpu_limit_method": "none"})
        facts["cpu_accounting"] = self.cpu_method
        if self.tls:  # what a client actually negotiates with the TLS listener
            facts["negotiated_tls"] = probe_tls(
                self.endpoint.host, self.endpoint.tls_port, self.endpoint.ca_file
            ).as_dict()
        facts["endpoint"] = self.endpoint.as_dict()
        if self.link is not None:
            facts["link"] = self.link.describe()
        return facts
