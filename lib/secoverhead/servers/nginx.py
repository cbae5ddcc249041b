"""nginx started on loopback serving a small JSON response over HTTP and HTTPS, with the handshake
knobs a study toggles: certificate type, TLS versions, session cache, session tickets, keep-alive.

One worker, pinned to a core, so server CPU per request is the worker's CPU over the request count.
`$ssl_session_reused` is logged so resumption is proven from the server side.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from secoverhead.core.environ import server_env
from secoverhead.core.errors import ConfigError, ServerStartError
from secoverhead.host.process import ServerProcess, pick_port
from secoverhead.servers.base import Server
from secoverhead.servers.certs import KEY_TYPES, CertificateSet, make_certificates, probe_tls
from secoverhead.servers.endpoints import HttpEndpoint

TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
RESPONSE_BODY = '{"status":"ok","service":"secoverhead","items":[1,2,3]}'
LOG_FIELDS = (
    "time",
    "status",
    "protocol",
    "cipher",
    "session_reused",
    "connection",
    "connection_requests",
    "server_port",
)


def parse_log_line(line: str) -> dict[str, str]:
    """One line of the `sec` log format, by field name (the format is defined once, in _config)."""
    parts = re.findall(r'"[^"]*"|\S+', line)
    return dict(zip(LOG_FIELDS, (p.strip('"') for p in parts), strict=False))


LOG_FLUSH_WAIT_S = 0.4  # the log buffer is flushed every 200 ms: twice that sees every line written before


def read_access_log(
    path: Path,
    *,
    offset: int = 0,
    wait: bool = True,
    expect: int | None = None,
    keep: Callable[[dict[str, str]], bool] | None = None,
) -> list[dict[str, str]]:
    """Lines logged since byte offset, parsed (those `keep` keeps). Waits for nginx's 200 ms log flush by default:
    until `expect` kept lines are there when it is given (a run's requests: most runs need a fraction of the wait),
    at most LOG_FLUSH_WAIT_S plus one flush otherwise."""
    deadline = time.monotonic() + (LOG_FLUSH_WAIT_S + 0.2 if expect is not None else LOG_FLUSH_WAIT_S)
    while True:
        text = ""
        if Path(path).exists():
            with open(path, "rb") as f:
                f.seek(offset)
                text = f.read().decode(errors="replace")
        rows = [parse_log_line(line) for line in text.splitlines() if line.strip()]
        rows = [r for r in rows if keep(r)] if keep is not None else rows
        if not wait or time.monotonic() >= deadline or (expect is not None and len(rows) >= expect):
            return rows
        time.sleep(0.05 if expect is not None else max(0.0, deadline - time.monotonic()))


def _nginx() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
    if found is None:
        raise ServerStartError("nginx not found: install nginx (run `make setup`)")
    return found


@dataclass(eq=False, repr=False, kw_only=True)
class NginxServer(Server):
    """A throwaway nginx. https: open an HTTPS listener beside the HTTP one."""

    kind: ClassVar[str] = "nginx"

    https: bool = True
    cert_type: str = "rsa"
    certificates: CertificateSet | None = None
    tls_versions: tuple[str, ...] | list[str] = TLS_VERSIONS
    session_cache: bool = True
    session_tickets: bool = True
    keepalive_requests: int = 1_000_000
    keepalive_timeout: float = 65
    worker_core: int | None = 0
    access_log: bool = True
    http_port: int | None = None  # the ports asked for (None: free ones)
    https_port: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check()
        self.https, self.tls_versions = bool(self.https), tuple(self.tls_versions)
        self.keepalive_requests, self.keepalive_timeout = int(self.keepalive_requests), float(self.keepalive_timeout)
        self.endpoint: HttpEndpoint | None = None
        self.access_log_path: Path | None = None

    def _check(self) -> None:
        cert_type, tls_versions, worker_core = self.cert_type, self.tls_versions, self.worker_core
        keepalive_requests, keepalive_timeout, certificates = (
            self.keepalive_requests,
            self.keepalive_timeout,
            self.certificates,
        )
        if cert_type not in KEY_TYPES:
            raise ConfigError(f"cert_type={cert_type!r} is not one of {', '.join(KEY_TYPES)}")
        tls_versions = tuple(tls_versions)
        if not tls_versions or any(v not in TLS_VERSIONS for v in tls_versions):
            raise ConfigError(f"tls_versions={tls_versions!r}: each must be one of {', '.join(TLS_VERSIONS)}")
        if int(keepalive_requests) < 0 or float(keepalive_timeout) < 0:
            raise ConfigError("keepalive_requests and keepalive_timeout must be >= 0 (0 disables keep-alive)")
        ncpu = os.cpu_count() or 1
        if worker_core is not None and not 0 <= int(worker_core) < ncpu:
            raise ConfigError(f"worker_core={worker_core} is not a core of this machine (0..{ncpu - 1})")
        if certificates is not None:
            certificates.check()

    def _config(self, http_port: int, https_port: int | None) -> str:
        d = self.run_dir
        affinity = ""
        if self.worker_core is not None:
            mask = ["0"] * (os.cpu_count() or 1)
            mask[-1 - int(self.worker_core)] = "1"
            affinity = f"worker_cpu_affinity {''.join(mask)};"
        user = "user root;" if os.geteuid() == 0 else ""
        log = f"access_log {d}/access.log sec buffer=64k flush=200ms;" if self.access_log else "access_log off;"
        tls = ""
        if https_port is not None:
            c = self.certificates
            tls = f"""
        listen 127.0.0.1:{https_port} ssl;
        ssl_certificate {c.server_cert};
        ssl_certificate_key {c.server_key};
        ssl_protocols {" ".join(self.tls_versions)};
        ssl_session_cache {"shared:SSL:10m" if self.session_cache else "off"};
        ssl_session_timeout 10m;
        ssl_session_tickets {"on" if self.session_tickets else "off"};"""
        temp = "\n    ".join(
            f"{k}_temp_path {d}/tmp/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        return f"""# generated by secoverhead
{user}
worker_processes 1;
{affinity}
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; multi_accept on; }}
http {{
    {temp}
    log_format sec '$msec $status "$ssl_protocol" "$ssl_cipher" "$ssl_session_reused"'
                   ' $connection $connection_requests $server_port';
    {log}
    keepalive_requests {self.keepalive_requests};
    keepalive_timeout {self.keepalive_timeout:g}s;
    server_tokens off;
    server {{
        listen 127.0.0.1:{http_port} reuseport backlog=4096;{tls}
        location / {{
            default_type application/json;
            return 200 '{RESPONSE_BODY}';
        }}
    }}
}}
"""

    def _start(self) -> None:
        d = self.run_dir
        (d / "tmp").mkdir()
        http_port = pick_port(self.http_port)
        https_port = None
        if self.https:
            if self.certificates is None:
                self.certificates = make_certificates(d / "certs", self.cert_type)
            https_port = pick_port(self.https_port)
        conf = d / "nginx.conf"
        conf.write_text(self._config(http_port, https_port))
        test = subprocess.run(
            [_nginx(), "-t", "-q", "-c", str(conf), "-p", str(d)], capture_output=True, text=True, env=server_env()
        )
        if test.returncode != 0:
            raise ServerStartError(f"nginx rejected its configuration:\n{test.stderr.strip()}")
        self.access_log_path = d / "access.log" if self.access_log else None
        proc = ServerProcess(
            "nginx", [_nginx(), "-c", str(conf), "-p", str(d)], log_path=d / "stdout.log", cwd=d, groups=self.groups()
        )
        self.processes.append(proc)
        self.endpoint = HttpEndpoint(
            host="127.0.0.1",
            http_port=http_port,
            https_port=https_port,
            ca_file=self.certificates.ca_cert if self.certificates else None,
        )
        proc.wait_ready(
            lambda: self._http_ok(http_port) and bool(self.worker_pids()),
            self.startup_timeout,
            error_log=d / "error.log",
        )

    @staticmethod
    def _http_ok(port: int) -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")

    def worker_pids(self) -> list[int]:
        """nginx worker processes (children of the master): where requests are served."""
        pids = []
        for master in (p.pid for p in self.processes if p.alive()):
            with contextlib.suppress(OSError):
                pids += [int(x) for x in Path(f"/proc/{master}/task/{master}/children").read_text().split()]
        return pids

    @property
    def pids(self) -> list[int]:
        return super().pids + self.worker_pids()

    def read_access_log(self, wait: bool = True, offset: int = 0) -> list[dict[str, str]]:
        """Parsed access-log lines (the log buffer is flushed every 200 ms, so wait for it by default)."""
        if self.access_log_path is None:
            raise ConfigError("this nginx was started with access_log=False")
        return read_access_log(self.access_log_path, offset=offset, wait=wait)

    def describe(self) -> dict[str, Any]:
        v = subprocess.run([_nginx(), "-V"], capture_output=True, text=True, env=server_env()).stderr
        version = re.search(r"nginx/(\S+)", v)
        built = re.search(r"built with (OpenSSL [^\s]+)", v)
        running = re.search(r"running with (OpenSSL [^\s)]+)", v)
        negotiated = None
        if self.https and self.endpoint is not None:  # a real handshake, as a client sees it
            negotiated = probe_tls(self.endpoint.host, self.endpoint.https_port, self.endpoint.ca_file).as_dict()
        return {
            "negotiated_tls": negotiated,
            "engine": "nginx",
            "embedded": True,
            "kind": self.kind,
            "version": version.group(1) if version else "unknown",
            "tls_library": (running or built).group(1) if (running or built) else "unknown",
            "https": self.https,
            "cert_type": self.cert_type if self.https else None,
            "tls_versions": list(self.tls_versions),
            "session_cache": self.session_cache,
            "session_tickets": self.session_tickets,
            "keepalive_requests": self.keepalive_requests,
            "keepalive_timeout_s": self.keepalive_timeout,
            "worker_processes": 1,
            "worker_core": self.worker_core,
            "access_log": self.access_log,
            "endpoint": self.endpoint.as_dict() if self.endpoint else None,
        }
