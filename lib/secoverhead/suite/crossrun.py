"""Comparing two report directories of one study (`secoverhead compare RUN_A RUN_B`), as benchstat,
`pyperf compare_to` and `asv compare` do: per experiment, arm, cell and metric, the medians over runs, the
ratio B / A with its interval, Holm-adjusted p, the change in words, and n as runs (numbers; the way they
print, with `~` and a geomean per metric, is suite/benchtable.py).

Runs of two reports were not interleaved, so nothing is paired: Welch's t on the logs of run summaries.
When each report measured one arm of a study that needs two (an external server with encryption off, then
on), the two are put together and the study's own claims are checked on them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.analysis.compare import compare_arms
from secoverhead.analysis.stats import holm
from secoverhead.core.errors import ConfigError
from secoverhead.core.files import read_json
from secoverhead.core.paths import user_path
from secoverhead.core.runs import scale_of
from secoverhead.core.units import unit
from secoverhead.measurement.results import ResultStore
from secoverhead.studies import STUDIES

ALPHA = 0.05  # a row is worse or better only where its Holm-adjusted p is below this
ROUND_OFFSET = 1_000_000  # B's rounds moved out of A's range: rounds of two reports are not blocks


def load_report(run_dir: str | Path) -> tuple[str, dict[str, pd.DataFrame]]:
    """The study and each experiment's runs of one report directory."""
    try:
        d = user_path(run_dir)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    meta = read_json(d / "run.json")
    if not isinstance(meta, dict) or meta.get("study") not in STUDIES:
        raise ConfigError(f"{d} is not a report directory (no readable run.json naming a study)")
    results = d / "results"
    stores = {}
    for exp in sorted(p for p in results.glob("*") if (p / "metadata.json").exists()):
        runs = ResultStore(results, exp.name, readonly=True).runs()
        if len(runs):
            stores[exp.name] = runs
    if not stores:
        raise ConfigError(f"{d} holds no completed runs")
    return meta["study"], stores


def what_ran(run_dir: str | Path) -> dict[str, str]:
    """What a comparison must not mix unseen: the run's scale, its record's schema, and the servers that ran it
    (engine and version, over its experiments)."""
    d = user_path(run_dir)
    meta = read_json(d / "run.json")
    meta = meta if isinstance(meta, dict) else {}
    servers = set()
    for exp in sorted((d / "results").glob("*/metadata.json")):
        for facts in ((read_json(exp) or {}).get("servers") or {}).values():
            if isinstance(facts, dict) and facts.get("engine"):
                servers.add(f"{facts.get('engine')} {facts.get('version') or ''}".strip())
    return {
        "scale": scale_of(meta.get("params_name")) or "unknown",
        "schema": str(meta.get("schema", "unknown")),
        "servers": ", ".join(sorted(servers)) or "unknown",
    }


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
    rows = [
        row
        for exp in sorted(set(a) & set(b))
        for arm_a, arm_b in _arm_pairs(a[exp], b[exp])
        for row in _rows(exp, _side_by_side(a[exp], b[exp], arm_a, arm_b), arm_a, arm_b, wanted, _factors(a[exp]))
    ]
    if not rows:
        raise ConfigError("the two runs share no experiment, arm and metric to compare")
    out = pd.DataFrame(rows)
    out["p"] = holm(out["p"].to_numpy())
    moved = out["change"].isin(["worse", "better"]) & ~(out["p"] < ALPHA)
    out.loc[moved, "change"] = "inconclusive"
    return out


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
    exp: str, both: pd.DataFrame, arm_a: str, arm_b: str, wanted: list[str], by: list[str]
) -> list[dict[str, Any]]:
    noisy = {"noisy_a": _flagged(both[both["arm"] == "A"]), "noisy_b": _flagged(both[both["arm"] == "B"])}
    rows = []
    for metric in (m for m in wanted if m in both):
        u, better = unit(metric)
        comps = compare_arms(both, metric, baseline="A", candidates=["B"], by=by,
                             higher_is_better=bool(better), paired=False, family=1)  # fmt: skip
        for c in comps.values():
            rows.append({
                "experiment": exp, "arm": arm_a if arm_a == arm_b else f"{arm_a} -> {arm_b}",
                "cell": " ".join(f"{k}={v}" for k, v in c.cell.items()), "metric": metric, "unit": u,
                "higher_is_better": bool(better), "a": c.baseline_median, "b": c.candidate_median, "ratio": c.ratio,
                "ci_low": c.ci_low, "ci_high": c.ci_high, "p": c.p_value, "change": str(c.change),
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
