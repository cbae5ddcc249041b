"""A study as the registry hands it out: its light declarations (StudySpec: read by the CLI to check parameters
before anything heavy loads) and its code (StudyCode: loaded when a run or a report needs it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from secoverhead.core import paths
from secoverhead.studies.protocol.params import NotebookParams


@dataclass(frozen=True)
class StudyCode:
    """What a notebook and the pipeline use of a study: run(p) -> StudyResult, claims(result) -> verdicts, the
    tables module (its tables and figures), and, where a study checks claims across two runs, cross_claims."""

    spec: StudySpec
    run: Callable[[Any], Any]
    claims: Callable[[Any], list]
    tables: ModuleType
    cross_claims: Callable[[str, Any], list] | None = None

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
