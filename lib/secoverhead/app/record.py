"""A report's run.json as an object: begun before the notebook runs, closed with how the run ended.

The first write is padded with trailing white space (valid JSON) so the file holds blocks the final record can be
written into in place when the disk is full or the folder stops taking new files.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secoverhead.core import owners
from secoverhead.core.files import atomic_write_bytes, read_json, sanitize, write_in_place
from secoverhead.core.report import REPORT_SCHEMA, read_report, scale_for
from secoverhead.host import environment
from secoverhead.measurement.parts import server_of

RUN_JSON_RESERVE = 256 << 10  # run.json's first write is padded to this size, so a full disk can still record
OUTPUT_SUFFIXES = (".csv", ".parquet", ".json", ".html", ".ipynb", ".svg")


@dataclass
class Ending:
    """How a report's run ended: ok, failed or interrupted, and why; a later failing step adds its reason."""

    status: str = "ok"
    error: str | None = None

    def add(self, reason: str) -> None:
        self.error = (self.error + "; " if self.error else "") + reason
        if self.status == "ok":
            self.status = "failed"


@dataclass
class ReportRecord:
    """run.json: what ran, where, with which parameters, and how it ended."""

    run_dir: Path
    fields: dict[str, Any]
    t0: float = field(default_factory=time.monotonic)

    @property
    def path(self) -> Path:
        return self.run_dir / "run.json"

    @classmethod
    def begin(cls, run_dir: Path, fields: dict[str, Any], *, resumed: bool, placement: Any = None) -> ReportRecord:
        """A new record, or a resumed run's, keeping what the first attempt recorded (its name, files, scale, start
        and target) and adding this attempt's host and owner. The scale is written here, from the files the run
        began with, so that no reader recovers it from a name."""
        report = read_report(run_dir) if resumed else None
        previous = dict(report.recorded) if report is not None else {}
        started = environment.utc_now()
        kept = {k: previous[k] for k in ("params_name", "params_files", "started", "target") if k in previous}
        scale = report.scale if report else scale_for(fields.get("params_files"), str(fields.get("params_name", "")))
        record = (
            {"started": started}
            | fields
            | kept
            | {
                "schema": REPORT_SCHEMA,
                "scale": scale,
                "host": socket.gethostname(),
                "owner": owners.me(),
                "owner_pid": os.getpid(),
                "status": "running",
                "resumed": report.resumed + 1 if report else 0,
            }
        )
        if placement is not None and placement.target:
            record["target"] = placement.target
        hosts = list(previous.get("client_hosts") or []) + ([placement.client_host] if placement else [])
        if any(hosts):
            record["client_hosts"] = [h for h in hosts if h]
        return cls(run_dir, record)

    @property
    def name(self) -> str:
        return str(self.fields.get("params_name", ""))

    def write(self, *, reserve: bool = False) -> None:
        """run.json, atomically (padded to RUN_JSON_RESERVE when `reserve`); in place when no new file can be
        made. Raises OSError when it cannot be written either way."""
        write_record(self.path, self.fields, reserve=reserve)

    def close(self, ending: Ending) -> None:
        """The final fields: status, error, duration, environment and the outputs the run left."""
        self.fields.update(
            status=ending.status,
            error=ending.error,
            finished=environment.utc_now(),
            duration_s=round(time.monotonic() - self.t0, 1),
            environment=environment.collect(),
            servers=servers(self.run_dir),
            outputs=outputs(self.run_dir),
        )


def write_record(path: Path, fields: dict[str, Any], *, reserve: bool = False) -> None:
    data = json.dumps(sanitize(fields), indent=1, sort_keys=True).encode()
    try:
        atomic_write_bytes(path, data + b" " * max(0, RUN_JSON_RESERVE - len(data)) if reserve else data)
    except OSError:
        if reserve or not path.is_file():
            raise
        write_in_place(path, data)


def servers(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """The server builds each experiment ran on (build, version, the TLS library it ran with), as its metadata
    recorded them: every number in the run's tables names one of these."""
    found: dict[str, list[dict[str, Any]]] = {}
    for meta_path in sorted((run_dir / "results").glob("*/metadata.json")):
        meta = read_json(meta_path)
        facts = meta.get("servers") if isinstance(meta, dict) else None
        if isinstance(facts, dict):
            named = [server_of(f) for f in facts.values() if isinstance(f, dict)]
            found[meta_path.parent.name] = [dict(t) for t in dict.fromkeys(tuple(sorted(n.items())) for n in named)]
    return found


def outputs(run_dir: Path) -> list[str]:
    """The result files a run left, relative to its directory (none when the folder cannot be read)."""
    try:
        return sorted(
            str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file() and p.suffix in OUTPUT_SUFFIXES
        )
    except OSError:
        return []
