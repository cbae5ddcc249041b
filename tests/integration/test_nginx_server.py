"""nginx: HTTPS with the requested key type and TLS versions; resumption on exactly when enabled."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.request
from pathlib import Path

import pytest

from secoverhead.core.errors import ConfigError
from secoverhead.servers import CertificateSet, NginxServer, probe_tls

pytestmark = pytest.mark.integration


def https_get(endpoint, ctx, session=None) -> tuple[bool, ssl.SSLSession, bytes]:
    """One request on a new TLS connection, offering `session` for resumption."""
    with (
        socket.create_connection((endpoint.host, endpoint.https_port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost", session=session) as tls,
    ):
        tls.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
        return tls.session_reused, tls.session, data


def context(endpoint, version: ssl.TLSVersion) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(endpoint.ca_file))
    ctx.minimum_version = ctx.maximum_version = version
    return ctx


def test_http_serves_json():
    with NginxServer(https=False) as web:
        body = urllib.request.urlopen(web.endpoint.url(tls=False), timeout=5).read()
        assert json.loads(body)["status"] == "ok"
        assert web.endpoint.https_port is None


@pytest.mark.parametrize("cert_type", ["rsa", "ecdsa"])
def test_https_uses_the_requested_certificate_type(cert_type):
    with NginxServer(cert_type=cert_type) as web:
        e = web.endpoint
        hs = probe_tls(e.host, e.https_port, e.ca_file, max_version=ssl.TLSVersion.TLSv1_2)
        assert hs.key_type == cert_type and hs.protocol == "TLSv1.2"
        assert ("ECDSA" if cert_type == "ecdsa" else "RSA") in hs.cipher
        ctx = ssl.create_default_context(cafile=str(e.ca_file))
        body = urllib.request.urlopen(e.url(tls=True), context=ctx, timeout=5).read()
        assert json.loads(body)["status"] == "ok"
        facts = web.describe()
        assert facts["tls_library"].startswith("OpenSSL") and facts["version"].startswith("1.")
        assert facts["negotiated_tls"]["key_type"] == cert_type


def test_tls_versions_are_enforced():
    with NginxServer(tls_versions=["TLSv1.2"]) as web:
        e = web.endpoint
        assert probe_tls(e.host, e.https_port, e.ca_file).protocol == "TLSv1.2"
        with pytest.raises(ssl.SSLError):
            https_get(e, context(e, ssl.TLSVersion.TLSv1_3))


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls12", "tls13"])
@pytest.mark.parametrize(
    "cache, tickets, resumes",
    [(True, True, True), (True, False, True), (False, True, True), (False, False, False)],
    ids=["cache+tickets", "cache-only", "tickets-only", "neither"],
)
def test_resumption_happens_exactly_when_enabled(version, cache, tickets, resumes):
    with NginxServer(session_cache=cache, session_tickets=tickets) as web:
        e = web.endpoint
        ctx = context(e, version)
        reused = []
        session = None
        for _ in range(3):
            r, session, data = https_get(e, ctx, session)
            assert b"200 OK" in data
            reused.append(r)
        assert reused == [False, resumes, resumes]
        log = [row for row in web.read_access_log() if row["server_port"] == str(e.https_port)]
        # The server's own record agrees with the client: "r" = reused, "." = full handshake.
        assert [row["session_reused"] for row in log] == ["."] + ["r" if resumes else "."] * 2
        assert {row["protocol"] for row in log} == {"TLSv1.2" if version == ssl.TLSVersion.TLSv1_2 else "TLSv1.3"}


def _response(s: socket.socket) -> bytes:
    """One HTTP/1.1 response read off a kept-alive socket (headers, then Content-Length bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    )
    while len(body) < length:
        body += s.recv(65536)
    return head + b"\r\n\r\n" + body


def test_keepalive_limits_are_applied():
    # Requests go one at a time: pipelining a third request that nginx will never read makes
    # the kernel answer the close with a reset, which raced the reading of the first two.
    with NginxServer(https=False, keepalive_requests=2) as web:
        e = web.endpoint
        with socket.create_connection((e.host, e.http_port), timeout=5) as s:
            responses = []
            for _ in range(2):
                s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                responses.append(_response(s))
            closed = s.recv(65536) == b""
        assert all(r.startswith(b"HTTP/1.1 200") for r in responses)
        assert b"Connection: close" not in responses[0] and b"Connection: close" in responses[1]
        # The second response closes the connection; nothing more comes on it.
        assert closed


def test_worker_is_pinned_to_one_core():
    with NginxServer(https=False, worker_core=0) as web:
        workers = web.worker_pids()
        assert len(workers) == 1 and set(web.pids) > set(workers)
        status = Path(f"/proc/{workers[0]}/status").read_text()
        assert "Cpus_allowed_list:\t0\n" in status


def test_bad_inputs_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="tls_versions"):
        NginxServer(tls_versions=["SSLv3"])
    with pytest.raises(ConfigError, match="worker_core"):
        NginxServer(worker_core=99)
    missing = CertificateSet(ca_cert=tmp_path / "ca.pem", server_cert=tmp_path / "c.pem", server_key=tmp_path / "k")
    with pytest.raises(ConfigError, match="does not exist"):
        NginxServer(certificates=missing)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    bad = CertificateSet(ca_cert=garbage, server_cert=garbage, server_key=garbage)
    with pytest.raises(ConfigError, match="do not load"):
        NginxServer(certificates=bad)
