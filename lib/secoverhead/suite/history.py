"""Results over time (after asv and conbench): every run of a study found under reports/, each claim's effect
(a ratio with its interval, which is machine-independent: both arms ran on the same machine) and verdict,
with the host, the server versions and the machine's speed reference beside it. A change between two
consecutive runs of a claim is flagged when their intervals do not overlap: beyond the noise of either.

Runs copied in from other hosts merge by copying their directories under reports/<study>/ (their names carry
the host) and rebuilding the index."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd

from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.core.files import read_json, within
from secoverhead.studies import STUDIES


def collect(root: Path, study: str) -> pd.DataFrame:
    """One row per (run, claim), oldest first."""
    rows = []
    for run in sorted(p for p in (root / study).glob("*") if p.is_dir() and not p.is_symlink()):
        if not all(within(run / f, root) for f in ("run.json", "verdicts.json", "results/verdicts.json")):
            continue  # the index names it
        meta = read_json(run / "run.json")
        verdicts = read_verdicts(run)
        if not isinstance(meta, dict) or not verdicts:
            continue
        cal = read_json(run / "calibration.json") or {}
        env = meta.get("environment") or {}
        for v in verdicts.get("verdicts", []):
            if not isinstance(v, dict):
                continue
            rows.append(
                {
                    "run": run.name,
                    "started": meta.get("started", ""),
                    "host": (env.get("machine") or {}).get("hostname") or meta.get("host", ""),
                    "mariadb": (env.get("tools") or {}).get("mariadbd", ""),
                    "rsa2048 sign (us)": cal.get("rsa2048_sign_us"),
                    "params": meta.get("params_name", ""),
                    "claim id": v.get("id") or v.get("claim", "")[:40],
                    "claim": v.get("claim", ""),
                    "verdict": v.get("verdict", ""),
                    "ratio": v.get("ratio"),
                    "ci low": v.get("ci_low"),
                    "ci high": v.get("ci_high"),
                }
            )
    df = pd.DataFrame(rows)
    if not len(df):
        return df
    return df.sort_values(["claim id", "started"]).assign(change=_changes).reset_index(drop=True)


def _changes(df: pd.DataFrame) -> list[str]:
    """Per claim, against its previous run: 'changed' when the intervals are apart, 'verdict changed' when only
    the verdict moved, '' otherwise."""
    out, prev = [], {}
    for row in df.itertuples(index=False):
        key = row[df.columns.get_loc("claim id")]
        before = prev.get(key)
        lo, hi = row[df.columns.get_loc("ci low")], row[df.columns.get_loc("ci high")]
        verdict = row[df.columns.get_loc("verdict")]
        mark = ""
        if before is not None:
            b_lo, b_hi, b_verdict = before
            if all(x is not None and x == x for x in (lo, hi, b_lo, b_hi)) and (lo > b_hi or hi < b_lo):
                mark = "changed beyond the noise"
            elif verdict != b_verdict:
                mark = "verdict changed"
        prev[key] = (lo, hi, verdict)
        out.append(mark)
    return out


def plot_png(df: pd.DataFrame, title: str) -> str | None:
    """Each claim's ratio over runs with its interval, as an embedded PNG (base64), or None without ratios."""
    data = df.dropna(subset=["ratio", "ci low", "ci high"]) if len(df) else df
    if not len(data):
        return None

    matplotlib.use("Agg")

    fig, ax = plt.subplots(figsize=(9, 3.6))
    for claim, g in data.groupby("claim id", sort=False):
        x = range(len(g))
        ax.errorbar(
            list(x),
            g["ratio"],
            yerr=[g["ratio"] - g["ci low"], g["ci high"] - g["ratio"]],
            marker="o",
            capsize=3,
            label=claim[:40],
        )
    ax.axhline(1.0, color="grey", lw=1)
    ax.set(title=title, xlabel="run (oldest first, per claim)", ylabel="effect ratio (arm / baseline)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def table_html(df: pd.DataFrame) -> str:
    cols = ["run", "host", "claim", "verdict", "ratio", "ci low", "ci high", "change", "rsa2048 sign (us)", "mariadb"]
    show = df[[c for c in cols if c in df]].copy()
    for c in ("ratio", "ci low", "ci high", "rsa2048 sign (us)"):
        if c in show:
            show[c] = show[c].map(lambda v: "" if v is None or v != v else f"{v:.3g}")
    return show.to_html(index=False, escape=True, border=0)


def section(root: Path, study: str, title: str) -> str:
    """The index's history section of one study (empty when it has fewer than two runs with verdicts)."""
    df = collect(root, study)
    if not len(df) or df["run"].nunique() < 2:
        return ""
    png = plot_png(df, f"{title}: effects across runs")
    img = f"<img alt='effects across runs' src='data:image/png;base64,{png}'>" if png else ""
    flagged = int((df["change"] != "").sum())
    return (
        f"<h3>History ({df['run'].nunique()} runs; {flagged} change(s) flagged)</h3>{img}"
        f"<details><summary>every claim in every run</summary>{table_html(df)}</details>"
    )


def summary(root: Path) -> dict[str, Any]:
    return {s: collect(root, s) for s in STUDIES}
