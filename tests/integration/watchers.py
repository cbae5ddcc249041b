"""What a DBA already runs beside their server, started here on loopback so the CPU sources that read it can be
checked against /proc: an sshd that lets one key in, process-exporter and node_exporter."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from secoverhead.host.process import ServerProcess, free_port

SSHD = Path("/usr/sbin/sshd")
PROCESS_EXPORTER = shutil.which("prometheus-process-exporter")
NODE_EXPORTER = shutil.which("prometheus-node-exporter")


@dataclass
class Sshd:
    port: int
    user: str
    key: Path
    known_hosts: Path

    def spec(self, process: str = "") -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}/{process}".rstrip("/")


def _need(path: str | Path | None, package: str) -> None:
    if not path or not Path(path).exists():
        pytest.skip(f"{package} is not installed (`make setup` installs it)")


def _ready(proc: ServerProcess, check) -> None:
    proc.wait_ready(check, timeout=20)


@contextlib.contextmanager
def sshd(tmp: Path) -> Iterator[Sshd]:
    """An sshd on a free loopback port taking one new key for the user running the tests, nothing else."""
    _need(SSHD, "openssh-server")
    tmp.mkdir(parents=True, exist_ok=True)
    for name in ("host", "user"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / name)], check=True)
    (tmp / "authorized_keys").write_text((tmp / "user.pub").read_text())
    port = free_port()
    (tmp / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {tmp / 'host'}\nPidFile {tmp / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {tmp / 'authorized_keys'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n"
    )
    host_key = (tmp / "host.pub").read_text().split()[:2]
    (tmp / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
    made_run = os.geteuid() == 0 and not Path("/run/sshd").exists()  # privilege separation's empty directory
    if made_run:
        Path("/run/sshd").mkdir(mode=0o755)
    proc = ServerProcess(
        "sshd", [str(SSHD), "-D", "-e", "-f", str(tmp / "sshd_config")], log_path=tmp / "sshd.log", cwd=tmp
    )
    try:
        _ready(proc, lambda: _listening(port))
        user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        yield Sshd(port, user, tmp / "user", tmp / "known_hosts")
    finally:
        proc.stop()
        if made_run:
            shutil.rmtree("/run/sshd", ignore_errors=True)


def _listening(port: int) -> bool:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


@contextlib.contextmanager
def exporter(kind: str, tmp: Path, group: tuple[str, str] = ("", "")) -> Iterator[str]:
    """process-exporter watching one group (its name, and a regular expression its processes' command lines match:
    other tests' servers of the same name may run beside it), or node_exporter's CPU collector: its /metrics URL."""
    binary = PROCESS_EXPORTER if kind == "process" else NODE_EXPORTER
    _need(binary, f"prometheus-{kind}-exporter")
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    if kind == "process":
        name, cmdline = group
        config = f"process_names:\n  - name: {json.dumps(name)}\n    cmdline:\n    - {json.dumps(cmdline)}\n"
        (tmp / "process.yaml").write_text(config)
        argv = [binary, "-web.listen-address", f"127.0.0.1:{port}", "-config.path", str(tmp / "process.yaml")]
    else:
        argv = [binary, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults", "--collector.cpu"]
    url = f"http://127.0.0.1:{port}/metrics"
    proc = ServerProcess(f"{kind}-exporter", argv, log_path=tmp / f"{kind}.log", cwd=tmp)
    try:
        _ready(proc, lambda: urllib.request.urlopen(url, timeout=2).status == 200)
        yield url
    finally:
        proc.stop()
