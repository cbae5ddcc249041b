"""What the project owns on a MySQL-protocol server: the tables it created, recorded in a marker table beside
them (`<database>.secoverhead_owned`) before they are created. Only a table named there may be dropped or
refilled; a table of the same name that the project did not create is the user's, and the run refuses to touch
it. The marker is written before the table, so a run killed half-way through creating its tables leaves them
claimable by the next run rather than orphaned."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from secoverhead.core.errors import ConfigError

MARKER = "secoverhead_owned"


class NotOurs(ConfigError):
    """A table the run would drop or refill exists and the project did not create it."""


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def existing(conn: Any, database: str, tables: Sequence[str]) -> set[str]:
    """Which of the tables exist in the database."""
    if not tables:
        return set()
    cur = conn.cursor()
    marks = ", ".join(["%s"] * len(tables))
    cur.execute(
        f"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s AND TABLE_NAME IN ({marks})",
        (database, *tables),
    )
    return {str(r[0]) for r in cur.fetchall()}


def owned(conn: Any, database: str) -> set[str]:
    """The tables the marker says the project created (none when there is no marker)."""
    if not existing(conn, database, [MARKER]):
        return set()
    cur = conn.cursor()
    cur.execute(f"SELECT table_name FROM {_q(database)}.{MARKER}")
    return {str(r[0]) for r in cur.fetchall()}


def check(conn: Any, database: str, tables: Sequence[str]) -> None:
    """Raise NotOurs when any of the tables exists and is not the project's."""
    foreign = sorted(existing(conn, database, tables) - owned(conn, database))
    if foreign:
        names = ", ".join(f"{database}.{t}" for t in foreign[:4]) + (" ..." if len(foreign) > 4 else "")
        raise NotOurs(
            f"{names} exist{'s' if len(foreign) == 1 else ''} and secoverhead did not create "
            f"{'it' if len(foreign) == 1 else 'them'} (no row in {database}.{MARKER}); nothing was changed. "
            "Give the study a database of its own (-p mysql_database NAME), or drop or rename the table yourself"
        )


def mark_ours(conn: Any, database: str, tables: Sequence[str]) -> None:
    """Record the tables as the project's, after checking that none of them is someone else's. Call it before
    creating them."""
    check(conn, database, tables)
    cur = conn.cursor()
    cur.execute(
        f"CREATE TABLE IF NOT EXISTS {_q(database)}.{MARKER} (table_name VARCHAR(64) PRIMARY KEY,"
        " created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)"
        " COMMENT='tables secoverhead created in this database and may drop; delete a row to protect a table'"
    )
    if tables:
        cur.executemany(f"INSERT IGNORE INTO {_q(database)}.{MARKER} (table_name) VALUES (%s)", [(t,) for t in tables])
    conn.commit()


# -- MongoDB: the same rule, the marker a collection `<database>.secoverhead_owned` of {_id: collection} ----------
def _split(namespace: str) -> tuple[str, str]:
    database, _, collection = namespace.partition(".")
    if not database or not collection:
        raise ValueError(f"{namespace!r} is not database.collection")
    return database, collection


def mongo_owned(client: Any, database: str) -> set[str]:
    """The collections the marker says the project created in the database (none when there is no marker)."""
    db = client[database]
    if not db.list_collection_names(filter={"name": MARKER}):
        return set()
    return {str(d["_id"]) for d in db[MARKER].find({}, {"_id": 1})}


def mongo_check(client: Any, namespaces: Sequence[str]) -> None:
    """Raise NotOurs when any of the collections (database.collection) exists and is not the project's."""
    foreign = []
    for namespace in namespaces:
        database, collection = _split(namespace)
        exists = client[database].list_collection_names(filter={"name": collection})
        if exists and collection not in mongo_owned(client, database):
            foreign.append(namespace)
    if foreign:
        names = ", ".join(foreign)
        raise NotOurs(
            f"{names} exist{'s' if len(foreign) == 1 else ''} and secoverhead did not create "
            f"{'it' if len(foreign) == 1 else 'them'} (no document in its database's {MARKER}); nothing was changed. "
            "Run against a server (or a copy) where that collection is free, or drop or rename it yourself"
        )


def mongo_mark_ours(client: Any, namespaces: Sequence[str]) -> None:
    """Record the collections as the project's, after checking that none of them is someone else's. Call it
    before creating, filling or dropping them."""
    mongo_check(client, namespaces)
    for namespace in namespaces:
        database, collection = _split(namespace)
        client[database][MARKER].update_one(
            {"_id": collection},
            {"$setOnInsert": {"created_by": "secoverhead", "note": "delete this document to protect the collection"}},
            upsert=True,
        )
