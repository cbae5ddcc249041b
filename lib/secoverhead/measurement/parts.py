"""What a study's run returns: one Part per experiment (an engine, an instance profile, or the whole study)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from secoverhead.measurement.results import ResultStore


def part_slug(part: str) -> str:
    """A part's name as an experiment id ends: letters, digits and dashes ("mongodb-on-mongod-6.0")."""
    return re.sub(r"[^a-z0-9_.-]+", "-", part.lower())


def server_of(facts: dict[str, Any]) -> dict[str, Any]:
    """A server as its facts describe it: the build, its version, the TLS library it ran with (mongod reports its
    running and compiled OpenSSL), and the build it stood in for."""
    tls = facts.get("openssl") or facts.get("version_ssl_library") or facts.get("tls_library")
    found = {
        "build": facts.get("build")
        or facts.get("server")
        or f"{facts.get('engine') or ''} {facts.get('version') or ''}".strip(),
        "version": facts.get("version"),
        "tls_library": tls.get("running") if isinstance(tls, dict) else tls,
        "stands_in_for": facts.get("stands_in_for"),
    }
    return {k: v for k, v in found.items() if v}


@dataclass
class Part:
    """One experiment of a study: an engine, an instance profile, or the whole study."""

    name: str
    store: ResultStore
    arms: list[str]
    servers: dict[str, dict[str, Any]]
    notes: list[str] = dataclasses.field(default_factory=list)
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        """The part as pictures and headings name it: with the server build it ran on where its name does not
        say it ("MongoDB (mongod 4.2)", "MySQL (MariaDB)"), as it ran."""
        builds = dict.fromkeys(
            str(f.get("build") or f.get("engine"))
            for f in self.servers.values()
            if isinstance(f, dict) and (f.get("build") or f.get("engine"))
        )
        other = [b for b in builds if b.lower() not in self.name.lower()]
        return f"{self.name} ({', '.join(other)})" if other else self.name

    @property
    def server(self) -> dict[str, Any]:
        """The server build the part ran on, as its first server described itself (server_of); facts that are not
        a server's (a data disk's) are passed over."""
        servers = (f for f in self.servers.values() if isinstance(f, dict) and ("engine" in f or "build" in f))
        return server_of(next(servers, {}))

    def runs(self, include_profiling: bool = False) -> pd.DataFrame:
        return self.store.runs(include_profiling=include_profiling)

    def samples(self) -> pd.DataFrame:
        return self.store.samples()

    def metadata(self) -> dict[str, Any]:
        return self.store.metadata()

    @property
    def alpha(self) -> float:
        """The error budget the final evaluation spends (the runner records it; 0.05 for a fixed design)."""
        return float(self.metadata().get("final_alpha") or 0.05)


@dataclass
class StudyResult:
    """What run(p) returns: the parameters and one Part per experiment, in order."""

    study: str
    params: Any  # the study's Params (a StudyParams)
    parts: dict[str, Part]
    primary_metrics: tuple[str, ...] = ()  # the metrics its A/A and design tables show
    recorded: bool = False  # read back from a finished report (nothing measured; nothing written into it)

    def __iter__(self) -> Iterator[Part]:
        return iter(self.parts.values())

    def __getitem__(self, name: str) -> Part:
        return self.parts[name]

    def __contains__(self, name: str) -> bool:
        return name in self.parts

    def items(self):
        return self.parts.items()

    @property
    def first(self) -> Part:
        return next(iter(self.parts.values()))

    def servers(self) -> dict[str, dict[str, Any]]:
        return {name: facts for part in self for name, facts in part.servers.items()}

    def notes(self) -> dict[str, str]:
        return {f"{part.name}: note {i + 1}": n for part in self for i, n in enumerate(part.notes)}
