"""Owners told apart by more than a local PID: every branch of core.owners, the run lock's record of its holder,
and a run of another host judged by its lease."""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import time

import pytest

from secoverhead.core import owners, runlock, runs
from secoverhead.core.errors import ConfigError
from secoverhead.core.report import Report
from secoverhead.core.runlock import RunLock
from tests.records import run_json, run_record


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_my_token_is_registered_and_alive():
    token = owners.me()
    pid, ns, start = token.split(".")
    assert int(pid) == os.getpid() and int(ns) > 0 and int(start) > 0
    assert owners.alive(token) and owners.me() == token
    assert (owners._registry() / f"{token}.lock").is_file()


@pytest.mark.parametrize("value", [None, "", "x", "-3", "0", 0, "1.2", "99999999999999999999999"])
def test_what_is_not_a_live_owner(value):
    assert not owners.alive(value)


def test_a_bare_pid_is_read_as_before():
    assert owners.alive(os.getpid()) and owners.alive(str(os.getpid()))
    assert not owners.alive(_dead_pid())


def test_a_reused_pid_is_not_its_old_owner():
    pid, ns, start = owners.me().split(".")
    assert not owners.alive(f"{pid}.{ns}.{int(start) + 1}")  # same PID and namespace, another start
    assert owners.alive(f"{pid}.{ns}.0")  # start unknown: the PID says it


def test_an_owner_in_another_namespace_is_alive_while_it_holds_its_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(owners, "_registry", lambda: tmp_path)
    token = "123.1.456"  # namespace inode 1 is no one's here
    assert not owners.alive(token)  # never registered: every owner registers before its token is used
    fd = os.open(tmp_path / f"{token}.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    holder = subprocess.Popen(  # a separate holder: our own fds share nothing with a fresh open
        [sys.executable, "-c", "import fcntl,os,sys;f=os.open(sys.argv[1],os.O_RDWR);fcntl.flock(f,2);input()",
         str(tmp_path / f"{token}.lock")], stdin=subprocess.PIPE, text=True)  # fmt: skip
    os.close(fd)
    deadline = time.monotonic() + 10
    while not owners.alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert owners.alive(token)
    assert owners.sweep() == []  # a held lock is kept
    holder.communicate("\n", timeout=10)
    assert not owners.alive(token)  # the kernel dropped the lock with its holder
    assert owners.sweep() == [tmp_path / f"{token}.lock"]


def test_without_a_registry_another_namespaces_owner_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(owners, "_registry", lambda: tmp_path / "none")
    assert owners.alive("123.1.456")


def test_a_run_of_another_host_is_running_until_its_lease_ends():
    meta = run_record({"status": "running", "host": "elsewhere-" + socket.gethostname(), "owner": "1.1.1"})
    assert runs.status_of(Report.of(meta)) == "running"  # nothing known of when it wrote: kept
    assert runs.status_of(Report.of(meta), time.time() - 60) == "running"
    assert runs.status_of(Report.of(meta), time.time() - runs.FOREIGN_LEASE_S - 60) == "interrupted"
    here = meta | {"host": socket.gethostname(), "owner": owners.me()}
    assert runs.status_of(Report.of(here), time.time() - runs.FOREIGN_LEASE_S - 60) == "running"  # the owner says
    assert runs.status_of(Report.of(here | {"owner": f"{_dead_pid()}"})) == "interrupted"


def test_the_run_lock_names_its_holder_and_another_hosts_lock_is_respected_by_lease(tmp_path):
    lock = RunLock(tmp_path).acquire()
    line = (tmp_path / "run.lock").read_text()
    assert f"host {socket.gethostname()}" in line and f"owner {owners.me()}" in line
    lock.release()
    assert (tmp_path / "run.lock").read_text() == ""
    other = f"pid 7 (secoverhead) host elsewhere-{socket.gethostname()} owner 7.1.1 at {time.time():.0f}\n"
    (tmp_path / "run.lock").write_text(other)
    with pytest.raises(ConfigError, match="another host's lock"):
        RunLock(tmp_path).acquire()
    stale = time.time() - runlock.FOREIGN_LEASE_S - 60
    (tmp_path / "run.lock").write_text(other.replace(other.split()[-1], f"{stale:.0f}"))
    (tmp_path / "run.json").write_text(run_json({"status": "running"}))
    for f in ("run.json", "run.lock"):
        os.utime(tmp_path / f, (stale, stale))
    RunLock(tmp_path).acquire().release()  # lease over: taken


def test_a_held_lock_renews_its_date_so_another_host_sees_a_live_lease(tmp_path, monkeypatch):
    """A run renews its lock's holder line while it runs: on a folder shared with another host, 24 h after it
    *started* it is still leased, because it last said so minutes ago."""
    monkeypatch.setattr(runlock, "RENEW_S", 0.2)
    old = time.time() - runlock.FOREIGN_LEASE_S - 3600
    (tmp_path / "run.json").write_text(run_json({"status": "running", "host": "elsewhere", "owner": "7.1.1"}))
    os.utime(tmp_path / "run.json", (old, old))
    lock = RunLock(tmp_path).acquire()
    try:
        os.utime(tmp_path / "run.lock", (old, old))
        first = (tmp_path / "run.lock").read_text()
        deadline = time.time() + 10
        while (tmp_path / "run.lock").stat().st_mtime < time.time() - 60 and time.time() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "run.lock").stat().st_mtime > time.time() - 60  # renewed, not left at its start
        assert (tmp_path / "run.lock").read_text().startswith(first.split(" at ")[0])
        assert runs.running(tmp_path)  # another host's record, leased by the renewed lock
    finally:
        lock.release()
    os.utime(tmp_path / "run.lock", (old, old))
    assert not runs.running(tmp_path)  # neither renewed for a day: interrupted


def test_resume_checks_that_the_run_lies_in_its_studys_folder(tmp_path):
    from secoverhead.app.pipeline import resume_values

    run = tmp_path / "tls" / "20261101T000000Z-vm-smoke"
    run.mkdir(parents=True)
    (run / "run.json").write_text(run_json({"study": "auth", "status": "interrupted", "parameters": {}}))
    with pytest.raises(ConfigError, match="names study 'auth' but it lies in 'tls'"):
        resume_values(run)
    (run / "run.json").write_text(run_json({"study": "tls", "status": "interrupted", "parameters": {"a": 1}}))
    assert resume_values(run) == ("tls", {"a": 1})


def test_resume_refuses_parameters_edited_since_the_run_began(tmp_path):
    from secoverhead.app.pipeline import parameters_digest, resume_values

    run = tmp_path / "tde" / "20261101T000000Z-vm-quick"
    run.mkdir(parents=True)
    began = {"repetitions": 5, "workloads": ["oltp_read_only"], "max_minutes": 10.0, "mysql_host": ""}
    record = {
        "study": "tde",
        "status": "interrupted",
        "parameters": began,
        "parameters_sha256": parameters_digest(began),
    }
    (run / "run.json").write_text(run_json(record))
    assert resume_values(run) == ("tde", began)  # as recorded: read back from JSON, the same digest
    edited = record | {"parameters": began | {"repetitions": 50}}
    (run / "run.json").write_text(run_json(edited))
    with pytest.raises(ConfigError, match="parameters differ from those it began with"):
        resume_values(run)
