"""secoverhead: list studies and their parameters, run them headlessly into versioned reports, compare two
runs, build the report index.

secoverhead list
secoverhead params STUDY
secoverhead run STUDY [--profile P] [-f FILE]... [-p NAME VALUE]... [--reports DIR]
secoverhead run --all --profile quick
secoverhead run --resume REPORT_DIR
secoverhead compare RUN_A RUN_B [--metric M]... [--format text|csv|json|markdown]  (exit 1: a regression)
secoverhead pdf REPORT_DIR [-o FILE.pdf]
secoverhead index [--reports DIR]

Bad input is one line on stderr and exit 2, before anything heavy is imported or started. So imports are deferred
into the commands (marked "deferred"): the CLI answers bad arguments and signals before it loads anything.
"""

from __future__ import annotations

import argparse
import logging
import sys

from secoverhead import __version__
from secoverhead.core import signals
from secoverhead.core.errors import SecoverheadError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as every other mistake
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _list() -> int:
    from secoverhead.studies import (
        STUDIES,  # deferred: see the module docstring
    )

    for s in STUDIES.values():
        files = ", ".join(p.stem for p in s.parameter_files()) or "-"
        print(f"{s.id:6} {s.notebook:36} params: {files}")
    return 0


def _params(study_id: str) -> int:
    from secoverhead.app.pipeline import (
        get_study,  # deferred: see the module docstring
    )
    from secoverhead.core.params import (
        describe,  # deferred: see the module docstring
    )

    rows = describe(get_study(study_id).Params)
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
    from secoverhead.studies import (
        STUDIES,  # deferred: see the module docstring
    )

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

    reports = check_reports_root(args.reports)
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
        studies = list(STUDIES) if args.all else [args.study]
        profile = args.profile if (args.profile or args.file) else "smoke"
        for s in studies:
            get_study(s)
        overrides = [tuple(p) for p in args.param or []]
        jobs = [(prepare(s, files=args.file or [], profile=profile, overrides=overrides), None) for s in studies]
    from secoverhead.app.pipeline import (
        run_study,  # deferred: see the module docstring
    )
    from secoverhead.suite.index import (
        build_index,  # deferred: see the module docstring
    )

    for prepared, _ in jobs:
        for line in prepared.plan_notes:
            print(f"plan: {line}", file=sys.stderr)
    failed = []
    for prepared, resume in jobs:
        outcome = run_study(prepared, reports_root=reports, resume=resume, lock=lock)
        print(
            f"{outcome.study}: {outcome.status}  {outcome.run_dir}" + (f"\n  {outcome.error}" if outcome.error else "")
        )
        if not outcome.ok:
            failed.append(outcome.study)
    try:
        print(f"index: {build_index(reports)}")
    except OSError as exc:
        print(f"index: not written ({exc.strerror or exc})", file=sys.stderr)
    return 1 if failed else 0


def _compare(args: argparse.Namespace) -> int:
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

    print(browser.pdf(html, out))
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
    sub.add_parser("list", help="studies and their parameter files")
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
    run.add_argument("--reports", default="reports", help="reports directory (default: reports)")
    run.add_argument("--resume", metavar="REPORT_DIR", help="continue an interrupted run in place")
    cmp_ = sub.add_parser("compare", help="benchstat-style comparison of two runs of one study")
    cmp_.add_argument("run_a")
    cmp_.add_argument("run_b")
    cmp_.add_argument("--metric", action="append", help="metric(s) to compare (default: each study's primary ones)")
    cmp_.add_argument("--format", choices=("text", "csv", "json", "markdown"), default="text", help="output format")
    pdf = sub.add_parser("pdf", help="print a run's report to PDF (headless Chromium; its print stylesheet)")
    pdf.add_argument("run", help="a report directory (reports/<study>/<run> or reports/<study>/latest)")
    pdf.add_argument("-o", "--output", help="PDF file (default: report.pdf in the run directory)")
    idx = sub.add_parser("index", help="write reports/index.html (runs, verdicts, history)")
    idx.add_argument("--reports", default="reports")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # usage errors (one line, exit 2), --help and --version end here, as a return code
        return e.code if isinstance(e.code, int) else 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if args.command == "list":
            return _list()
        if args.command == "params":
            return _params(args.study)
        if args.command == "index":
            from secoverhead.app.pipeline import (
                check_reports_root,  # deferred: see the module docstring
            )
            from secoverhead.suite.index import (
                build_index,  # deferred: see the module docstring
            )

            print(build_index(check_reports_root(args.reports)))
            return 0
        if args.command == "compare":
            return _compare(args)
        if args.command == "pdf":
            return _pdf(args)
        return _run(args)
    except SecoverheadError as exc:
        print(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk or a folder that stopped taking files, outside any run: one line
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
