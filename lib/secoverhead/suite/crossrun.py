"""Comparing two report directories of one study (`secoverhead compare RUN_A RUN_B`), as benchstat,
`pyperf compare_to` and `asv compare` do: per experiment, arm, cell and metric, the medians over runs, the
ratio B / A with its interval, Holm-adjusted p, the change in words, and n as runs (numbers; the way they
print, with `~` and a geomean per metric, is suite/benchtable.py).

Runs of two reports were not interleaved, so nothing is paired: Welch's t on the logs of run summaries. Two
reports of one configuration differ by more than their rounds say (their server instances, data loads, the
machine's day): each interval and p take that spread in, both reports drawing it once, with Satterthwaite's
degrees of freedom. Where the reports of A's series show it (each arm's level, per cell and metric, Paule-Mandel
over five reports or more, A and B left out) it is theirs; before that the prior declared per study and metric
(data/claims/between_runs_levels.yaml) stands. Without it, two quick reports of one configuration read as changed
in 14 of 15 pairs for TLS and auth (benchmarks/README.md).
When each report measured one arm of a study that needs two (an external server with encryption off, then
on), the two are put together and the study's own claims are checked on them too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from secoverhead.analysis import claim_registry
from secoverhead.analysis.compare import compare_arms
from secoverhead.analysis.pooling import paule_mandel
from secoverhead.analysis.stats import holm
from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.core import paths
from secoverhead.core.errors import ConfigError
from secoverhead.core.files import read_json
from secoverhead.core.paths import user_path
from secoverhead.core.report import read_report, readable
from secoverhead.core.units import unit
from secoverhead.measurement.results import ResultStore
from secoverhead.series.learned import MIN_REPORTS, NEWEST
from secoverhead.series.reports import collect, reports_like, revision_of, stale_metrics
from secoverhead.studies import STUDIES

ALPHA = 0.05  # a row is worse or better only where its Holm-adjusted p is below this
ROUND_OFFSET = 1_000_000  # B's rounds moved out of A's range: rounds of two reports are not blocks


def load_report(run_dir: str | Path) -> tuple[str, dict[str, pd.DataFrame]]:
    """The study and each experiment's runs of one report directory."""
    try:
        d = user_path(run_dir)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    report = read_report(d)
    if report is None or report.study not in STUDIES:
        raise ConfigError(f"{d} is not a report directory (no readable run.json naming a study)")
    results = d / "results"
    stores = {}
    for exp in sorted(p for p in results.glob("*") if (p / "metadata.json").exists()):
        runs = ResultStore(results, exp.name, readonly=True).runs()
        if len(runs):
            stores[exp.name] = runs
    if not stores:
        raise ConfigError(f"{d} holds no completed runs")
    return report.study, stores


def what_ran(run_dir: str | Path) -> dict[str, str]:
    """What a comparison must not mix unseen: the run's scale, its record's schema, the servers that ran it
    (engine and version, over its experiments), and how its claims' metrics were measured (registry revisions)."""
    d = user_path(run_dir)
    report = readable(d)
    servers = set()
    for exp in sorted((d / "results").glob("*/metadata.json")):
        for facts in ((read_json(exp) or {}).get("servers") or {}).values():
            if isinstance(facts, dict) and facts.get("engine"):
                servers.add(f"{facts.get('engine')} {facts.get('version') or ''}".strip())
    return {
        "scale": (report.scale if report else "") or "unknown",
        "schema": str(report.schema if report else "unknown"),
        "servers": ", ".join(sorted(servers)) or "unknown",
        "measurement": _measurement(d),
    }


def _measurement(run_dir: Path) -> str:
    """The metrics a report measured at a raised revision (a fix since changed what they measure)."""
    revisions: dict[str, int] = {}
    for v in (read_verdicts(run_dir) or {}).get("verdicts", []):
        if isinstance(v, dict):
            metric = str((v.get("registered") or {}).get("metric"))
            revisions[metric] = max(revisions.get(metric, 1), revision_of(v))
    raised = [f"{metric} at revision {r}" for metric, r in sorted(revisions.items()) if r > 1]
    return ", ".join(raised) or "every metric at revision 1"


def differences(run_a: str | Path, run_b: str | Path) -> list[str]:
    """One line per way the two runs differ in what ran (empty: alike)."""
    a, b = what_ran(run_a), what_ran(run_b)
    return [f"the runs differ in {k}: A {a[k]}, B {b[k]}" for k in a if a[k] != b[k]]


def _factors(runs: pd.DataFrame) -> list[str]:
    return [f for f in ("workload", "threads", "concurrency", "workers") if f in runs]


def compare_reports(run_a: str | Path, run_b: str | Path, *, metrics: list[str] | None = None) -> pd.DataFrame:
    """Run B against run A, benchstat-style: per experiment, arm, cell and metric, one row; worse or better only
    with the whole interval past the noise band *and* the test significant after Holm over every row (an interval
    at 95 % alone would flag one row in twenty of an A/A comparison)."""
    study_a, a = load_report(run_a)
    study_b, b = load_report(run_b)
    if study_a != study_b:
        raise ConfigError(f"the two runs are of different studies ({study_a}, {study_b})")
    wanted = metrics or list(STUDIES[study_a].primary_metrics)
    learned, read = level_spread(run_a, run_b, wanted)
    prior = {m: t for (st, m), t in claim_registry.level_spread().items() if st == study_a}
    spread = _Spread(learned, {m: (t.sd, t.runs - 1) for m, t in prior.items()})
    rows = [
        row
        for exp in sorted(set(a) & set(b))
        for arm_a, arm_b in _arm_pairs(a[exp], b[exp])
        for row in _rows(exp, _side_by_side(a[exp], b[exp], arm_a, arm_b), (arm_a, arm_b), wanted, spread)
    ]
    if not rows:
        raise ConfigError("the two runs share no experiment, arm and metric to compare")
    out = pd.DataFrame(rows)
    out["p"] = holm(out["p"].to_numpy())
    moved = out["change"].isin(["worse", "better"]) & ~(out["p"] < ALPHA)
    out.loc[moved, "change"] = "inconclusive"
    out.attrs["between_runs"] = _spread_text(learned, prior, read)
    return out


def _spread_text(learned: dict, prior: dict, read: int) -> str:
    """Which between-run sd of the levels the table took in, in a line."""
    declared = f"the prior declared in {paths.LEVEL_SPREAD.name}"
    if learned:
        rest = f", {declared} for the cells they did not" if prior else ""
        return f"between-run sd of each level learned from {read} reports of A's series (A and B left out){rest}, added"
    if prior:
        when = "; ".join(sorted({t.estimated for t in prior.values()}))
        return (f"between-run sd of each level: {declared} ({when}), added until {MIN_REPORTS} reports of A's "
                f"series measure it ({read} so far, A and B left out)")  # fmt: skip
    return (f"no between-run sd of the levels yet ({read} of the {MIN_REPORTS} reports of A's series it needs, "
            "A and B left out): the intervals cover the two reports' rounds only")  # fmt: skip


LevelKey = tuple[str, str, str, str]  # (experiment, arm, cell, metric)
Term = tuple[float, float]  # a between-run sd of a level's log, and the degrees of freedom it rests on


@dataclass(frozen=True)
class _Spread:
    """The between-run sd of a level: learned for its cell where the series measured it, else the study's prior."""

    learned: dict[LevelKey, Term]
    prior: dict[str, Term]

    def of(self, key: LevelKey) -> Term | None:
        return self.learned.get(key) or self.prior.get(key[3])


def level_spread(run_a: str | Path, run_b: str | Path, metrics: list[str]) -> tuple[dict[LevelKey, Term], int]:
    """The between-run sd of each arm's level (log of the metric), per cell, over the other reports of A's series
    (NEWEST at most), where MIN_REPORTS measured it, with its degrees of freedom; and how many reports were read."""
    a, b = user_path(run_a), user_path(run_b)
    series = reports_like(collect(a.parent.parent, a.parent.name), a.name)
    others = [r for r in series if r not in (a.name, b.name)][-NEWEST:]
    if len(others) < MIN_REPORTS:
        return {}, len(others)
    per = level_estimates([a.parent / run for run in others], metrics)
    spread = {
        k: (math.sqrt(paule_mandel([v for v, _ in xs], [se * se for _, se in xs])), len(xs) - 1)
        for k, xs in per.items()
        if len(xs) >= MIN_REPORTS
    }
    return spread, len(others)


def level_estimates(reports: list[Path], metrics: list[str]) -> dict[LevelKey, list[tuple[float, float]]]:
    """Per level (experiment, arm, cell, metric), each report's mean log and its standard error; a metric a report
    measured otherwise than its claims are measured now is left out (series.stale_metrics)."""
    per: dict[LevelKey, list[tuple[float, float]]] = {}
    for report in reports:
        _, stores = load_report(report)
        stale = stale_metrics(report)
        for exp, runs in stores.items():
            for metric in (m for m in metrics if m in runs and m not in stale):
                for (arm, cell), est in _levels(runs, metric).items():
                    per.setdefault((exp, arm, cell, metric), []).append(est)
    return per


def _levels(runs: pd.DataFrame, metric: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(arm, cell) -> the mean log of the metric over the report's runs, and its standard error."""
    by = ["arm", *_factors(runs)]
    out = {}
    for key, g in runs.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        x = g[metric].to_numpy(dtype=float)
        x = np.log(x[np.isfinite(x) & (x > 0)])
        if len(x) >= 2:
            out[(str(key[0]), _cell_text(dict(zip(by[1:], key[1:], strict=True))))] = (
                float(x.mean()),
                float(x.std(ddof=1) / math.sqrt(len(x))),
            )
    return out


def _cell_text(cell: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in cell.items())


def _arm_pairs(ra: pd.DataFrame, rb: pd.DataFrame) -> list[tuple[str, str]]:
    """The arms compared: each arm both runs share, or the one arm of each when each ran one."""
    if ra["arm"].nunique() == 1 and rb["arm"].nunique() == 1:
        return [(ra["arm"].iloc[0], rb["arm"].iloc[0])]
    return [(x, x) for x in sorted(set(ra["arm"]) & set(rb["arm"]))]


def _side_by_side(ra: pd.DataFrame, rb: pd.DataFrame, arm_a: str, arm_b: str) -> pd.DataFrame:
    """One arm's runs of A and of B as arms "A" and "B" (B's rounds moved past A's: never paired by round)."""
    return pd.concat(
        [
            ra[ra["arm"] == arm_a].assign(arm="A"),
            rb[rb["arm"] == arm_b].assign(arm="B", round=rb["round"] + ROUND_OFFSET),
        ],
        ignore_index=True,
    )


def _flagged(runs: pd.DataFrame) -> int:
    """How many of the runs the noise monitor flagged (other work took CPU while they ran)."""
    return int(runs["noise_flagged"].fillna(False).astype(bool).sum()) if "noise_flagged" in runs else 0


def _rows(
    exp: str, both: pd.DataFrame, arms: tuple[str, str], wanted: list[str], spread: _Spread
) -> list[dict[str, Any]]:
    """One row per cell and metric of one arm of A against its arm in B."""
    arm_a, arm_b = arms
    noisy = {"noisy_a": _flagged(both[both["arm"] == "A"]), "noisy_b": _flagged(both[both["arm"] == "B"])}
    by = [f for f in _factors(both) if both[f].notna().all()]  # an arm without a factor (HTTPS keep-alive)
    rows = []
    for metric in (m for m in wanted if m in both):
        u, better = unit(metric)

        def term(cell: dict, metric: str = metric) -> Term | None:  # both reports drew their level once
            return spread.of((exp, arm_a, _cell_text(cell), metric))

        comps = compare_arms(both, metric, baseline="A", candidates=["B"], by=by, higher_is_better=bool(better),
                             paired=False, family=1, between=term)  # fmt: skip
        for c in comps.values():
            taken = term(c.cell)
            rows.append({
                "experiment": exp, "arm": arm_a if arm_a == arm_b else f"{arm_a} -> {arm_b}",
                "cell": _cell_text(c.cell), "metric": metric, "unit": u, "confidence": c.confidence,
                "higher_is_better": bool(better), "a": c.baseline_median, "b": c.candidate_median,
                "ratio": c.ratio, "ci_low": c.ci_low, "ci_high": c.ci_high, "p": c.p_value, "change": str(c.change),
                "between runs sd": taken[0] if taken else float("nan"),
                "n_a": c.n_baseline, "n_b": c.n_candidate, **noisy,
            })  # fmt: skip
    return rows


def combined_claims(run_a: str | Path, run_b: str | Path) -> list:
    """The study's claims on two one-arm reports put together (e.g. external TDE: off, then on)."""
    study, a = load_report(run_a)
    _, b = load_report(run_b)
    cross_claims = STUDIES[study].load().cross_claims
    if cross_claims is None:
        return []
    out = []
    for exp in sorted(set(a) & set(b)):
        both = pd.concat([a[exp], b[exp].assign(round=b[exp]["round"] + ROUND_OFFSET)], ignore_index=True)
        out += cross_claims(exp, both)
    return out
