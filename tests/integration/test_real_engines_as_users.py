"""The real engines the originals measured (MySQL 8.0.31, mongod 6.0.5, fetched by `make setup`), started here but
handed to the studies as the user's own server. What the user has there survives every study; a label the user
gives is read back from the server; MySQL 8's default accounts work over plain TCP after FLUSH PRIVILEGES; a
missing right reaches the user as its reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from secoverhead.servers.engines import MONGOD_6_0, MYSQL_8_0
from secoverhead.servers.ownership import MARKER

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PW = "Users-Own-Pw-8123"
USER_DOC = {"_id": "user1", "field0": "the DBA's own document"}
MONGO_SHORT = ["-p", "mysql_enabled", "false", "-p", "rtt_enabled", "false", "-p", "repetitions", "2"]
MONGO_SHORT += ["-p", "mongo_connect_iterations", "3", "-p", "mongo_reused_iterations", "10"]
MYSQL_SHORT = {
    "tde": ["-p", "run_seconds", "1", "-p", "workloads", "[oltp_read_only]"],
    "audit": ["-p", "run_seconds", "1", "-p", "repetitions", "2"],
}


def _need(build) -> None:
    if not build.available:
        pytest.skip(f"{build.server} is not fetched here ({build.path}): `make setup` fetches it")


def _cli(tmp_path, study: str, *args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"USERS_PW": PW, "SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)
    argv = [sys.executable, "-m", "secoverhead.app.cli", "run", study, *args, "--reports", str(tmp_path / "reports")]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


# -- mongod ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def users_mongod():
    """A mongod 6.0 with auth, holding the user's own ycsb.usertable, and three of the user's accounts: one with
    every right, one that may only read `ycsb`, one with no right on it."""
    _need(MONGOD_6_0)
    from secoverhead.servers.mongod import MongodServer

    with MongodServer(auth=True, tls=True) as m:
        client = m.admin()
        try:
            client.ycsb.usertable.insert_one(dict(USER_DOC))
            rights = {"dba": ["root"], "reader": [{"role": "read", "db": "ycsb"}], "nobody": []}
            for user, roles in rights.items():
                client.admin.command("createUser", user, pwd=PW, roles=roles)
        finally:
            client.close()
        yield m


def _mongo_args(m, user: str) -> list[str]:
    uri = f"mongodb://127.0.0.1:{m.endpoint.port}/"
    args = ["-p", "mongo_uri", uri, "-p", "mongo_username", user, "-p", "mongo_password_env", "USERS_PW"]
    return [*args, "-p", "mongo_ca_file", str(m.certificates.ca_cert), *MONGO_SHORT]


def _users_docs(m) -> list[dict]:
    client = m.admin()
    try:
        return list(client.ycsb.usertable.find({}))
    finally:
        client.close()


def test_the_users_usertable_is_refused_before_any_load_and_survives(users_mongod, tmp_path):
    res = _cli(tmp_path, "tls", *_mongo_args(users_mongod, "dba"))
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.count("\n") == 1, res.stderr
    assert "ycsb.usertable exists and secoverhead did not create it" in res.stderr
    assert _users_docs(users_mongod) == [USER_DOC]
    assert not list((tmp_path / "reports").rglob("run.json"))  # refused before a run began


def test_auth_reads_and_leaves_the_users_data_as_it_was(users_mongod, tmp_path):
    args = _mongo_args(users_mongod, "dba")[:12]  # the server and the account, not the tls study's sizes
    args += ["-p", "mysql_enabled", "false", "-p", "nonce_enabled", "false", "-p", "repetitions", "2"]
    res = _cli(tmp_path, "auth", *args)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _users_docs(users_mongod) == [USER_DOC]


def test_a_missing_right_reaches_the_users_line_with_its_reason(users_mongod, tmp_path):
    res = _cli(tmp_path, "tls", *_mongo_args(users_mongod, "nobody"))
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.count("\n") == 1 and "not authorized" in res.stderr, res.stderr
    assert _users_docs(users_mongod) == [USER_DOC]


def test_a_collection_the_project_recorded_is_its_own_to_refill():
    """On a mongod where ycsb.usertable is free, the load records it before filling it; the next load (another
    size) may drop and refill it, and the pre-flight check lets it through."""
    _need(MONGOD_6_0)
    from secoverhead.servers.mongod import MongodServer
    from secoverhead.servers.ownership import mongo_check
    from secoverhead.workloads.ycsb import load_usertable

    with MongodServer(auth=True, tls=False) as m:
        client = m.admin()
        try:
            assert not load_usertable(client, 50).skipped
            assert [d["_id"] for d in client.ycsb[MARKER].find({})] == ["usertable"]
            mongo_check(client, ["ycsb.usertable"])  # the project's own: no refusal
            assert load_usertable(client, 50).skipped and not load_usertable(client, 80).skipped  # refilled
            assert client.ycsb.usertable.estimated_document_count() == 80
        finally:
            client.close()


# -- MySQL 8.0 ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def users_mysql():
    """A MySQL 8.0.31 as it ships (caching_sha2_password, no keyring) with the user's account `dba` (all rights on
    benchdb, no PROCESS, as many application accounts are), its hash flushed from the server's cache."""
    _need(MYSQL_8_0)
    from secoverhead.servers.mysql import MySQLServer

    with MySQLServer(tls=True) as s:
        conn = s.admin()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE benchdb")
        cur.execute("CREATE USER 'dba'@'%' IDENTIFIED BY %s", (PW,))
        cur.execute("GRANT ALL PRIVILEGES ON benchdb.* TO 'dba'@'%'")
        conn.close()
        yield s


def _flush(s) -> None:
    conn = s.admin()
    conn.cursor().execute("FLUSH PRIVILEGES")  # empties caching_sha2_password's cache of the account's hash
    conn.close()


def _mysql_args(s, study: str) -> list[str]:
    args = ["-p", "mysql_host", "127.0.0.1", "-p", "mysql_port", str(s.endpoint.port), "-p", "mysql_user", "dba"]
    return [*args, "-p", "mysql_password_env", "USERS_PW", "-p", "mysql_database", "benchdb", *MYSQL_SHORT[study]]


@pytest.mark.parametrize("study", ["tde", "audit"])
def test_plain_tcp_studies_log_in_to_a_stock_mysql_8_account_after_flush_privileges(users_mysql, study, tmp_path):
    _flush(users_mysql)
    extra = ["-p", "mysql_encryption", "off"] if study == "tde" else []
    res = _cli(tmp_path, study, *_mysql_args(users_mysql, study), *extra)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.startswith(f"{study}: ok  ") and f"{study}: ok" not in res.stderr  # said once


def test_encryption_on_against_a_server_that_cannot_encrypt_is_refused_before_any_load(users_mysql, tmp_path):
    args = [*_mysql_args(users_mysql, "tde"), "-p", "mysql_encryption", "on"]
    res = _cli(tmp_path, "tde", *args)
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.count("\n") == 1, res.stderr
    assert "declared mysql_encryption=on but cannot encrypt" in res.stderr
    assert not list((tmp_path / "reports").rglob("run.json"))


def test_an_unknown_database_on_mysql_8_is_named_as_itself_not_as_a_missing_hash(users_mysql, tmp_path):
    _flush(users_mysql)  # the plain login needs the hash cached first: the TLS login that caches it names the database
    args = [a if a != "benchdb" else "nosuchdb" for a in _mysql_args(users_mysql, "audit")]
    res = _cli(tmp_path, "audit", *args)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-2000:]
    assert "user 'dba' logged in but has no database 'nosuchdb' to use" in res.stderr, res.stderr
    assert "caching_sha2_password" not in res.stderr


def test_a_stock_account_on_a_server_without_tls_is_named_with_its_remedies():
    _need(MYSQL_8_0)
    from secoverhead.core.errors import ConfigError
    from secoverhead.servers.mysql import MySQLServer

    refused = pytest.raises(ConfigError, match=r"'bench'@127\.0\.0\.1:\d+ uses caching_sha2_password.*Remedies")
    with MySQLServer(tls=False) as s:
        admin = s.admin()
        admin.cursor().execute("FLUSH PRIVILEGES")  # as after a restart: the server forgets the hashes it cached
        admin.close()
        with refused:
            s.endpoint.connect(tls=False)


def test_a_password_changed_mid_run_ends_the_run_with_that_reason_on_the_users_line(tmp_path):
    """The user's MongoDB account loses its password while the run measures: the CLI's line, run.json and the
    report's banner carry the server's refusal, never an empty CellExecutionError."""
    import json
    import time

    _need(MONGOD_6_0)
    from secoverhead.servers.mongod import MongodServer

    with MongodServer(auth=True, tls=True) as m:
        client = m.admin()
        client.admin.command("createUser", "rotating", pwd=PW, roles=["root"])
        env = os.environ | {"USERS_PW": PW, "SECOVERHEAD_STATE": str(tmp_path / "state")}
        env.pop("PYTEST_CURRENT_TEST", None)
        args = [*_mongo_args(m, "rotating"), "-p", "repetitions", "6", "-p", "mongo_connect_iterations", "20"]
        argv = [sys.executable, "-m", "secoverhead.app.cli", "run", "tls", *args, "--reports", str(tmp_path / "r")]
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while not list((tmp_path / "r").glob("tls/*/results/*/runs/*.json")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            time.sleep(0.05)
        client.admin.command("updateUser", "rotating", pwd="Changed-Under-It-99")  # mid-run, as a DBA rotates it
        client.close()
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err[-3000:]
    line = next(ln for ln in err.splitlines() if ln.startswith("tls: failed"))
    assert "Authentication failed" in line, line
    (record,) = [p for p in (tmp_path / "r").glob("tls/*/run.json") if not p.parent.is_symlink()]
    assert "Authentication failed" in json.loads(record.read_text())["error"]
    assert "Authentication failed" in (record.parent / "report.html").read_text()
