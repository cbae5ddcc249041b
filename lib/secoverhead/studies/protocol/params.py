"""The parameters every study has (its design: rounds, looks, budget, A/A) and the time budget its parts share."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from secoverhead.analysis.design import SPENDING_POWER, check, fixed, schedule, size_up
from secoverhead.core import paths
from secoverhead.core.errors import ConfigError
from secoverhead.core.files import MAX_JSON_BYTES, Unreadable, read_bounded
from secoverhead.core.params import ID_PATTERN, build, param
from secoverhead.core.report import Report
from secoverhead.servers import Server

if TYPE_CHECKING:
    from secoverhead.analysis.design import Looks


_LABEL = r"[A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"


HOST_PATTERN = rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*\.?|\[?[0-9A-Fa-f:.]+\]?"  # a DNS name or an IP address


MAX_MINUTES = 7 * 24 * 60


def absolute_path(path: str) -> str:
    """The path made absolute from where the command was typed; unchanged where it cannot be (a ~user that does
    not exist, a NUL byte, a name too long): the checks that follow say why in one line."""
    try:
        return str(Path(path).expanduser().absolute())
    except (RuntimeError, ValueError, OSError):
        return path


RESULTS_MARK = ".secoverhead-results"  # in every results folder the project makes


def recorded_parameters(source: str, study: str) -> dict[str, Any]:
    """The checked parameters a run.json recorded (params_from), or one ConfigError naming what is wrong with it:
    a scheduler's papermill or a JupyterLab cell may name any file."""
    where = f"params_from {str(source)[:120]}"
    try:
        meta = json.loads(read_bounded(Path(source).expanduser(), MAX_JSON_BYTES))
    except (OSError, Unreadable) as exc:
        raise ConfigError(f"{where} cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    except (ValueError, RecursionError):
        raise ConfigError(f"{where} is not a run.json of this project (not JSON)") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("parameters", {}), dict):
        raise ConfigError(f"{where} is not a run.json of this project (no parameters recorded)")
    report = Report.of(meta, Path(source).expanduser().parent)  # its schema checked: one line when not read here
    if study and report.study not in ("", study):
        raise ConfigError(f"{where} is a run.json of study {report.study[:40]!r}, not of {study!r}")
    return dict(report.parameters)


def check_output_dir(output_dir: str) -> None:
    """Results go to a new folder, an empty one, or one the project made: never into a folder of other files
    (papermill's `-p output_dir /etc` wrote six experiment folders and verdicts.json there)."""
    path = Path(output_dir).expanduser()
    where = f"output_dir {str(output_dir)[:120]}"
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise ConfigError(f"{where} is not a folder: name a new or empty folder (or leave it empty)")
    try:
        entries = sorted(path.iterdir()) if path.exists() else []
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read ({exc.strerror})") from None
    if entries and not (path / RESULTS_MARK).is_file() and not all(_result_entry(e) for e in entries):
        shown = ", ".join(e.name for e in entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise ConfigError(
            f"{where} holds files that are not this project's results ({shown}): name a new or empty folder, or "
            "leave it empty (results/interactive/)"
        )


def _result_entry(path: Path) -> bool:
    """A results folder's entry, as the project writes them (a results folder made before it was marked)."""
    if path.name in ("verdicts.json", "cost.json"):
        return path.is_file() and not path.is_symlink()
    return path.is_dir() and not path.is_symlink() and (path / "metadata.json").is_file()


@dataclass
class NotebookParams:
    """What every notebook the pipeline runs has: where its results go and the run.json of its checked parameters,
    and the questions the pipeline asks before anything starts (a notebook without servers or a plan answers
    them with nothing)."""

    output_dir: str = param("", "where results go; the pipeline sets it (empty: results/interactive/)", internal=True)
    params_from: str = param(
        "", "run.json whose checked parameters this run uses; the pipeline sets it (empty: defaults)", internal=True
    )
    remeasure: bool = param(
        False,
        "a finished report's notebook run again (JupyterLab) reads the results its run recorded; true measures "
        "again, into results/interactive/ (the report is never written into)",
    )

    STUDY: ClassVar[str] = ""  # the registry id (each Params sets it)
    PLANS: ClassVar[tuple] = ()
    PRIMARY_METRICS: ClassVar[tuple[str, ...]] = ()
    AA_METRICS: ClassVar[tuple[str, ...]] = ()  # shown in the A/A table beside the primary ones
    AA_CELLS: ClassVar[tuple[str, ...]] = ()  # the factors the A/A table gives a row per cell of (default: combined)
    MEASURES: ClassVar[bool] = True  # whether it measures this machine (then the run records its speed reference)

    @classmethod
    def from_namespace(cls, namespace: Mapping[str, Any], *, study: str = "") -> NotebookParams:
        """Build from a notebook's globals: the parameters the pipeline checked and recorded in run.json
        (params_from), under the names the parameters cell and papermill's injected cell set (the pipeline injects
        every cell name it has a value for, so the two agree). Checked by the same schema the pipeline used."""
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in namespace.items() if k in names}
        output_dir = values.pop("output_dir", "")
        source = values.pop("params_from", "")
        if source:
            values = recorded_parameters(source, study or cls.STUDY) | values
        p = build(cls, values, study=study or cls.STUDY)
        p.output_dir, p.params_from = output_dir, source
        if p.remeasure and p.recorded_run():  # measure again, never into the finished report
            p.output_dir, p.params_from = "", ""
        if p.output_dir and not p.replays():  # a replay writes nothing, and reads only inside its report (runner)
            check_output_dir(p.output_dir)
        return p

    def recorded_run(self) -> bool:
        """Whether this notebook belongs to a report whose run has ended (ok, failed or interrupted): run again,
        it reads what that run recorded rather than measuring into it. The pipeline's own run (and --resume)
        says `running` in run.json while it executes the notebook."""
        if not self.params_from:
            return False
        try:
            meta = json.loads(Path(self.params_from).read_text())
        except (OSError, ValueError):
            return False
        return isinstance(meta, dict) and meta.get("status") not in (None, "running")

    def replays(self) -> bool:
        """Read the recorded results instead of measuring (a finished report re-run, unless remeasure)."""
        return not self.remeasure and self.recorded_run()

    def external_servers(self) -> list[Server]:
        """Servers the user named (unstarted): preflight enters each to check reachability and credentials."""
        return []

    def path_values(self) -> dict[str, Any]:
        """Parameters naming files, made absolute where the user gave them relative to where they typed the
        command: the notebook runs in its report's directory, where `ca.pem` would name another file."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_file") and isinstance(value, str) and value:
                out |= {f.name: absolute} if (absolute := absolute_path(value)) != value else {}
        return out

    def check_servers(self, described: list[dict[str, Any]]) -> None:
        """After the external servers answered, each described: what only their facts together can refuse."""

    def check_clients(self) -> None:
        """After the external servers answered: log in with every client tool the run uses besides the Python
        drivers (sysbench), so credentials a tool cannot use fail before any load."""

    def planned_runs(self) -> int:
        """Upper bound of the runs this plan can take (each study counts its arms and cells)."""
        return 0

    def check_plan(self) -> list[str]:
        """Before anything starts: what the plan cannot do (lines to print); none without a plan."""
        return []

    def show_progress(self) -> bool:
        return False

    def results_dir(self) -> Path:
        """Where this run's results go: the pipeline's, else a new folder under results/interactive/; marked as
        the project's (a later run may add to it; check_output_dir)."""
        if not self.output_dir:
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
            name = getattr(self, "experiment_id", "") or self.STUDY or "run"
            self.output_dir = str(paths.interactive_results() / f"{name}-{stamp}")
        path = Path(self.output_dir)
        if not (path / RESULTS_MARK).exists() and not self.replays():
            path.mkdir(parents=True, exist_ok=True)
            (path / RESULTS_MARK).touch()
        return path


@dataclass
class StudyParams(NotebookParams):
    """Design parameters every study has."""

    experiment_id: str = param("", "name of the experiment directories (default: the study's id)", pattern=ID_PATTERN)
    seed: int = param(0, "seed of the randomised arm order (recorded)", min=0, max=2**31 - 1)
    repetitions: int = param(3, "measured rounds at most (each runs every arm once per cell)", min=1, max=1000)
    min_rounds: int = param(3, "rounds before the first look at the claims (sequential design)", min=2, max=1000)
    looks: int = param(3, "planned looks at the claims; rounds stop when all are decided", min=1, max=10)
    spending: float = param(
        SPENDING_POWER,
        "alpha spending over the looks: look k of K has spent alpha * (k/K)^spending; higher keeps more of it for "
        "the last look (narrower final intervals, early looks that decide only large effects)",
        min=0.5,
        max=8.0,
    )
    warmup: int = param(1, "warm-up rounds, kept and marked, never analysed", min=0, max=10)
    max_minutes: float = param(10.0, "time budget: no run starts after it", min=0.05, max=MAX_MINUTES)
    profile: bool = param(
        False, "take CPU profiles (perf, flame graphs) in a round of their own, outside the statistics"
    )
    design: str = param(
        "interleaved",
        "interleaved (arms one after another, a round a block) or duet (the baseline and each arm at the same "
        "time, where every arm has its own server)",
        choices=("interleaved", "duet"),
    )
    aa: bool = param(False, "A/A calibration, the baseline against an identical copy of itself (the noise floor)")
    plan_check: str = param(
        "warn",
        "before running, can the plan decide its claims (A/A noise priors)? size-up raises repetitions to what "
        "they need (the time budget still bounds the run), warn only says so, refuse stops with exit 2",
        choices=("size-up", "warn", "refuse"),
    )
    progress: str = param("auto", "progress bar: auto (when interactive), on, off", choices=("auto", "on", "off"))
    claim_errors: str = param(
        "per-claim",
        "error rate of the verdicts: per-claim (each claim spends alpha) or holm (Holm over the study's claims: "
        "at most alpha that any verdict of the study is wrong; fewer decide)",
        choices=("per-claim", "holm"),
    )

    DUET_ABLE = False  # whether every arm runs on a server of its own, so two arms can run at once
    # STUDY, PLANS (design.ClaimPlan per claim) and PRIMARY_METRICS (what its A/A and design tables show): each
    # study's Params sets them

    def __post_init__(self) -> None:
        self.experiment_id = self.experiment_id or self.STUDY
        if self.design == "duet" and not self.DUET_ABLE:
            raise ConfigError("design duet needs a server per arm; in this study arms share servers (use interleaved)")
        if self.min_rounds > self.repetitions:
            self.min_rounds = self.repetitions if self.repetitions >= 2 else 2
        if self.repetitions < 2 and self.looks > 1:
            self.looks = 1

    # part -> its share of the time budget, relative to the others (default 1): parts whose runs are slow get more
    PART_WEIGHTS: ClassVar[dict[str, float]] = {}

    def claim_plans(self) -> list:
        """What the study's claims need (its PLANS: A/A noise priors and precisions); none for A/A runs and
        external servers, whose claims differ."""
        if self.aa or self.external_servers():
            return []
        return list(self.PLANS)

    def feasibility(self) -> list:
        plans = self.claim_plans()
        return check(plans, self.look_schedule()) if plans and self.repetitions >= 2 else []

    def check_plan(self) -> list[str]:
        """Before anything starts: say which claims the plan cannot decide and, with plan_check size-up, raise
        repetitions (at most 1000) to what they need; refuse raises ConfigError. Returns the lines to print."""

        short = [f for f in self.feasibility() if not f.feasible]
        if not short:
            return []
        lines = [f.message(self.repetitions) for f in short]
        if self.plan_check == "refuse":
            raise ConfigError(lines[0] + " (plan_check: refuse)")
        if self.plan_check == "size-up":
            need = size_up(self.claim_plans(), self.look_schedule())
            if need is not None and need > self.repetitions:
                lines.append(
                    f"repetitions raised from {self.repetitions} to {need} (rounds still stop when the claims are "
                    f"decided, and no run starts after max_minutes={self.max_minutes:g})"
                )
                self.repetitions = need
            elif need is None:
                lines.append("no plan of at most 1000 rounds can decide it on this noise: running as planned")
        return lines

    def show_progress(self) -> bool:
        if self.progress != "auto":
            return self.progress == "on"
        return os.environ.get("SECOVERHEAD_HEADLESS") != "1" and "PYTEST_CURRENT_TEST" not in os.environ

    def part_design(self, part: str) -> str:
        """The design one part runs in (a study whose parts differ in servers may keep some interleaved)."""
        return self.design

    def budget(self) -> Budget:
        return Budget(self.max_minutes * 60)

    def look_schedule(self) -> Looks:
        if self.repetitions < 2:
            return fixed(self.repetitions)
        return schedule(self.min_rounds, self.repetitions, self.looks, power=self.spending)


def _check_host(name: str, host: str) -> None:
    if host and not re.fullmatch(HOST_PATTERN, host):
        raise ConfigError(f"{name} {host[:80]!r} is not a host name or address")


def aa_copy(arm: str) -> str:
    """The name of an A/A run's second arm: the same configuration as `arm`."""
    return f"{arm} (A/A copy)"


class Budget:
    """A study's time budget shared by its experiments: each gets its weight's share of what is left, so time
    an early-decided experiment did not need goes to the next."""

    def __init__(self, total_s: float) -> None:
        self.total_s, self._start, self._time = total_s, time.monotonic(), time.monotonic

    def left(self) -> float:
        return max(0.0, self.total_s - (self._time() - self._start))

    def share(self, weight: float = 1.0, weight_left: float = 1.0) -> float:
        return self.left() * weight / weight_left if weight_left > 0 else self.left()
