"""Every ending signal at any moment finalises the run: SIGINT, SIGTERM and SIGHUP sent to the CLI 1, 3, 5 and
10 s after it starts (importing, checking, calibrating, starting the kernel and servers, measuring). The CLI exits
128+signal with one outcome line and no traceback, naming `--resume` for a run directory it made; that directory
says "interrupted" with the signal and its lock is free; every process it started is gone and its private
directories removed.

`make test` runs 12 of the 60 cases, each signal at each moment with the studies in turn;
SECOVERHEAD_SIGNAL_MATRIX=full runs all 60 (the evidence in benchmarks/README.md)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from secoverhead.core.errors import ConfigError
from secoverhead.core.runlock import RunLock
from secoverhead.studies import STUDIES as REGISTRY

pytestmark = [pytest.mark.integration, pytest.mark.slow]

STUDIES = list(REGISTRY)
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
DELAYS = [1, 3, 5, 10]
if os.environ.get("SECOVERHEAD_SIGNAL_MATRIX") == "full":
    CASES = list(itertools.product(STUDIES, SIGNALS, DELAYS))
else:
    CASES = [(STUDIES[i % len(STUDIES)], s, d) for i, (s, d) in enumerate(itertools.product(SIGNALS, DELAYS))]


def _descendants(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out += [int(p.name), *_descendants(int(p.name))]
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# To the CLI alone (`kill`), and to its whole process group as Ctrl-C and a closed terminal send it
TARGETS = [(s, g, d, False) for s, g, d in CASES] + [
    ("audit", signal.SIGINT, 10, True),
    ("tde", signal.SIGHUP, 8, True),
]


@pytest.mark.parametrize(
    "study, sig, delay, group",
    TARGETS,
    ids=[f"{s}-{signal.Signals(g).name}-{d}s{'-group' if grp else ''}" for s, g, d, grp in TARGETS],
)
def test_a_signal_at_any_moment_finalises_the_run(study, sig, delay, group, tmp_path):
    base = tmp_path / "base"
    env = os.environ | {"SECOVERHEAD_RUN_BASE": str(base), "SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)
    env.pop("SECOVERHEAD_CALIBRATION", None)  # a calibration of its own: the early moments fall in calibrating
    reports = tmp_path / "reports"
    proc = subprocess.Popen(
        [sys.executable, "-m", "secoverhead.app.cli", "run", study, "--reports", str(reports)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the signal reaches the CLI alone, as `kill` would
    )
    time.sleep(delay)
    if proc.poll() is not None:
        pytest.fail(f"the run ended before {delay} s: {proc.stderr.read()[-1500:]}")
    started = _descendants(proc.pid)
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err[-2000:]
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    assert err.strip().splitlines()[-1].endswith(f"(by {signal.Signals(sig).name})"), err[-500:]  # the last word
    assert sum("(by SIG" in line for line in err.splitlines()) == 1, err[-2000:]
    for run_dir in [p for p in (reports / study).glob("*") if p.is_dir() and not p.is_symlink()]:
        assert f"secoverhead run --resume {run_dir}" in err.strip().splitlines()[-1], err[-500:]  # how to go on
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"] == "interrupted" and signal.Signals(sig).name in meta["error"], meta
        if (run_dir / "report.ipynb").exists():  # what can be rendered is rendered
            assert (run_dir / "report.html").exists()
        try:
            RunLock(run_dir).acquire().release()
        except ConfigError as exc:
            pytest.fail(f"the run's lock is still held: {exc}")
    deadline = time.monotonic() + 60
    while (left := [p for p in started if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not left, [Path(f"/proc/{p}/cmdline").read_bytes()[:120] for p in left if _alive(p)]
    while base.exists() and list(base.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.3)  # a server's directory goes once the server has stopped
    assert not base.exists() or not list(base.iterdir()), list(base.iterdir())
