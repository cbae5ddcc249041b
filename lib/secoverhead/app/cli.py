"""secoverhead: list studies and their parameters, run them headlessly into versioned reports, compare two
runs, build the report index.

secoverhead list
secoverhead params STUDY
secoverhead run STUDY [--profile P] [-f FILE]... [-p NAME VALUE]... [--reports DIR]
secoverhead run --all --profile quick
secoverhead run --resume REPORT_DIR
secoverhead compare RUN_A RUN_B [--metric M]... [--format text|csv|json|markdown]  (exit 1: a regression)
secoverhead pdf REPORT_DIR [-o FILE.pdf]
secoverhead calibrate [-o FILE.json]    this machine's speed reference, for `run cost -p calibration_file FILE`
secoverhead fleet FLEET.yaml [--scheduler ADDRESS]   every study against every target, on Dask distributed
secoverhead prune --keep N [--older-than DAYS] [--dry-run]
secoverhead expect STUDY RUN --why TEXT [--claim ID] [--target NAME]
secoverhead index [--reports DIR] [--fail-on-change]   (exit 1: a change not marked expected)
list, params, run and index take --format json (one JSON document on stdout, for tools).

Bad input is one line on stderr and exit 2, before anything heavy is imported or started. So imports are deferred
into the commands (marked "deferred"): the CLI answers bad arguments and signals before it loads anything.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import sys
from pathlib import Path

from secoverhead import __version__
from secoverhead.core import signals
from secoverhead.core.errors import SecoverheadError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as every other mistake
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _json(obj: object) -> None:
    """A command's outcome as one JSON document on stdout (`--format json`), for a tool to read."""
    import json

    print(json.dumps(obj, indent=1, default=str))


def _list(fmt: str) -> int:
    from secoverhead.suite.notebooks import NOTEBOOKS  # deferred: see the module docstring

    if fmt == "json":
        _json([{"id": s.id, "notebook": s.notebook, "title": s.title,
                "params": [p.stem for p in s.parameter_files()]} for s in NOTEBOOKS.values()])  # fmt: skip
        return 0
    for s in NOTEBOOKS.values():
        files = ", ".join(p.stem for p in s.parameter_files()) or "-"
        print(f"{s.id:6} {s.notebook:36} params: {files}")
    return 0


def _params(study_id: str, fmt: str = "text") -> int:
    from secoverhead.app.pipeline import (
        get_study,  # deferred: see the module docstring
    )
    from secoverhead.core.params import (
        describe,  # deferred: see the module docstring
    )

    rows = describe(get_study(study_id).Params)
    if fmt == "json":
        _json(rows)
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        rng = f"  [{r['range']}]" if r["range"] else ""
        print(f"{r['name']:<{width}}  {r['type']:<9} default {r['default']}{rng}\n{'':<{width}}  {r['help']}")
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
        print(f"note: {message}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from secoverhead.suite.notebooks import NOTEBOOKS  # deferred: see the module docstring

    _startup_housekeeping()  # first: what a crash left behind is cleaned even when this command is refused
    if args.resume and (args.study or args.all or args.file or args.param or args.profile):
        raise SecoverheadError("--resume continues a run as it was: give no study, -f, -p or --profile with it")
    if not args.resume and args.all == bool(args.study):
        raise SecoverheadError("name one study or --all")
    if args.all and (args.file or args.param):
        raise SecoverheadError("-f and -p apply to one study, not --all")
    from secoverhead.app.pipeline import (  # deferred: see the module docstring
        check_reports_root,
        get_study,
        prepare,
        resume_values,
    )

    # a resumed run's index is the one it belongs to, wherever the command is typed
    reports = check_reports_root(args.reports or (Path(args.resume).parent.parent if args.resume else "reports"))
    lock = None
    if args.resume:
        from secoverhead.core.paths import (
            user_path,  # deferred: see the module docstring
        )
        from secoverhead.core.runlock import (
            RunLock,  # deferred: see the module docstring
        )

        study, values = resume_values(args.resume)
        lock = RunLock(user_path(args.resume)).acquire()  # one writer per run, before any server or kernel
        jobs = [(prepare(study, values=values), user_path(args.resume))]
    else:
        studies = list(NOTEBOOKS) if args.all else [args.study]
        profile = args.profile if (args.profile or args.file) else "smoke"
        for s in studies:
            get_study(s)
        overrides = [tuple(p) for p in args.param or []]
        jobs = [
            (
                prepare(
                    s,
                    files=args.file or [],
                    profile=profile,
                    overrides=overrides,
                    reports_root=reports,
                    upcoming=frozenset(studies[:i]),  # with --all, the calculator reads what the studies write
                ),
                None,
            )
            for i, s in enumerate(studies)
        ]
    from secoverhead.app.pipeline import (  # deferred: see the module docstring
        Placement,
        run_study,
    )
    from secoverhead.core.params import ID_PATTERN

    for what, value in (("--name", args.name), ("--target", args.target), ("--client-host", args.client_host)):
        if value is not None and not re.fullmatch(ID_PATTERN, value):
            raise SecoverheadError(f"{what} must be letters, digits, '_', '-', '.' (at most 64)")
    if args.name and (len(jobs) != 1 or args.resume):
        raise SecoverheadError("--name names one new run")
    if args.name and (reports / jobs[0][0].study.id / args.name).exists():
        raise SecoverheadError(f"--name {args.name}: that run exists (continue it with --resume)")
    placement = Placement(args.name or "", args.target or "", args.client_host or "")
    from secoverhead.app import answer  # deferred: see the module docstring
    from secoverhead.suite.index import (
        build_index,  # deferred: see the module docstring
    )

    for prepared, _ in jobs:
        for line in prepared.plan_notes:
            print(f"plan: {line}", file=sys.stderr)
    failed, done = [], []
    text = args.format == "text"
    for prepared, resume in jobs:
        outcome = run_study(prepared, reports_root=reports, resume=resume, lock=lock, placement=placement)
        done.append(outcome)
        if text:
            print(
                f"{outcome.study}: {outcome.status}  {outcome.run_dir}"
                + (f"\n  {outcome.error}" if outcome.error else "")
            )
            for line in answer.lines(outcome.run_dir):
                print(line)
        if not outcome.ok:
            failed.append(outcome.study)
    index = None
    try:
        index = build_index(reports)
        if text:
            print(f"index: {index}")
    except OSError as exc:
        print(f"index: not written ({exc.strerror or exc})", file=sys.stderr)
    if not text:
        from secoverhead.core.runs import describe  # deferred: see the module docstring

        runs = [{"study": o.study, "status": o.status, "run_dir": str(o.run_dir), "error": o.error,
                 "run": describe(o.run_dir) if o.run_dir else None} for o in done]  # fmt: skip
        _json({"runs": runs, "index": str(index) if index else None})
    return 1 if failed else 0


def _index(args: argparse.Namespace) -> int:
    from secoverhead.app.rundir import check_reports_root  # light: the check comes before the stack loads

    root = check_reports_root(args.reports, create=False)
    from secoverhead.suite.index import build_index, glance, unexpected_changes  # deferred

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
            print(f"change: {c.get('study')} {c.get('claim_id')} {where}: {what}", file=sys.stderr)
    return 1 if changes and args.fail_on_change else 0


def _compare(args: argparse.Namespace) -> int:
    from secoverhead.app.rundir import check_run_dir  # light: the check comes before pandas loads

    for run in (args.run_a, args.run_b):
        check_run_dir(run)
    from secoverhead.suite import benchtable  # deferred: pandas
    from secoverhead.suite.crossrun import (  # deferred: see the module docstring
        combined_claims,
        compare_reports,
    )

    table = compare_reports(args.run_a, args.run_b, metrics=args.metric or None)
    print(benchtable.render(table, args.format))
    verdicts = combined_claims(args.run_a, args.run_b)
    if verdicts and args.format == "text":
        print("\nThe study's claims on the two runs together:")
        for v in verdicts:
            print(f"  {v.verdict}: {v.claim}\n      {v.evidence}")
    worse = benchtable.regressions(table)
    if worse and args.format == "text":
        print(f"\n{worse} regression(s) beyond the noise (exit 1)", file=sys.stderr)
    return 1 if worse else 0


def _pdf(args: argparse.Namespace) -> int:
    from secoverhead.core.errors import ConfigError
    from secoverhead.core.paths import user_path

    try:
        run = user_path(args.run)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    html = run / "report.html"
    if not html.is_file():
        raise ConfigError(f"{run} holds no report.html (is it a report directory?)")
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


def _calibrate(args: argparse.Namespace) -> int:
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

    print("measuring this machine's speed reference (about 8 s of one core)...", file=sys.stderr)
    cal = calibration.measure()
    calibration.save(cal, out)
    for key, what in REFERENCES.items():
        us = reference_us(cal, key)
        if us is not None:
            shown = f"{us / 1e3:10.3f} ms" if us >= 1e3 else f"{us * 1e3:10.3f} ns" if us < 0.01 else f"{us:10.3f} us"
            print(f"{key:32} {shown}  {what.split(':')[0]}")
    print(f"saved {out}: price a workload on this machine with `secoverhead run cost -p calibration_file {out}`")
    return 0


def _fleet(args: argparse.Namespace) -> int:
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
                profile=job.entry.profile,
                overrides=[(k, spec.param_text(v)) for k, v in job.params().items()],
                check_servers=False,
            )
        except SecoverheadError as exc:
            raise SecoverheadError(f"{job.key}: {exc}") from None
    reports = check_reports_root(args.reports)
    from secoverhead.fleet import runner  # deferred: Dask
    from secoverhead.suite.index import build_index

    print(f"fleet {fleet.stamp}: {len(fleet.jobs())} job(s) on {args.scheduler or 'a local cluster'}", file=sys.stderr)
    summary = runner.run(fleet, reports, args.scheduler)
    print(f"summary: {summary.path}\nindex: {build_index(reports)}")
    return 0 if summary.ok else 1


def _prune(args: argparse.Namespace) -> int:
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


def _expect(args: argparse.Namespace) -> int:
    from secoverhead.app.rundir import check_reports_root  # light: the check comes before the stack loads

    reports = check_reports_root(args.reports, create=False)
    from secoverhead.suite import expected  # deferred: see the module docstring

    print(expected.mark(reports, args.study, args.run, args.why, args.claim or "*", args.target or "*"))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Every ending signal (SIGINT, SIGTERM, SIGHUP) is handled from the first line: whatever moment it comes,
    the run is finalised and one line says so."""
    old = signals.install()
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        sig = signals.as_terminated(exc)
        print(f"{sig.outcome or 'interrupted'} (by {sig.name})", file=sys.stderr)
        return sig.exit_code
    finally:
        signals.restore(old)


def _main(argv: list[str] | None) -> int:
    parser = _Parser(prog="secoverhead", description="Measure what database security features cost.")
    parser.add_argument("--version", action="version", version=f"secoverhead {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    lst = sub.add_parser("list", help="studies and their parameter files")
    prm = sub.add_parser("params", help="a study's parameters: type, default, range, meaning")
    prm.add_argument("study")
    run = sub.add_parser("run", help="run a study's notebook with papermill into reports/")
    run.add_argument("study", nargs="?")
    run.add_argument("--all", action="store_true", help="every study")
    run.add_argument("-f", "--file", action="append", help="parameters YAML file (repeatable; later files win)")
    run.add_argument(
        "-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"), help="one parameter (coerced to its type)"
    )
    run.add_argument(
        "--profile", help="papermill-params/<study>/<profile>.yaml, applied first (default: smoke, without -f)"
    )
    run.add_argument("--reports", help="reports directory (default: reports; with --resume, the one the run is in)")
    run.add_argument("--resume", metavar="REPORT_DIR", help="continue an interrupted run in place")
    run.add_argument("--name", help=argparse.SUPPRESS)  # a fleet's job: its run directory's name
    run.add_argument("--target", help=argparse.SUPPRESS)  # a fleet's job: the target's name (recorded)
    run.add_argument("--client-host", help=argparse.SUPPRESS)  # a fleet's job: the host it runs on (recorded)
    cmp_ = sub.add_parser("compare", help="benchstat-style comparison of two runs of one study")
    cmp_.add_argument("run_a")
    cmp_.add_argument("run_b")
    cmp_.add_argument("--metric", action="append", help="metric(s) to compare (default: each study's primary ones)")
    cmp_.add_argument("--format", choices=("text", "csv", "json", "markdown"), default="text", help="output format")
    pdf = sub.add_parser("pdf", help="print a run's report to PDF (headless Chromium; its print stylesheet)")
    pdf.add_argument("run", help="a report directory (reports/<study>/<run> or reports/<study>/latest)")
    pdf.add_argument("-o", "--output", help="PDF file (default: report.pdf in the run directory)")
    cal = sub.add_parser("calibrate", help="measure this machine's speed reference and save it (for run cost)")
    cal.add_argument("-o", "--output", default="calibration.json", help="where to save it (default: calibration.json)")
    flt = sub.add_parser("fleet", help="run studies against a fleet of targets on Dask (FLEET.yaml)")
    flt.add_argument("file", help="the fleet file: targets, their client hosts, the studies")
    flt.add_argument("--scheduler", help="a Dask scheduler's address (default: a local cluster on this machine)")
    flt.add_argument("--reports", default="reports", help="where the runs come back (default: reports)")
    prn = sub.add_parser("prune", help="drop raw samples of old runs, keeping verdicts, history and reports")
    prn.add_argument("--keep", type=int, help="runs per study kept whole (the newest)")
    prn.add_argument("--older-than", type=float, metavar="DAYS", help="prune only runs started this long ago")
    prn.add_argument("--dry-run", action="store_true", help="say what would be freed; change nothing")
    prn.add_argument("--reports", default="reports")
    exp = sub.add_parser("expect", help="mark a change in a study's history as expected, and why")
    exp.add_argument("study")
    exp.add_argument("run", help="the first run after the change (its directory name)")
    exp.add_argument("--why", required=True, help="the reason (an upgrade, a new instance class, ...)")
    exp.add_argument("--claim", help="one claim's id (default: every claim of the study)")
    exp.add_argument("--target", help="one target (default: every target)")
    exp.add_argument("--reports", default="reports")
    idx = sub.add_parser("index", help="write reports/index.html (runs, verdicts, history)")
    idx.add_argument("--reports", default="reports")
    idx.add_argument(
        "--fail-on-change", action="store_true", help="exit 1 when a change not marked expected is detected"
    )
    for p in (lst, prm, run, idx):
        p.add_argument("--format", choices=("text", "json"), default="text", help="output format (json: for tools)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # usage errors (one line, exit 2), --help and --version end here, as a return code
        return e.code if isinstance(e.code, int) else 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if args.command == "list":
            return _list(args.format)
        if args.command == "params":
            return _params(args.study, args.format)
        if args.command == "index":
            return _index(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "pdf":
            return _pdf(args)
        if args.command == "calibrate":
            return _calibrate(args)
        if args.command == "fleet":
            return _fleet(args)
        if args.command == "prune":
            return _prune(args)
        if args.command == "expect":
            return _expect(args)
        return _run(args)
    except SecoverheadError as exc:
        print(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `secoverhead compare A B | head`: the reader has what it wanted; say nothing
        _quiet_stdout()
        return 141
    except OSError as exc:  # a full disk or a folder that stopped taking files, outside any run: one line
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1


def _quiet_stdout() -> None:
    """Python flushes stdout at exit and would complain of the closed pipe: point it at /dev/null."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
