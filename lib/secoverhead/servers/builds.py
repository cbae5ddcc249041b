"""The server builds a study part runs on, per engine: the originals' builds and the stand-ins. A part asks for a
build by its label; where this machine lacks the one a claim's original used, the nearest one it has stands in,
and says so (the verdict of record is then "not measured on the original's engine"); it is never replaced
quietly."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from secoverhead.core.errors import ConfigError
from secoverhead.core.paths import ferretdb_binary
from secoverhead.servers.engines import MONGOD_4_2, MONGOD_6_0, MYSQL_8_0, MYSQL_8_0_33, Build

if TYPE_CHECKING:
    from secoverhead.servers.base import Server


BESIDE_MARK = " on "  # "<engine> on <build>": a part beside the verdicts of record


@dataclass(frozen=True)
class ServerBuild:
    """One server build as parts, tables and verdicts name it."""

    label: str  # "mongod 4.2": how a part and a table name it
    engine: str  # the protocol family: MongoDB | MySQL
    kind: str  # the server class that starts it: mongod | mysql | ferretdb | mariadb
    fetched: Build | None = None  # fetched by `make setup` (servers/engines.py); None: built or installed here
    stand_in: bool = False  # another program speaking the engine's protocol (its costs are its own)
    about: str = ""  # what a report says of it beside its numbers

    def missing(self) -> str | None:
        """Why this machine cannot start it, or None when it can."""
        if self.fetched is not None:
            return None if self.fetched.available else f"{self.fetched.server} is not fetched (make setup)"
        if self.kind == "ferretdb":
            return None if ferretdb_binary().is_file() else "FerretDB is not built (make setup)"
        found = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/usr/local/sbin")
        return None if found else "MariaDB is not installed (make setup)"

    @property
    def beside(self) -> str:
        """The name of a part that runs its engine's claims on this build beside the verdicts of record
        ("MongoDB on mongod 6.0"); the summary folds such parts below the record's."""
        return f"{self.engine}{BESIDE_MARK}{self.label}"

    def server(self, *, tls: bool, replica_set: bool = False, **settings: Any) -> Server:
        """An unstarted server of this build, TLS offered or not, with the class's own settings; a mongod build
        as seed 000's replica set when asked (servers/replica_set.py; other builds have no such topology here)."""
        # deferred: the server classes import the host layer's process machinery, not needed to name a build
        from secoverhead.servers.ferretdb import FerretDBServer
        from secoverhead.servers.mariadb import MariaDBServer
        from secoverhead.servers.mongod import MongodServer
        from secoverhead.servers.mysql import MySQLServer
        from secoverhead.servers.replica_set import MongodReplicaSet

        if self.kind == "mongod":
            cls = MongodReplicaSet if replica_set else MongodServer
            return cls(build=self.fetched.name, tls=tls, **settings)
        if self.kind == "mysql":
            return MySQLServer(tls=tls, build=self.fetched.name, **settings)
        if self.kind == "ferretdb":
            return FerretDBServer(tls=tls, **settings)
        return MariaDBServer(tls="on" if tls else "off", **settings)


def engine_of(part: str, part_builds: Mapping[str, ServerBuild]) -> str:
    """The protocol family a part measures: its build's engine ("MongoDB on mongod 6.0" measures MongoDB), or the
    part's own name where a study gives it no build ("nonce")."""
    build = part_builds.get(part)
    return build.engine if build is not None else part


def stand_in_note(wanted: ServerBuild, build: ServerBuild, why: str) -> list[str]:
    """What a part's notes say when `build` runs in place of the one wanted (nothing when it is that one)."""
    return [f"{wanted.label} cannot run here ({why}): {build.label} stands in"] if why else []


def described(server: Server, build: ServerBuild, wanted: ServerBuild) -> dict[str, Any]:
    """The server's own description, with the build it is and the one the part asked for (when it stands in)."""
    return server.describe() | {"build": build.label} | ({"stands_in_for": wanted.label} if build != wanted else {})


def identified(engine: str, version: str, *, ferretdb: bool = False) -> str:
    """A user's server named as the builds here are: "mongod 6.0", "FerretDB", "MySQL 8.0", "MariaDB" (from what it
    reports of itself: its version, and FerretDB's own buildInfo field)."""
    if engine == "MongoDB":
        return "FerretDB" if ferretdb else f"mongod {'.'.join(version.split('.')[:2])}"
    if "mariadb" in version.lower():
        return "MariaDB"
    return f"MySQL {'.'.join(version.split('-')[0].split('.')[:2])}"


def build_note(server: dict[str, Any]) -> str:
    """What a report says of the build a part ran on (Part.server), and what it stood in for ("" if unknown). A
    server of another version than the one fetched here (a user's) is described by what it reported itself."""
    build = BUILDS.get(str(server.get("build")))
    if build is None:
        return ""
    version, tls = server.get("version"), server.get("tls_library")
    ours = build.fetched is None or not version or build.fetched.server.endswith(str(version))
    about = build.about if ours else f"{build.label}: version {version}" + (f", {tls}" if tls else "")
    stands_in = server.get("stands_in_for")
    note = ("measured on a stand-in: " if build.stand_in else "") + about
    return note + (
        f"; it stands in for {stands_in}, which cannot run here: not measured on the original's engine"
        if stands_in
        else ""
    )


MONGOD_42 = ServerBuild(
    "mongod 4.2", "MongoDB", "mongod", MONGOD_4_2, about="mongod 4.2.6, the original's major version (OpenSSL 1.1.1q)"
)
MONGOD_60 = ServerBuild(
    "mongod 6.0", "MongoDB", "mongod", MONGOD_6_0, about="mongod 6.0.5 (the system's OpenSSL 3.0), a later mongod"
)
FERRETDB = ServerBuild(
    "FerretDB",
    "MongoDB",
    "ferretdb",
    stand_in=True,
    about="FerretDB v1.24.0 (SQLite backend) speaks MongoDB's protocol: its TLS is Go's crypto/tls, its SCRAM its "
    "own; absolute times are FerretDB's, only the shape is comparable",
)
MYSQL_80 = ServerBuild("MySQL 8.0", "MySQL", "mysql", MYSQL_8_0, about="MySQL 8.0.31 Community (OpenSSL 1.1.1q)")
MYSQL_8033 = ServerBuild(
    "MySQL 8.0.33",
    "MySQL",
    "mysql",
    MYSQL_8_0_33,
    about="MySQL 8.0.33 Community, the whole Oracle build: TDE with component_keyring_file (OpenSSL 1.1.1t)",
)
MARIADB = ServerBuild(
    "MariaDB",
    "MySQL",
    "mariadb",
    stand_in=True,
    about="MariaDB 10.11 (the system's OpenSSL 3.0) speaks MySQL's protocol; its costs are its own",
)

# Per engine, nearest to the originals first: the build a part falls back to when the one it names is missing.
BY_ENGINE: dict[str, tuple[ServerBuild, ...]] = {
    "MongoDB": (MONGOD_42, MONGOD_60, FERRETDB),
    "MySQL": (MYSQL_80, MYSQL_8033, MARIADB),
}
BUILDS: dict[str, ServerBuild] = {b.label: b for builds in BY_ENGINE.values() for b in builds}


def nearest(wanted: ServerBuild) -> tuple[ServerBuild, str]:
    """The build to run: the one wanted, or the nearest of its engine this machine has, with why the wanted one is
    not run ("" when it is); a machine with none of them raises, with every reason."""
    reasons = []
    order = BY_ENGINE[wanted.engine]
    for b in order[order.index(wanted) :] + order[: order.index(wanted)]:
        why = b.missing()
        if why is None:
            return b, "; ".join(reasons)
        reasons.append(why)
    raise ConfigError(f"no {wanted.engine} server can start here: {'; '.join(reasons)}")
