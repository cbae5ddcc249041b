"""Changes made to a server the user named are journaled on disk before they are made, and undone.

An arm that toggles a setting on the user's server (`SET GLOBAL general_log=ON`) first writes its undo
statements to a journal file under the state directory, then runs; after the run the undo statements run and
the entry is cleared. Any exit of the owning `with` block (error, Ctrl-C, SIGTERM) undoes what is pending. A
SIGKILLed owner cannot, so every `secoverhead` start calls `recover()`: it finds journals whose owner is gone
and undoes them when the credentials they name are at hand (the password's environment variable or file,
never the password itself), else says exactly what to run, and where.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from secoverhead.core import owners, paths
from secoverhead.core.files import atomic_write_json, read_json
from secoverhead.core.owners import alive
from secoverhead.servers import ExternalMySQL


def _dir() -> Path:
    d = paths.state_dir() / "journal"
    d.mkdir(parents=True, exist_ok=True)
    return d


class Journal:
    """Pending changes to one external server, owned by this process."""

    def __init__(self, target: dict[str, Any]) -> None:
        self.target = target
        self.path = _dir() / f"{target['host']}_{target['port']}_{owners.me()}.json"
        self.pending: list[dict[str, Any]] = []

    @classmethod
    def for_target(cls, server: Any) -> Journal:
        """A journal for an ExternalMySQL (its connection facts, and where its admin password lives)."""
        return cls(server.target_spec())

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
    def applied(self, admin: Any, spec: dict[str, Sequence[str]], name: str = "") -> Iterator[None]:
        """Run spec['enable'] on the server for the block's duration; spec['disable'] undoes it, always."""
        entry = {"arm": name, "undo": list(spec.get("disable", []))}
        self.pending.append(entry)
        self._write()  # on disk before the change is made
        try:
            run_sql(admin, spec.get("enable", []))
            yield
        except BaseException:
            # the block's error is the run's reason: an undo that fails too (the server stalled) stays journaled,
            # and recover() at the run's end or the next start does it
            with contextlib.suppress(Exception):
                self._undo(admin, entry)
            raise
        self._undo(admin, entry)

    def _undo(self, admin: Any, entry: dict[str, Any]) -> None:
        run_sql(admin, entry["undo"])
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
        t, undo = data.get("target", {}), [s for e in data.get("pending", []) for s in e.get("undo", [])]
        where = f"{t.get('user')}@{t.get('host')}:{t.get('port')}"
        if not undo:
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
                run_sql(server, undo)
            f.unlink(missing_ok=True)
            messages.append(f"restored {where} after an interrupted run: ran {'; '.join(undo)}")
        except Exception as exc:  # no credentials at hand, server away: say exactly what to run, once
            if data.get("told"):
                continue  # said at an earlier start; retried quietly at each start until it works or is deleted
            messages.append(
                f"an interrupted run left settings changed on {where} "
                f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]}). "
                f"Run as that user: {'; '.join(undo)}  - then delete {f}"
            )
            with contextlib.suppress(OSError):
                atomic_write_json(f, data | {"told": time.time()})
    return messages
