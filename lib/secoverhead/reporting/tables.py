"""Tables a DBA reads: run summaries with their CIs, the environment, parameters, the design, noise flags."""

from __future__ import annotations

import ast
import dataclasses
import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from secoverhead.analysis.compare import block_log_ratios
from secoverhead.analysis.design import aa_floor
from secoverhead.analysis.stats import combined_share, median_ci
from secoverhead.analysis.verdicts import ClaimVerdict
from secoverhead.core.params import specs
from secoverhead.core.units import figure, p_text, unit
from secoverhead.host.calibration import SLOW_STATE, slowdowns
from secoverhead.host.noise import reason
from secoverhead.measurement.parts import server_of
from secoverhead.reporting import summary


def styled(df: pd.DataFrame, *, precision: int = 3):
    """A table for reading (readable()): no index column, p-values as 3e-05, percentages to one decimal."""
    out = readable(df)
    # every value and header escaped: a parameter, an arm or a server's name is data, never markup (a value
    # "<iframe src=/etc/shadow>" shows as those characters)
    style = out.style.hide(axis="index").format(precision=precision, na_rep="-", escape="html")
    style = style.format_index(_breakable(precision), escape="html", axis=1)
    words = [c for c in out.columns if not pd.api.types.is_numeric_dtype(out[c])]
    if words:  # words read from the left, numbers line up on the right
        style = style.format(_breakable(precision), subset=words, na_rep="-", escape="html")
        style = style.set_properties(subset=words, **{"text-align": "left"})
    for col in out.columns:
        if _is_p(col):
            style = style.format(_p, subset=[col], na_rep="-", escape="html")
        elif "%" in str(col) and pd.api.types.is_numeric_dtype(out[col]):
            style = style.format(precision=1, subset=[col], na_rep="-", escape="html")
    return style


_METRIC = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
_WORDS = {"cpu": "CPU", "tps": "TPS", "qps": "QPS", "rps": "requests/s", "pct": "%", "avg": "mean"}


def header(name: Any) -> Any:
    """A raw metric name as words with its unit from the units registry: 'server_cpu_us_per_op' ->
    'server CPU per op (µs)'; anything else unchanged."""
    if isinstance(name, str) and name in ("tps", "qps", "rps"):
        return _WORDS[name]
    if not isinstance(name, str) or not _METRIC.match(name):
        return name
    u, _ = unit(name)
    words = [w for w in name.split("_") if w != u and not (u == "1/s" and w == "per" and name.endswith("_per_s"))]
    if u == "1/s" and words and words[-1] == "s":
        words = words[:-1]
    text = " ".join(_WORDS.get(w, w) for w in words)
    if u == "1/s":
        return f"{text} per s"
    shown = {"us": "µs"}.get(u, u)
    return f"{text} ({shown})" if shown and shown not in ("flag", "count") else text


def _breakable(precision: int):
    """A cell's text with a line-break opportunity after each underscore: an identifier
    (connection_server_cpu_us_per_op) may wrap where a reader expects, so a table fits the printed page without
    its columns squeezed equal and its words cut mid-letter. Numbers as the styler writes them."""

    def fmt(v: Any) -> str:
        if isinstance(v, str):  # escaped by the styler before it gets here, as Markup (whose replace escapes)
            return str(v).replace("_", "_<wbr>")
        if isinstance(v, float):
            return f"{v:.{precision}f}"
        return str(v)

    return fmt


def _is_p(col: Any) -> bool:
    return isinstance(col, str) and (col == "p" or col.startswith(("p ", "p(")))


def _p(p: Any) -> str:
    try:
        p = float(p)
    except (TypeError, ValueError):
        return str(p)
    if not math.isfinite(p):
        return "-"
    # 0.012, <0.001; escaped here: the styler escapes a formatter's input, not what it returns
    return html.escape(p_text(p).removeprefix("p=").removeprefix("p"))


def _cell(v: Any) -> Any:
    """Values as words: a factor combination rather than its Python repr, nothing for None."""
    if v is None:
        return np.nan
    if isinstance(v, tuple | list) and v and all(isinstance(x, tuple | list) and len(x) == 2 for x in v):
        return ", ".join(f"{k} {x}" for k, x in v)
    if isinstance(v, tuple | list):
        return ", ".join(map(str, v))
    if isinstance(v, str) and "[('" in v:  # a duet's block key: round:arm:[(factor, level), ...]
        head, _, rest = v.partition("[")
        try:
            pairs = ast.literal_eval("[" + rest)
            return head + ", ".join(f"{k} {x}" for k, x in pairs)
        except (ValueError, SyntaxError):
            return v
    return v


def _with_ci(v: Any, lo: Any, hi: Any) -> Any:
    try:
        v, lo, hi = float(v), float(lo), float(hi)
    except (TypeError, ValueError):
        return v
    if not all(map(math.isfinite, (v, lo, hi))):
        return figure(v) if math.isfinite(v) else "-"
    return f"{figure(v)} [{figure(lo)}, {figure(hi)}]"


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """The table as a reader takes it in: each metric's CI beside it in one column, raw metric names as words
    with units, factor combinations in words. The data a table function returns is unchanged."""
    out = df.copy()
    for col in list(out.columns):
        lo, hi = f"{col}_ci_low", f"{col}_ci_high"
        if isinstance(col, str) and lo in out and hi in out:
            out[col] = [_with_ci(v, a, b) for v, a, b in zip(out[col], out.pop(lo), out.pop(hi), strict=True)]
            out = out.rename(columns={col: f"{col} [95 % CI]"})
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col]):
            out[col] = out[col].map(_cell)
    out.columns = [
        f"{header(c[: -len(' [95 % CI]')])} [95 % CI]" if isinstance(c, str) and c.endswith(" [95 % CI]") else header(c)
        for c in out.columns
    ]
    return out


def frame(rows: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows)


SOURCE_NAMES = {"published": "published", "extension": "extension of a published claim", "suite": "the suite's own"}


def verdict_table(verdicts: Sequence[ClaimVerdict]) -> pd.DataFrame:
    """One row per claim: where it comes from, the verdict, the reading that decided it, the evidence and the
    server build that produced it; the sensitivity check only where a study recorded one."""
    cols = ["claim", "source", "verdict", "reading", "evidence", "server", "measure", "engine_note"]
    rows = [
        {
            **{k: v.as_dict()[k] for k in ("claim", "verdict", "evidence", "measure", "engine_note")},
            "source": SOURCE_NAMES.get(v.source, v.source),
            "reading": v.registered.get("reading_text", ""),
            "server": summary.server_name(v.server),
            "without one-off duets (check)": v.sensitivity,
        }
        for v in verdicts
    ]
    if any(v.sensitivity for v in verdicts):
        cols.insert(3, "without one-off duets (check)")
    return pd.DataFrame(rows, columns=cols)


def across_builds(verdicts: Sequence[ClaimVerdict]) -> pd.DataFrame:
    """The same claims on every part they were judged on: one row per part as it ran (its server build named),
    one column per claim, each cell the verdict and the interval it was read from."""
    rows: dict[str, dict[str, str]] = {}
    for v in verdicts:
        build = v.server.get("build")
        part = v.part if not build or build in v.part else f"{v.part} ({build})"
        claim = v.registered.get("id") or v.id.rsplit(":", 1)[-1]  # the claim itself, whatever part it was read on
        read = summary.deciding({"verdict": str(v.verdict), "judged": v.judged})
        cell = str(v.verdict) + (f": {m}" if (m := summary.measured([read] if read else [])) else "")
        rows.setdefault(part, {"part": part})[claim] = cell
    return pd.DataFrame(list(rows.values()))


def verdict_counts(verdicts: Sequence[ClaimVerdict]) -> str:
    """'published claims: 3 reproduced, 1 not testable here; the suite's own: 2 reproduced', counted apart."""
    return summary.tally([v.as_dict() for v in verdicts])


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


TICKS = ("server_cpu_user_ticks", "server_cpu_system_ticks")


def cpu_split(runs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Per group: the median server CPU per operation, split at the system share of the kernel ticks pooled over
    its runs (one run's split rests on a few dozen: host/metrics.py), with that share's 95 % interval
    (stats.combined_share); a group whose runs counted no ticks is split by their summed user and system time."""
    rows = []
    for key, g in runs.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        total = float(g["server_cpu_us_per_op"].median())
        counted = g.dropna(subset=list(TICKS)) if set(TICKS) <= set(g) else g.iloc[:0]
        if len(counted):
            system = counted[TICKS[1]].to_numpy(dtype=int)
            share, lo, hi, draws = combined_share(system, counted[TICKS[0]].to_numpy(dtype=int) + system)
        else:  # records from before ticks were counted: their summed split, no interval
            share = g["server_system_us_per_op"].sum() / g["server_cpu_us_per_op"].sum()
            lo, hi, draws = math.nan, math.nan, 0.0
        rows.append(
            dict(zip(by, key, strict=True))
            | {"server_cpu_us_per_op": total, "user_us": (1 - share) * total, "system_us": share * total}
            | {"system_share": share, "system_share_low": lo, "system_share_high": hi, "ticks_judged": draws}
        )
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
        if not facts.get("engine") and not facts.get("version"):
            continue  # not a server (a link, a delay line): said in the notes
        server = server_of(dict(facts))
        version = facts.get("version", "?")
        tls = server.get("tls_library") or "-"
        neg = facts.get("negotiated_tls") or {}
        if neg.get("cipher"):
            tls += f", negotiates {neg.get('protocol') or neg.get('tls_version')} {neg['cipher']}"
        accounting = facts.get("cpu_accounting") or ("not measured (external)" if not facts.get("embedded") else "")
        rows.append(
            {
                "what": f"server: {name}",
                "value": f"{server.get('build')} ({facts.get('engine')} {version}); TLS library {tls}"
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
        # runs counted from the store: an interrupted part never wrote its end-of-run count
        rows.append(
            {
                "experiment": name,
                "design": (meta.get("plan") or {}).get("design", "interleaved"),
                "status": meta.get("status"),
                "why it stopped": meta.get("stop_reason")
                or ("all planned rounds ran" if meta.get("status") == "complete" else ""),
                "rounds measured": int(runs["round"].nunique()) if len(runs) else 0,
                "runs (incl. warm-up, profiling)": len(part.store.completed_keys()),
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
            "arm that went the bad way": d.get("worse_arm", d.get("low_arm")),
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
    """A/A runs (an arm against an identical copy): per metric and cell of `by` (when the runs have them), the
    per-round spread, the systematic offset between the copies, and what an experiment planned with `looks` (one
    schedule, or one per part name) would show: its noise floor (95th percentile of |ratio - 1|), false-positive
    rate and minimum detectable effect."""

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


SLOWDOWN, SLOW_CHECKS = "vCPU slowdown (x its fastest)", "quiet checks in the slow state"


def noise_summary(runs: pd.DataFrame, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Medians over runs of steal, CPU pressure and CPU outside the experiment; with the experiment's metadata,
    how much slower than its fastest the host ran the vCPU before its rounds (the checks taken with the rest of the
    machine quiet), and in how many of those it ran in its slow state."""
    out: dict[str, Any] = {}
    for col in ("noise_steal_fraction", "noise_cpu_pressure", "noise_outside_cores"):
        if col in runs:
            out[col] = float(np.nanmedian(runs[col].to_numpy(dtype=float)))
    ratios = slowdowns((meta or {}).get("speed_checks") or [], (meta or {}).get("calibration") or {})
    if ratios:
        out[SLOWDOWN] = float(np.median(ratios))
        out[SLOW_CHECKS] = f"{sum(r >= SLOW_STATE for r in ratios)} of {len(ratios)}"
    return out
