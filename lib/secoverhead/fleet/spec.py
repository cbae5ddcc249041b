"""FLEET.yaml: the targets (servers to measure, and the client hosts that may load each), the studies to run
against every target, and the jobs they make: one papermill run per (study, target). Checked whole before
anything starts; a mistake is one line (ConfigError, exit 2).

    targets:
      staging:                                   # a server of yours: the parameters the studies already take
        params: {mysql_host: 10.0.0.5, mysql_user: bench, mysql_password_env: STAGING_PW}
        clients: [client-a]                      # Dask workers (by name) that may load it
        load_hosts: [client-a, client-b]         # optional: load it from several hosts at once
      local:                                     # no params: each study starts its own servers on the client
        clients: [client-b]
    studies:
      - {study: tls, scale: smoke, params: {mongo_enabled: false}}
      - {study: tde, scale: quick, files: [my-tde.yaml]}
    retries: 2                                   # a failed job is retried with --resume
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secoverhead.core.errors import ConfigError
from secoverhead.core.params import ID_PATTERN, read_file, specs
from secoverhead.core.secrets import holds_secret
from secoverhead.studies import STUDIES

WORKER_NAME = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}"
MAX_JOBS = 1000


@dataclass(frozen=True)
class Target:
    name: str
    params: dict[str, Any]
    clients: tuple[str, ...]
    load_hosts: tuple[str, ...] = ()

    @property
    def embedded(self) -> bool:
        return not self.params


@dataclass(frozen=True)
class StudyEntry:
    study: str
    scale: str = "smoke"
    files: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """One (study, target) run: where it goes and how the CLI is told to make it."""

    study: str
    target: Target
    entry: StudyEntry
    name: str  # its run directory's name, fixed before it starts (a retry resumes the same one)

    @property
    def key(self) -> str:
        return f"{self.study}@{self.target.name}"

    def params(self) -> dict[str, Any]:
        """The study's parameters for this target: the target's that the study takes, then the entry's."""
        known = specs(STUDIES[self.study].Params)
        taken = {k: v for k, v in self.target.params.items() if k in known}
        return taken | dict(self.entry.params)

    def argv(self, reports: Path, client_host: str) -> list[str]:
        out = [
            "run",
            self.study,
            "--reports",
            str(reports),
            "--name",
            self.name,
            "--target",
            self.target.name,
            "--client-host",
            client_host,
            "--scale",
            self.entry.scale,
        ]
        for f in self.entry.files:
            out += ["-f", f]
        for k, v in self.params().items():
            out += ["-p", k, param_text(v)]
        return out


@dataclass(frozen=True)
class Fleet:
    targets: dict[str, Target]
    studies: tuple[StudyEntry, ...]
    retries: int
    stamp: str

    def jobs(self) -> list[Job]:
        out = []
        for entry in self.studies:
            for t in self.targets.values():
                out.append(Job(entry.study, t, entry, f"{self.stamp}-{t.name}-{entry.scale}"))
        return out

    @property
    def workers(self) -> set[str]:
        return {c for t in self.targets.values() for c in (*t.clients, *t.load_hosts)}


def param_text(v: Any) -> str:
    """A parameter value as `-p` takes it (YAML flow for lists and mappings)."""
    import yaml

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, list | dict):
        return yaml.safe_dump(v, default_flow_style=True).strip()
    return str(v)


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(x, str) and re.fullmatch(WORKER_NAME, x) for x in value):
        raise ConfigError(f"{where} must be a list of worker names (letters, digits, '_', '-', '.')")
    return tuple(dict.fromkeys(value))


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"{where} must be a mapping of parameter names to values")
    return dict(value)


def _no_secrets(params: dict[str, Any], where: str) -> None:
    """By the project's one rule (core.secrets): a secret's value never sits in the fleet file (it would travel
    to the scheduler's memory), only where it lives."""
    for k in params:
        if holds_secret(k):
            raise ConfigError(
                f"{where}: {k[:60]} would put a secret in the fleet file: name where it lives ({k[:60]}_env or _file)"
            )


def _targets_taken(targets: dict[str, Target], studies: list[StudyEntry]) -> None:
    """Every parameter of a target is one some study of the fleet takes (a typo is refused, not dropped), and a
    target with parameters gives each study at least one: a study taking none of them would measure its own
    servers and record them under the target's name."""
    taken = {e.study: set(specs(STUDIES[e.study].Params)) for e in studies}
    for t in targets.values():
        unknown = sorted(set(t.params) - set().union(*taken.values()))
        if unknown:
            raise ConfigError(
                f"target {t.name}: no study of this fleet takes {', '.join(unknown)[:120]} (a misspelt parameter?)"
            )
        for study, known in taken.items():
            if t.params and not set(t.params) & known:
                why = "it would measure its own servers under the target's name"
                raise ConfigError(f"target {t.name}: {study} takes none of its params; {why}")


def parse(data: Any, *, stamp: str | None = None) -> Fleet:
    if not isinstance(data, dict):
        raise ConfigError("the fleet file must be a mapping with targets: and studies:")
    unknown = set(data) - {"targets", "studies", "retries"}
    if unknown:
        raise ConfigError(f"the fleet file has unknown key(s): {', '.join(sorted(unknown))[:120]}")
    raw_targets = data.get("targets")
    if not isinstance(raw_targets, dict) or not raw_targets:
        raise ConfigError("targets: name at least one target (a mapping of name -> params, clients)")
    targets = {}
    for name, t in raw_targets.items():
        if not isinstance(name, str) or not re.fullmatch(ID_PATTERN, name):
            raise ConfigError(f"target {str(name)[:60]!r}: a name of letters, digits, '_', '-', '.'")
        t = t or {}
        if not isinstance(t, dict) or set(t) - {"params", "clients", "load_hosts"}:
            raise ConfigError(f"target {name}: give params:, clients: and optionally load_hosts:")
        params = _mapping(t.get("params"), f"target {name}: params")
        _no_secrets(params, f"target {name}")
        targets[name] = Target(
            name,
            params,
            _names(t.get("clients"), f"target {name}: clients"),
            _names(t.get("load_hosts"), f"target {name}: load_hosts"),
        )
    raw_studies = data.get("studies")
    if not isinstance(raw_studies, list) or not raw_studies:
        raise ConfigError("studies: list at least one study ({study: NAME, scale: smoke})")
    studies = []
    for i, s in enumerate(raw_studies):
        if isinstance(s, str):
            s = {"study": s}
        if not isinstance(s, dict) or set(s) - {"study", "scale", "profile", "files", "params"}:
            raise ConfigError(f"studies[{i}]: give study:, and optionally scale:, files:, params:")
        study = s.get("study")
        if study not in STUDIES:
            raise ConfigError(f"studies[{i}]: unknown study {str(study)[:40]!r}; studies: {', '.join(STUDIES)}")
        files = s.get("files") or []
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ConfigError(f"studies[{i}]: files must be a list of parameter files")
        entry_params = _mapping(s.get("params"), f"studies[{i}]: params")
        _no_secrets(entry_params, f"studies[{i}]")
        scale = s.get("scale") or s.get("profile") or "smoke"  # profile: the deprecated name, read for a release
        studies.append(StudyEntry(study, str(scale), tuple(files), entry_params))
    retries = data.get("retries", 2)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
        raise ConfigError("retries must be a whole number from 0 to 10")
    _targets_taken(targets, studies)
    # unique though two fleets start in the same second: their runs and summaries never share a name
    stamp = stamp or f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
    fleet = Fleet(targets, tuple(studies), retries, stamp)
    if len(fleet.jobs()) > MAX_JOBS:
        raise ConfigError(f"the fleet makes {len(fleet.jobs())} jobs (limit {MAX_JOBS})")
    return fleet


def load(path: str | Path, *, stamp: str | None = None) -> Fleet:
    """The fleet file, read as safely as a parameters file (bounded, YAML 1.2, no aliases) and checked."""
    try:
        data = read_file(path)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("parameters file", "fleet file", 1)) from None
    return parse(data, stamp=stamp)
