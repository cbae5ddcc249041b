"""A small certificate authority for throwaway servers: RSA-2048 or ECDSA P-256, via the openssl CLI
(the same OpenSSL the servers link against)."""

from __future__ import annotations

import socket
import ssl
from dataclasses import asdict, dataclass
from pathlib import Path

from secoverhead.core.errors import ConfigError
from secoverhead.core.paths import file_problem
from secoverhead.host.process import run_command

KEY_TYPES = ("rsa", "ecdsa")


@dataclass(frozen=True)
class CertificateSet:
    """Paths of a CA, a server certificate for 127.0.0.1/localhost, and a client certificate."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path | None = None
    client_key: Path | None = None
    key_type: str = "rsa"

    def check(self) -> CertificateSet:
        """Raise ConfigError if any named file is missing or is not what it claims to be."""
        for name, path in asdict(self).items():
            if name == "key_type" or path is None:
                continue
            p = Path(path)
            if problem := file_problem(p):
                raise ConfigError(f"certificate file {name}={str(p)[:120]}: {problem}")
            head = p.read_text(errors="replace")[:200]
            if "-----BEGIN" not in head:
                raise ConfigError(f"certificate file {name}={p} is not PEM")
        try:
            ctx = ssl.create_default_context(cafile=str(self.ca_cert))
            ctx.load_cert_chain(str(self.server_cert), str(self.server_key))
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"certificates do not load as a CA + server key pair: {exc}") from None
        return self


def _key_args(key_type: str) -> list[str]:
    if key_type == "rsa":
        return ["-newkey", "rsa:2048"]
    if key_type == "ecdsa":
        return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    raise ConfigError(f"certificate key type {key_type!r} is not one of {', '.join(KEY_TYPES)}")


def make_certificates(
    directory: Path, key_type: str = "rsa", days: int = 30, hosts: tuple[str, ...] = ()
) -> CertificateSet:
    """Create a CA and server + client certificates signed by it in directory (keys mode 0600)."""
    args = _key_args(key_type)
    d = Path(directory).resolve()
    d.mkdir(parents=True, exist_ok=True)
    ca = _make_ca(d, args, days)
    san = ",".join(f"IP:{h}" for h in ("127.0.0.1", "::1", *hosts))  # hosts: e.g. the far end of a link
    server = _signed(d, "server", "localhost", f"subjectAltName={san},DNS:localhost\nextendedKeyUsage=serverAuth\n",
                     args, ca, days)  # fmt: skip
    client = _signed(d, "client", "secoverhead client", "extendedKeyUsage=clientAuth\n", args, ca, days)
    return CertificateSet(
        ca_cert=ca[1],
        server_cert=server[0],
        server_key=server[1],
        client_cert=client[0],
        client_key=client[1],
        key_type=key_type,
    )


def _make_ca(d: Path, args: list[str], days: int) -> tuple[Path, Path]:
    """(key, certificate) of a throwaway CA."""
    ca_key, ca_cert = d / "ca-key.pem", d / "ca.pem"
    run_command(
        ["openssl", "req", "-x509", *args, "-nodes", "-keyout", ca_key, "-out", ca_cert, "-days", str(days),
         "-subj", "/CN=secoverhead test CA", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        what="creating the test CA",
    )  # fmt: skip
    ca_key.chmod(0o600)
    return ca_key, ca_cert


def _signed(
    d: Path, role: str, cn: str, extensions: str, args: list[str], ca: tuple[Path, Path], days: int
) -> tuple[Path, Path]:
    """(certificate, key) for a role, signed by the CA, with its extensions (a file beside them)."""
    extfile = d / f"{role}-ext.cnf"
    extfile.write_text(extensions)
    key, csr, cert = d / f"{role}-key.pem", d / f"{role}.csr", d / f"{role}-cert.pem"
    run_command(
        ["openssl", "req", *args, "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={cn}"],
        what=f"creating the {role} key",
    )
    run_command(
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca[1], "-CAkey", ca[0], "-CAcreateserial", "-days", str(days),
         "-out", cert, "-extfile", extfile],
        what=f"signing the {role} certificate",
    )  # fmt: skip
    csr.unlink()
    key.chmod(0o600)
    return cert, key


@dataclass(frozen=True)
class TlsHandshake:
    """What a direct TLS handshake with a listener negotiated."""

    protocol: str
    cipher: str
    key_type: str
    openssl: str

    def as_dict(self) -> dict:
        return asdict(self)


def probe_tls(
    host: str,
    port: int,
    ca_file: Path | None = None,
    *,
    server_name: str = "localhost",
    timeout: float = 5.0,
    max_version: ssl.TLSVersion | None = None,
) -> TlsHandshake:
    """Handshake with a TLS listener (not STARTTLS-style protocols like MySQL's) and report the result."""
    ctx = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    if ca_file is None:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if max_version is not None:
        ctx.maximum_version = max_version
    with (
        socket.create_connection((host, port), timeout=timeout) as raw,
        ctx.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        cert = tls.getpeercert(binary_form=True) or b""
        name, proto, _bits = tls.cipher()
    return TlsHandshake(protocol=proto, cipher=name, key_type=_der_key_type(cert), openssl=ssl.OPENSSL_VERSION)


def _der_key_type(der: bytes) -> str:
    # OIDs in the certificate's SubjectPublicKeyInfo: rsaEncryption / id-ecPublicKey.
    if bytes.fromhex("2a864886f70d010101") in der:
        return "rsa"
    if bytes.fromhex("2a8648ce3d0201") in der:
        return "ecdsa"
    return "unknown"
