"""At the end of the session no process started by the suite may be left (servers live under BASE)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

BASE = Path(os.environ["SECOVERHEAD_RUN_BASE"])  # set by the root conftest.py
BASE.mkdir(parents=True, exist_ok=True)


def processes_under(base: Path) -> list[str]:
    """Command lines of live processes that mention base (our servers' run dirs are below it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(base) in cmd:
            found.append(f"{proc.name}: {cmd[:200]}")
    return found


@pytest.fixture(scope="session", autouse=True)
def no_servers_left_behind():
    yield
    from secoverhead.servers import live_processes

    deadline = time.monotonic() + 10
    while (left := processes_under(BASE)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not live_processes(), f"servers still registered as running: {live_processes()}"
    assert not left, "processes started by the tests are still running:\n" + "\n".join(left)


@pytest.fixture
def run_base() -> Path:
    return BASE


@pytest.fixture
def builds_gone(monkeypatch):
    """Every server build present, except those whose labels the test adds to the returned set."""
    from secoverhead.servers.builds import ServerBuild

    gone: set[str] = set()
    monkeypatch.setattr(ServerBuild, "missing", lambda self: "gone" if self.label in gone else None)
    return gone


@pytest.fixture
def registry_from(tmp_path, monkeypatch):
    """Loads the claim registry from the YAML text given (its claims() raises what the file gets wrong); the real
    registry is read again after the test."""
    from secoverhead.analysis import claim_registry

    def load(text: str) -> dict:
        path = tmp_path / "claims.yaml"
        path.write_text(text)
        monkeypatch.setattr(claim_registry.paths, "CLAIMS", path)
        claim_registry.claims.cache_clear()
        return claim_registry.claims()

    yield load
    claim_registry.claims.cache_clear()
