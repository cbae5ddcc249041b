"""Finished runs loaded in one call, read-only: `secoverhead.load(...)` for a DBA in JupyterLab.

    import secoverhead
    r = secoverhead.load("tde")              # every run of a study under ./reports
    r = secoverhead.load("reports/tls/...")  # one run directory
    r.runs, r.verdicts, r.cells              # tidy frames; r.samples(), r.intervals() read on demand
    r.standing()                             # each claim's standing verdict over the reports of its series

Every frame carries the run (its directory's name), the study, its scale (smoke, quick, full, or the parameter
set's name), the run's status and the experiment, so runs of several scales never mix unseen. The `latest`
links are followed by nobody: each run is read once. Nothing is written or created.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.analysis.pooling import ALPHA
from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.core.errors import ConfigError
from secoverhead.core.paths import REPORTS_ENV, reports_root
from secoverhead.core.report import readable, why_unread
from secoverhead.core.runs import check_inside, leaving, status_of
from secoverhead.core.units import shown_interval
from secoverhead.measurement.parts import server_of
from secoverhead.measurement.results import ResultStore
from secoverhead.series import standing
from secoverhead.series.reports import collect
from secoverhead.suite.notebooks import NOTEBOOKS

RUN_IDS = ("run", "study", "scale", "status")
STANDING_COLUMNS = ("standing", "standing_reports")  # its series' standing verdict at that report, over so many
VERDICT_COLUMNS = ("id", "claim", "verdict", "source", "ratio", "ci_low", "ci_high", "evidence", "testable_where")
SERVER_COLUMNS = {"build": "server_build", "version": "server_version", "tls_library": "server_tls_library"}
CELL_COLUMNS = ("run", "study", "scale", "status", "id", "verdict", "part", "reading", "effect", "cell", "quantity",
                "unit", "ci_low", "ci_high", "shown", *SERVER_COLUMNS.values())  # fmt: skip


@dataclass
class Results:
    """Runs of one study or several, as tidy frames."""

    runs: pd.DataFrame  # one row per measured run: run, study, scale, status, experiment, arm, factors, metrics,
    # and retake_of (the run_id a noisy run was taken again for; the statistics average the two within their block)
    verdicts: pd.DataFrame  # one row per claim verdict: run, study, scale, id, claim, verdict (the report's own, one
    # look), interval, source, part, the server build that produced it, and "standing": its series' standing verdict
    # as it stood at that report (None before two of its reports tested the claim), over "standing_reports"
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per judged cell of a verdict: its reading's
    # effect, the cell (a workload, an approach; "" for a claim of one comparison), quantity, unit and interval
    # (the one judged, between-run term included) as the page shows it
    stores: list[tuple[dict, ResultStore]] = field(default_factory=list, repr=False)
    dirs: list[Path] = field(default_factory=list, repr=False)  # the report directories read

    def standing(self, alpha: float = ALPHA) -> pd.DataFrame:
        """Each claim's standing verdict over the reports of its series, as the index's *Standing verdicts* shows
        it, for every study these reports belong to (over the reports beside them under the same root)."""
        frames = []
        for root, study in dict.fromkeys((d.parent.parent, d.parent.name) for d in self.dirs):
            df = standing.table(root, study, collect(root, study), alpha)
            if len(df):
                frames.append(df.assign(study=study))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def samples(self) -> pd.DataFrame:
        """Every raw sample of every run (large: read when asked), with the run's columns."""
        return self._each(lambda s: s.samples())

    def intervals(self) -> pd.DataFrame:
        """Every per-interval row of every run, with the run's columns."""
        return self._each(lambda s: s.intervals())

    def _each(self, read) -> pd.DataFrame:
        frames = [read(store).assign(**ids) for ids, store in self.stores]
        frames = [f for f in frames if len(f)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def run_dirs(what: str | Path, reports: str | Path | None = None) -> list[Path]:
    """The run directories `what` names: a run directory (a link such as `latest` read as the run it names), or
    a study (every run under <reports>/<study>/, oldest first, the `latest` link not counted twice; reports as
    paths.reports_root finds it). A study with no report there is said, never an empty frame."""
    p = Path(what)
    if (p / "run.json").is_file():
        run = p.resolve() if p.is_symlink() else p
        check_inside(run)
        return [run]
    if str(what) in NOTEBOOKS:
        base = reports_root(reports) / str(what)
        found = sorted(d for d in base.glob("*") if d.is_dir() and not d.is_symlink() and (d / "run.json").is_file())
        if not found:
            raise ConfigError(
                f"no {what} report under {base.parent.resolve()} (name the folder: reports=..., or set {REPORTS_ENV})"
            )
        return found
    raise ConfigError(f"{what}: neither a run directory (with run.json) nor a study ({', '.join(NOTEBOOKS)})")


def _first_server(store: ResultStore) -> dict[str, Any]:
    """The server an experiment ran on, as its first server described itself (measurement.parts.server_of)."""
    facts = next((f for f in (store.metadata().get("servers") or {}).values() if isinstance(f, dict)), {})
    return server_of(facts)


def _server(server: dict[str, Any]) -> dict[str, Any]:
    """The server build, version and TLS library as columns of a frame (None where a record has none)."""
    return {column: server.get(key) for key, column in SERVER_COLUMNS.items()}


def _cells(ids: dict[str, Any], v: dict[str, Any]) -> list[dict[str, Any]]:
    """A verdict's judged intervals, a row per reading and cell, with the quantity and unit the page prints."""
    rows = []
    for k, reading in enumerate(r for r in v.get("judged") or [] if isinstance(r, dict)):
        quantity, unit = str(reading.get("quantity") or ""), str(reading.get("unit") or "")
        intervals = [i for i in reading.get("intervals") or [] if isinstance(i, list | tuple) and len(i) == 2]
        names = [str(c) for c in reading.get("cells") or []]
        for i, (lo, hi) in enumerate(intervals):
            rows.append({**ids, "id": v.get("id"), "verdict": v.get("verdict"), "part": v.get("part", ""),
                         "reading": k, "effect": reading.get("effect"), "cell": names[i] if i < len(names) else "",
                         "quantity": quantity, "unit": unit, "ci_low": lo, "ci_high": hi,
                         "shown": _shown(lo, hi, quantity, unit), **_server(v.get("server") or {})})  # fmt: skip
    return rows


def _shown(lo: Any, hi: Any, quantity: str, unit: str) -> str:
    try:
        return shown_interval(float(lo), float(hi), quantity, unit)
    except (TypeError, ValueError):
        return ""


def _series(cache: dict[tuple[Path, str], pd.DataFrame], root: Path, study: str) -> pd.DataFrame:
    """The study's reports under root as reports.collect reads them, read once per load."""
    if (root, study) not in cache:
        cache[(root, study)] = collect(root, study)
    return cache[(root, study)]


def _retakes(store: ResultStore) -> dict[int, int]:
    """run_id -> the run_id it was taken again for (a run the noise monitor flagged)."""
    return {r.run_id: r.info["retake_of"] for r in store.records() if isinstance(r.info.get("retake_of"), int)}


def load(what: str | Path, *, reports: str | Path | None = None, scale: str | None = None) -> Results:
    """Runs and verdicts of a run directory, or of every run of a study under `reports` (only `scale`'s, when
    given), read-only. Without `reports`: $SECOVERHEAD_REPORTS, ./reports, or the checkout's reports."""
    runs, verdicts, cells, stores, skipped, read = [], [], [], [], [], []
    series_read: dict[tuple[Path, str], pd.DataFrame] = {}  # each study's reports read once, not once a report
    for d in run_dirs(what, reports):
        if outside := leaving(d):  # a report is read only inside itself
            skipped.append(f"{d.name}/{outside[0]} (a link out of its run folder)")
            continue
        report = readable(d)
        if report is None:
            skipped.append(f"{d.name}/run.json ({why_unread(d)})")
            continue
        ids = {"run": d.name, "study": report.study, "scale": report.scale, "status": status_of(report)}
        if scale is not None and ids["scale"] != scale:
            continue
        read.append(d)
        for exp in sorted(p for p in (d / "results").glob("*") if (p / "metadata.json").is_file()):
            store = ResultStore(d / "results", exp.name, readonly=True)
            stores.append(({**ids, "experiment": exp.name}, store))
            frame = store.runs()
            if len(frame):
                server = _server(_first_server(store))
                retake_of = frame.run_id.map(_retakes(store)).astype("Int64")
                runs.append(frame.assign(**ids, experiment=exp.name, retake_of=retake_of, **server))
        listed = [v for v in (read_verdicts(d) or {}).get("verdicts", []) if isinstance(v, dict)]
        series = _series(series_read, d.parent.parent, report.study) if listed else None
        for v in standing.with_standing(d, report.study, listed, series) if listed else []:
            where = {"part": v.get("part", ""), **_server(v.get("server") or {})}
            stands = {"standing": v["standing"]["verdict"], "standing_reports": v["standing"]["reports"]}
            verdicts.append({**ids, **{k: v.get(k) for k in VERDICT_COLUMNS}, **where, **stands})
            cells += _cells(ids, v)
    if skipped:  # never empty frames without a word
        warnings.warn(f"secoverhead.load skipped {len(skipped)}: {'; '.join(skipped[:5])}", stacklevel=2)
    return Results(
        runs=pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(),
        verdicts=pd.DataFrame(
            verdicts,
            columns=[*RUN_IDS, *VERDICT_COLUMNS, "part", *SERVER_COLUMNS.values(), *STANDING_COLUMNS],
        ),
        cells=pd.DataFrame(cells, columns=CELL_COLUMNS),
        stores=stores,
        dirs=read,
    )
