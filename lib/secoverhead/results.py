"""Results on disk, after BenchBase: one directory per experiment holding

    metadata.json          what ran: plan, seed, environment, servers (secrets stripped)
    runs/000042.json       one record per run, written atomically the moment it ends
    samples/000042.parquet every raw sample of a run (e.g. each connection's latency)
    intervals/000042.csv   per-interval statistics (e.g. sysbench's 1 s reports)
    results.parquet/.csv   the tidy long table: one row per run x metric, rebuilt after each run

A crash loses at most the run in progress; everything else is already on disk.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .secrets import Secret, redact

_SECRET_KEY = re.compile(r"pass(word|wd)?$|password|secret|token|credential|private_key", re.IGNORECASE)


def sanitize(obj: Any) -> Any:
    """A JSON-ready copy with secrets removed: Secret values, keys that name secrets, known secret strings."""
    if isinstance(obj, Secret):
        return "<redacted>"
    if isinstance(obj, Mapping):
        return {
            str(k): (
                "<redacted>"
                if _SECRET_KEY.search(str(k)) and v not in (None, "") and not str(k).endswith(("_env", "_file"))
                else sanitize(v)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple | set | frozenset):
        return [sanitize(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return sanitize(obj.item())
    if obj is None or isinstance(obj, bool | int | float):
        return obj
    return redact(str(obj))


def default_output_dir(study: str) -> Path:
    """Where an interactive run writes when no output_dir is given: $SECOVERHEAD_RESULTS, else
    results/interactive/ in the checkout, in a new timestamped directory (so re-running starts afresh;
    pass the same output_dir again to resume instead)."""
    import datetime as dt

    base = Path(
        os.environ.get("SECOVERHEAD_RESULTS") or Path(__file__).resolve().parents[2] / "results" / "interactive"
    )
    return base / f"{study}-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S%fZ')}"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same directory and rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(sanitize(obj), indent=1, sort_keys=True).encode())


@dataclass
class RunRecord:
    """One run: an arm under one combination of factors, one repetition."""

    run_id: int
    arm: str
    factors: dict[str, Any]
    repetition: int
    round: int
    warmup: bool
    started: str
    ended: str
    duration_s: float
    status: str = "ok"  # ok | error
    metrics: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def key(self) -> str:
        return run_key(self.arm, self.factors, self.repetition, self.warmup)


def run_key(arm: str, factors: Mapping[str, Any], repetition: int, warmup: bool) -> str:
    return json.dumps([arm, sorted((k, str(v)) for k, v in factors.items()), repetition, warmup])


class ResultStore:
    """All results of one experiment id, under root/<experiment_id>/."""

    def __init__(self, root: str | os.PathLike, experiment_id: str) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", experiment_id):
            raise ValueError(f"experiment id {experiment_id!r} must be letters, digits, '_', '-', '.'")
        self.experiment_id = experiment_id
        self.path = Path(root).resolve() / experiment_id
        for sub in ("runs", "samples", "intervals"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)

    # -- writing ---------------------------------------------------------------------------------
    def write_metadata(self, metadata: Mapping[str, Any]) -> None:
        atomic_write_json(self.path / "metadata.json", metadata)

    def update_metadata(self, **fields: Any) -> None:
        meta = self.metadata()
        meta.update(fields)
        self.write_metadata(meta)

    def append(
        self, run: RunRecord, samples: pd.DataFrame | None = None, intervals: pd.DataFrame | None = None
    ) -> None:
        """Store a finished run: raw samples and intervals first, then the run record that points at them."""
        name = f"{run.run_id:06d}"
        if samples is not None and len(samples):
            atomic_write_bytes(self.path / "samples" / f"{name}.parquet", samples.to_parquet(index=False))
        if intervals is not None and len(intervals):
            atomic_write_bytes(self.path / "intervals" / f"{name}.csv", intervals.to_csv(index=False).encode())
        atomic_write_json(self.path / "runs" / f"{name}.json", asdict(run))
        self.export()

    def export(self) -> None:
        """Rebuild results.parquet and results.csv (the long table) atomically."""
        long = self.table()
        atomic_write_bytes(self.path / "results.parquet", long.to_parquet(index=False))
        atomic_write_bytes(self.path / "results.csv", long.to_csv(index=False).encode())

    # -- reading ---------------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        p = self.path / "metadata.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def records(self) -> list[RunRecord]:
        out = []
        for p in sorted((self.path / "runs").glob("*.json")):
            out.append(RunRecord(**json.loads(p.read_text())))
        return out

    def completed_keys(self) -> set[str]:
        return {r.key for r in self.records() if r.status == "ok"}

    def _ok(self, include_warmup: bool) -> list[RunRecord]:
        """Successful runs, warm-ups only when asked for."""
        return [r for r in self.records() if r.status == "ok" and (include_warmup or not r.warmup)]

    @staticmethod
    def _ids(r: RunRecord) -> dict[str, Any]:
        """The columns that identify a run in every table."""
        return {
            "run_id": r.run_id,
            "arm": r.arm,
            "repetition": r.repetition,
            "round": r.round,
            "warmup": r.warmup,
            "started": r.started,
        }

    def runs(self, include_warmup: bool = False) -> pd.DataFrame:
        """One row per successful run: identifiers, factors, and metrics as columns."""
        return pd.DataFrame([{**self._ids(r), **r.factors, **r.metrics} for r in self._ok(include_warmup)])

    def table(self) -> pd.DataFrame:
        """The tidy long table: one row per run x numeric metric (warm-up runs included, marked)."""
        rows = []
        for r in self._ok(include_warmup=True):
            factors = {f"factor_{k}": str(v) for k, v in r.factors.items()}
            for metric, value in r.metrics.items():
                if isinstance(value, bool) or value is None:
                    value = float(value) if isinstance(value, bool) else float("nan")
                if isinstance(value, int | float):
                    rows.append(
                        {
                            "experiment": self.experiment_id,
                            **self._ids(r),
                            **factors,
                            "metric": metric,
                            "value": float(value),
                        }
                    )
        return pd.DataFrame(rows)

    def _per_run_files(self, sub: str, suffix: str, read: Any, include_warmup: bool) -> pd.DataFrame:
        frames = []
        for r in self._ok(include_warmup):
            p = self.path / sub / f"{r.run_id:06d}.{suffix}"
            if p.exists():
                frames.append(read(p).assign(**self._ids(r), **r.factors))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def samples(self, include_warmup: bool = False) -> pd.DataFrame:
        """Every raw sample, with the run's identifiers and factors attached."""
        return self._per_run_files("samples", "parquet", pd.read_parquet, include_warmup)

    def intervals(self, include_warmup: bool = False) -> pd.DataFrame:
        """Every per-interval row, with the run's identifiers and factors attached."""
        return self._per_run_files("intervals", "csv", pd.read_csv, include_warmup)
