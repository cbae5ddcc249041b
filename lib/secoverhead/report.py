"""Report: turn comparisons into verdicts on published claims, tables a DBA reads, and plots they look at.

The last layer: it reads results and statistics, and writes `verdicts.json` next to the results so the
report index can show each study's headline without re-running anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .results import atomic_write_json
from .stats import Comparison

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


@dataclass
class ClaimVerdict:
    """A published claim checked against our measurements."""

    claim: str
    verdict: str  # reproduced | not reproduced | inconclusive
    evidence: str  # the numbers, CI and test that decide it
    measure: str = ""
    engine_note: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def _fmt_ratio(c: Comparison) -> str:
    return (
        f"median {c.baseline_median:.4g} -> {c.candidate_median:.4g} ({c.change_pct:+.1f} %, "
        f"95 % CI of ratio {c.ci_low:.3f}-{c.ci_high:.3f}; {c.test} p={c.p_value:.2g}; "
        f"n={c.n_baseline}/{c.n_candidate})"
    )


def claim_direction(
    claim: str,
    c: Comparison,
    *,
    expect: str,
    min_ratio: float | None = None,
    max_ratio: float | None = None,
    measure: str = "",
    engine_note: str = "",
) -> ClaimVerdict:
    """Verdict on a claim about the direction (and rough size) of a change.

    expect: "slower" (candidate costs more), "faster", or "similar" (no change beyond the noise threshold).
    min_ratio / max_ratio bound the size the claim implies (e.g. "markedly slower": min_ratio=1.5), tested
    on the CI: reproduced only when the whole CI clears the bound, not reproduced when it lies on the wrong
    side, inconclusive otherwise.
    """
    if c.verdict == "inconclusive" and expect != "similar":
        v = INCONCLUSIVE
    elif expect == "similar":
        if c.verdict == "no change" or (
            max_ratio is not None and c.ci_high <= max_ratio and (min_ratio is None or c.ci_low >= min_ratio)
        ):
            v = REPRODUCED
        elif (max_ratio is not None and c.ci_low > max_ratio) or (
            max_ratio is None and c.verdict in ("slower", "faster")
        ):
            v = NOT_REPRODUCED
        else:
            v = INCONCLUSIVE
    else:
        if c.verdict != expect:
            v = NOT_REPRODUCED if c.verdict in ("slower", "faster", "no change") else INCONCLUSIVE
        elif min_ratio is not None and c.ci_low < min_ratio:
            v = NOT_REPRODUCED if c.ci_high < min_ratio else INCONCLUSIVE
        elif max_ratio is not None and c.ci_high > max_ratio:
            v = NOT_REPRODUCED if c.ci_low > max_ratio else INCONCLUSIVE
        else:
            v = REPRODUCED
    return ClaimVerdict(claim, v, _fmt_ratio(c), measure, engine_note)


def show(df: pd.DataFrame, *, precision: int = 3):
    """A table for reading: no index column, nothing truncated, floats rounded."""
    return df.style.hide(axis="index").format(precision=precision, na_rep="-")


def verdict_table(verdicts: Sequence[ClaimVerdict]) -> pd.DataFrame:
    return pd.DataFrame([v.as_dict() for v in verdicts])


def write_verdicts(
    output_dir: str | Path, study: str, verdicts: Sequence[ClaimVerdict], notes: Sequence[str] = ()
) -> Path:
    """verdicts.json beside the results: what the report index shows for this run."""
    path = Path(output_dir) / "verdicts.json"
    atomic_write_json(path, {"study": study, "verdicts": [v.as_dict() for v in verdicts], "notes": list(notes)})
    return path


def read_verdicts(run_dir: Path) -> dict[str, Any] | None:
    for p in (run_dir / "verdicts.json", *run_dir.glob("*/verdicts.json")):
        if p.exists():
            return json.loads(p.read_text())
    return None


def environment_table(
    servers: Mapping[str, Mapping[str, Any]], environment: Mapping[str, Any], notes: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Engine, version, TLS library and effective settings per server, the machine, and emulation notes."""
    rows = []
    m = environment.get("machine", {})
    rows.append(
        {
            "what": "machine",
            "value": f"{m.get('cpu_model')} - {m.get('cpu_cores')} cores, "
            f"{m.get('memory_gib')} GiB, {m.get('os')}, kernel {m.get('kernel')}",
        }
    )
    rows.append(
        {
            "what": "client",
            "value": f"Python {environment.get('python')}, {environment.get('client_tls_library')}"
            + (
                f", mysql-connector {environment.get('mysql_connector')} "
                f"({environment.get('mysql_connector_implementation')})"
                if environment.get("mysql_connector")
                else ""
            ),
        }
    )
    for name, facts in servers.items():
        version = facts.get("version", "?")
        tls = facts.get("version_ssl_library") or facts.get("tls_library") or "-"
        neg = facts.get("negotiated_tls") or {}
        if neg.get("cipher"):
            tls += f", negotiates {neg.get('protocol') or neg.get('tls_version')} {neg['cipher']}"
        rows.append(
            {
                "what": f"server: {name}",
                "value": f"{facts.get('engine')} {version}; TLS library {tls}"
                + (f"; stands in for {facts['emulates']}" if facts.get("emulates") else ""),
            }
        )
    tools = environment.get("tools", {})
    rows.append({"what": "tools", "value": ", ".join(f"{k} {v}" for k, v in tools.items() if v)})
    rows.append(
        {
            "what": "code",
            "value": f"secoverhead git {str(environment.get('git_commit'))[:12]}"
            + (" (uncommitted changes)" if environment.get("git_dirty") else ""),
        }
    )
    for k, v in (notes or {}).items():
        rows.append({"what": k, "value": v})
    return pd.DataFrame(rows)


def comparison_table(comparisons: Mapping[Any, Comparison], *, unit: str = "") -> pd.DataFrame:
    """One row per comparison: medians, change, CI, p, verdict, warnings."""
    rows = []
    for key, c in comparisons.items():
        rows.append(
            {
                "comparison": key if isinstance(key, str) else " / ".join(map(str, key)),
                f"baseline median{f' ({unit})' if unit else ''}": c.baseline_median,
                f"candidate median{f' ({unit})' if unit else ''}": c.candidate_median,
                "change %": round(c.change_pct, 1),
                "95 % CI of ratio": f"{c.ci_low:.3f} - {c.ci_high:.3f}",
                "p": float(f"{c.p_value:.2g}") if np.isfinite(c.p_value) else np.nan,
                "verdict": c.verdict,
                "n": f"{c.n_baseline}/{c.n_candidate}",
                "warnings": "; ".join(c.warnings),
            }
        )
    return pd.DataFrame(rows)


def ecdf_plot(samples: pd.DataFrame, value: str, by: str, *, title: str, xlabel: str, log: bool = False):
    """ECDF of value per group: the whole distribution, tails included."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, g in samples.groupby(by, sort=True):
        x = np.sort(g[value].dropna().to_numpy())
        if len(x):
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=f"{name} (n={len(x)})")
    ax.set(title=title, xlabel=xlabel, ylabel="fraction of samples <= x")
    if log:
        ax.set_xscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def bar_with_ci(
    table: pd.DataFrame, *, x: str, y: str, lo: str, hi: str, title: str, ylabel: str, hue: str | None = None
):
    """Medians as bars with their CI as error bars."""
    fig, ax = plt.subplots(figsize=(8, 4))
    groups = [(None, table)] if hue is None else list(table.groupby(hue, sort=False))
    width = 0.8 / len(groups)
    labels = list(dict.fromkeys(table[x]))
    for i, (name, g) in enumerate(groups):
        g = g.set_index(x).reindex(labels)
        pos = np.arange(len(labels)) + i * width - 0.4 + width / 2
        err = np.vstack([g[y] - g[lo], g[hi] - g[y]]).clip(min=0)
        ax.bar(pos, g[y], width, yerr=err, capsize=3, label=name)
    ax.set_xticks(np.arange(len(labels)), labels, rotation=20, ha="right")
    ax.set(title=title, ylabel=ylabel)
    if hue is not None:
        ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def median_ci(values: Sequence[float] | np.ndarray, *, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Median and its bootstrap 95 % CI."""
    from .stats import bootstrap_medians

    x = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    if not len(x):
        return (np.nan, np.nan, np.nan)
    boot = bootstrap_medians(x, n_boot, np.random.default_rng(seed))
    return float(np.median(x)), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))


def summarize_runs(runs: pd.DataFrame, metrics: Sequence[str], by: Sequence[str]) -> pd.DataFrame:
    """Per group: median of each metric over runs with its bootstrap 95 % CI, and the number of runs."""
    rows = []
    for key, g in runs.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key, strict=True)) | {"runs": len(g)}
        for m in metrics:
            med, lo, hi = median_ci(g[m].to_numpy(dtype=float))
            row |= {m: med, f"{m}_ci_low": lo, f"{m}_ci_high": hi}
        rows.append(row)
    return pd.DataFrame(rows)


def line_plot(
    table: pd.DataFrame,
    *,
    x: str,
    y: str,
    hue: str,
    title: str,
    ylabel: str,
    xlabel: str | None = None,
    lo: str | None = None,
    hi: str | None = None,
    logx: bool = False,
):
    """A metric over a factor (threads, concurrency), one line per arm, with CI bands when given."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, g in table.groupby(hue, sort=False):
        g = g.sort_values(x)
        ax.plot(g[x], g[y], marker="o", label=str(name))
        if lo and hi:
            ax.fill_between(g[x], g[lo], g[hi], alpha=0.15)
    ax.set(title=title, ylabel=ylabel, xlabel=xlabel or x)
    if logx:
        ax.set_xscale("log", base=2)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def stacked_bar(table: pd.DataFrame, *, x: str, parts: Sequence[str], labels: Sequence[str], title: str, ylabel: str):
    """One bar per row of table, split into parts (e.g. user and system CPU)."""
    fig, ax = plt.subplots(figsize=(8, 4))
    bottom = np.zeros(len(table))
    for col, label in zip(parts, labels, strict=True):
        vals = table[col].to_numpy(dtype=float)
        ax.bar(table[x].astype(str), vals, bottom=bottom, label=label)
        bottom += np.nan_to_num(vals)
    ax.set(title=title, ylabel=ylabel)
    ax.tick_params(axis="x", labelrotation=25)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def heatmap(
    table: pd.DataFrame,
    *,
    index: str,
    columns: str,
    values: str,
    title: str,
    fmt: str = ".1f",
    center: float | None = 0.0,
    label: str = "",
):
    """A grid of one value (e.g. loss %) over two factors, annotated with the numbers."""
    import seaborn as sns

    grid = table.pivot_table(index=index, columns=columns, values=values, aggfunc="median")
    fig, ax = plt.subplots(figsize=(1.2 * max(4, grid.shape[1]) + 2, 0.6 * max(3, grid.shape[0]) + 1.5))
    sns.heatmap(grid, annot=True, fmt=fmt, cmap="RdBu_r", center=center, ax=ax, cbar_kws={"label": label})
    ax.set(title=title)
    fig.tight_layout()
    return fig
