"""Command line: `secoverhead list`, `secoverhead run STUDY`. Studies are registered as their notebooks land."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

STUDIES: dict[str, str] = {}  # study id -> notebook path, filled as the study notebooks are written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="secoverhead", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="studies and their parameter files")
    run = sub.add_parser("run", help="run a study's notebook with papermill into reports/")
    run.add_argument("study", nargs="?")
    run.add_argument("--all", action="store_true")
    run.add_argument("--profile", default="quick")
    args = parser.parse_args(argv)
    if args.command == "list":
        for study, notebook in STUDIES.items():
            print(f"{study}\t{notebook}")
        if not STUDIES:
            print("no studies are available yet")
        return 0
    wanted = list(STUDIES) if args.all else [args.study]
    unknown = [s for s in wanted if s not in STUDIES]
    if unknown or not wanted:
        print(
            f"error: unknown study {unknown or wanted}; available: {', '.join(STUDIES) or 'none yet'}", file=sys.stderr
        )
        return 2
    print(f"error: running studies is not implemented yet ({Path(__file__).name})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
