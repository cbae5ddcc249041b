"""A crashed owner's journal: undone at the next start when it can be, and when it cannot, what to run is said once,
not at every later start."""

from __future__ import annotations

import json

from secoverhead.servers import journal


def test_an_undo_that_cannot_run_is_said_once_then_retried_quietly(tmp_path, monkeypatch):
    monkeypatch.setenv("SECOVERHEAD_STATE", str(tmp_path))
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
