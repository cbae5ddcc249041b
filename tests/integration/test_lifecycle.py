"""Servers the library started are always stopped: on exit, on exceptions, on SIGINT/SIGTERM, and even
when the Python process is killed outright."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from secoverhead.host.process import live_processes
from secoverhead.servers import MariaDBServer, NginxServer

pytestmark = pytest.mark.integration

SCRIPT = textwrap.dedent(
    """
    import json, signal, time
    from secoverhead.servers import FerretDBServer, MariaDBServer, NginxServer
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job inherits SIGINT ignored
    with MariaDBServer() as db, FerretDBServer() as fe, NginxServer() as web:
        print(json.dumps({"pids": db.pids + fe.pids + web.pids,
                          "dirs": [str(s.run_dir) for s in (db, fe, web)]}), flush=True)
        time.sleep(120)
    """
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pids, timeout=30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"])
def test_servers_stop_when_the_owner_is_signalled(sig):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        line = proc.stdout.readline()
        assert line, "the child did not start its servers"
        started = json.loads(line)
        assert len(started["pids"]) == 4 and all(alive(p) for p in started["pids"])  # nginx: master + worker
        proc.send_signal(sig)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_gone(started["pids"]) == []
    if sig == signal.SIGKILL:  # a killed owner cannot remove its directories; its servers still die
        for d in started["dirs"]:
            shutil.rmtree(d, ignore_errors=True)
    else:
        assert not any(Path(d).exists() for d in started["dirs"])


def test_servers_stop_on_an_exception_in_the_block():
    with pytest.raises(RuntimeError, match="boom"), MariaDBServer() as db, NginxServer() as web:
        pids = db.pids + web.pids
        raise RuntimeError("boom")
    assert wait_gone(pids) == [] and live_processes() == []
