"""Headless runs: validate parameters, execute a study's notebook with papermill into a versioned report
directory, render HTML, scan every artefact for secrets, record run.json, point `latest` at it.

    reports/<study>/<UTC timestamp>-<params name>/
        report.ipynb  report.html  run.json  run.log  results/<experiment>/...  (and verdicts.json)
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets as _stdlib_secrets
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import environment
from .errors import ConfigError
from .params import load_params, notebook_parameters, preflight
from .render import render_html
from .results import atomic_write_json, sanitize
from .secrets import EMBEDDED_PASSWORD_ENV, secret_from
from .studies import STUDIES, Study

KERNEL = "secoverhead"


@dataclass
class RunOutcome:
    study: str
    run_dir: Path
    status: str  # ok | failed
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def get_study(study_id: str) -> Study:
    if study_id not in STUDIES:
        raise ConfigError(f"unknown study {study_id!r}; studies: {', '.join(STUDIES)}")
    study = STUDIES[study_id]
    if not study.available:
        raise ConfigError(f"study {study_id!r} has no notebook yet ({study.notebook_path})")
    return study


def _check_kernel(name: str) -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        raise ConfigError(f"Jupyter kernel {name!r} is not registered: run `make setup`") from None


def _new_run_dir(root: Path, study: str, params_name: str) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    base = root / study / f"{stamp}-{params_name}"
    path, n = base, 1
    while True:
        try:
            path.mkdir(parents=True, exist_ok=False)  # never overwrite an earlier run
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")


def _secret_values(params: dict[str, Any], declared: dict[str, Any]) -> list[str]:
    """The secrets this run can touch: every *_env / *_file parameter's value, read here."""
    merged = {k: str(v.get("default", "")).strip("'\"") for k, v in declared.items()} | params
    found = []
    for key, value in merged.items():
        if not value or not isinstance(value, str):
            continue
        if key.endswith("_password_env") or key.endswith("_secret_env"):
            found.append(secret_from(env=value).reveal())
        elif key.endswith("_password_file") or key.endswith("_secret_file"):
            found.append(secret_from(file=value).reveal())
    return found


def scan_for_secrets(run_dir: Path, values: list[str]) -> list[str]:
    """Files under run_dir that contain any of the values (binary-safe)."""
    needles = [v.encode() for v in values if len(v) >= 4]
    leaks = []
    for path in run_dir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(n in data for n in needles):
                leaks.append(str(path.relative_to(run_dir)))
    return leaks


def _scrub(run_dir: Path, files: list[str], values: list[str]) -> None:
    for rel in files:
        p = run_dir / rel
        data = p.read_bytes()
        for v in values:
            data = data.replace(v.encode(), b"<redacted>")
        p.write_bytes(data)


def _point_latest(run_dir: Path) -> None:
    latest = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest-{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(run_dir.name)
    os.replace(tmp, latest)


def run_study(
    study_id: str,
    *,
    params_file: str | os.PathLike | None = None,
    profile: str | None = None,
    overrides: list[tuple[str, str]] | None = None,
    reports_root: str | os.PathLike = "reports",
    kernel: str = KERNEL,
    log: logging.Logger | None = None,
) -> RunOutcome:
    """Validate, execute, render, scan, record. Bad input raises before any kernel starts."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    log = log or logging.getLogger("secoverhead")
    study = get_study(study_id)
    params, params_name = load_params(study, file=params_file, profile=profile, overrides=overrides)
    declared = notebook_parameters(study)
    preflight(params, declared)
    _check_kernel(kernel)
    secret_values = _secret_values(params, declared)

    run_dir = _new_run_dir(Path(reports_root).resolve(), study.id, params_name)
    results_dir = run_dir / "results"
    embedded_pw = _stdlib_secrets.token_urlsafe(18)  # so the scan knows embedded servers' password too
    secret_values.append(embedded_pw)
    started, t0 = environment.utc_now(), time.monotonic()
    record: dict[str, Any] = {
        "study": study.id,
        "title": study.title,
        "notebook": study.notebook,
        "params_name": params_name,
        "params_file": str(params_file or "") or (str(study.params_dir / f"{profile}.yaml") if profile else None),
        "parameters": params,
        "started": started,
        "status": "running",
    }
    atomic_write_json(run_dir / "run.json", record)
    handler = logging.FileHandler(run_dir / "run.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    pm_log = logging.getLogger("papermill")
    pm_log.addHandler(handler)
    pm_log.setLevel(logging.INFO)
    old_env = os.environ.get(EMBEDDED_PASSWORD_ENV)
    os.environ[EMBEDDED_PASSWORD_ENV] = embedded_pw
    status, error = "ok", None
    try:
        log.info("running %s (%s) into %s", study.id, params_name, run_dir)
        papermill.execute_notebook(
            str(study.notebook_path),
            str(run_dir / "report.ipynb"),
            parameters={**params, "output_dir": str(results_dir)},
            kernel_name=kernel,
            cwd=str(run_dir),
            progress_bar=False,
            log_output=True,
        )
    except PapermillExecutionError as exc:
        status, error = "failed", f"{exc.ename}: {exc.evalue}"
    except KeyboardInterrupt:
        status, error = "failed", "interrupted (Ctrl-C)"
        raise
    except Exception as exc:  # kernel died, notebook missing, ...
        status, error = "failed", "".join(traceback.format_exception_only(exc)).strip()
    finally:
        if old_env is None:
            os.environ.pop(EMBEDDED_PASSWORD_ENV, None)
        else:
            os.environ[EMBEDDED_PASSWORD_ENV] = old_env
        pm_log.removeHandler(handler)
        handler.close()
        if (run_dir / "report.ipynb").exists():
            try:
                render_html(run_dir / "report.ipynb", run_dir / "report.html", title=f"{study.title} ({params_name})")
            except Exception as exc:  # keep the notebook even if rendering fails
                status = "failed"
                error = (error + "; " if error else "") + f"HTML rendering failed: {exc}"
        leaks = scan_for_secrets(run_dir, secret_values)
        if leaks:
            _scrub(run_dir, leaks, secret_values)
            status = "failed"
            error = (error + "; " if error else "") + f"a secret appeared in {', '.join(leaks)} (scrubbed)"
        record.update(
            status=status,
            error=error,
            finished=environment.utc_now(),
            duration_s=round(time.monotonic() - t0, 1),
            environment=environment.collect(),
        )
        atomic_write_json(run_dir / "run.json", sanitize(record))
        _point_latest(run_dir)
    log.info("%s: %s (%s)", study.id, status, error or "no error")
    return RunOutcome(study.id, run_dir, status, error)
