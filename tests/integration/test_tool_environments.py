"""Each tool's environment holds what it needs and none of the user's exported secrets: with a sentinel password
exported, every process the project starts below the CLI and its kernel (servers,
sysbench, ab/wrk, openssl, perf, Playwright's driver and Chromium) is read from /proc while it lives."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SENTINEL = b"Tool-Env-Sentinel-7731"
ALLOWED = (b"secoverhead.app.cli", b"ipykernel", b"secoverhead.app.kernel")  # they read the secrets they are named


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


class Watch(threading.Thread):
    """Reads the environment of every descendant of `root` every 10 ms until stopped. Whether a pid descends is
    asked once (a process keeps its ancestry), and a process's environment is read again only when its command
    line changes (an exec): walking every process's parents each poll took a third of a core from the tests
    beside it."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.stop, self.seen, self.leaks = root, threading.Event(), set(), []
        self.descends: dict[int, bool] = {}
        self.read: set[tuple[int, bytes]] = set()

    def _descends(self, pid: int) -> bool:
        for _ in range(64):
            if pid in (0, 1):
                return False
            if pid == self.root:
                return True
            pid = _parent(pid)
        return False

    def run(self) -> None:
        while not self.stop.wait(0.01):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                pid = int(entry.name)
                if pid not in self.descends:
                    self.descends[pid] = self._descends(pid)
                if self.descends[pid]:
                    self._check(entry, pid)

    def _check(self, entry: Path, pid: int) -> None:
        try:
            cmd = (entry / "cmdline").read_bytes()
            if (pid, cmd) in self.read:
                return
            env = (entry / "environ").read_bytes()
        except OSError:
            return
        if not cmd:  # no command line: a process exiting (its memory going) or not yet one; read it again next poll
            return
        self.read.add((pid, cmd))
        name = cmd.split(b"\0")[0].rsplit(b"/", 1)[-1]
        self.seen.add(name)
        if SENTINEL in env and not any(a in cmd for a in ALLOWED):
            self.leaks.append(cmd.replace(b"\0", b" ")[:160])


def _run(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, Watch]:
    env = os.environ | {"TOOL_ENV_PW": SENTINEL.decode(), "SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)
    argv = [sys.executable, "-m", "secoverhead.app.cli", *args]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch = Watch(proc.pid)
    watch.start()
    out, err = proc.communicate(timeout=900)
    watch.stop.set()
    watch.join()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), watch


def test_no_tool_or_server_holds_an_exported_secret(tmp_path):
    reports = str(tmp_path / "reports")
    arms = '[HTTP, "TLS 1.2 full, RSA", "TLS 1.2 full, RSA (s_time)", "TLS 1.2 resumed, ticket"]'
    res, https = _run(tmp_path, "run", "https", "-p", "arms", arms, "-p", "profile", "true", "--reports", reports)
    assert res.returncode == 0, res.stderr[-3000:]
    res, tde = _run(tmp_path, "run", "tde", "-p", "run_seconds", "1", "-p", "workloads", "[oltp_read_only]",
                    "--reports", reports)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    (report,) = (tmp_path / "reports" / "https").glob("2*/report.html")
    res, pdf = _run(tmp_path, "pdf", str(report.parent), "-o", str(tmp_path / "r.pdf"))
    assert res.returncode == 0, res.stderr[-3000:]
    seen = https.seen | tde.seen | pdf.seen
    for tool in (b"nginx", b"sysbench", b"mariadbd", b"openssl", b"perf", b"node"):
        assert any(tool in name for name in seen), (tool, sorted(seen))  # the watch saw each kind it checks
    assert not (https.leaks + tde.leaks + pdf.leaks), https.leaks + tde.leaks + pdf.leaks
