"""Tables a DBA reads: run summaries with their CIs, the environment, parameters, the design, noise flags."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from secoverhead.analysis.compare import block_log_ratios
from secoverhead.analysis.design import aa_floor
from secoverhead.analysis.stats import median_ci
from secoverhead.analysis.verdicts import ClaimVerdict
from secoverhead.core.params import specs
from secoverhead.host.noise import reason


def show(df: pd.DataFrame, *, precision: int = 3):
    """A table for reading: no index column, nothing truncated, floats rounded."""
    return df.style.hide(axis="index").format(precision=precision, na_rep="-")


def frame(rows: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows)


SOURCE_NAMES = {"published": "published", "suite": "the suite's own"}


def verdict_table(verdicts: Sequence[ClaimVerdict]) -> pd.DataFrame:
    """One row per claim: where it comes from, the verdict, the reading that decided it and the evidence; the
    sensitivity check only where a study recorded one."""
    cols = ["claim", "source", "verdict", "reading", "evidence", "measure", "engine_note"]
    rows = [
        {
            **{k: v.as_dict()[k] for k in ("claim", "verdict", "evidence", "measure", "engine_note")},
            "source": SOURCE_NAMES.get(v.source, v.source),
            "reading": v.registered.get("reading_text", ""),
            "without one-off duets (check)": v.sensitivity,
        }
        for v in verdicts
    ]
    if any(v.sensitivity for v in verdicts):
        cols.insert(3, "without one-off duets (check)")
    return pd.DataFrame(rows, columns=cols)


def verdict_counts(verdicts: Sequence[ClaimVerdict]) -> str:
    """'published: 3 reproduced, 1 inconclusive; the suite's own: 2 reproduced', counted apart."""
    out = []
    for source, name in SOURCE_NAMES.items():
        mine = [str(v.verdict) for v in verdicts if v.source == source]
        if mine:
            counts = {k: mine.count(k) for k in ("reproduced", "not reproduced", "inconclusive") if k in mine}
            out.append(f"{name}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return "; ".join(out)


def summarize_runs(runs: pd.DataFrame, metrics: Sequence[str], by: Sequence[str]) -> pd.DataFrame:
    """Per group: median of each metric over runs with its bootstrap 95 % CI, and the number of runs."""
    rows = []
    present = [m for m in metrics if m in runs]
    for key, g in runs.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key, strict=True)) | {"runs": len(g)}
        for m in present:
            med, lo, hi = median_ci(g[m].to_numpy(dtype=float))
            row |= {m: med, f"{m}_ci_low": lo, f"{m}_ci_high": hi}
        if "client_bound" in g:
            row["client-bound runs"] = int(g["client_bound"].fillna(False).astype(bool).sum())
        if "noise_flagged" in g:
            row["noisy runs"] = int(g["noise_flagged"].fillna(False).astype(bool).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def environment_table(
    servers: Mapping[str, Mapping[str, Any]],
    environment: Mapping[str, Any],
    notes: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Engine, version, TLS library, CPU accounting and effective settings per server, the machine, notes."""
    rows = []
    m = environment.get("machine", {})
    rows.append(
        {
            "what": "machine",
            "value": f"{m.get('cpu_model')} - {m.get('cpu_cores')} cores, "
            f"{m.get('memory_gib')} GiB, {m.get('os')}, kernel {m.get('kernel')}, host {m.get('hostname')}",
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
        accounting = facts.get("cpu_accounting") or ("not measured (external)" if not facts.get("embedded") else "")
        rows.append(
            {
                "what": f"server: {name}",
                "value": f"{facts.get('engine')} {version}; TLS library {tls}"
                + (f"; stands in for {facts['emulates']}" if facts.get("emulates") else "")
                + (f"; server CPU from {accounting}" if accounting else ""),
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


def parameter_table(p: Any) -> pd.DataFrame:
    """Every parameter the run used (secrets are named by where they live, never shown)."""

    schema = specs(type(p))
    rows = []
    for f in dataclasses.fields(p):
        value = getattr(p, f.name)
        spec = schema[f.name]
        rows.append(
            {
                "parameter": f.name,
                "value": repr(value) if not isinstance(value, str) else value,
                "default": "" if value == spec.default else repr(spec.default),
                "meaning": spec.help,
            }
        )
    return pd.DataFrame(rows)


def design_table(parts: Mapping[str, Any]) -> pd.DataFrame:
    """Per experiment: the looks planned and taken, the alpha the final intervals spend, why it stopped."""
    rows = []
    for name, part in parts.items():
        meta = part.metadata()
        looks = meta.get("looks") or {}
        done = meta.get("looks_done") or []
        runs = part.runs()
        rows.append(
            {
                "experiment": name,
                "design": (meta.get("plan") or {}).get("design", "interleaved"),
                "status": meta.get("status"),
                "why it stopped": meta.get("stop_reason")
                or ("all planned rounds ran" if meta.get("status") == "complete" else ""),
                "rounds measured": int(runs["round"].nunique()) if len(runs) else 0,
                "runs (incl. warm-up, profiling)": meta.get("completed_runs"),
                "looks planned (rounds)": ", ".join(map(str, looks.get("rounds", []))) or "-",
                "looks taken": ", ".join(f"{d['rounds']} ({d['undecided_cells']} undecided cells)" for d in done)
                or "-",
                "alpha of the final intervals": meta.get("final_alpha"),
                "runs retaken (noisy, or one-off duets)": meta.get("retakes", 0),
            }
        )
    return pd.DataFrame(rows)


def outlier_table(meta: Mapping[str, Any]) -> pd.DataFrame:
    """Duets whose ratio strayed far from their cell's other duets (outliers.py): where, how far, which arm's
    metric fell (empty when none did). They stay in the statistics; see outliers.py."""
    rows = [
        {
            "duet (round:arm:cell)": d.get("block"),
            "metric": d.get("metric"),
            "ratio in it": d.get("ratio"),
            "the cell's other duets (median)": d.get("cell_median_ratio"),
            "arm whose metric fell": d.get("low_arm"),
        }
        for d in meta.get("outlier_duets") or []
    ]
    return pd.DataFrame(rows)


def noise_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs whose noise diagnostics crossed a threshold, with why (empty when the machine was quiet)."""
    if "noise_flagged" not in runs or not runs["noise_flagged"].fillna(False).astype(bool).any():
        return pd.DataFrame()
    flagged = runs[runs["noise_flagged"].fillna(False).astype(bool)]
    cols = [c for c in ("arm", "round", "workload", "threads", "concurrency") if c in flagged]
    out = flagged[cols].copy()
    out["why"] = [reason(r) for r in flagged.to_dict("records")]
    return out


def aa_table(parts: Mapping[str, Any], metrics: Sequence[str], looks: Any, by: Sequence[str] = ()) -> pd.DataFrame:
    """A/A runs (an arm against an identical copy): per metric and cell, the per-round spread, the systematic
    offset between the copies, and what an experiment planned with `looks` (one schedule, or one per part
    name) would show: its noise floor (95th percentile of |ratio - 1|), false-positive rate and minimum
    detectable effect."""

    rows = []
    for name, part in parts.items():
        runs = part.runs()
        if not len(runs) or len(part.arms) < 2:
            continue
        design = part.metadata().get("plan", {}).get("design", "interleaved")
        cells = list(runs.groupby(list(by), sort=False)) if by and all(b in runs for b in by) else [((), runs)]
        for key, g in cells:
            for metric in (m for m in metrics if m in g):
                d = block_log_ratios(g, metric, part.arms[0], part.arms[1])
                if len(d) < 3:
                    continue
                f = aa_floor(d, looks[name] if isinstance(looks, Mapping) else looks, metric=metric, design=design)
                rows.append(
                    {
                        "experiment": name,
                        "cell": " ".join(map(str, key if isinstance(key, tuple) else (key,))),
                        "metric": metric,
                        "design": design,
                        "blocks measured": f.rounds_measured,
                        "per-round sd of log ratio": f.sd_log_ratio,
                        "A/A offset %": 100 * f.offset,
                        "rounds planned": f.rounds,
                        "noise floor %": 100 * f.floor,
                        "false positives % (sequential)": 100 * f.false_positive_rate,
                        "min. detectable effect %": 100 * f.mde,
                    }
                )
    return pd.DataFrame(rows)


def noise_summary(runs: pd.DataFrame) -> dict[str, float]:
    """Medians over runs of steal, CPU pressure and CPU outside the experiment."""
    out = {}
    for col in ("noise_steal_fraction", "noise_cpu_pressure", "noise_outside_cores"):
        if col in runs:
            out[col] = float(np.nanmedian(runs[col].to_numpy(dtype=float)))
    return out
