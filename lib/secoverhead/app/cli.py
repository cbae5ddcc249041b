"""secoverhead: list studies and their parameters, run them headlessly into versioned reports, compare two
runs, build the report index.

secoverhead list
secoverhead params STUDY
secoverhead run STUDY [--scale S] [-f FILE]... [-p NAME VALUE]... [--reports DIR]
secoverhead run --all --scale quick
secoverhead run --resume REPORT_DIR
secoverhead compare RUN_A RUN_B [--metric M]... [--format text|csv|json|markdown]  (exit 1: a regression)
secoverhead pdf REPORT_DIR [-o FILE.pdf]
secoverhead calibrate [-o FILE.json]    this machine's speed reference, for `run cost -p calibration_file FILE`
secoverhead fleet FLEET.yaml [--scheduler ADDRESS]   every study against every target, on Dask distributed
secoverhead prune --keep N [--older-than DAYS] [--dry-run]
secoverhead expect STUDY RUN --why TEXT [--claim ID] [--target NAME]
secoverhead index [--reports DIR] [--fail-on-change]   (exit 1: a change not marked expected)
list, params, run and index take --format json (one JSON document on stdout, for tools).

Bad input is one line on stderr and exit 2, before anything heavy is imported or started: the commands (commands.py)
defer their imports.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from secoverhead import __version__
from secoverhead.app import commands, stderr
from secoverhead.core import environ, signals
from secoverhead.core.errors import SecoverheadError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as every other mistake
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    """Every ending signal (SIGINT, SIGTERM, SIGHUP) is handled from the first line: whatever moment it comes,
    the run is finalised and one line says so."""
    old: dict[Any, Any] = {}
    logging.getLogger("asyncio").addFilter(_SignalEcho())
    try:
        old = signals.install()
        environ.settle_platform()
        return _main(argv)
    except KeyboardInterrupt as exc:
        return _interrupted(signals.as_terminated(exc))
    except Exception as exc:
        sig = signals.behind(exc)
        if sig is None:
            raise
        return _interrupted(sig)
    finally:
        signals.restore(old)


def _interrupted(sig: signals.Terminated) -> int:
    print(f"{sig.outcome or 'interrupted'} (by {sig.name})", file=sys.stderr)
    _nothing_after()
    return sig.exit_code


class _SignalEcho(logging.Filter):
    """Once a signal has ended the run, asyncio's "Task exception was never retrieved" for the notebook client's
    tasks the signal cut short (their error: the cell's ANSI traceback, 222 lines) is not news: dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (signals.raised() and "was never retrieved" in str(record.msg))


def _nothing_after() -> None:
    """The outcome line is the last word: what the interpreter's shutdown would still print (a task's traceback
    collected at exit, a thread's, a warning) goes nowhere."""
    logging.disable(logging.CRITICAL)
    sys.stderr.flush()
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stderr.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _main(argv: list[str] | None) -> int:
    """Parse, then run the command: a mistake is one line and exit 2, a full disk outside a run one line and 1."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:  # usage errors (one line, exit 2), --help and --version end here, as a return code
        return e.code if isinstance(e.code, int) else 2
    handler = logging.StreamHandler()
    handler.setFormatter(stderr.log_format())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    _deprecated_profile(args)
    try:
        return args.handler(args)
    except SecoverheadError as exc:
        line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"error: {line}", file=sys.stderr)
        if getattr(args, "format", "text") == "json":  # a tool reading stdout gets the refusal as a document
            print(json.dumps({"schema": commands.RUN_OUTPUT_SCHEMA, "error": line}))
        return 2
    except BrokenPipeError:  # `secoverhead compare A B | head`: the reader has what it wanted; say nothing
        _quiet_stdout()
        return 141
    except OSError as exc:  # a full disk or a folder that stopped taking files, outside any run: one line
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1


def _deprecated_profile(args: argparse.Namespace) -> None:
    """`--profile` was the scale's old name (profile now means perf profiling only): read for a release, said once."""
    old = getattr(args, "profile_alias", None)
    if old is None:
        return
    print("warning: --profile is deprecated: use --scale (it names the same files)", file=sys.stderr)
    if args.scale is None:
        args.scale = old


def parser() -> argparse.ArgumentParser:
    """The CLI: one sub-parser per command, each bound to its command's function."""
    top = _Parser(prog="secoverhead", description="Measure what database security features cost.")
    top.add_argument("--version", action="version", version=f"secoverhead {__version__}")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in (_add_list, _add_params, _add_run, _add_compare, _add_pdf, _add_calibrate, _add_fleet, _add_prune,
                _add_expect, _add_index):  # fmt: skip
        add(sub)
    return top


def _command(sub: Any, name: str, handler: Callable[[argparse.Namespace], int], helptext: str, *, json: bool = False):
    cmd = sub.add_parser(name, help=helptext)
    cmd.set_defaults(handler=handler)
    if json:
        cmd.add_argument("--format", choices=("text", "json"), default="text", help="output format (json: for tools)")
    return cmd


def _add_list(sub: Any) -> None:
    _command(sub, "list", commands.list_studies, "studies and their parameter files", json=True)


def _add_params(sub: Any) -> None:
    cmd = _command(sub, "params", commands.params, "a study's parameters: type, default, range, meaning", json=True)
    cmd.add_argument("study")


def _add_run(sub: Any) -> None:
    run = _command(sub, "run", commands.run, "run a study's notebook with papermill into reports/", json=True)
    run.add_argument("study", nargs="?")
    run.add_argument("--all", action="store_true", help="every study")
    run.add_argument("-f", "--file", action="append", help="parameters YAML file (repeatable; later files win)")
    run.add_argument(
        "-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"), help="one parameter (coerced to its type)"
    )
    run.add_argument(
        "--scale", help="smoke, quick or full: papermill-params/<study>/<scale>.yaml, applied first (default: smoke)"
    )
    run.add_argument("--profile", dest="profile_alias", help=argparse.SUPPRESS)  # --scale's deprecated name
    run.add_argument("--reports", help="reports directory (default: reports; with --resume, the one the run is in)")
    run.add_argument("--resume", metavar="REPORT_DIR", help="continue an interrupted run in place")
    run.add_argument("--name", help=argparse.SUPPRESS)  # a fleet's job: its run directory's name
    run.add_argument("--target", help=argparse.SUPPRESS)  # a fleet's job: the target's name (recorded)
    run.add_argument("--client-host", help=argparse.SUPPRESS)  # a fleet's job: the host it runs on (recorded)


def _add_compare(sub: Any) -> None:
    cmd = _command(sub, "compare", commands.compare, "benchstat-style comparison of two runs of one study")
    cmd.add_argument("run_a")
    cmd.add_argument("run_b")
    cmd.add_argument("--metric", action="append", help="metric(s) to compare (default: each study's primary ones)")
    cmd.add_argument("--format", choices=("text", "csv", "json", "markdown"), default="text", help="output format")


def _add_pdf(sub: Any) -> None:
    cmd = _command(sub, "pdf", commands.pdf, "print a run's report to PDF (headless Chromium; its print stylesheet)")
    cmd.add_argument("run", help="a report directory (reports/<study>/<run> or reports/<study>/latest)")
    cmd.add_argument("-o", "--output", help="PDF file (default: report.pdf in the run directory)")


def _add_calibrate(sub: Any) -> None:
    helptext = "measure this machine's speed reference and save it (for run cost)"
    cmd = _command(sub, "calibrate", commands.calibrate, helptext)
    cmd.add_argument("-o", "--output", default="calibration.json", help="where to save it (default: calibration.json)")


def _add_fleet(sub: Any) -> None:
    cmd = _command(sub, "fleet", commands.fleet, "run studies against a fleet of targets on Dask (FLEET.yaml)")
    cmd.add_argument("file", help="the fleet file: targets, their client hosts, the studies")
    cmd.add_argument("--scheduler", help="a Dask scheduler's address (default: a local cluster on this machine)")
    cmd.add_argument("--reports", default="reports", help="where the runs come back (default: reports)")


def _add_prune(sub: Any) -> None:
    cmd = _command(sub, "prune", commands.prune, "drop raw samples of old runs, keeping verdicts, history and reports")
    cmd.add_argument("--keep", type=int, help="runs per study kept whole (the newest)")
    cmd.add_argument("--older-than", type=float, metavar="DAYS", help="prune only runs started this long ago")
    cmd.add_argument("--dry-run", action="store_true", help="say what would be freed; change nothing")
    cmd.add_argument("--reports", default="reports")


def _add_expect(sub: Any) -> None:
    cmd = _command(sub, "expect", commands.expect, "mark a change in a study's history as expected, and why")
    cmd.add_argument("study")
    cmd.add_argument("run", help="the first run after the change (its directory name)")
    cmd.add_argument("--why", required=True, help="the reason (an upgrade, a new instance class, ...)")
    cmd.add_argument("--claim", help="one claim's id (default: every claim of the study)")
    cmd.add_argument("--target", help="one target (default: every target)")
    cmd.add_argument("--reports", default="reports")


def _add_index(sub: Any) -> None:
    cmd = _command(sub, "index", commands.index, "write reports/index.html (runs, verdicts, history)", json=True)
    cmd.add_argument("--reports", default="reports")
    cmd.add_argument(
        "--fail-on-change", action="store_true", help="exit 1 when a change not marked expected is detected"
    )


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
