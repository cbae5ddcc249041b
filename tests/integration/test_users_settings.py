"""A user's server keeps the settings it had: servers the tests start, handed to the studies as the user's own.

An audit arm's variables are read before it runs and set back to what was read on every exit, whatever its own
disable statements say or do; an arm that changes no audit setting is refused in one line before any load; a TDE
run refuses to reuse tables whose encryption its account cannot read."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

import pytest

from secoverhead.servers import MariaDBServer
from secoverhead.servers.engines import MYSQL_8_0

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BENCH_PW, DBA_PW = "Settings-Bench-Pw-5521", "Settings-Dba-Pw-7730"
SHORT = ["-p", "run_seconds", "1", "-p", "repetitions", "2"]


def _accounts(db, *, process: bool = True) -> None:
    """The user's bench account (its database's rights; PROCESS or not) and their DBA (every right)."""
    conn = db.admin()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS benchdb")
    cur.execute("CREATE USER 'app'@'%' IDENTIFIED BY %s", (BENCH_PW,))
    cur.execute("GRANT ALL PRIVILEGES ON benchdb.* TO 'app'@'%'")
    if process:
        cur.execute("GRANT PROCESS ON *.* TO 'app'@'%'")
    cur.execute("CREATE USER 'dba'@'%' IDENTIFIED BY %s", (DBA_PW,))
    cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'dba'@'%' WITH GRANT OPTION")
    conn.close()


def _global(db, name: str) -> str:
    conn = db.admin()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT @@GLOBAL.{name}")
        return str(cur.fetchone()[0])
    finally:
        conn.close()


def _set(db, sql: str) -> None:
    conn = db.admin()
    conn.cursor().execute(sql)
    conn.close()


def _cli(db, study: str, tmp_path, *extra: str, user: str = "app") -> subprocess.CompletedProcess:
    env = os.environ | {"APP_PW": BENCH_PW, "DBA_PW": DBA_PW, "SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)
    args = ["run", study, "-p", "mysql_host", "127.0.0.1", "-p", "mysql_port", str(db.endpoint.port)]
    args += ["-p", "mysql_user", user, "-p", "mysql_password_env", "APP_PW" if user == "app" else "DBA_PW"]
    args += ["-p", "mysql_database", "benchdb", *extra, "--reports", str(tmp_path / "reports")]
    argv = [sys.executable, "-m", "secoverhead.app.cli", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)


def _arms(**arms: dict) -> list[str]:
    admin = ["-p", "mysql_admin_user", "dba", "-p", "mysql_admin_password_env", "DBA_PW"]
    return ["-p", "external_arms", json.dumps(arms), *admin, *SHORT]


def _loads(tmp_path) -> list:
    return list((tmp_path / "reports").rglob("runs/*.json"))


@pytest.fixture(scope="module")
def users_mysql():
    if not MYSQL_8_0.available:
        pytest.skip(f"{MYSQL_8_0.server} is not fetched here: `make setup` fetches it")
    from secoverhead.servers.mysql import MySQLServer

    with MySQLServer(tls=True) as s:
        _accounts(s)
        yield s


def test_a_dbas_general_log_on_stays_on_and_an_arm_that_changes_nothing_is_refused(users_mysql, tmp_path):
    """The DBA has general_log on: an arm that turns it on changes nothing, so it is refused before any load, and
    the log is still on afterwards (its disable statement, which turns it off, is never what restores it)."""
    _set(users_mysql, "SET GLOBAL general_log = ON")
    try:
        arm = {"enable": ["SET GLOBAL general_log = ON"], "disable": ["SET GLOBAL general_log = OFF"]}
        res = _cli(users_mysql, "audit", tmp_path, *_arms(general_log=arm))
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-3000:]
        assert "after its enable statements every audit setting reads as in the baseline" in res.stderr
        assert not _loads(tmp_path)  # nothing was measured
        assert _global(users_mysql, "general_log") == "1"
    finally:
        _set(users_mysql, "SET GLOBAL general_log = OFF")


def test_what_an_arm_sets_is_set_back_to_what_was_read_whatever_its_disable_says(users_mysql, tmp_path):
    """init_connect had a value of the DBA's: an arm that replaces it and whose disable empties it leaves the DBA's
    value in place, as does general_log, which the arm turned on and never turned off."""
    theirs = "SET @dba_marker = 'theirs'"
    _set(users_mysql, f'SET GLOBAL init_connect = "{theirs}"')
    try:
        arm = {
            "enable": ["SET GLOBAL init_connect = 'SET @x = 1'", "SET GLOBAL general_log = ON"],
            "disable": ["SET GLOBAL init_connect = ''"],
        }
        res = _cli(users_mysql, "audit", tmp_path, *_arms(replaced=arm))
        assert res.returncode == 0, res.stderr[-3000:]
        assert _global(users_mysql, "init_connect") == theirs and _global(users_mysql, "general_log") == "0"
        assert not list((tmp_path / "state").rglob("journal/*.json"))  # nothing left pending
    finally:
        _set(users_mysql, "SET GLOBAL init_connect = ''")


def test_a_failing_disable_on_mariadb_is_said_and_the_value_read_is_restored(tmp_path):
    with MariaDBServer(tls="on") as db:
        _accounts(db)
        arm = {"enable": ["SET GLOBAL general_log = ON"], "disable": ["SET GLOBAL general_log = MAYBE"]}
        res = _cli(db, "audit", tmp_path, *_arms(general_log=arm))
        assert res.returncode == 0, res.stderr[-3000:]
        assert _global(db, "general_log") == "0"
        (meta,) = [json.loads(p.read_text()) for p in (tmp_path / "reports").rglob("metadata.json")]
        (note,) = [n for n in meta["notes"] if "MAYBE" in n]
        assert "failed" in note and "set back to what was read" in note


def test_tables_whose_encryption_the_account_cannot_read_are_not_reused_as_encryption_off(tmp_path):
    """An earlier run left the benchmark's tables encrypted; the DBA then turned innodb_encrypt_tables off. An
    account without PROCESS cannot read the tables' flags, so a run labelled "encryption off" is refused before
    any load rather than recorded as off on encrypted tables."""
    tde = ["-p", "run_seconds", "1", "-p", "workloads", "[oltp_read_only]", "-p", "repetitions", "2"]
    with MariaDBServer(tls="on", encryption=True) as db:
        _accounts(db, process=False)
        first = _cli(db, "tde", tmp_path / "first", *tde, "-p", "mysql_encryption", "on", user="dba")
        assert first.returncode == 0, first.stderr[-3000:]
        _set(db, "SET GLOBAL innodb_encrypt_tables = OFF")  # new tables plain; the existing ones stay encrypted
        res = _cli(db, "tde", tmp_path, *tde, "-p", "mysql_encryption", "off")
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-3000:]
        assert "would reuse its tables" in res.stderr and "Grant the account PROCESS" in res.stderr
        assert not _loads(tmp_path)


def test_a_second_run_on_the_same_users_server_is_refused_before_it_touches_it(users_mysql, tmp_path):
    """Two audit runs against one MySQL, half a second apart: the second is refused in one line naming the first,
    before its pre-flight check toggles anything; the first measures alone and ends ok."""
    arm = {"enable": ["SET GLOBAL general_log = ON"], "disable": []}
    env = os.environ | {"APP_PW": BENCH_PW, "DBA_PW": DBA_PW, "SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)

    def argv(reports):
        args = ["run", "audit", "-p", "mysql_host", "127.0.0.1", "-p", "mysql_port", str(users_mysql.endpoint.port)]
        args += ["-p", "mysql_user", "app", "-p", "mysql_password_env", "APP_PW", "-p", "mysql_database", "benchdb"]
        return [sys.executable, "-m", "secoverhead.app.cli", *args, *_arms(general_log=arm), "--reports", reports]

    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    first = subprocess.Popen(argv(str(tmp_path / "a")), env=env, **pipes)
    _holding(first)  # a busy machine takes seconds to import the CLI: the second starts once the first holds it
    time.sleep(0.5)
    second = subprocess.run(argv(str(tmp_path / "b")), env=env, capture_output=True, text=True, timeout=600)
    _, err = first.communicate(timeout=900)
    assert first.returncode == 0, err[-3000:]
    assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr[-3000:]
    assert f"127.0.0.1:{users_mysql.endpoint.port} is being loaded by another run (pid {first.pid}" in second.stderr
    assert not list((tmp_path / "b").rglob("run.json"))


def _holding(proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Wait until `proc` holds a user's server's lock (core.runlock.hold_servers writes its pid in it)."""
    from secoverhead.core.runlock import TARGET_LOCKS

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        for lock in TARGET_LOCKS.glob("*.lock") if TARGET_LOCKS.is_dir() else []:
            with contextlib.suppress(OSError):
                if lock.read_text().startswith(f"pid {proc.pid},"):
                    return
        time.sleep(0.05)
    pytest.fail(f"pid {proc.pid} never held the server's lock")
