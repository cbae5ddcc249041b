"""Headless runs: validate parameters against the study's schema, execute its notebook with papermill into a
versioned report directory, render HTML, scan every artefact for secrets, record run.json, point `latest`.

    reports/<study>/<UTC timestamp>-<host>-<params name>/
        report.ipynb  report.html  run.json  run.log  calibration.json  results/<experiment>/...  verdicts.json

Everything that can be checked is checked in `prepare` before any server or kernel starts. A run that stops
(an error, Ctrl-C, SIGTERM, an output that became unwritable) is finalised: its status recorded, what can be
rendered rendered. `--resume` continues an interrupted run in place: completed runs are not repeated.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import secrets as _stdlib_secrets
import sys
import traceback
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secoverhead.app import review
from secoverhead.app.kernel_session import kernel_manager, no_object_reprs
from secoverhead.app.record import Ending, ReportRecord
from secoverhead.app.rundir import check_reports_root, new_run_dir, point_latest
from secoverhead.app.stderr import PLAIN
from secoverhead.app.watch import Watch
from secoverhead.core import owners, signals
from secoverhead.core.errors import ConfigError, KernelDied
from secoverhead.core.files import sanitize
from secoverhead.core.params import (
    MAX_PLANNED_RUNS,
    build,
    layer,
    params_name,
    preflight,
    renamed,
    secret_parameters,
    specs,
)
from secoverhead.core.paths import LEARNED_ENV, user_path
from secoverhead.core.report import read_report
from secoverhead.core.runlock import HELD_ENV, RunLock, hold_servers, server_addresses
from secoverhead.core.runs import EMBEDDED, check_inside, running
from secoverhead.core.secrets import EMBEDDED_PASSWORD_ENV, secret_from
from secoverhead.core.signals import Terminated as Terminated  # re-exported: callers stop on it as before
from secoverhead.host import calibration, leaks
from secoverhead.host.process import sweep_stale
from secoverhead.servers.journal import recover
from secoverhead.studies import StudySpec, between_instances
from secoverhead.studies.protocol.spec import SMOKE
from secoverhead.suite.notebooks import NOTEBOOKS

KERNEL = "secoverhead"
SCREENS_ENV = "SECOVERHEAD_SCREENS"  # "off": no first-screen screenshot (the test suite's many tiny runs)


@dataclass
class Prepared:
    """A validated run: nothing has started yet."""

    study: StudySpec
    params: Any
    values: dict[str, Any]
    name: str
    files: list[str] = field(default_factory=list)
    plan_notes: list[str] = field(default_factory=list)  # what the plan check said (and did) before the run
    servers: list[str] = field(default_factory=list)  # the user's servers it holds (one run at a time on each)
    release: Callable[[], None] = field(default=lambda: None, repr=False)  # lets them go


@dataclass(frozen=True)
class Placement:
    """Where a fleet runs a job: the run directory's name (fixed beforehand, so a retry resumes it), the target
    it loads and the client host it runs on (recorded in run.json; a resumed run adds its host)."""

    run_name: str = ""
    target: str = ""
    client_host: str = ""


@dataclass
class RunOutcome:
    study: str
    run_dir: Path
    status: str  # ok | failed | interrupted
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def get_study(study_id: str) -> StudySpec:
    if study_id not in NOTEBOOKS:
        raise ConfigError(f"unknown study {study_id!r}; studies: {', '.join(NOTEBOOKS)}")
    study = NOTEBOOKS[study_id]
    if not study.available:
        raise ConfigError(f"study {study_id!r} has no notebook ({study.notebook_path})")
    return study


def prepare(
    study_id: str,
    *,
    files: list[str | os.PathLike] | None = None,
    scale: str | None = None,
    overrides: list[tuple[str, str]] | None = None,
    values: dict[str, Any] | None = None,
    check_servers: bool = True,
    reports_root: Path | None = None,
    upcoming: frozenset[str] = frozenset(),
) -> Prepared:
    """Parameters from files (the scale's first, then -f files in order) and -p pairs, checked against the
    study's Params, bounded, and pre-flighted (secrets present, files present, named servers answering, the
    reports a notebook reads there, or coming from the studies the same command runs first: `upcoming`)."""
    study = get_study(study_id)
    chain = [str(f) for f in files or []]
    if scale is not None:
        path = study.params_dir / f"{scale}.yaml"
        if not path.is_file() and scale != SMOKE:  # smoke is the Params' defaults, named by a file or not
            raise ConfigError(f"study {study.id!r} has no scale {scale!r} (have: {', '.join(study.scales())})")
        if path.is_file():
            chain.insert(0, str(path))
    cls = study.Params
    merged = renamed(cls, dict(values or {}) | layer(files=chain, overrides=overrides or [], schema=specs(cls)))
    p = build(cls, merged, study=study.id)
    if check_servers:  # a fleet's driver checks parameters only: its client hosts hold the secrets
        _check_secrets_scannable(study, p, merged)
    notes = p.check_plan() if values is None else []  # a resumed run keeps its plan
    if "repetitions" in merged or notes:
        merged["repetitions"] = p.repetitions
    planned = p.planned_runs()
    if planned > MAX_PLANNED_RUNS:
        raise ConfigError(
            f"{study.id}: the plan has up to {planned:,} runs (limit "
            f"{MAX_PLANNED_RUNS:,}): lower repetitions or the factor levels"
        )
    for name, value in p.path_values().items():  # as the user meant them, wherever the notebook runs
        setattr(p, name, value)
        merged[name] = value
    check_data_files()
    servers = server_addresses(p) if check_servers else []
    release = hold_servers(servers, f"{study.id} run") if servers else lambda: None  # before the pre-flight check
    try:
        if check_servers:
            preflight(p)
        if study.check is not None:
            study.check(p, reports_root or check_reports_root("reports"), upcoming)
    except BaseException:
        release()
        raise
    name = params_name(chain, overrides or []) if values is None else "resumed"
    prepared = Prepared(study, p, merged, name, chain, [f"{study.id}: {n}" for n in notes], servers, release)
    weakref.finalize(prepared, release)  # a Prepared never run lets its servers go with it
    return prepared


def check_data_files() -> None:
    """The project's own data files the verdicts read (the claim registry, the between-run terms), checked like
    user input before any server starts: a broken entry is one line naming the file, not a verdict gone NaN after
    a measured run."""
    from secoverhead.analysis import claim_registry  # deferred: past the parameters, which refuse bad input first

    try:
        claim_registry.claims()
        claim_registry.between_runs()
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{claim_registry.paths.CLAIMS.parent.name}/: {str(exc).splitlines()[0][:300]}") from None


def _check_secrets_scannable(study: StudySpec, p: Any, values: dict[str, Any]) -> None:
    """Every artefact is scanned for the user's secrets: one too short or too common to tell from what a report
    always holds would fail every run (or be 'found' everywhere), so it is refused here, saying why."""
    try:
        notebook = study.notebook_path.read_text(errors="replace")
    except OSError:
        notebook = ""
    ordinary = [notebook, *(str(v) for v in values.values()), study.id, study.title]
    named = secret_parameters(p)
    if named:
        from secoverhead.reporting.render import page_frame  # deferred: nbconvert, only when a password is named

        ordinary.append(page_frame())
    for name, (kind, where) in named.items():
        try:
            value = (secret_from(env=where) if kind == "env" else secret_from(file=where)).reveal()
        except ConfigError as exc:
            raise ConfigError(f"{name}: {exc}") from None
        if why := leaks.scan_problem(value, ordinary):
            raise ConfigError(
                f"{name}: the password cannot be scanned for safely: {why}; every report is checked for it, so "
                "give the benchmark account a longer, unusual password"
            )


def check_kernel(name: str = KERNEL) -> None:
    from jupyter_client.kernelspec import (  # deferred: the CLI answers bad input before papermill loads (seconds)
        KernelSpecManager,
        NoSuchKernel,
    )

    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        raise ConfigError(f"Jupyter kernel {name!r} is not registered: run `make setup`") from None


def _secret_values(p: Any) -> list[str]:
    """The secrets this run can touch: every *_password_env / *_password_file parameter's value, read here."""
    out = []
    for kind, where in secret_parameters(p).values():
        out.append(secret_from(env=where).reveal() if kind == "env" else secret_from(file=where).reveal())
    return out


def _concurrent(root: Path, me: Path) -> list[str]:
    """Other runs under root whose owner is still alive: they share the CPU with this one."""
    found = []
    for rj in root.glob("*/*/run.json"):
        if rj.parent == me:
            continue
        if running(rj.parent):
            found.append(str(rj.parent.relative_to(root)))
    return found


_CALIBRATION: Path | None = None


def _shared_calibration(run_dir: Path) -> Path:
    """One machine-speed calibration per CLI invocation (or the fresh one $SECOVERHEAD_CALIBRATION names),
    copied into every report it makes."""
    global _CALIBRATION
    cal = calibration.fresh(_CALIBRATION) if _CALIBRATION is not None else None
    _CALIBRATION = calibration.save(cal or calibration.shared(), run_dir / "calibration.json")
    return _CALIBRATION


def notebook_parameters(study: StudySpec, values: dict[str, Any], results_dir: Path, record: Path) -> dict[str, Any]:
    """What papermill injects: the values of the names the notebook's parameters cell declares, where the results
    go, and the run.json that records the whole checked set (the notebook reads the rest from there). Injecting
    only declared names keeps papermill from warning of unknown parameters."""
    declared = _declared(str(study.notebook_path))
    return {k: v for k, v in values.items() if k in declared} | {  # relative to the report, where the kernel runs
        "output_dir": os.path.relpath(results_dir, record.parent),
        "params_from": record.name,
    }


@functools.cache
def _declared(notebook: str) -> frozenset[str]:
    import papermill  # deferred: the CLI answers bad input before papermill loads (seconds)

    pm_log = logging.getLogger("papermill")
    level, pm_log.level = pm_log.level, logging.WARNING  # its "Input Notebook" line is run.log's, said there
    try:
        return frozenset(papermill.inspect_notebook(notebook))
    finally:
        pm_log.setLevel(level)


@dataclass
class ClaimedRun:
    """A run directory this process holds, and the secrets every artefact in it is scanned for."""

    dir: Path
    lock: RunLock
    secrets: list[str]
    embedded_password: str  # embedded servers' password: set for the kernel, scanned for like the user's

    @property
    def results(self) -> Path:
        return self.dir / "results"


def run_study(
    prepared: Prepared,
    *,
    reports_root: str | os.PathLike = "reports",
    kernel: str = KERNEL,
    log: logging.Logger | None = None,
    resume: Path | None = None,
    lock: RunLock | None = None,
    placement: Placement | None = None,
) -> RunOutcome:
    """Claim the run directory, begin its record, run the notebook under its kernel, finalise. Raises only before
    a run directory exists (or, resuming, when another process holds its lock); after, every outcome is recorded
    and returned (KeyboardInterrupt / Terminated are re-raised once recorded). `placement`: a fleet's job, its run
    directory named beforehand and its target and client host recorded."""
    log = log or logging.getLogger("secoverhead")
    check_kernel(kernel)
    run, record, ending = None, None, Ending()
    try:
        with signals.deferred():  # a signal while the directory is made waits for its record, then ends it here
            run = claim_run_dir(prepared, check_reports_root(reports_root), resume, lock, placement or Placement())
            record = begin_record(prepared, run, resumed=resume is not None, placement=placement)
            record.write(reserve=True)
        execute(prepared, run, record, kernel, log)
    except (Exception, KeyboardInterrupt) as exc:
        if run is None or record is None:
            raise  # no run directory of ours yet: nothing to record
        stop = signals.as_terminated(exc) if isinstance(exc, KeyboardInterrupt) else exc
        ending = ended_by(stop)
        if isinstance(stop, signals.Terminated) and stop.name == "SIGINT":  # SIGTERM, SIGHUP: a scheduler's stop,
            replay_partial(prepared, run, record, kernel, log, ending)  # kept prompt; its --resume reports all
        if isinstance(stop, signals.Terminated):
            resume_with = f"`secoverhead run --resume {run.dir}` continues it"
            stop.outcome = f"{prepared.study.id}: interrupted  {run.dir}; {resume_with}"
            raise stop from None
    finally:
        if run is not None and record is not None:
            with signals.deferred():  # a second Ctrl-C must not leave the record half-done
                finalise(run, prepared.study, record, ending)
                run.lock.release()
                _undo_what_the_kernel_left()
        prepared.release()
    # a failure's line on stderr carries its error; an ok run is said once, by its caller, with its directory
    level = logging.INFO if ending.error else logging.DEBUG
    log.log(level, "%s: %s (%s)", prepared.study.id, ending.status, ending.error or "no error", extra=PLAIN)
    return RunOutcome(prepared.study.id, run.dir, ending.status, ending.error)


def claim_run_dir(
    prepared: Prepared, root: Path, resume: Path | None, lock: RunLock | None, placement: Placement
) -> ClaimedRun:
    """The run directory, locked: the one resumed, a fleet job's named one (never overwritten: an existing run is
    resumed, not remade) or a new one."""
    secrets = _secret_values(prepared.params)
    if resume is not None:
        run_dir, lock = resume, lock or RunLock(resume).acquire()
    elif placement.run_name:
        run_dir = root / prepared.study.id / placement.run_name
        run_dir.mkdir(parents=True)
    else:
        run_dir = new_run_dir(root, prepared.study.id, prepared.name, secrets)
    embedded = _stdlib_secrets.token_urlsafe(18)
    return ClaimedRun(run_dir, lock or RunLock(run_dir).acquire(), [*secrets, embedded], embedded)


def begin_record(prepared: Prepared, run: ClaimedRun, *, resumed: bool, placement: Placement | None) -> ReportRecord:
    """run.json's first fields (written by the caller, inside its finalising `try`)."""
    study = prepared.study
    fields = {
        "study": study.id,
        "title": study.title,
        "notebook": study.notebook,
        "params_name": prepared.name,
        "params_files": prepared.files,
        "parameters": prepared.values,
        "parameters_sha256": parameters_digest(prepared.values),
    }
    return ReportRecord.begin(run.dir, fields, resumed=resumed, placement=placement)


def parameters_digest(values: dict[str, Any]) -> str:
    """A digest of the checked parameters as recorded: a resumed run continues only the plan it began with."""
    text = json.dumps(sanitize(values), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def execute(prepared: Prepared, run: ClaimedRun, record: ReportRecord, kernel: str, log: logging.Logger) -> None:
    """The notebook under its kernel: cell by cell into run.log, progress on the terminal."""
    _note_concurrent(record, log)
    learned_terms = _learned(run, prepared.study.id, record) if prepared.params.MEASURES else None
    with _watching(run, prepared.study.id):
        log.info("running %s (%s) into %s", prepared.study.id, record.name, run.dir)
        _notebook(prepared, run, record, kernel, learned_terms)


def replay_partial(
    prepared: Prepared, run: ClaimedRun, record: ReportRecord, kernel: str, log: logging.Logger, ending: Ending
) -> None:
    """An interrupted run's report from the runs it recorded: run.json says interrupted, so the notebook reads
    them back (as a finished report does when run again) and its tables and verdicts hold every one, the page's
    banner saying the verdicts are partial. A second Ctrl-C, or a failure, leaves the report as it stopped."""
    recorded = sum(1 for _ in run.results.glob("*/runs/*.json"))
    if not recorded or not prepared.params.MEASURES:
        return
    from secoverhead.series.learned import FILE  # deferred: see _learned

    terms = run.dir / FILE
    record.fields.update(status="interrupted", error=ending.error)
    try:
        record.write()
        log.info("%s: reporting the %d runs it recorded (Ctrl-C again skips)", prepared.study.id, recorded)
        _notebook(prepared, run, record, kernel, terms if terms.is_file() else None)
    except (Exception, KeyboardInterrupt) as exc:  # a second Ctrl-C or SIGTERM (Terminated) among them
        log.warning("%s: the report shows what the run reached (%s)", prepared.study.id, _one_line(exc)[:200])


def _notebook(
    prepared: Prepared, run: ClaimedRun, record: ReportRecord, kernel: str, learned_terms: Path | None
) -> None:
    """papermill, cell by cell into run.log, the kernel in this run's environment."""
    import papermill  # deferred: the CLI answers bad input before papermill loads (seconds)

    study = prepared.study
    parameters = notebook_parameters(study, prepared.values, run.results, record.path)
    with (
        _cells_into(run.dir / "run.log"),
        _kernel_environment(run, prepared.params, learned_terms),
        kernel_manager(kernel, run.dir / "run.log") as km,
    ):
        papermill.execute_notebook(
            str(study.notebook_path),
            str(run.dir / "report.ipynb"),
            parameters=parameters,
            kernel_name=kernel,
            km=km,
            cwd=str(run.dir),
            progress_bar=False,
            log_output=True,
            execution_timeout=cell_bound_s(prepared.params),
        )


def cell_bound_s(p: Any) -> int | None:
    """The longest one cell may run: twice the run's time budget and half an hour for set-up and its last run (no
    run starts past the budget; a stall inside one is ended long before), so no wait is unbounded. None for a
    notebook without a budget (the calculator measures nothing)."""
    budget = getattr(p, "max_minutes", None)
    return int(2 * budget * 60 + 1800) if budget else None


def ended_by(exc: BaseException) -> Ending:
    """How an exception out of the notebook's run ends it, in run.json's words."""
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        why = str(exc.evalue).splitlines()[0][:300] if exc.evalue else ""
        return Ending("failed", f"{exc.ename}: {why}")
    if isinstance(exc, signals.Terminated):
        return Ending("interrupted", f"interrupted by {exc.name}" + (" (Ctrl-C)" if exc.name == "SIGINT" else ""))
    if isinstance(exc, KernelDied):
        return Ending("failed", str(exc))
    return Ending("failed", _one_line(exc))  # outputs unwritable, disk full, ...


def _note_concurrent(record: ReportRecord, log: logging.Logger) -> None:
    """Other runs on this machine share its CPU: recorded, and said."""
    others = _concurrent(record.run_dir.parent.parent, record.run_dir)
    if others:
        record.fields["concurrent_runs"] = others
        log.warning(
            "warning: %d other run(s) are running on this machine and share its CPU: %s", len(others), ", ".join(others)
        )


@contextlib.contextmanager
def _cells_into(path: Path) -> Iterator[None]:
    """papermill's cell-by-cell log into run.log (not the terminal, which gets the progress bar)."""
    pm_log = logging.getLogger("papermill")
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(no_object_reprs)
    pm_log.addHandler(handler)
    pm_log.setLevel(logging.INFO)
    pm_log.propagate = False
    try:
        yield
    finally:
        pm_log.removeHandler(handler)
        pm_log.propagate = True
        with contextlib.suppress(OSError):
            handler.close()


def _learned(run: ClaimedRun, study_id: str, record: ReportRecord) -> Path:
    """The between-run terms learned from the reports before this one, of its scale and target, written into it
    before its kernel starts (series/learned.py)."""
    from secoverhead.series import learned  # deferred: pandas and the studies' rules, past the parameters

    target = str(record.fields.get("target") or EMBEDDED)
    kinds = functools.partial(between_instances, study_id)
    return learned.write(run.dir, run.dir.parent.parent, study_id, str(record.fields["scale"]), target, kinds)


@contextlib.contextmanager
def _kernel_environment(run: ClaimedRun, p: Any, learned_terms: Path | None = None) -> Iterator[None]:
    """What the kernel inherits for this run (embedded servers' password, the shared calibration, the learned
    between-run terms, headless), restored after."""
    names = (EMBEDDED_PASSWORD_ENV, calibration.ENV, LEARNED_ENV, "SECOVERHEAD_HEADLESS", HELD_ENV)
    before = {k: os.environ.get(k) for k in names}
    try:
        os.environ[EMBEDDED_PASSWORD_ENV] = run.embedded_password
        os.environ[HELD_ENV] = "|".join(server_addresses(p))  # held by this process: the kernel does not take them
        if p.MEASURES:
            os.environ[calibration.ENV] = str(_shared_calibration(run.dir))
        if learned_terms is not None:
            os.environ[LEARNED_ENV] = str(learned_terms)
        os.environ["SECOVERHEAD_HEADLESS"] = "1"
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _watching(run: ClaimedRun, study_id: str) -> Iterator[None]:
    progress = Watch(run.results, study_id)
    progress.start()
    try:
        yield
    finally:
        progress.stop()


def _undo_what_the_kernel_left() -> None:
    """The kernel is gone: changes it journaled on a user's server and did not undo (it was killed) are undone
    now, not at the next start, and its private folders (a profile's raw perf.data among them) removed."""
    sweep_stale()
    for message in recover():
        logging.getLogger("secoverhead").warning("note: %s", message)


def _one_line(exc: BaseException) -> str:
    """An exception as one bounded line (no traceback)."""
    text = "".join(traceback.format_exception_only(exc)).strip().splitlines()
    return (text[-1] if text else type(exc).__name__)[:300]


def finalise(run: ClaimedRun, study: StudySpec, record: ReportRecord, ending: Ending) -> None:
    """Render, scan, record, point latest: each step on its own, so one failing (a full disk, a directory made
    read-only) leaves the others done and is said in run.json when it can be written at all."""
    _render(run.dir, f"{study.title} ({record.name})", ending)
    if (run.dir / "report.html").exists() and os.environ.get(SCREENS_ENV, "on") != "off":
        record.fields["first_screen"] = review.first_screen(run.dir)
    _scan_and_sign(run, ending)
    record.close(ending)
    try:
        record.write()
    except OSError as exc:
        print(f"error: could not record the run in {run.dir}: {exc.strerror or exc}", file=sys.stderr)
        ending.status = "failed"
        return
    try:  # whatever this run's status: latest names the run that counts, which a smoke run never displaces
        point_latest(run.dir.parent)
    except OSError as exc:
        print(f"note: {run.dir.parent.name}/latest not updated: {exc.strerror or exc}", file=sys.stderr)


def _render(run_dir: Path, title: str, ending: Ending) -> None:
    if not (run_dir / "report.ipynb").exists():
        return
    from secoverhead.reporting.render import render_html  # deferred: nbconvert (seconds)

    try:
        render_html(
            run_dir / "report.ipynb", run_dir / "report.html", title=title, status=ending.status, why=ending.error
        )
    except Exception as exc:
        ending.add(f"HTML rendering failed: {_one_line(exc)[:200]}")


def _scan_and_sign(run: ClaimedRun, ending: Ending) -> None:
    """Every artefact scanned for the run's secrets; only a report the scan found clean is signed (trusted)."""
    try:
        found = leaks.scan(run.dir, run.secrets)
    except OSError as exc:
        ending.add(f"secret scan failed: {exc.strerror}")
        return
    if found:
        ending.add(leaks.describe(found))
    elif (run.dir / "report.ipynb").exists():
        review.sign(run.dir / "report.ipynb")


def resume_values(run_dir: str | os.PathLike) -> tuple[str, dict[str, Any]]:
    """The study and parameters an earlier run recorded, to continue it in place."""
    try:
        run_dir = user_path(run_dir)
    except ValueError as exc:
        raise ConfigError(f"--resume {exc}") from None
    try:
        report = read_report(run_dir)
    except ConfigError as exc:
        raise ConfigError(f"--resume {exc}") from None
    if report is None or not report.study:
        raise ConfigError(f"--resume {run_dir}: no readable run.json (is it a report directory?)")
    try:
        check_inside(run_dir)  # a resumed run writes into its folder: never through a link out of it
    except ConfigError as exc:
        raise ConfigError(f"--resume {exc}") from None
    if running(run_dir) and (report.owner or str(report.owner_pid)) not in (owners.me(), str(os.getpid())):
        raise ConfigError(f"--resume {run_dir}: that run is still running (pid {report.owner_pid} on {report.host})")
    if report.status == "ok":
        raise ConfigError(f"--resume {run_dir}: that run completed; nothing to resume")
    study = report.study
    if study not in NOTEBOOKS or run_dir.parent.name != study:  # its folder says whose run it is, as the index reads it
        raise ConfigError(
            f"--resume {run_dir}: its run.json names study {study[:40]!r} but it lies in "
            f"{run_dir.parent.name!r}/ (a run of one study is resumed in its own folder)"
        )
    values = dict(report.parameters)
    recorded = report.recorded.get("parameters_sha256")
    if recorded is not None and recorded != parameters_digest(values):
        raise ConfigError(
            f"--resume {run_dir}: its run.json's parameters differ from those it began with (edited since); a run "
            "continues only its own plan: start a new run with the parameters you want"
        )
    return study, values
