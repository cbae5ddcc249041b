"""A crashed owner's journal: undone at the next start when it can be, and when it cannot, what to run is said once,
not at every later start."""

from __future__ import annotations

import json

import pytest

from secoverhead.core import owners
from secoverhead.servers import journal


def test_an_undo_that_cannot_run_is_said_once_then_retried_quietly(tmp_path, monkeypatch):
    monkeypatch.setenv("SECOVERHEAD_STATE", str(tmp_path))
    owners.me()  # the owners' registry exists (without one no owner can be told gone, and nothing is recovered)
    d = tmp_path / "journal"
    d.mkdir()
    left = {
        "target": {"host": "127.0.0.1", "port": 1, "user": "dba", "password_env": "NO_SUCH_VARIABLE_X"},
        "owner": "999999999.1.1",
        "owner_pid": 999999999,
        "pending": [{"arm": "general_log", "undo": ["SET GLOBAL general_log=OFF"]}],
    }
    (d / "127.0.0.1_1_999999999.1.1.json").write_text(json.dumps(left))
    first = journal.recover()
    assert len(first) == 1 and "SET GLOBAL general_log=OFF" in first[0] and "then delete" in first[0]
    assert journal.recover() == []  # said once; the file stays for the user, and is retried at each start
    assert json.loads((d / "127.0.0.1_1_999999999.1.1.json").read_text())["pending"] == left["pending"]


@pytest.mark.parametrize(
    ("statements", "names"),
    [
        (["SET GLOBAL general_log=ON"], ["general_log"]),
        (["set global general_log = 'ON', GLOBAL log_output='FILE'"], ["general_log", "log_output"]),
        (["SET @@GLOBAL.init_connect='INSERT INTO a.b VALUES (1, 2)'"], ["init_connect"]),  # the comma is quoted
        (["SET @@server_audit_logging := 1"], ["server_audit_logging"]),
        (["INSTALL SONAME 'server_audit'", "SELECT 1"], []),  # sets no variable: the audit ones are still read
    ],
)
def test_the_variables_an_arm_sets_are_read_with_every_audit_variable(statements, names):
    assert journal.touched(statements) == list(dict.fromkeys([*names, *journal.AUDIT_VARIABLES]))


def test_a_persisted_setting_is_found_and_a_quoted_word_is_not():
    assert journal.persists(["SET GLOBAL a=1", "SET PERSIST general_log=ON"]) == "SET PERSIST general_log=ON"
    assert journal.persists(["RESET PERSIST general_log"]) == "RESET PERSIST general_log"
    assert journal.persists(["SET GLOBAL init_connect='SET PERSIST x=1'"]) == ""


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        ("ON", "'ON'"),
        ("1", "1"),
        ("10.000000", "10.000000"),
        (None, "NULL"),
        ("", "''"),
        ("it's", "'it''s'"),
        ("a\\b", "X'615c62'"),  # a backslash reads differently under NO_BACKSLASH_ESCAPES: hex reads the same
        ("a\nb", "X'610a62'"),
    ],
)
def test_a_value_read_is_written_back_as_the_same_value(value, sql):
    assert journal.literal(value) == sql


class FakeServer:
    """A MySQL-family server's global variables, for what restore() asks of one (statements as text)."""

    def __init__(self, values, refuse=()):
        self.values, self.refuse, self.ran = dict(values), set(refuse), []


def _fake(monkeypatch, server):
    def run_sql(srv, statements):
        for sql in statements:
            if sql in srv.refuse:
                raise RuntimeError(f"refused {sql}")
            srv.ran.append(sql)
            name, _, value = sql.removeprefix("SET GLOBAL ").partition(" = ")
            srv.values[name] = None if value == "NULL" else value.strip("'")

    monkeypatch.setattr(journal, "run_sql", run_sql)
    read = lambda srv, names: {n: srv.values[n] for n in names if n in srv.values}  # noqa: E731
    monkeypatch.setattr(journal, "read_globals", read)


def test_what_was_read_is_restored_not_what_the_arms_disable_says(monkeypatch):
    server = FakeServer({"general_log": "ON"})  # the DBA's general log was on
    _fake(monkeypatch, server)
    entry = {"undo": ["SET GLOBAL general_log = OFF"], "read": {"general_log": "ON"}, "restore": []}
    assert journal.restore(server, entry, {"host": "h", "port": 1}) == []
    assert server.values["general_log"] == "ON" and server.ran[-1] == "SET GLOBAL general_log = 'ON'"


def test_a_failing_disable_is_said_and_the_read_value_still_restored(monkeypatch):
    server = FakeServer({"general_log": "1"}, refuse={"SET GLOBAL general_log = MAYBE"})
    server.values["general_log"] = "1"
    _fake(monkeypatch, server)
    entry = {"undo": ["SET GLOBAL general_log = MAYBE"], "read": {"general_log": "0"}, "restore": []}
    (note,) = journal.restore(server, entry, {"host": "h", "port": 1})
    assert "'SET GLOBAL general_log = MAYBE' failed" in note and "set back to what was read" in note
    assert server.values["general_log"] == "0"


def test_a_restore_that_fails_names_what_is_left_and_a_statement_that_will_work(monkeypatch):
    server = FakeServer({"general_log": "1", "log_output": "FILE"}, refuse={"SET GLOBAL general_log = 0"})
    _fake(monkeypatch, server)
    entry = {"undo": [], "read": {"general_log": "0", "log_output": "FILE"}, "restore": []}
    with pytest.raises(journal.RestoreFailed) as err:
        journal.restore(server, entry, {"host": "db1", "port": 3306, "user": "dba"})
    text = str(err.value)
    assert "db1:3306 was not left as it was read: general_log is 1 (it read 0 before the run)" in text
    assert text.endswith("Run as dba: SET GLOBAL general_log = 0") and "log_output" not in text


def test_a_variable_the_arm_left_alone_is_not_written(monkeypatch):
    server = FakeServer({"general_log": "0", "read_only_thing": "x"})
    _fake(monkeypatch, server)
    journal.restore(server, {"undo": [], "read": {"general_log": "0", "read_only_thing": "x"}}, {})
    assert server.ran == []
