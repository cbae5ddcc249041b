"""secoverhead: list studies, run them headlessly into versioned reports, build the report index.

secoverhead list
secoverhead run STUDY [-f FILE.yaml] [-p NAME VALUE]... [--profile smoke|quick|full]
secoverhead run --all --profile quick
secoverhead index
"""

from __future__ import annotations

import argparse
import logging
import sys

from .errors import SecoverheadError
from .studies import STUDIES


def _list() -> int:
    for s in STUDIES.values():
        files = ", ".join(p.stem for p in s.parameter_files()) or "-"
        state = "" if s.available else "  (notebook not written yet)"
        print(f"{s.id:6} {s.notebook:36} params: {files}{state}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from .index import build_index
    from .pipeline import run_study

    if args.all == bool(args.study):
        print("error: name one study or --all", file=sys.stderr)
        return 2
    if args.all and (args.file or args.param):
        print("error: -f and -p apply to one study, not --all", file=sys.stderr)
        return 2
    studies = [s.id for s in STUDIES.values() if s.available] if args.all else [args.study]
    if args.all:
        missing = [s.id for s in STUDIES.values() if not s.available]
        if missing:
            print(f"note: not written yet, skipped: {', '.join(missing)}", file=sys.stderr)
    if args.file and args.profile:
        print("error: -f and --profile both name a parameters file; give one", file=sys.stderr)
        return 2
    profile = None if args.file else (args.profile or "smoke")
    failed = []
    for study in studies:
        outcome = run_study(
            study,
            params_file=args.file,
            profile=profile,
            overrides=[tuple(p) for p in args.param or []],
            reports_root=args.reports,
        )
        print(f"{study}: {outcome.status}  {outcome.run_dir}" + (f"\n  {outcome.error}" if outcome.error else ""))
        if not outcome.ok:
            failed.append(study)
    print(f"index: {build_index(args.reports)}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="secoverhead", description="Measure what database security costs.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="studies and their parameter files")
    run = sub.add_parser("run", help="run a study's notebook with papermill into reports/")
    run.add_argument("study", nargs="?")
    run.add_argument("--all", action="store_true", help="every study")
    run.add_argument("-f", "--file", help="parameters YAML file")
    run.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"), help="one parameter")
    run.add_argument("--profile", help="papermill-params/<study>/<profile>.yaml (default: smoke)")
    run.add_argument("--reports", default="reports", help="reports directory (default: reports)")
    idx = sub.add_parser("index", help="write reports/index.html")
    idx.add_argument("--reports", default="reports")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if args.command == "list":
            return _list()
        if args.command == "index":
            from .index import build_index

            print(build_index(args.reports))
            return 0
        return _run(args)
    except SecoverheadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
