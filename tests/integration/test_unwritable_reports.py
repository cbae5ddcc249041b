"""A full disk or a reports folder that stops taking files mid-run: the run ends failed with the reason in one
line, exit 1, no traceback; every run record already written stays whole and readable; the index is unbroken."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ARGS = ["run", "tls", "-p", "mongo_enabled", "false", "-p", "repetitions", "6", "-p", "min_rounds", "6"]


def _start(reports: Path, tmp_path: Path) -> subprocess.Popen:
    env = os.environ | {"SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)
    return subprocess.Popen(
        [sys.executable, "-m", "secoverhead.app.cli", *ARGS, "--reports", str(reports)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _first_record(reports: Path, proc: subprocess.Popen) -> Path:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        records = list(reports.glob("tls/*/results/*/runs/*.json"))
        if records:
            return records[0].parents[3]
        time.sleep(0.2)
    pytest.fail(f"no run record appeared: {proc.stderr.read()[-2000:] if proc.poll() is not None else ''}")


def _check_failed_cleanly(proc: subprocess.Popen, run_dir: Path, reason: str) -> None:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "failed" and reason in meta["error"], meta["error"]
    records = list(run_dir.glob("results/*/runs/*.json"))
    assert records and all(isinstance(json.loads(r.read_text()), dict) for r in records)
    assert not list(run_dir.rglob(".*.tmp*")) and not list(run_dir.glob(".report.html.*"))  # no half files


@pytest.fixture
def small_fs(tmp_path):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    mnt = tmp_path / "reports"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("tmpfs cannot be mounted here")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)])


def test_a_full_disk_mid_run_fails_the_run_cleanly(small_fs, tmp_path):
    proc = _start(small_fs, tmp_path)
    run_dir = _first_record(small_fs, proc)
    fd = os.open(small_fs / "filler", os.O_WRONLY | os.O_CREAT)  # the rest of the file system, to the last block
    for size in (1 << 20, 4096, 1):
        try:
            while True:
                os.write(fd, b"\0" * size)
        except OSError:
            pass
    os.close(fd)
    _check_failed_cleanly(proc, run_dir, "No space left on device")


def test_a_reports_folder_that_stops_taking_files_mid_run_fails_the_run_cleanly(tmp_path):
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("needs root and chattr (root ignores permission bits: an immutable folder stands in)")
    reports = tmp_path / "reports"
    proc = _start(reports, tmp_path)
    run_dir = _first_record(reports, proc)
    frozen = [run_dir, *run_dir.glob("results/*/runs")]
    if subprocess.run(["chattr", "+i", *map(str, frozen)]).returncode != 0:
        proc.kill()
        pytest.skip("this file system has no immutable flag")
    try:
        _check_failed_cleanly(proc, run_dir, "Operation not permitted")
    finally:
        subprocess.run(["chattr", "-i", *map(str, frozen)])
    index = subprocess.run(
        [sys.executable, "-m", "secoverhead.app.cli", "index", "--reports", str(reports)],
        capture_output=True,
        text=True,
    )
    assert index.returncode == 0 and "Traceback" not in index.stderr, index.stderr
