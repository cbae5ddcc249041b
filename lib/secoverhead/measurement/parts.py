"""What a study's run returns: one Part per experiment (an engine, an instance profile, or the whole study)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from secoverhead.measurement.results import ResultStore


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
        """The part as pictures and headings name it: with the engine that stood in for the one it is named
        after ("MongoDB (FerretDB)", "MySQL (MariaDB)"), as it ran."""
        engines = dict.fromkeys(
            str(f.get("engine")) for f in self.servers.values() if isinstance(f, dict) and f.get("engine")
        )
        other = [e for e in engines if e.lower() not in self.name.lower()]
        return f"{self.name} ({', '.join(other)})" if other else self.name

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
