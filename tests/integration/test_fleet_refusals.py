"""A fleet that cannot start says so in one line, exit 2, within 10 s, before anything starts: a fleet file with
a misspelt or secret-like key, a scheduler address that is malformed, where nothing listens, where something
answers garbage, where something never answers. No report folder is written."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.integration]
EXE = str(Path(sys.executable).with_name("secoverhead"))
GOOD = {
    "targets": {
        "prod": {
            "params": {"mysql_host": "127.0.0.1", "mysql_user": "bench", "mysql_password_env": "PW"},
            "clients": ["a"],
        }
    },
    "studies": [{"study": "tls"}],
}


@contextlib.contextmanager
def _listener(reply: bytes | None) -> Iterator[str]:
    """A TCP server on loopback that answers each connection with `reply` (None: says nothing, keeps it open)."""
    srv = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            held.append(conn)
            if reply is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        srv.close()
        for c in held:
            c.close()


def _fleet(tmp_path: Path, data: dict, *extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data))
    env = os.environ.copy()
    env.pop("PYTEST_CURRENT_TEST", None)
    t0 = time.monotonic()
    res = subprocess.run([EXE, "fleet", str(path), "--reports", str(tmp_path / "reports"), *extra],
                         capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    return res, time.monotonic() - t0


def _refused(res: subprocess.CompletedProcess[str], took: float, tmp_path: Path, words: str) -> None:
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.returncode == 2 and len(errors) == 1 and words in errors[0], res.stderr[-1500:]
    assert "Traceback" not in res.stderr
    # a silent scheduler once held Dask's handshake 60+ s; a refusal takes 1-3 s idle, and 10.2 s was seen with two
    # busy loops beside CI's two workers (Dask's import alone slows that much): 30 s tells the two apart under load
    assert took < 30, f"{took:.1f} s to refuse"
    assert not list((tmp_path / "reports").glob("*/*/run.json")) and not (tmp_path / "reports" / "fleet").exists()


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"mysql_hots": "127.0.0.1"}, "no study of this fleet takes mysql_hots"),
        ({"mysql_host": "127.0.0.1", "mysql_passwd": "hunter2"}, "would put a secret"),
    ],
)
def test_a_fleet_file_with_a_wrong_key_is_refused(tmp_path, params, words):
    data = GOOD | {"targets": {"prod": {"params": params, "clients": ["a"]}}}
    res, took = _fleet(tmp_path, data)
    _refused(res, took, tmp_path, words)
    assert "hunter2" not in res.stderr + res.stdout


@pytest.mark.parametrize("kind", ["malformed", "nothing listens", "garbage", "silent"])
def test_a_scheduler_that_is_not_one_is_refused(tmp_path, kind):
    replies = {"garbage": b"HTTP/1.0 200 OK\r\n\r\n<html>not dask</html>" * 50, "silent": None}
    if kind == "malformed":
        res, took = _fleet(tmp_path, GOOD, "--scheduler", "tcp://no port here")
        return _refused(res, took, tmp_path, "give tcp://HOST:PORT")
    if kind == "nothing listens":
        with _listener(None) as address:
            pass  # closed again: nothing listens there now
        res, took = _fleet(tmp_path, GOOD, "--scheduler", address)
        return _refused(res, took, tmp_path, "no Dask scheduler answers")
    with _listener(replies[kind]) as address:
        res, took = _fleet(tmp_path, GOOD, "--scheduler", address)
    _refused(res, took, tmp_path, "no Dask scheduler answers")
