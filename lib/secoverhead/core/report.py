"""A report's run.json as one typed record, read in one place.

Every view (the index, the history, the calculator's sources, a comparison, the fleet, pruning) reads a report
through `read_report`, never run.json itself. The record's schema is checked on read: one written by a newer
secoverhead, or by one too old to migrate, is a one-line error naming both versions, not a view that silently
misreads it. The scale is a field written when the run began, from the parameter files it ran with; schema 2
records, which lacked it, are migrated from the same files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import MAX_JSON_BYTES, read_json

REPORT_SCHEMA = 3  # 3: the scale is a field; 2: recovered from the parameter files (migrated on read)
OLDEST_READ = 2  # schema 1 had no parameter files to recover a scale from
SCALES = ("smoke", "quick", "full")


class ReportSchemaError(ConfigError):
    """A run.json written under a schema this version does not read."""


def scale_for(files: Any, name: str) -> str:
    """A run's scale, from the parameter files it ran with: the first when it is one of SCALES, else the set's
    name (a user's own file, `4c16g`)."""
    first = Path(str(files[0])).stem if isinstance(files, list | tuple) and files else ""
    return first if first in SCALES else name


@dataclass(frozen=True)
class Report:
    """What a report's run.json recorded: what ran, at which scale, on which builds, how it ended."""

    dir: Path
    study: str
    scale: str
    params_name: str = ""
    params_files: tuple[str, ...] = ()
    parameters: Mapping[str, Any] = field(default_factory=dict)
    status: str = "unknown"  # as recorded; `runs.status_of` says whether a "running" one still is
    error: str = ""
    started: str = ""
    finished: str = ""
    host: str = ""
    owner: str = ""
    owner_pid: int | None = None
    target: str = ""
    client_hosts: tuple[str, ...] = ()
    resumed: int = 0
    duration_s: float | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)  # the machine's state at the end
    servers: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)  # part -> builds it ran on
    schema: int = REPORT_SCHEMA
    recorded: Mapping[str, Any] = field(default_factory=dict, repr=False)  # every field, as written

    @classmethod
    def of(cls, fields: Mapping[str, Any], run_dir: Path | str = ".") -> Report:
        """The record of run.json's fields; ReportSchemaError when they are of a schema not read here."""
        schema = _schema(fields.get("schema"), Path(run_dir))
        name = str(fields.get("params_name") or "")
        files = [str(f) for f in fields.get("params_files") or [] if isinstance(f, str | os.PathLike)]
        return cls(
            dir=Path(run_dir),
            study=str(fields.get("study") or ""),
            scale=str(fields.get("scale") or "") if schema >= 3 else scale_for(files, name),
            params_name=name,
            params_files=tuple(files),
            parameters=_mapping(fields.get("parameters")),
            status=str(fields.get("status") or "unknown"),
            error=str(fields.get("error") or ""),
            started=str(fields.get("started") or ""),
            finished=str(fields.get("finished") or ""),
            host=str(fields.get("host") or ""),
            owner=str(fields.get("owner") or ""),
            owner_pid=_int(fields.get("owner_pid")),
            target=str(fields.get("target") or ""),
            client_hosts=tuple(str(h) for h in fields.get("client_hosts") or [] if h),
            resumed=_int(fields.get("resumed")) or 0,
            duration_s=_float(fields.get("duration_s")),
            environment=_mapping(fields.get("environment")),
            servers=_servers(fields.get("servers")),
            schema=schema,
            recorded=dict(fields),
        )

    @property
    def builds(self) -> list[str]:
        """The server builds its numbers came from, once each ("MySQL 8.0 8.0.31"), in the order recorded."""
        named = (build_name(s) for runs in self.servers.values() for s in runs)
        return list(dict.fromkeys(b for b in named if b))

    @property
    def commit(self) -> str:
        return str(self.environment.get("git_commit") or "")[:10]

    def describe(self) -> str:
        """The report as every view names it: its directory and its scale."""
        return f"{self.dir.name} ({self.scale or 'scale unknown'})"


def build_name(server: Mapping[str, Any]) -> str:
    """A server build as every view names it: its build, and its version where the build does not say it
    (`MySQL 8.0 8.0.31`, `MySQL 8.0.33`); "" for a part without a server."""
    build, version = str(server.get("build") or ""), str(server.get("version") or "")
    return f"{build} {version}".strip() if version and version not in build else build


def read_report(run_dir: Path | str) -> Report | None:
    """A report's record; None when it has no readable run.json (missing, a link, corrupt, not an object);
    ReportSchemaError, in one line, when it was written under a schema this version does not read."""
    path = Path(run_dir) / "run.json"
    try:
        fields = None if path.is_symlink() else read_json(path)  # a link's record is not the run's to claim
    except OSError:  # a name too long to look up
        fields = None
    return Report.of(fields, run_dir) if isinstance(fields, dict) else None


def readable(run_dir: Path | str) -> Report | None:
    """read_report for a view over many reports: one of another schema is left out like an unreadable one
    (`why_unread` names it for the view's skipped list)."""
    try:
        return read_report(run_dir)
    except ReportSchemaError:
        return None


def why_unread(run_dir: Path | str) -> str:
    """Why a report's run.json gave no record, in words."""
    path = Path(run_dir) / "run.json"
    try:
        size = path.lstat().st_size
        read_report(run_dir)
    except ReportSchemaError as exc:
        return str(exc)
    except OSError as exc:
        return exc.strerror or "unreadable"
    if path.is_symlink():
        return "a link, not the run's own record"
    return f"larger than {MAX_JSON_BYTES >> 20} MB" if size > MAX_JSON_BYTES else "not a readable JSON record"


def _schema(value: Any, run_dir: Path) -> int:
    version = _int(value)
    if version is not None and OLDEST_READ <= version <= REPORT_SCHEMA:
        return version
    if version is not None and version > REPORT_SCHEMA:
        how = "a newer secoverhead: read it with that version, or upgrade this checkout"
    else:
        how = "an older secoverhead than this one migrates: re-run the study, or read it with that version"
    raise ReportSchemaError(
        f"{run_dir / 'run.json'}: report schema {value!r} was written by {how} "
        f"(this one reads {OLDEST_READ} to {REPORT_SCHEMA})"
    )


def _servers(value: Any) -> dict[str, list[dict[str, Any]]]:
    """part -> the builds it ran on, each a dict (an empty one: a server that recorded nothing of itself)."""
    listed = ((str(part), found) for part, found in _mapping(value).items() if isinstance(found, list))
    return {part: [s for s in found if isinstance(s, dict) and s] for part, found in listed}


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
