"""A study as the registry hands it out: its light declarations (StudySpec: read by the CLI to check parameters
before anything heavy loads) and its code (StudyCode: loaded when a run or a report needs it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from secoverhead.core import paths
from secoverhead.host.calibration import CryptoBound
from secoverhead.studies.protocol.params import NotebookParams

SMOKE = "smoke"  # the scale of a study's Params' defaults: seconds, to check the set-up


@dataclass(frozen=True)
class Vocabulary:
    """A study's names, handed out by the registry so that code outside the study never spells them: its parts and
    each part's arms (the baseline first), and the arms, parts and metrics other code (the calculator, shared
    reporting) asks for by what they are (a role: "TLS 1.3, RSA certificate") rather than by how the study names
    them. Renaming an arm in the study's declarations renames it everywhere; removing one a role needs fails the
    calculator's unit tests, not a run."""

    parts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)  # role -> arm or part name
    metrics: Mapping[str, str] = field(default_factory=dict)  # role -> metric name
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # role -> several names (choices)
    crypto: tuple[CryptoBound, ...] = ()  # the cryptography of each arm's extra, per operation

    def primitives(self, arm: str, metric: str) -> tuple[tuple[str, float], ...]:
        """The cryptography the study declares for arm's extra on metric (none declared: ())."""
        return next((c.primitives for c in self.crypto if c.arm == arm and c.metric == metric), ())

    def arms(self, part: str) -> tuple[str, ...]:
        return self.parts[part]

    def __getitem__(self, role: str) -> str:
        """The arm or part that plays `role`."""
        return _lookup(self.roles, role, "arm or part")

    def metric(self, role: str) -> str:
        return _lookup(self.metrics, role, "metric")

    def group(self, role: str) -> tuple[str, ...]:
        return _lookup(self.groups, role, "group")

    @property
    def names(self) -> frozenset[str]:
        """Every part and arm name of the study."""
        return frozenset(self.parts) | {a for arms in self.parts.values() for a in arms}


def _lookup(table: Mapping[str, Any], role: str, what: str) -> Any:
    try:
        return table[role]
    except KeyError:
        raise KeyError(f"no {what} plays {role!r} (roles: {', '.join(table) or 'none'})") from None


@dataclass(frozen=True)
class StudyCode:
    """What a notebook and the pipeline use of a study: run(p) -> StudyResult, claims(result) -> verdicts, the
    tables module (its tables and figures), and, where a study checks claims across two runs, cross_claims."""

    spec: StudySpec
    run: Callable[[Any], Any]
    claims: Callable[[Any], list]
    tables: ModuleType | None = None  # a study with tables of its own (report.runs shows any study's runs)
    cross_claims: Callable[[str, Any], list] | None = None
    rules: Any = ()  # its claim rules (claims.RULES): a tuple, or one per part

    def every_rule(self) -> list[Any]:
        """Its rules, every part's."""
        return [r for part in self.rules.values() for r in part] if isinstance(self.rules, dict) else list(self.rules)

    @property
    def Params(self) -> type[NotebookParams]:
        return self.spec.Params

    def params(self, namespace: dict[str, Any]) -> NotebookParams:
        """The notebook's parameters (its parameters cell and papermill's injected cell), checked."""
        return self.spec.Params.from_namespace(namespace)


@dataclass(frozen=True)
class StudySpec:
    """One study: its notebook, the original it reproduces (seed), its parameters and how to load its code."""

    id: str
    notebook: str
    title: str
    seed: str
    Params: type[NotebookParams]
    load: Callable[[], StudyCode]
    # Before anything starts, beyond the parameters: what the notebook reads is there (ConfigError if not), given
    # the reports root and the studies the same command runs first (their reports will be there by then).
    check: Callable[[Any, Path, frozenset[str]], None] | None = None
    vocabulary: Vocabulary = field(default_factory=Vocabulary)

    @property
    def primary_metrics(self) -> tuple[str, ...]:
        return tuple(self.Params.PRIMARY_METRICS)

    @property
    def notebook_path(self) -> Path:
        return paths.NOTEBOOKS / self.notebook

    @property
    def params_dir(self) -> Path:
        return paths.PARAMS / self.id

    @property
    def available(self) -> bool:
        return self.notebook_path.is_file()

    def parameter_files(self) -> list[Path]:
        return sorted(self.params_dir.glob("*.yaml")) if self.params_dir.is_dir() else []

    def scales(self) -> list[str]:
        """The scales it runs at: its parameter files' names, and smoke (its Params' defaults) whether or not a
        file names it."""
        return sorted({SMOKE} | {p.stem for p in self.parameter_files()})
