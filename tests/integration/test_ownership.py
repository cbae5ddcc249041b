"""What prune and the sweeps delete they own: nothing behind a link out of the reports tree, nothing of a run being
written by a process in another PID namespace on this machine (its PID there is one no process has here, so a
judgement by local PID would call it dead), no cgroup such a process still owns. Checked with a real second PID
namespace (unshare), the real CLI and the real cgroup hierarchy."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from secoverhead.core import owners
from secoverhead.host import cgroups, process
from tests.records import run_json

pytestmark = [pytest.mark.integration]
EXE = str(Path(sys.executable).with_name("secoverhead"))
LIB = str(Path(__file__).resolve().parents[2] / "lib")
OTHER_PID = 30000  # the helper's PID inside its namespace: free here (checked), as a container's would be

HELPER = """
import json, os, socket, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from secoverhead.core import owners
from secoverhead.core.files import atomic_write_json
from secoverhead.core.runlock import RunLock
from secoverhead.host import cgroups
run = Path(sys.argv[1])
lock = RunLock(run).acquire()
meta = json.loads((run / "run.json").read_text())
meta.update(status="running", owner=owners.me(), owner_pid=os.getpid(), host=socket.gethostname())
atomic_write_json(run / "run.json", meta)
group = cgroups.create("cpuacct", "other-ns")
print(json.dumps({"pid": os.getpid(), "token": owners.me(), "group": str(group.path) if group else None}), flush=True)
sys.stdin.read()
"""


def _run(root: Path, name: str, status: str = "ok") -> Path:
    run = root / "tls" / name
    samples = run / "results" / "tls-part" / "samples"
    samples.mkdir(parents=True)
    (samples / "s.parquet").write_bytes(b"x" * 50_000)
    (run / "report.html").write_text("<p>report</p>")
    started = f"{name[:4]}-{name[4:6]}-{name[6:8]}T00:00:00+00:00"
    meta = {"study": "tls", "status": status, "started": started, "params_name": "quick", "host": "elsewhere"}
    (run / "run.json").write_text(run_json(meta))
    return run


@pytest.fixture
def other_namespace(tmp_path):
    """Starts a writer of a run in a PID namespace of its own; yields (run, what it said)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a second PID namespace needs root and unshare(1)")
    if owners.alive(OTHER_PID + 1):
        pytest.skip(f"PID {OTHER_PID + 1} runs here: the case needs one that does not")
    run = _run(tmp_path / "reports", "20261101T000000Z-vm-quick")
    # inside: set the namespace's next PID, then start the writer (it gets OTHER_PID + 1)
    script = f'echo {OTHER_PID} > /proc/sys/kernel/ns_last_pid; {sys.executable} -c "$HELPER" {run} {LIB}; :'
    proc = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script],
                            env=os.environ | {"HELPER": HELPER}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    said = json.loads(proc.stdout.readline())
    try:
        yield run, said
    finally:
        proc.stdin.close()
        proc.wait(30)


def test_prune_keeps_a_run_written_in_another_pid_namespace_and_everything_behind_a_link(other_namespace, tmp_path):
    written, said = other_namespace
    assert said["pid"] == OTHER_PID + 1 and not owners.alive(said["pid"]), "the case needs a PID unknown here"
    root = tmp_path / "reports"
    outside = tmp_path / "outside"
    (outside / "samples").mkdir(parents=True)
    (outside / "samples" / "keep.parquet").write_bytes(b"y" * 1000)
    (outside / "report.ipynb").write_text("{}")
    linked = _run(root, "20261001T000000Z-vm-quick")
    shutil.rmtree(linked / "results")
    (linked / "results").symlink_to(outside)  # the whole results folder elsewhere
    sample_link = _run(root, "20261002T000000Z-vm-quick")
    shutil.rmtree(sample_link / "results" / "tls-part" / "samples")
    (sample_link / "results" / "tls-part" / "samples").symlink_to(outside / "samples")
    plain = _run(root, "20261003T000000Z-vm-quick")

    def prune(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([EXE, "prune", "--keep", "0", "--reports", str(root), *extra],
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    dry = prune("--dry-run")
    wet = prune()
    assert dry.returncode == 0 and wet.returncode == 0, wet.stderr
    listed = [[ln.split()[-1] for ln in r.stdout.splitlines() if " MB  " in ln] for r in (dry, wet)]
    assert listed[0] == listed[1], (dry.stdout, wet.stdout)  # the dry run plans what the real one deletes
    assert f"tls/{written.name}" not in listed[1]  # being written in the other namespace
    assert (written / "results" / "tls-part" / "samples" / "s.parquet").is_file()
    assert not (plain / "results" / "tls-part" / "samples").exists()  # prune does prune
    assert (outside / "samples" / "keep.parquet").is_file() and (outside / "report.ipynb").is_file()
    assert (sample_link / "results" / "tls-part" / "samples").is_symlink()
    assert "links left as they are" in wet.stdout
    again = prune()  # a link in a run stops no later prune
    assert again.returncode == 0, again.stderr


def test_a_sweep_here_leaves_the_cgroup_of_a_live_owner_in_another_pid_namespace(other_namespace):
    _run_dir, said = other_namespace
    if not said["group"]:
        pytest.skip("no writable cpuacct hierarchy here")
    group = Path(said["group"])
    process.sweep_stale()
    assert group.is_dir(), "a live owner's cgroup was removed by a sweep in another PID namespace"
    assert owners.alive(said["token"])


def test_a_sweep_removes_the_cgroup_of_an_owner_in_another_namespace_once_it_ended(tmp_path):
    if os.geteuid() != 0 or not shutil.which("unshare") or not cgroups.available("cpuacct"):
        pytest.skip("needs root, unshare(1) and a writable cpuacct hierarchy")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text(run_json({"study": "tls"}))
    argv = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", HELPER, str(tmp_path / "run"), LIB]
    proc = subprocess.run(argv, input="", capture_output=True, text=True, timeout=60)
    said = json.loads(proc.stdout.splitlines()[0])
    assert not owners.alive(said["token"])
    deadline = time.monotonic() + 10
    while Path(said["group"]).exists() and time.monotonic() < deadline:
        process.sweep_stale()
        time.sleep(0.2)
    assert not Path(said["group"]).exists()
    assert json.loads((tmp_path / "run" / "run.json").read_text())["host"] == socket.gethostname()


def test_prune_refuses_values_that_are_not_finite():
    for bad in ("nan", "inf", "-1"):
        res = subprocess.run([EXE, "prune", "--older-than", bad], capture_output=True, text=True, timeout=30)
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, (bad, res.stderr)


def test_the_cli_as_pid_1_runs_a_study(tmp_path):
    """A container's entrypoint is PID 1: the kernel it starts has PID 1 as its parent and is no orphan."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a PID namespace of its own needs root and unshare(1)")
    env = os.environ.copy()
    env.pop("PYTEST_CURRENT_TEST", None)
    argv = ["unshare", "--pid", "--fork", "--mount-proc", EXE, "run", "tls", "-p", "mongo_enabled", "false"]
    res = subprocess.run([*argv, "-p", "mysql_connect_iterations", "10"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    (run,) = (tmp_path / "reports" / "tls").glob("2*")
    assert json.loads((run / "run.json").read_text())["status"] == "ok"
