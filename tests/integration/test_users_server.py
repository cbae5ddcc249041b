"""A user's server is theirs: tables the project did not create survive every study run against it, and a
run refuses (exit 2, one line, before any load) when sysbench's tables exist but are not the project's.
Passwords reach every tool byte for byte; a server that requires TLS is named as the cause, and TDE and audit
run over TLS when told to."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from secoverhead.app.pipeline import prepare
from secoverhead.servers import MariaDBServer
from secoverhead.servers.ownership import MARKER

pytestmark = [pytest.mark.integration, pytest.mark.slow]

USER_ROWS = [(1, "alice"), (2, "bob"), (3, "carol")]
# every character that once broke a tool: space, quotes, '#', '=', '$', backslash, non-ASCII, a comma, a newline
HARD = " lead 'q\" #h =e $d \\b ç, \nnext "
EASY = "Plain-Bench-Pw-4711"
SHORT = {  # each study at its smallest: what matters here is what it does to the server, not its figures
    "tls": ["-p", "mongo_enabled", "false", "-p", "mysql_connect_iterations", "5", "-p", "repetitions", "2"],
    "auth": ["-p", "mongo_enabled", "false", "-p", "nonce_enabled", "false", "-p", "repetitions", "2"],
    "tde": ["-p", "run_seconds", "1", "-p", "mysql_encryption", "off", "-p", "workloads", "[oltp_read_only]"],
    "audit": ["-p", "run_seconds", "1", "-p", "repetitions", "2"],
}


@pytest.fixture(scope="module")
def users_server():
    """A MariaDB the tests start but hand over as the user's own: a database whose sbtest1 is the user's, and a
    database for the benchmark that holds one of the user's tables too."""
    with MariaDBServer(tls="on") as db:
        conn = db.admin()
        cur = conn.cursor()
        for user, pw, extra in (("easy", EASY, ""), ("hard", HARD, ""), ("tlsonly", EASY, " REQUIRE SSL")):
            cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY %s{extra}", (pw,))
            cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{user}'@'%'")
        for database in ("theirs", "benchdb"):
            cur.execute(f"CREATE DATABASE {database}")
        cur.execute("CREATE TABLE theirs.sbtest1 (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute("CREATE TABLE benchdb.customers (id INT PRIMARY KEY, name VARCHAR(20))")
        for table in ("theirs.sbtest1", "benchdb.customers"):
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s)", USER_ROWS)
        conn.commit()
        conn.close()
        yield db


def _rows(db, table: str, columns: str = "id, name") -> list[tuple]:
    conn = db.admin()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT {columns} FROM {table} ORDER BY 1")
        return [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()


def _cli(db, study: str, user: str, database: str, tmp_path, *extra: str) -> subprocess.CompletedProcess:
    env = os.environ | {"USERS_PW": HARD if user == "hard" else EASY, "SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)
    args = ["run", study, "-p", "mysql_host", "127.0.0.1", "-p", "mysql_port", str(db.endpoint.port)]
    args += ["-p", "mysql_user", user, "-p", "mysql_password_env", "USERS_PW", "-p", "mysql_database", database]
    args += [*SHORT[study], *extra, "--reports", str(tmp_path / "reports")]
    return subprocess.run([sys.executable, "-m", "secoverhead.app.cli", *args], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("study", ["tls", "tde", "audit"])
def test_a_table_the_project_did_not_create_is_refused_and_untouched(users_server, study, tmp_path):
    res = _cli(users_server, study, "easy", "theirs", tmp_path)
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.count("\n") == 1 and "theirs.sbtest1 exists and secoverhead did not create it" in res.stderr
    assert not (tmp_path / "reports").exists() or not list((tmp_path / "reports").rglob("run.json"))  # no load
    assert _rows(users_server, "theirs.sbtest1") == USER_ROWS


@pytest.mark.parametrize("study", ["tls", "tde", "audit"])  # auth creates nothing (its pre-flight is below)
def test_every_study_runs_with_that_password_and_leaves_the_users_tables_as_they_were(users_server, study, tmp_path):
    res = _cli(users_server, study, "hard", "benchdb", tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _rows(users_server, "benchdb.customers") == USER_ROWS
    owned = {r[0] for r in _rows(users_server, f"benchdb.{MARKER}", "table_name")}
    assert "sbtest1" in owned and "customers" not in owned
    for f in (tmp_path / "reports").rglob("*"):  # and the password is in no artefact, in any spelling
        if f.is_file():
            assert HARD.strip().encode() not in f.read_bytes(), f


@pytest.mark.parametrize("study", list(SHORT))
def test_a_password_of_every_awkward_character_passes_every_tools_preflight(users_server, study, monkeypatch):
    """Pre-flight logs in with every tool the run uses (the connector, and sysbench for TDE and audit)."""
    monkeypatch.setenv("USERS_PW", HARD)
    values = [
        ("mysql_host", "127.0.0.1"),
        ("mysql_port", str(users_server.endpoint.port)),
        ("mysql_user", "hard"),
        ("mysql_password_env", "USERS_PW"),
        ("mysql_database", "benchdb"),
    ]
    extra = {"tde": [("mysql_encryption", "off")], "tls": [("mongo_enabled", "false")]}.get(study, [])
    extra += [("mongo_enabled", "false")] if study == "auth" else []
    prepare(study, overrides=values + extra)  # raises on any refusal


def test_a_server_that_requires_tls_is_named_and_tde_runs_over_tls(users_server, tmp_path):
    for study in ("tde", "tls"):
        res = _cli(users_server, study, "tlsonly", "benchdb", tmp_path)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-2000:]
        assert "refuses plain TCP" in res.stderr and "TLS" in res.stderr, res.stderr
    res = _cli(users_server, "tde", "tlsonly", "benchdb", tmp_path, "-p", "mysql_tls", "true")
    assert res.returncode == 2 and "mysql_client_cert_file" in res.stderr  # what sysbench needs, said at once
    e = users_server.endpoint  # the server's CA, and a client certificate it signed, as a user would have them
    files = ["-p", "mysql_ca_file", str(e.ca_file), "-p", "mysql_client_cert_file", str(e.client_cert)]
    files += ["-p", "mysql_client_key_file", str(e.client_key)]
    res = _cli(users_server, "tde", "tlsonly", "benchdb", tmp_path, "-p", "mysql_tls", "true", *files)
    assert res.returncode == 0, res.stderr[-3000:]


def test_encryption_on_is_read_back_from_a_mariadb_without_a_key_source(users_server, tmp_path):
    """The label "encryption on" against a MariaDB with no encryption plugin: refused before any load."""
    res = _cli(users_server, "tde", "easy", "benchdb", tmp_path, "-p", "mysql_encryption", "on")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-2000:]
    assert "declared mysql_encryption=on but cannot encrypt" in res.stderr and "MariaDB" in res.stderr
