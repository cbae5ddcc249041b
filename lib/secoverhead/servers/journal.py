"""Changes made to a server the user named are journaled on disk before they are made, and undone to what was read.

An arm that toggles a setting on the user's server (`SET GLOBAL general_log=ON`) first reads every global variable
its statements set (and every audit variable the server has), writes to a journal file under the state directory
the statements that put each back to the value read, then runs. After the run the arm's own disable statements run
(for what a variable cannot say: a plugin it installed), then the restore, then the variables are read again: a
value that differs from the one read before is said with the statement that will set it back. A DBA whose
general_log was ON finds it ON afterwards, whatever the arm's disable says. Any exit of the owning `with` block
(error, Ctrl-C, SIGTERM) restores what is pending. A SIGKILLed owner cannot, so every `secoverhead` start calls
`recover()`: it finds journals whose owner is gone and restores them when the credentials they name are at hand
(the password's environment variable or file, never the password itself), else says exactly what to run, and where.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from secoverhead.core import owners, paths
from secoverhead.core.errors import SecoverheadError
from secoverhead.core.files import atomic_write_json, read_json
from secoverhead.core.owners import alive
from secoverhead.servers import ExternalMySQL, labels
from secoverhead.servers.labels import AUDIT_VARIABLES


def _dir() -> Path:
    d = paths.state_dir() / "journal"
    d.mkdir(parents=True, exist_ok=True)
    return d


class Journal:
    """Pending changes to one external server, owned by this process."""

    def __init__(self, target: dict[str, Any], notes: list[str] | None = None) -> None:
        self.target = target
        self.path = _dir() / f"{target['host']}_{target['port']}_{owners.me()}.json"
        self.pending: list[dict[str, Any]] = []
        self.notes = notes if notes is not None else []  # what a restore said (an arm's disable that failed)

    @classmethod
    def for_target(cls, server: Any, notes: list[str] | None = None) -> Journal:
        """A journal for an ExternalMySQL (its connection facts, and where its admin password lives)."""
        return cls(server.target_spec(), notes)

    def _write(self) -> None:
        if self.pending:
            atomic_write_json(
                self.path,
                {
                    "target": self.target,
                    "owner": owners.me(),
                    "owner_pid": os.getpid(),
                    "written": time.time(),
                    "pending": self.pending,
                },
            )
        else:
            self.path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def applied(self, admin: Any, spec: dict[str, Sequence[str]], name: str = "") -> Iterator[dict[str, str | None]]:
        """Run spec['enable'] for the block's duration; every variable it touches is read first and set back to
        that value on any exit (after spec['disable'], which may do what a variable cannot say). Yields the values
        read; a restore that leaves a value other than the one read raises RestoreFailed, naming it."""
        names = touched(spec.get("enable", []))
        before = read_globals(admin, names)
        entry = {"arm": name, "undo": list(spec.get("disable", [])), "restore": restore_statements(before),
                 "read": before}  # fmt: skip
        self.pending.append(entry)
        self._write()  # on disk before the change is made
        try:
            run_sql(admin, spec.get("enable", []))
            yield before
        except BaseException:
            # the block's error is the run's reason: a restore that fails too (the server stalled) stays journaled,
            # and recover() at the run's end or the next start does it
            with contextlib.suppress(Exception):
                self._undo(admin, entry)
            raise
        self._undo(admin, entry)

    def _undo(self, admin: Any, entry: dict[str, Any]) -> None:
        said = [n for n in restore(admin, entry, self.target) if n not in self.notes]
        self.notes += said
        self.pending.remove(entry)
        self._write()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self._write()


def run_sql(server: Any, statements: Sequence[str]) -> None:
    if not statements:
        return
    conn = server.endpoint.connect(tls=server.tls, autocommit=True)
    try:
        cur = conn.cursor()
        for sql in statements:
            cur.execute(sql)
    finally:
        conn.close()


def audit_state(server: Any) -> dict[str, str]:
    """The server's audit settings as it reports them now (labels.audit_state over a connection of its own)."""
    conn = server.endpoint.connect(tls=server.tls, autocommit=True)
    try:
        return labels.audit_state(conn)
    finally:
        conn.close()


def check_arm_changes(admin: Any, spec: dict[str, Sequence[str]], name: str) -> None:
    """Before anything is measured: the arm applied once, its audit settings read back against the server's own,
    and restored. One whose enable statements change no audit setting is refused (LabelMismatch): its runs would
    be recorded as that audit and measure none."""
    baseline = audit_state(admin)
    with Journal.for_target(admin) as journal, journal.applied(admin, spec, name):
        labels.check_audit_toggled(name, audit_state(admin), baseline)


class RestoreFailed(SecoverheadError):
    """A setting of the user's server could not be put back to the value read before the run."""


# A global variable a statement sets: SET GLOBAL x = ..., SET @@GLOBAL.x = ..., SET @@x = ... (each of a list)
_ASSIGNED = re.compile(r"(?:^|,)\s*(?:GLOBAL\s+|@@GLOBAL\.|@@)?`?([A-Za-z_][A-Za-z0-9_]*)`?\s*:?=", re.I)
_PERSIST = re.compile(r"\bPERSIST(?:_ONLY)?\b|\bRESET\s+PERSIST\b", re.I)


def touched(statements: Sequence[str]) -> list[str]:
    """The global variables `statements` set, with every audit variable (those a server lacks are not read)."""
    names = []
    for sql in statements:
        body = re.match(r"\s*SET\s+(.*)", _unquoted(sql), re.I | re.S)
        if body:
            names += [n.lower() for n in _ASSIGNED.findall(body.group(1)) if n.upper() not in ("GLOBAL", "SESSION")]
    return list(dict.fromkeys([*names, *AUDIT_VARIABLES]))


def _unquoted(sql: str) -> str:
    """sql with its quoted strings emptied: a comma or '=' inside a value is not an assignment."""
    return re.sub(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"", "''", sql)


def persists(statements: Sequence[str]) -> str:
    """The first statement that writes the server's persisted settings (mysqld-auto.cnf), which a restore by
    SET GLOBAL would leave changed; "" when none does."""
    return next((sql for sql in statements if _PERSIST.search(_unquoted(sql))), "")


def read_globals(server: Any, names: Sequence[str]) -> dict[str, str | None]:
    """Each variable's global value as the server reports it now (one it does not have is left out)."""
    import mysql.connector  # deferred: the CLI checks parameters before heavy modules load

    out: dict[str, str | None] = {}
    conn = server.endpoint.connect(tls=server.tls, autocommit=True)
    try:
        cur = conn.cursor()
        for name in names:
            try:
                cur.execute(f"SELECT @@GLOBAL.{name}")
                (value,) = cur.fetchone()
            except mysql.connector.Error:
                continue  # no such variable here, or not a global one
            out[name] = None if value is None else value.decode() if isinstance(value, bytes) else str(value)
    finally:
        conn.close()
    return out


def literal(value: str | None) -> str:
    """A value as SQL: numbers bare, NULL, text quoted (a backslash or control byte as a hex literal, which reads
    the same whatever the session's sql_mode)."""
    if value is None:
        return "NULL"
    if re.fullmatch(r"-?\d+(?:\.\d+)?", value):
        return value
    if "\\" in value or any(ord(c) < 32 for c in value):
        return f"X'{value.encode().hex()}'"
    return "'" + value.replace("'", "''") + "'"


def restore_statements(values: dict[str, str | None]) -> list[str]:
    return [f"SET GLOBAL {name} = {literal(value)}" for name, value in values.items()]


def restore(server: Any, entry: dict[str, Any], target: dict[str, Any]) -> list[str]:
    """The arm's disable statements (each on its own; a failure is said, not fatal), then every variable that no
    longer reads as it did before the run set back to that value (only those: a read-only variable or one the arm
    left alone is not written), then read again: any that still differs raises RestoreFailed, naming what the
    server is left with and what to run. Returns notes. An entry of an older journal has only `undo`: it is run."""
    if "read" not in entry:
        run_sql(server, entry.get("undo", []))
        return []
    notes = []
    for sql in entry.get("undo", []):
        try:
            run_sql(server, [sql])
        except Exception as exc:  # the restore below does what it meant to
            notes.append(f"the arm's disable statement {sql!r} failed ({_why(exc)}); its settings were set back "
                         "to what was read")  # fmt: skip
    read = dict(entry["read"])
    problems = []
    for name, value in _changed(read, read_globals(server, list(read))).items():
        try:
            run_sql(server, restore_statements({name: value}))
        except Exception as exc:
            problems.append(f"setting {name} back failed ({_why(exc)})")
    now = read_globals(server, list(read))
    left = _changed(read, now)
    if left:
        where = f"{target.get('host')}:{target.get('port')}"
        shown = ", ".join(f"{k} is {now.get(k)!s} (it read {v!s} before the run)" for k, v in left.items())
        raise RestoreFailed(
            f"{where} was not left as it was read: {shown}{' - ' + '; '.join(problems) if problems else ''}. Run as "
            f"{target.get('user')}: {'; '.join(restore_statements(left))}"
        )
    return notes


def _changed(read: dict[str, str | None], now: dict[str, str | None]) -> dict[str, str | None]:
    """The variables whose value now differs from the one read, with the value read."""
    return {k: v for k, v in read.items() if now.get(k, v) != v}


def _why(exc: BaseException) -> str:
    return str(getattr(exc, "msg", "") or exc).splitlines()[0][:160] if str(exc) else type(exc).__name__


def recover() -> list[str]:
    """Undo what crashed owners left pending; one message per journal found (what was done, or what to run)."""
    messages = []
    d = paths.state_dir() / "journal"
    if not d.is_dir():
        return messages
    for f in sorted(d.glob("*.json")):
        data = read_json(f)
        if not isinstance(data, dict) or alive(data.get("owner") or data.get("owner_pid")):
            if not isinstance(data, dict):
                messages.append(f"journal {f} is unreadable; it was left in place")
            continue
        t, pending = data.get("target", {}), list(data.get("pending", []))
        where = f"{t.get('user')}@{t.get('host')}:{t.get('port')}"
        todo = [sql for e in pending for sql in (e["restore"] if "read" in e else e.get("undo", []))]
        if not todo:
            f.unlink(missing_ok=True)
            continue
        try:
            with ExternalMySQL(
                host=t["host"],
                port=int(t["port"]),
                user=t["user"],
                password_env=t.get("password_env") or None,
                password_file=t.get("password_file") or None,
                ca_file=t.get("ca_file") or None,
                tls=bool(t.get("tls")),
            ) as server:
                for entry in pending:
                    messages += restore(server, entry, t)
            f.unlink(missing_ok=True)
            messages.append(f"restored {where} after an interrupted run: ran {'; '.join(todo)}")
        except Exception as exc:  # no credentials at hand, server away: say exactly what to run, once
            if data.get("told"):
                continue  # said at an earlier start; retried quietly at each start until it works or is deleted
            messages.append(
                f"{exc}  - then delete {f}"
                if isinstance(exc, RestoreFailed)
                else f"an interrupted run left settings changed on {where} ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:300] if str(exc) else ''}). Run as that user: {'; '.join(todo)}  - then "
                f"delete {f}"
            )
            with contextlib.suppress(OSError):
                atomic_write_json(f, data | {"told": time.time()})
    return messages
