"""A label the user gives a server ("encryption on") checked against what the server says of itself, before any
load: a run recorded as "encryption on" against a server that encrypts nothing would price encryption at zero."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from secoverhead.core.errors import ConfigError


class LabelMismatch(ConfigError):
    """The server is not in the state the user declared."""


@dataclass(frozen=True)
class EncryptionState:
    """What a MySQL-family server says of encryption at rest: whether it can encrypt (a key source loaded), whether
    a new table is encrypted by default, and each named table's flag where the account may read it."""

    can_encrypt: bool
    new_tables_encrypted: bool
    tables: dict[str, bool]  # table -> encrypted, for the tables that exist and whose flag could be read
    how: str  # which of the server's own records said so
    existing: tuple[str, ...] = ()  # the named tables that exist (a run reuses them)
    flags_read: bool = True  # whether the account could read the tables' encryption flags

    def as_dict(self) -> dict[str, Any]:
        return {"can_encrypt": self.can_encrypt, "new_tables_encrypted": self.new_tables_encrypted,
                "tables": self.tables, "existing": list(self.existing), "flags_read": self.flags_read,
                "how": self.how}  # fmt: skip


def _rows(cur: Any, sql: str, args: Sequence[Any] = ()) -> list[tuple] | None:
    """The rows, or None where the account may not read them (or the server has no such table)."""
    # deferred: studies import this; the CLI checks their parameters before heavy modules load
    import mysql.connector

    try:
        cur.execute(sql, tuple(args))
        return [tuple(r) for r in cur.fetchall()]
    except mysql.connector.Error:
        return None


# What each family keeps of encryption at rest: the active key sources, the default for a new table, a table's flag
MARIADB = {
    "sources": "SELECT PLUGIN_NAME FROM information_schema.PLUGINS WHERE PLUGIN_TYPE='ENCRYPTION' AND "
    "PLUGIN_STATUS='ACTIVE'",
    "default": "SELECT @@innodb_encrypt_tables IN ('ON', 'FORCE')",
    "flags": "SELECT NAME, ENCRYPTION_SCHEME > 0 AND CURRENT_KEY_VERSION > 0 FROM "
    "information_schema.INNODB_TABLESPACES_ENCRYPTION WHERE NAME IN ({marks})",
    "how": "MariaDB: encryption plugins, innodb_encrypt_tables, INNODB_TABLESPACES_ENCRYPTION",
}
MYSQL = {
    "sources": "SELECT PLUGIN_NAME FROM information_schema.PLUGINS WHERE PLUGIN_NAME LIKE 'keyring%%' AND "
    "PLUGIN_STATUS='ACTIVE' UNION ALL SELECT STATUS_VALUE FROM performance_schema.keyring_component_status "
    "WHERE STATUS_KEY='Component_status' AND STATUS_VALUE='Active'",
    "default": "SELECT @@default_table_encryption IN ('1', 'ON')",
    "flags": "SELECT NAME, ENCRYPTION = 'Y' FROM information_schema.INNODB_TABLESPACES WHERE NAME IN ({marks})",
    "how": "MySQL: keyring plugins and component, default_table_encryption, INNODB_TABLESPACES",
}


def encryption_state(conn: Any, database: str, tables: Sequence[str]) -> EncryptionState:
    """Read from the server's own records (MariaDB's or MySQL's, by its version string)."""
    cur = conn.cursor()
    version = str((_rows(cur, "SELECT @@version") or [("",)])[0][0])
    family = MARIADB if "mariadb" in version.lower() else MYSQL
    sources = _rows(cur, family["sources"])
    if sources is None and family is MYSQL:  # no keyring component table (before 8.0.24): the plugins alone
        sources = _rows(cur, family["sources"].split(" UNION ALL ")[0])
    can = bool(sources)
    new = can and bool((_rows(cur, family["default"]) or [(0,)])[0][0])
    names = [f"{database}/{t}" for t in tables]
    flags = _rows(cur, family["flags"].format(marks=", ".join(["%s"] * len(names)) or "''"), names)
    how = family["how"] + (" (table flags not readable by this account: it lacks PROCESS)" if flags is None else "")
    marks = ", ".join(["%s"] * len(tables)) or "''"
    existing = _rows(cur, EXISTING.format(marks=marks), [database, *tables]) or []
    cur.close()
    encrypted = {str(n).split("/", 1)[1]: bool(e) for n, e in flags or []}
    return EncryptionState(can, new, encrypted, how, tuple(str(t) for (t,) in existing), flags is not None)


# The named tables that exist: information_schema.TABLES shows an account the tables it has rights on (no PROCESS)
EXISTING = "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME IN ({marks})"


def check_encryption(state: EncryptionState, declared: str, tables: Sequence[str], where: str) -> None:
    """Raise LabelMismatch when the server is not in the declared state ("on" or "off") for the tables the run
    loads: those that exist by their flags, those it will create by what a new table gets."""
    want = declared == "on"
    if want and not state.can_encrypt:
        raise LabelMismatch(
            f"{where} is declared mysql_encryption=on but cannot encrypt: no keyring or encryption plugin is active "
            f"({state.how}); nothing was measured. Declare it off, or load a keyring first"
        )
    if state.can_encrypt and not state.flags_read and state.existing:
        shown = ", ".join(state.existing[:4]) + (" ..." if len(state.existing) > 4 else "")
        raise LabelMismatch(
            f"{where} is declared mysql_encryption={declared}, and the run would reuse its tables {shown}, whose "
            f"encryption this account cannot read ({state.how}); nothing was measured. Grant the account PROCESS, or "
            "name a database in which the run makes its tables anew"
        )
    wrong = sorted(t for t, encrypted in state.tables.items() if encrypted != want)
    if not wrong and any(t not in state.tables for t in tables) and state.new_tables_encrypted != want:
        wrong = ["new tables (" + ("not " if want else "") + "encrypted by default)"]
    if wrong:
        raise LabelMismatch(
            f"{where} is declared mysql_encryption={declared} but {', '.join(wrong[:4])} "
            f"{'is' if len(wrong) == 1 else 'are'} {'not ' if want else ''}encrypted ({state.how}); nothing was "
            "measured. Declare what the server has"
        )


# What an audit setting on a MySQL-family server can be read back as (a variable the server lacks is left out)
AUDIT_VARIABLES = ("general_log", "server_audit_logging", "init_connect", "audit_log_policy", "audit_log_disable")


def audit_state(conn: Any) -> dict[str, str]:
    """The server's audit settings as it reports them now."""
    cur = conn.cursor()
    state = {}
    for name in AUDIT_VARIABLES:
        rows = _rows(cur, f"SELECT @@{name}")
        if rows:
            state[name] = str(rows[0][0])
    cur.close()
    return state


def check_audit_toggled(arm: str, state: dict[str, str], baseline: dict[str, str]) -> None:
    """Raise LabelMismatch when an audit arm's enable statements left every audit setting as the baseline has it:
    the run would be recorded as that audit and measure none."""
    if state == baseline:
        shown = ", ".join(f"{k}={v}" for k, v in state.items()) or "none readable"
        raise LabelMismatch(
            f"arm {arm!r}: after its enable statements every audit setting reads as in the baseline ({shown}); "
            "nothing was measured as that arm. Check the arm's SQL"
        )


def transport_counts(status: dict[str, Any]) -> dict[str, int]:
    """From mongod's serverStatus: connections created so far, and of them those per TLS version
    (transportSecurity, mongod 4.0.2 and later); a server without the section gives {}."""
    tls = status.get("transportSecurity")
    if not isinstance(tls, dict):
        return {}
    return {"created": int(status["connections"]["totalCreated"])} | {f"TLS {v}": int(n) for v, n in tls.items()}


class Transport(NamedTuple):
    """Connections a server counted between two readings, and of them those that ended before their handshake
    finished (created, counted under no version)."""

    connections: int
    unfinished: int


def _per_version(before: dict[str, int], after: dict[str, int]) -> tuple[int, dict[str, int]]:
    made = after["created"] - before["created"]
    return made, {k: after[k] - before.get(k, 0) for k in after if k != "created" and after[k] != before.get(k, 0)}


def _in_flight(tls_version: str | None, before: dict[str, int], after: dict[str, int]) -> bool:
    """Some connections of a TLS arm are created but not yet counted per version (their handshakes are under way:
    a driver's monitors connect in the background), and nothing counted so far contradicts the arm."""
    made, per = _per_version(before, after)
    return bool(tls_version) and set(per) <= {f"TLS {tls_version}"} and sum(per.values()) < made


def settled_transport(
    tls_version: str | None,
    before: dict[str, int],
    read: Callable[[], dict[str, int]],
    where: str,
    *,
    tls_only_client: bool = False,
    wait_s: float = 2.0,
) -> Transport:
    """check_transport on a reading taken once the server has counted the handshakes under way: while some are in
    flight (and none contradicts the arm) it reads again, for up to `wait_s`."""
    after = read()
    deadline = time.monotonic() + wait_s
    while _in_flight(tls_version, before, after) and time.monotonic() < deadline:
        time.sleep(0.05)
        after = read()
    return check_transport(tls_version, before, after, where, tls_only_client=tls_only_client)


def check_transport(
    tls_version: str | None, before: dict[str, int], after: dict[str, int], where: str, *, tls_only_client: bool = False
) -> Transport:
    """Every connection made between two readings is the arm it claims to be: all of them negotiated
    `tls_version` ("1.3"), or none negotiated TLS (None); a mismatch fails the run, naming what the server counted.

    A client that cannot connect in plain (`tls_only_client`: a driver told to use TLS) leaves one more reading of a
    connection counted under no version: one it closed before the handshake finished (a monitor's, at close). Those
    are allowed and returned as unfinished, as long as every counted one is the arm's version and one is."""
    made, per = _per_version(before, after)
    arm = f"TLS {tls_version}" if tls_version else "plain"
    counted = per.get(arm, 0) if tls_version else 0
    unfinished = made - counted if tls_version and tls_only_client and set(per) == {arm} and counted else 0
    want = {arm: made - unfinished} if tls_version and made else {}
    if per != want:
        seen = ", ".join(f"{n} over {k}" for k, n in per.items()) or "none over TLS"
        raise LabelMismatch(f"a {arm} arm's {made} connection(s) to {where} negotiated {seen}: it is not that arm")
    return Transport(made, unfinished)
