"""How often `secoverhead compare` calls two reports of one configuration changed: its false alarms on A/A pairs.

    .venv/bin/python benchmarks/compare_aa.py REPORT_DIR REPORT_DIR [...]   # reports of one plan, one machine
    .venv/bin/python benchmarks/compare_aa.py A_DIR [...] -- B_DIR [...]     # each A against each B

Every pair (A before B, in the order given) of reports of one study goes through `compare` as a user's would
(suite/crossrun.compare_reports: the between-run sd of the levels learned from A's series where five other reports
of it measured them, the declared prior otherwise), and per study it prints the pairs, the pairs `compare` would
exit 1 on (a row worse beyond the noise) and the rows read changed either way. `--no-prior` reads them as before
the prior existed (the reports' rounds only, unless learned). Pairs whose A lies in a folder of fewer than seven
reports read the prior: give reports of another day first to see it out of the sample it was estimated from.
"""

from __future__ import annotations

import sys
import warnings
from collections import defaultdict
from itertools import combinations, product
from pathlib import Path

from secoverhead.analysis import claim_registry
from secoverhead.suite import benchtable
from secoverhead.suite.crossrun import compare_reports, load_report


def _by_study(report_dirs: list[str]) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = defaultdict(list)
    for d in report_dirs:
        out[load_report(d)[0]].append(Path(d))
    return out


def pairs_by_study(report_dirs: list[str], against: list[str] | None = None) -> dict[str, list[tuple[Path, Path]]]:
    """Per study, every pair of the reports given, or (against) each report given against each of those."""
    a = _by_study(report_dirs)
    if against is None:
        return {study: list(combinations(runs, 2)) for study, runs in sorted(a.items())}
    b = _by_study(against)
    return {study: list(product(runs, b[study])) for study, runs in sorted(a.items()) if b.get(study)}


def _which(note: str) -> str:
    return "learned" if "learned from" in note else "the prior" if "prior declared" in note else "rounds only"


def main(report_dirs: list[str], against: list[str] | None = None, *, prior: bool = True) -> None:
    if not prior:
        claim_registry.level_spread = dict  # type: ignore[assignment]
    print(f"{'study':8} {'pairs':>5} {'exit 1':>6} {'rows':>6} {'changed':>7}  the spread between reports")
    for study, pairs in pairs_by_study(report_dirs, against).items():
        exit1 = rows = changed = 0
        said = set()
        for a, b in pairs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                table = compare_reports(a, b)
            exit1 += benchtable.regressions(table) > 0
            rows += len(table)
            changed += int(table["change"].isin(["worse", "better"]).sum())
            said.add(_which(table.attrs["between_runs"]))
        print(f"{study:8} {len(pairs):5} {exit1:6} {rows:6} {changed:7}  {'; '.join(sorted(said))}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--no-prior"]
    first, _, second = (args[: args.index("--")], None, args[args.index("--") + 1 :]) if "--" in args else (args, 0, [])
    if len(first) + len(second) < 2 or ("--" in args and not (first and second)):
        print("usage: compare_aa.py [--no-prior] REPORT_DIR REPORT_DIR [...] [-- REPORT_DIR ...]", file=sys.stderr)
        sys.exit(2)
    main(first, second if "--" in args else None, prior="--no-prior" not in sys.argv[1:])
