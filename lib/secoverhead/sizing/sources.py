"""Where the calculator's costs come from: for each study, the run that counts (core.runs.counting: the newest
that finished ok, of the largest scale run; a smoke run never displaces a quick one), or the one the user names;
what its experiments measured (arms, factor levels), and the machine it ran on. JSON only, so the CLI checks all
of it before any kernel starts."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import read_bounded, read_json
from secoverhead.core.paths import MAX_INPUT_BYTES, file_problem, user_path
from secoverhead.core.report import Report, read_report, readable, why_unread
from secoverhead.core.runs import counting_runs
from secoverhead.measurement.parts import part_slug
from secoverhead.sizing.scaling import REFERENCES


@dataclass
class Measured:
    """What one experiment of a run holds: its arms and the levels of its factors (from the run records)."""

    path: Path
    arms: set[str] = field(default_factory=set)
    levels: dict[str, set[str]] = field(default_factory=dict)
    calibration: dict[str, Any] = field(default_factory=dict)

    @property
    def run_dir(self) -> Path:
        """The report it belongs to (<report>/results/<experiment>)."""
        return self.path.parent.parent


@dataclass
class Source:
    """One study's run the costs are read from."""

    study: str
    run_dir: Path
    report: Report
    experiments: dict[str, Measured]  # part name (as the study names it) -> experiment

    def experiment(self, part: str) -> Measured | None:
        return self.experiments.get(part_slug(part))

    def run_of(self, part: str) -> Path:
        """The report a part's costs are read from: the source run, or the newest before it that ran the part."""
        exp = self.experiment(part)
        return exp.run_dir if exp is not None else self.run_dir

    def runs_used(self) -> list[Path]:
        """The reports its parts come from, the source run first."""
        return list(dict.fromkeys([self.run_dir, *(e.run_dir for e in self.experiments.values())]))

    @property
    def calibration(self) -> dict[str, Any]:
        """The source run's speed reference."""
        return self.calibration_of(self.run_dir)

    def calibration_of(self, run_dir: Path) -> dict[str, Any]:
        """A report's measuring machine's speed reference (its own calibration.json, else an experiment's)."""
        cal = read_json(run_dir / "calibration.json")
        if isinstance(cal, dict) and cal:
            return cal
        mine = (e for e in self.experiments.values() if e.run_dir == run_dir and e.calibration)
        return next((e.calibration for e in mine), {})


def _experiments(report: Report, known: Collection[str] = ()) -> dict[str, Measured]:
    """Experiments by part, the parts in `known` not read: the study's runner names them <experiment_id>-<part>
    (a one-part study: the id)."""
    run_dir = report.dir
    eid = str(report.parameters.get("experiment_id") or report.study)
    out: dict[str, Measured] = {}
    for exp in sorted((run_dir / "results").glob("*/metadata.json")):
        name = exp.parent.name
        part = report.study if name == eid else name.removeprefix(f"{eid}-")
        if part.lower() in known:
            continue
        e = Measured(exp.parent)
        md = read_json(exp)
        if isinstance(md, dict) and isinstance(md.get("calibration"), dict):
            e.calibration = md["calibration"]
        for rec in (exp.parent / "runs").glob("*.json"):
            r = read_json(rec)
            if not isinstance(r, dict) or r.get("status") != "ok" or r.get("warmup") or r.get("profiling"):
                continue
            e.arms.add(str(r.get("arm")))
            for k, v in (r.get("factors") or {}).items():
                e.levels.setdefault(k, set()).add(str(v))
        if e.arms:
            out[part.lower()] = e
    return out


def experiments_of(run_dir: Path, known: Collection[str] = ()) -> dict[str, Measured]:
    """A report's experiments by part slug (another report of a source's series), those in `known` left out."""
    report = readable(run_dir)
    return _experiments(report, known) if report is not None and report.study else {}


def source(root: Path, study: str, named: str | None = None) -> Source:
    """The run a study's costs come from: the one named, else the run that counts under root."""
    if named:
        try:
            run_dir = user_path(named)
        except ValueError as exc:
            raise ConfigError(f"runs: {study}: {exc}") from None
        try:
            report = read_report(run_dir)
        except ConfigError as exc:
            raise ConfigError(f"runs: {study}: {exc}") from None
        if report is None or report.study != study:
            raise ConfigError(f"runs: {study}: {run_dir} is not a report directory of study {study!r}")
        if report.status != "ok":
            raise ConfigError(f"runs: {study}: {run_dir} did not finish ok (status {report.status!r})")
        exps = _experiments(report)
    else:
        counted = counting_runs(root / study)
        if not counted:
            raise ConfigError(
                f"{root} holds no finished run of study {study!r}, whose costs this calculation needs: run "
                f"`secoverhead run {study} --scale quick` first, name a run (-p runs '{{{study}: DIR}}'), "
                "or leave its feature out"
            )
        run_dir, report = counted[0], readable(counted[0])
        if report is None:  # rewritten since it was counted
            raise ConfigError(f"{run_dir}: its run.json is no longer readable ({why_unread(run_dir)})")
        exps = _newest_of_each_part(counted)
    if not exps:
        raise ConfigError(f"{run_dir} holds no completed runs of study {study!r}")
    return Source(study, run_dir, report, exps)


def _newest_of_each_part(runs: list[Path]) -> dict[str, Measured]:
    """Each part's experiment from the newest of the runs (newest first) that ran it: a run with a part switched
    off leaves that part's costs to the run before it, not to an error."""
    out: dict[str, Measured] = {}
    for run in runs:
        out |= experiments_of(run, known=out.keys())  # a part already found is not read again
    return out


def sources(
    root: Path, studies: list[str], named: Mapping[str, str], upcoming: frozenset[str] = frozenset()
) -> dict[str, Source]:
    """The run of every study needed, except those the same command runs first (`upcoming`)."""
    return {s: source(root, s, named.get(s)) for s in studies if s in named or s not in upcoming}


def target_calibration(path: str, typed: Mapping[str, Any]) -> dict[str, Any]:
    """The user's machine: a calibration file from `secoverhead calibrate`, with typed-in references over it;
    empty when neither is given (the costs then stay those of the machine that measured them)."""
    cal = check_calibration(path) if path else {}
    _check_speeds(dict(typed), "calibration")
    return cal | dict(typed)


def check_calibration(path: str | Path) -> dict[str, Any]:
    """A calibration file as `secoverhead calibrate` saves it, or ConfigError: bounded, and each speed it holds a
    finite time above zero (a negative or NaN one priced everything at NaN, with status ok)."""
    if problem := file_problem(path):
        raise ConfigError(f"calibration_file: {problem}")
    try:
        loaded = json.loads(read_bounded(user_path(path), MAX_INPUT_BYTES))
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"calibration_file: not a calibration saved by `secoverhead calibrate` ({exc})") from None
    if not isinstance(loaded, dict) or not any(k in loaded for k in REFERENCES):
        raise ConfigError("calibration_file: holds none of the speed references `secoverhead calibrate` saves")
    _check_speeds(loaded, "calibration_file")
    return loaded


def _check_speeds(cal: dict[str, Any], where: str) -> None:
    for key in REFERENCES:
        v = cal.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            raise ConfigError(f"{where}: {key} must be a time above zero, not {str(v)[:40]}")


def your_cores(given: float, calibration: Mapping[str, Any]) -> tuple[float | None, str]:
    """The user's machine's cores and where the figure came from: as given, else as `secoverhead calibrate` found
    them on the machine it measured (usable cores: a container's quota, not the host's; `calibration` as
    target_calibration loaded it), else unknown (None)."""
    if given > 0:
        return float(given), "as you gave them"
    machine = calibration.get("machine")
    if isinstance(machine, dict):
        n = machine.get("cpu_cores_usable") or machine.get("cpu_cores")
        if isinstance(n, int | float) and not isinstance(n, bool) and 0 < n < 100_000:
            host = str(machine.get("hostname") or "the machine it measured")[:60]
            return float(n), f"as `secoverhead calibrate` found them on {host}"
    return None, ""
