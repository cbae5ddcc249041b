"""The CLI's commands, one function each. Imports are deferred into them (marked "deferred"): the CLI answers bad
arguments and signals before it loads anything heavy."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from secoverhead.app.stderr import say
from secoverhead.core.errors import SecoverheadError


def _json(obj: object) -> None:
    """A command's outcome as one JSON document on stdout (`--format json`), for a tool to read."""
    import json

    print(json.dumps(obj, indent=1, default=str))


def list_studies(args: argparse.Namespace) -> int:
    from secoverhead.suite.notebooks import NOTEBOOKS  # deferred: see the module docstring

    if args.format == "json":
        _json([{"id": s.id, "notebook": s.notebook, "title": s.title,
                "params": s.scales()} for s in NOTEBOOKS.values()])  # fmt: skip
        return 0
    for s in NOTEBOOKS.values():
        files = ", ".join(s.scales())
        print(f"{s.id:6} {s.notebook:36} params: {files}")
    return 0


def params(args: argparse.Namespace) -> int:
    from secoverhead.app.pipeline import (
        get_study,  # deferred: see the module docstring
    )
    from secoverhead.core.params import (
        describe,  # deferred: see the module docstring
    )

    rows = describe(get_study(args.study).Params)
    if args.format == "json":
        _json(rows)
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        rng = f"  [{r['range']}]" if r["range"] else ""
        print(f"{r['name']:<{width}}  {r['type']:<9} default {r['default']!r}{rng}\n{'':<{width}}  {r['help']}")
    return 0


def _startup_housekeeping() -> None:
    """What a crash left behind: private directories and cgroups of dead owners, network namespaces of their
    links, journals of changes made to a user's server (undone, or explained)."""
    from secoverhead.host.process import (
        sweep_stale,  # deferred: see the module docstring
    )
    from secoverhead.network import link  # deferred: see the module docstring
    from secoverhead.servers.journal import (
        recover,  # deferred: see the module docstring
    )

    sweep_stale()
    if link.available() is None:
        link.sweep_stale()  # network namespaces of links whose owner was killed
    for message in recover():
        say(f"note: {message}")


def run(args: argparse.Namespace) -> int:
    """`run`: check the arguments, prepare every job (before any server or kernel starts), run them, say how each
    ended and rebuild the index."""
    _startup_housekeeping()  # first: what a crash left behind is cleaned even when this command is refused
    _check_run_arguments(args)
    from secoverhead.app.pipeline import check_reports_root  # deferred: see the module docstring

    # a resumed run's index is the one it belongs to, wherever the command is typed
    reports = check_reports_root(args.reports or (Path(args.resume).parent.parent if args.resume else "reports"))
    jobs, lock = _resumed_job(args) if args.resume else (_new_jobs(args, reports), None)
    placement = _placement(args, jobs, reports)
    for prepared, _ in jobs:
        for line in prepared.plan_notes:
            say(f"plan: {line}")
    try:
        outcomes = _run_jobs(jobs, reports, lock, placement, text=args.format == "text")
    except KeyboardInterrupt:  # run_study recorded the run: the index lists it as interrupted, then the signal ends
        _index_quietly(reports)
        raise
    _say_index(reports, outcomes, text=args.format == "text")
    return 0 if all(o.ok for o in outcomes) else 1


def _check_run_arguments(args: argparse.Namespace) -> None:
    if args.resume and (args.study or args.all or args.file or args.param or args.scale):
        raise SecoverheadError("--resume continues a run as it was: give no study, -f, -p or --scale with it")
    if not args.resume and args.all == bool(args.study):
        raise SecoverheadError("name one study or --all")
    if args.all and (args.file or args.param):
        raise SecoverheadError("-f and -p apply to one study, not --all")
    from secoverhead.core.params import ID_PATTERN  # light

    for what, value in (("--name", args.name), ("--target", args.target), ("--client-host", args.client_host)):
        if value is not None and not re.fullmatch(ID_PATTERN, value):
            raise SecoverheadError(f"{what} must be letters, digits, '_', '-', '.' (at most 64)")
    if args.name and (args.all or args.resume):
        raise SecoverheadError("--name names one new run")


def _resumed_job(args: argparse.Namespace) -> tuple[list[tuple[Any, Path | None]], Any]:
    """The run --resume names, locked (one writer per run) before any server or kernel starts."""
    from secoverhead.app.pipeline import prepare, resume_values  # deferred: see the module docstring
    from secoverhead.core.paths import user_path
    from secoverhead.core.runlock import RunLock

    study, values = resume_values(args.resume)
    lock = RunLock(user_path(args.resume)).acquire()
    return [(prepare(study, values=values), user_path(args.resume))], lock


def _new_jobs(args: argparse.Namespace, reports: Path) -> list[tuple[Any, Path | None]]:
    """One prepared job per study; with --all, a study may read what the ones before it write (the calculator)."""
    from secoverhead.app.pipeline import get_study, prepare  # deferred: see the module docstring
    from secoverhead.studies.protocol.spec import SMOKE
    from secoverhead.suite.notebooks import NOTEBOOKS

    studies = list(NOTEBOOKS) if args.all else [args.study]
    scale = args.scale if (args.scale or args.file) else SMOKE
    for s in studies:
        get_study(s)
    overrides = [tuple(p) for p in args.param or []]
    return [
        (
            prepare(s, files=args.file or [], scale=scale, overrides=overrides, reports_root=reports,
                    upcoming=frozenset(studies[:i])),
            None,
        )
        for i, s in enumerate(studies)
    ]  # fmt: skip


def _placement(args: argparse.Namespace, jobs: list[tuple[Any, Path | None]], reports: Path) -> Any:
    """A fleet's job: its run directory's name, target and client host."""
    from secoverhead.app.pipeline import Placement  # deferred: see the module docstring

    if args.name and (reports / jobs[0][0].study.id / args.name).exists():
        raise SecoverheadError(f"--name {args.name}: that run exists (continue it with --resume)")
    return Placement(args.name or "", args.target or "", args.client_host or "")


def _run_jobs(jobs: list[tuple[Any, Path | None]], reports: Path, lock: Any, placement: Any, *, text: bool) -> list:
    """Each job in turn, said as it ends (status, error, and the report's answer)."""
    from secoverhead.app import answer  # deferred: see the module docstring
    from secoverhead.app.pipeline import run_study

    outcomes = []
    for prepared, resume in jobs:
        outcome = run_study(prepared, reports_root=reports, resume=resume, lock=lock, placement=placement)
        outcomes.append(outcome)
        if text:
            print(
                f"{outcome.study}: {outcome.status}  {outcome.run_dir}"
                + (f"\n  {outcome.error}" if outcome.error else "")
            )
            for line in answer.lines(outcome.run_dir):
                print(line)
    return outcomes


def _index_quietly(reports: Path) -> None:
    """The index rebuilt on the way out of an interrupted command; a second Ctrl-C, or a failure, skips it."""
    from secoverhead.suite.index import build_index  # deferred: see the module docstring

    try:
        build_index(reports)
    except (Exception, KeyboardInterrupt) as exc:
        print(f"note: index not rebuilt ({type(exc).__name__})", file=sys.stderr)


def _say_index(reports: Path, outcomes: list, *, text: bool) -> None:
    from secoverhead.suite.index import build_index  # deferred: see the module docstring

    index = None
    try:
        index = build_index(reports)
        if text:
            print(f"index: {index}")
    except OSError as exc:
        print(f"index: not written ({exc.strerror or exc})", file=sys.stderr)
    if not text:
        _json({"schema": RUN_OUTPUT_SCHEMA, "runs": [_run_record(o) for o in outcomes],
               "index": str(index) if index else None})  # fmt: skip


RUN_OUTPUT_SCHEMA = 1  # docs/schemas/run-output.schema.json


def _run_record(o: Any) -> dict[str, Any]:
    """One run as `run --format json` gives it (docs/schemas/run-output.schema.json): its id, study, scale, status,
    where it is, why it failed, and how many claims got each verdict."""
    from collections import Counter

    from secoverhead.analysis.verdicts import read_verdicts  # deferred: see the module docstring
    from secoverhead.core.report import readable

    report = readable(o.run_dir) if o.run_dir else None
    verdicts = (read_verdicts(o.run_dir) or {}).get("verdicts", []) if o.run_dir else []
    return {
        "id": o.run_dir.name if o.run_dir else None,
        "study": o.study,
        "scale": report.scale if report is not None else "",
        "status": o.status,
        "run_dir": str(o.run_dir) if o.run_dir else None,
        "error": o.error,
        "verdicts": dict(Counter(str(v.get("verdict")) for v in verdicts if isinstance(v, dict))),
    }


def index(args: argparse.Namespace) -> int:
    from secoverhead.app.rundir import check_reports_root  # light: the check comes before the stack loads

    root = check_reports_root(args.reports, create=False)
    from secoverhead.suite import expected  # deferred
    from secoverhead.suite.index import build_index, glance, unexpected_changes

    if unreadable := expected.problem(root):
        say(f"note: {unreadable}")
    page = build_index(root)
    changes = unexpected_changes(root)
    if args.format == "json":
        _json({"index": str(page), "changes": str(root / "history" / "changes.json"), "counting": glance(root),
               "unexpected_changes": changes})  # fmt: skip
    else:
        print(page)
        for c in changes:
            where = f"({c.get('scale')}, {c.get('target')})"
            what = f"{c.get('direction')} {c.get('change_pct', 0):+.1f} % from run {c.get('run')}"
            say(f"change: {c.get('study')} {c.get('claim_id')} {where}: {what}")
    return 1 if changes and args.fail_on_change else 0


def compare(args: argparse.Namespace) -> int:
    from secoverhead.app.rundir import check_run_dir  # light: the check comes before pandas loads

    for run in (args.run_a, args.run_b):
        check_run_dir(run)
    import warnings

    from secoverhead.suite import benchtable  # deferred: pandas
    from secoverhead.suite.crossrun import (  # deferred: see the module docstring
        combined_claims,
        compare_reports,
        differences,
    )

    for line in differences(args.run_a, args.run_b):  # said before the numbers, which they qualify
        say(f"note: {line}")
    with warnings.catch_warnings():  # a metric one run lacks is a '-' in the table, not numpy's All-NaN warning
        warnings.simplefilter("ignore", RuntimeWarning)
        table = compare_reports(args.run_a, args.run_b, metrics=args.metric or None)
    say(f"note: {table.attrs['between_runs']}")
    print(benchtable.render(table, args.format))
    verdicts = combined_claims(args.run_a, args.run_b)
    if verdicts and args.format == "text":
        print("\nThe study's claims on the two runs together:")
        for v in verdicts:
            print(f"  {v.verdict}: {v.claim}\n      {v.evidence}")
    worse = benchtable.regressions(table)
    for line in benchtable.noisy_regressions(table):
        say(f"note: the machine was noisy: {line}")
    if worse and args.format == "text":
        print(f"\n{worse} regression(s) beyond the noise (exit 1)", file=sys.stderr)
    return 1 if worse else 0


def pdf(args: argparse.Namespace) -> int:
    from secoverhead.core.errors import ConfigError
    from secoverhead.core.paths import user_path
    from secoverhead.core.runs import check_inside

    try:
        run = user_path(args.run)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    html = run / "report.html"
    if not html.is_file():
        raise ConfigError(f"{run} holds no report.html (is it a report directory?)")
    check_inside(run)  # the PDF is the report's own page, never a file a link in its folder points at
    out = user_path(args.output) if args.output else run / "report.pdf"
    if out.suffix.lower() != ".pdf":
        raise ConfigError(f"--output {out} must end in .pdf")
    from secoverhead.reporting import browser  # deferred: Playwright

    try:
        print(browser.pdf(html, out))
    except Exception as exc:  # no browser, one that hangs or dies: said in a line, not a Playwright traceback
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        print(f"error: no PDF made: {why}", file=sys.stderr)
        return 1
    return 0


def calibrate(args: argparse.Namespace) -> int:
    from secoverhead.core.errors import ConfigError
    from secoverhead.core.paths import user_path

    try:
        out = user_path(args.output)
    except ValueError as exc:
        raise ConfigError(f"--output {exc}") from None
    if out.suffix.lower() != ".json" or out.is_dir():
        raise ConfigError(f"--output {out} must be a .json file")
    if not out.parent.is_dir():
        raise ConfigError(f"--output {out}: the folder {out.parent} does not exist")
    from secoverhead.host import calibration  # deferred: openssl, ctypes
    from secoverhead.sizing.scaling import REFERENCES, reference_us
    from secoverhead.sizing.sources import check_calibration

    # checked before 8 s of measuring: never over a file that is not a calibration (a run's run.json), and
    # only where it can be written
    if out.is_symlink() or (out.exists() and not out.is_file()):
        raise ConfigError(f"--output {out}: not a regular file; name a new .json file")
    if out.exists():
        try:
            check_calibration(out)
        except ConfigError:
            raise ConfigError(f"--output {out} exists and is not a calibration: it is not written over") from None
    if not os.access(out if out.exists() else out.parent, os.W_OK):
        raise ConfigError(f"--output {out}: cannot be written here")

    say("measuring this machine's speed reference (about 8 s of one core)...")
    cal = calibration.measure()
    calibration.save(cal, out)
    for key, what in REFERENCES.items():
        us = reference_us(cal, key)
        if us is not None:
            shown = f"{us / 1e3:10.3f} ms" if us >= 1e3 else f"{us * 1e3:10.3f} ns" if us < 0.01 else f"{us:10.3f} us"
            print(f"{key:32} {shown}  {what.split(':')[0]}")
    print(f"saved {out}: price a workload on this machine with `secoverhead run cost -p calibration_file {out}`")
    return 0


def fleet(args: argparse.Namespace) -> int:
    from secoverhead.app.pipeline import check_reports_root, prepare  # deferred: see the module docstring
    from secoverhead.fleet import spec

    fleet = spec.load(args.file)
    if args.scheduler:
        from secoverhead.fleet.runner import check_scheduler  # deferred: see the module docstring

        check_scheduler(args.scheduler)  # before the jobs' parameters: a wrong address is the likelier mistake
    for job in fleet.jobs():  # every job's parameters, as `run` checks them; its client host checks the rest
        try:
            prepare(
                job.study,
                files=list(job.entry.files),
                scale=job.entry.scale,
                overrides=[(k, spec.param_text(v)) for k, v in job.params().items()],
                check_servers=False,
            )
        except SecoverheadError as exc:
            raise SecoverheadError(f"{job.key}: {exc}") from None
    reports = check_reports_root(args.reports)
    from secoverhead.fleet import runner  # deferred: Dask
    from secoverhead.suite.index import build_index

    say(f"fleet {fleet.stamp}: {len(fleet.jobs())} job(s) on {args.scheduler or 'a local cluster'}")
    summary = runner.run(fleet, reports, args.scheduler)
    print(f"summary: {summary.path}\nindex: {build_index(reports)}")
    return 0 if summary.ok else 1


def prune(args: argparse.Namespace) -> int:
    from secoverhead.app.rundir import check_reports_root  # light: the checks come before the stack loads

    if args.keep is None and args.older_than is None:
        raise SecoverheadError("say what to keep whole: --keep N (newest runs per study) and/or --older-than DAYS")
    if (args.keep is not None and args.keep < 0) or (
        args.older_than is not None and not (math.isfinite(args.older_than) and args.older_than >= 0)
    ):
        raise SecoverheadError("--keep and --older-than take finite numbers of at least 0")
    reports = check_reports_root(args.reports, create=False)
    from secoverhead.suite import retention  # deferred: see the module docstring

    done = retention.prune(retention.plan(reports, args.keep, args.older_than), dry_run=args.dry_run)
    for d in done:
        print(f"{'would free' if args.dry_run else 'freed'} {d.freed / 1e6:8.1f} MB  {d.run.relative_to(reports)}")
        if d.skipped:
            print(f"  {d.skipped}")
    total = sum(d.freed for d in done) / 1e6
    print(
        f"{len(done)} run(s); {total:.1f} MB {'would be ' if args.dry_run else ''}freed; verdicts, history and "
        "reports kept"
    )
    return 0


def expect(args: argparse.Namespace) -> int:
    from secoverhead.app.rundir import check_reports_root  # light: the check comes before the stack loads

    reports = check_reports_root(args.reports, create=False)
    from secoverhead.suite import expected  # deferred: see the module docstring

    print(expected.mark(reports, args.study, args.run, args.why, args.claim or "*", args.target or "*"))
    return 0
