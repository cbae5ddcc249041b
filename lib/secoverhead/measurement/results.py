"""Results on disk, after BenchBase: one directory per experiment holding

    metadata.json          what ran: study, plan, seed, environment, calibration, servers (secrets stripped)
    runs/000042.json       one record per run, written atomically the moment it ends
    samples/000042.parquet every raw sample of a run (e.g. each connection's latency): pictures, not n
    intervals/000042.csv   per-interval statistics (e.g. sysbench's 1 s reports)
    results.parquet/.csv   the tidy long table: one row per run x metric, with unit, direction and provenance

A crash loses at most the run in progress; the long table is rebuilt from the run records when an
experiment ends (or is resumed), so appending a run costs the same at run 1 and run 1000.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.core.files import SCHEMA, atomic_write_bytes, atomic_write_json, read_json
from secoverhead.core.params import ID_PATTERN
from secoverhead.core.units import unit


@dataclass
class RunRecord:
    """One run: an arm under one combination of factors, in one round."""

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
    profiling: bool = False  # a profiling round's run: kept, never in the statistics
    block: str = ""  # the runs compared with each other: the round, or one duet of a round ("" = the round)
    partner: str = ""  # duet design: the arm that ran at the same time

    @property
    def key(self) -> str:
        return run_key(self.arm, self.factors, self.repetition, self.warmup, self.profiling, self.partner)


def run_key(
    arm: str,
    factors: Mapping[str, Any],
    repetition: int,
    warmup: bool,
    profiling: bool = False,
    partner: str = "",
) -> str:
    key = [arm, sorted((k, str(v)) for k, v in factors.items()), repetition, warmup]
    if profiling:
        key.append("profile")
    if partner:
        key.append(f"with {partner}")
    return json.dumps(key)


class ResultStore:
    """All results of one experiment id, under root/<experiment_id>/."""

    def __init__(self, root: str | os.PathLike, experiment_id: str, *, readonly: bool = False) -> None:
        """readonly: a finished experiment read back (a report, `secoverhead.load`): nothing is created."""
        if not re.fullmatch(ID_PATTERN, experiment_id) or ".." in experiment_id:
            raise ValueError(f"experiment id {experiment_id!r} must be letters, digits, '_', '-', '.' (max 64)")
        self.experiment_id = experiment_id
        self.path = Path(root).resolve() / experiment_id
        if not readonly:
            for sub in ("runs", "samples", "intervals"):
                (self.path / sub).mkdir(parents=True, exist_ok=True)
        self._records: list[RunRecord] | None = None
        self.skipped: list[str] = []  # run files that could not be read

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
        self.records().append(run)

    def export(self) -> None:
        """Rebuild results.parquet and results.csv (the long table) atomically."""
        long = self.table()
        atomic_write_bytes(self.path / "results.parquet", long.to_parquet(index=False))
        atomic_write_bytes(self.path / "results.csv", long.to_csv(index=False).encode())

    # -- reading ---------------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        meta = read_json(self.path / "metadata.json")
        return meta if isinstance(meta, dict) else {}

    def records(self) -> list[RunRecord]:
        """Every run record, read once and kept; a corrupt file is skipped and named in `skipped`."""
        if self._records is None:
            self._records = []
            for p in sorted((self.path / "runs").glob("*.json")):
                data = read_json(p)
                try:
                    self._records.append(RunRecord(**data))
                except TypeError:
                    self.skipped.append(p.name)
        return self._records

    def reserve_run_id(self) -> int:
        """The next free run id (callers running runs at once hold a lock around this and append)."""
        taken = max((r.run_id for r in self.records()), default=-1)
        self._reserved = max(getattr(self, "_reserved", -1), taken) + 1
        return self._reserved

    def completed_keys(self) -> set[str]:
        return {r.key for r in self.records() if r.status == "ok"}

    def _ok(self, include_warmup: bool, include_profiling: bool = False) -> list[RunRecord]:
        """Successful runs; warm-ups and profiling runs only when asked for."""
        return [
            r
            for r in self.records()
            if r.status == "ok" and (include_warmup or not r.warmup) and (include_profiling or not r.profiling)
        ]

    @staticmethod
    def _ids(r: RunRecord) -> dict[str, Any]:
        """The columns that identify a run in every table."""
        return {
            "run_id": r.run_id,
            "arm": r.arm,
            "repetition": r.repetition,
            "round": r.round,
            "block": r.block or str(r.round),
            "partner": r.partner,
            "warmup": r.warmup,
            "started": r.started,
        }

    def runs(self, include_warmup: bool = False, include_profiling: bool = False) -> pd.DataFrame:
        """One row per successful run: identifiers, factors, and metrics as columns."""
        return pd.DataFrame(
            [{**self._ids(r), **r.factors, **r.metrics} for r in self._ok(include_warmup, include_profiling)]
        )

    def provenance(self) -> dict[str, Any]:
        """Where these results come from, for every row of the long table."""
        meta = self.metadata()
        env = meta.get("environment", {})
        targets = [
            f"{f.get('engine')} {f.get('version', '')}".strip() + ("" if f.get("embedded", True) else " (external)")
            for f in meta.get("servers", {}).values()
            if isinstance(f, dict)
        ]
        return {
            "study": meta.get("study", ""),
            "experiment": self.experiment_id,
            "host": env.get("machine", {}).get("hostname", ""),
            "target": "; ".join(dict.fromkeys(targets)),
            "commit": (env.get("git_commit") or "")[:12],
        }

    def table(self) -> pd.DataFrame:
        """The tidy long table: one row per run x numeric metric (warm-up runs included, marked), with the
        metric's unit, whether higher is better, and where the row comes from."""
        rows = []
        origin = self.provenance()
        for r in self._ok(include_warmup=True):
            factors = {f"factor_{k}": str(v) for k, v in r.factors.items()}
            for metric, value in r.metrics.items():
                if isinstance(value, bool) or value is None:
                    value = float(value) if isinstance(value, bool) else float("nan")
                if isinstance(value, int | float):
                    u, better = unit(metric)
                    rows.append(
                        {
                            **origin,
                            **self._ids(r),
                            **factors,
                            "metric": metric,
                            "value": float(value),
                            "unit": u,
                            "higher_is_better": better,
                            "schema": SCHEMA,
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
        """Every raw sample, with the run's identifiers and factors attached (for pictures, never for n)."""
        return self._per_run_files("samples", "parquet", pd.read_parquet, include_warmup)

    def intervals(self, include_warmup: bool = False) -> pd.DataFrame:
        """Every per-interval row, with the run's identifiers and factors attached."""
        return self._per_run_files("intervals", "csv", pd.read_csv, include_warmup)
