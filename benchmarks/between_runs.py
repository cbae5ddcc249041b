"""The sd between runs of each study's effects, from repeated runs of one plan: what a run's rounds share (its
server instances, data loads, placement, the partner in a duet) and its interval therefore leaves out.

    .venv/bin/python benchmarks/between_runs.py REPORT_DIR REPORT_DIR REPORT_DIR [...]

For every claim whose readings compare arms on instances of their own (beside builds' too), each cell's
estimate and standard error per run as its verdicts recorded them, and per study and metric the term the
pipeline learns once five reports of a series exist (series/learned.py: Paule-Mandel per cell, the root mean
square over cells), here from three runs or more: the entries data/claims/between_runs.yaml takes as its prior.
Then the same for each arm's level, as `compare` learns it (suite/crossrun.py: Paule-Mandel per level of the
study's primary metrics, the root mean square over levels): the entries data/claims/between_runs_levels.yaml takes.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections import defaultdict
from pathlib import Path

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.pooling import paule_mandel
from secoverhead.series import learned
from secoverhead.studies import STUDIES, between_instances
from secoverhead.suite.crossrun import level_estimates, load_report


def _rules(study: str, part: str) -> list:
    rules = importlib.import_module(f"secoverhead.studies.{study}.claims").RULES
    return list(rules.get(part, ())) if isinstance(rules, dict) else list(rules)


def _part(study: str, experiment: str) -> str:
    """The part an experiment measured: its name's suffix (a study of one part names it after the study)."""
    rules = importlib.import_module(f"secoverhead.studies.{study}.claims").RULES
    parts = list(rules) if isinstance(rules, dict) else []
    parts += {"tls": ["MongoDB", "MySQL", "MongoDB-RTT"], "tde": ["4c16g", "8c32g"]}.get(study, [])
    named = [p for p in parts if experiment.lower().endswith("-" + p.lower())]
    return max(named, key=len) if named else study


def claim_terms(report_dirs: list[str]) -> tuple[list[str], list[dict]]:
    """Per cell, each run's estimate and se as its verdicts recorded them and Paule-Mandel's sd between the runs;
    per study and metric, the term the pipeline's learner (series/learned.py) gives over three runs or more."""
    by_study: dict[tuple[Path, str], list[str]] = defaultdict(list)
    for d in map(Path, report_dirs):
        by_study[(d.parent.parent, load_report(d)[0])].append(d.name)
    lines, entries = [], []
    for (root, study), runs in sorted(by_study.items()):
        by_cell = learned.cells(root, study, sorted(runs), between_instances(study))
        for (metric, claim, reading, cell), xs in sorted(by_cell.items()):
            tau = math.sqrt(paule_mandel([v for _, v, _ in xs], [se * se for _, _, se in xs]))
            spread = ", ".join(f"{v:+.3f}±{se:.3f}" for _, v, se in xs)
            lines.append(f"{study} {claim} #{reading}.{cell} ({metric}): {len(xs)} runs [{spread}] -> sd {tau:.3f}")
        entries += learned.terms(by_cell, study, min_reports=3)
    return lines, entries


def rejudged(report_dirs: list[str], terms: dict[tuple[str, str], float]) -> list[str]:
    """Each run's stored verdicts beside the same rules' verdicts with the estimated sds declared (at the run's
    final alpha; a claim the run found not testable stays so, whatever its intervals)."""
    from secoverhead.analysis.claimcheck import judge
    from secoverhead.analysis.verdicts import read_verdicts
    from secoverhead.measurement.results import ResultStore

    declared = {k: registry.BetweenRuns(v, 3, "estimated here") for k, v in terms.items()}
    out = []
    for d in report_dirs:
        study, stores = load_report(d)
        stored = {v["id"]: v["verdict"] for v in (read_verdicts(Path(d)) or {}).get("verdicts", [])}
        original = registry.between_runs
        registry.between_runs = lambda: declared  # type: ignore[assignment]
        try:
            for experiment, runs in stores.items():
                part = _part(study, experiment)
                meta = ResultStore(Path(d) / "results", experiment, readonly=True).metadata()
                alpha = float(meta.get("final_alpha") or 0.05)
                prefix = part if study in ("tls", "auth", "tde") else ""
                for v in judge(_rules(study, part), runs, alpha, part=prefix):
                    before = stored.get(v.id, "?")
                    after = before if before == "not testable here" else str(v.verdict)
                    out.append(f"{Path(d).name} {study} {v.id}: {before} -> {after}")
        finally:
            registry.between_runs = original  # type: ignore[assignment]
    return out


def level_terms(report_dirs: list[str]) -> dict[tuple[str, str], tuple[float, int, int]]:
    """(study, metric) -> the root mean square over levels of Paule-Mandel's sd, the reports, the levels."""
    by_study: dict[str, list[Path]] = defaultdict(list)
    for d in report_dirs:
        by_study[load_report(d)[0]].append(Path(d))
    out = {}
    for study, reports in sorted(by_study.items()):
        per_metric: dict[str, list[float]] = defaultdict(list)
        for (_, _, _, metric), xs in level_estimates(reports, list(STUDIES[study].primary_metrics)).items():
            if len(xs) >= 3:
                per_metric[metric].append(paule_mandel([v for v, _ in xs], [se * se for _, se in xs]))
        for metric, tau2 in sorted(per_metric.items()):
            out[(study, metric)] = (math.sqrt(sum(tau2) / len(tau2)), len(reports), len(tau2))
    return out


def main(report_dirs: list[str]) -> None:
    lines, entries = claim_terms(report_dirs)
    print("\n".join(lines))
    print("\n# data/claims/between_runs.yaml (an entry needs three runs or more)")
    for e in entries:
        entry = f"study: {e['study']}, metric: {e['metric']}, sd: {e['sd']:.3f}, runs: {e['runs']}"
        print(f'- {{{entry}, estimated: "<date>, <runs>"}}  # {e["cells"]} cells')
    print("\n# data/claims/between_runs_levels.yaml (the root mean square over a metric's levels)")
    for (study, metric), (sd, n, levels) in level_terms(report_dirs).items():
        print(
            f'- {{study: {study}, metric: {metric}, sd: {sd:.3f}, runs: {n}, estimated: "<date>, <runs>"}}'
            f"  # {levels} levels"
        )
    print("\n# each run's verdicts, stored -> with these sds added")
    for line in rejudged(report_dirs, {(e["study"], e["metric"]): e["sd"] for e in entries}):
        print(line)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print("usage: between_runs.py REPORT_DIR REPORT_DIR [...] (two or more runs of one plan)", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
