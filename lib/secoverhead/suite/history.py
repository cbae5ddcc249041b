"""Results over time (after asv and conbench; change detection after MongoDB's CI and Apache Otava): each claim's
series of reports (series/reports.py: one scale, target, server version and machine speed class). Over each whole
series, E-divisive means finds the reports where the effect changed (analysis/changepoints.py), each flagged better
or worse for the DBA; a change marked expected (`secoverhead expect`) is shown as such, not as an alarm. The x-axis
is the reports' dates.

Reports copied in from other hosts merge by copying their directories under reports/<study>/ and rebuilding the
index."""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from secoverhead.analysis.changepoints import detect
from secoverhead.analysis.pooling import paule_mandel
from secoverhead.core.runs import EMBEDDED
from secoverhead.core.units import significant, unit
from secoverhead.reporting import summary
from secoverhead.reporting.plots import readable_log
from secoverhead.series.reports import SERIES, collect
from secoverhead.suite import expected as expected_marks


@dataclass(frozen=True)
class Change:
    """A change point in one claim's series."""

    study: str
    claim_id: str
    claim: str
    scale: str
    target: str
    server: str
    speed_class: str
    run: str  # the first run after the change
    date: str
    commit: str
    before: float
    after: float
    p_value: float
    direction: str  # better | worse (for the DBA: the feature costs less or more)
    expected: str  # why, where a change was marked expected; "" otherwise

    @property
    def change_pct(self) -> float:
        return (self.after / self.before - 1.0) * 100.0


def _direction(metric: str, before: float, after: float) -> str:
    """Better or worse for the DBA: the effect is arm / baseline on the claim's metric; where higher is better
    (TPS), a falling ratio means the feature costs more."""
    _, higher_is_better = unit(metric)
    up = after > before
    return ("better" if up else "worse") if higher_is_better else ("worse" if up else "better")


def changes(df: pd.DataFrame, root: Path | None = None) -> list[Change]:
    """Every change point of every series, with its direction and whether it was marked expected."""
    if not len(df):
        return []
    marks = expected_marks.load(root) if root is not None else []
    out = []
    for _, g in df.groupby(SERIES, sort=False):
        g = g.dropna(subset=["ratio"])
        if len(g) < 6:
            continue
        half = ((g["ci high"] - g["ci low"]) / 2).to_numpy(dtype=float)
        for cp in detect(g["ratio"].to_numpy(dtype=float), half):
            out.append(_change(g.iloc[cp.index], cp.before, cp.after, cp.p_value, marks))
    return out


NIGHT_ALPHA = 0.05  # the chance that a night whose reports all measure what their series did raises any alarm
MIN_PRIOR = 5  # reports of a series before its newest is judged against them


def newest_steps(df: pd.DataFrame, root: Path | None = None, alpha: float = NIGHT_ALPHA) -> list[Change]:
    """The newest report of each series against what the reports before it predict (a random-effects prediction
    interval: their pooled estimate, Paule-Mandel's tau, its own se; Higgins, Thompson & Spiegelhalter 2009), so a
    step is reported the night it lands. Every series judged on a night shares alpha (Bonferroni over them):
    a night of reports like their series raises an alarm at most that often. E-divisive (changes) locates
    older steps."""
    tested = [g for g in _by_series(df) if len(g) > MIN_PRIOR]
    marks = expected_marks.load(root) if root is not None else []
    out = []
    for g in tested:
        prior, new = g.iloc[:-1], g.iloc[-1]
        values, ses = prior["log estimate"].to_numpy(float), prior["se"].to_numpy(float)
        tau2 = paule_mandel(list(values), list(ses**2))
        w = 1 / (ses**2 + tau2)
        mean = float((w * values).sum() / w.sum())
        scale = math.sqrt(tau2 + 1 / w.sum() + float(new["se"]) ** 2)
        p = float(2 * stats.t.sf(abs(float(new["log estimate"]) - mean) / scale, len(prior) - 2))  # HTS: k - 2
        if p < alpha / len(tested):
            before, after = math.exp(mean), math.exp(float(new["log estimate"]))
            out.append(_change(new, before, after, p, marks))
    return out


def _by_series(df: pd.DataFrame) -> list[pd.DataFrame]:
    """Each series' reports with an estimate, oldest first."""
    if not len(df) or "log estimate" not in df:
        return []
    with_estimates = df.dropna(subset=["log estimate", "se"])
    return [g.sort_values(["date", "run"]) for _, g in with_estimates.groupby(SERIES, sort=False)]


def _change(row: pd.Series, before: float, after: float, p: float, marks: list) -> Change:
    return Change(
        str(row["study"]),
        str(row["claim id"]),
        str(row["claim"]),
        str(row["scale"]),
        str(row["target"]),
        str(row["server"]),
        str(row["speed class"]),
        str(row["run"]),
        str(row["started"])[:19],
        str(row["commit"]),
        before,
        after,
        p,
        _direction(str(row["metric"]), before, after),
        expected_marks.why(marks, str(row["study"]), str(row["claim id"]), str(row["target"]), row["run"]),
    )


_MARKERS, _LINES = ("o", "s", "^", "D", "v"), ("-", "--", ":", "-.", (0, (1, 3)))


def _style(i: int) -> dict:
    """A series' own colour, marker and line: ten colours alone gave the TLS history's eleventh and twelfth
    series the first two's look."""
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    turn = i // len(colours)
    return {
        "color": colours[i % len(colours)],
        "marker": _MARKERS[turn % len(_MARKERS)],
        "ls": _LINES[turn % len(_LINES)],
    }


def plot_png(df: pd.DataFrame, title: str, found: list[Change]) -> str | None:
    """Each series' ratio over the runs' dates with its interval, change points marked; a base64 PNG."""
    data = df.dropna(subset=["ratio", "ci low", "ci high", "date"]) if len(df) else df
    if not len(data):
        return None
    fig = history_figure(data, title, found)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")  # the legend below the axes included
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def history_figure(data: pd.DataFrame, title: str, found: list[Change]) -> Figure:
    """The history's figure: a line per series, each with a look of its own, and their legend below the axes."""
    matplotlib.use("Agg")
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for i, (key, g) in enumerate(data.groupby(SERIES, sort=False)):
        label = f"{key[0][:48]} ({key[1]})" + ("" if key[2] == EMBEDDED else f" @ {key[2]}")
        label += f", measured as of revision {key[-1]}" if key[-1] != 1 else ""
        yerr = [g["ratio"] - g["ci low"], g["ci high"] - g["ratio"]]
        ax.errorbar(g["date"], g["ratio"], yerr=yerr, capsize=3, label=label, **_style(i))
    for c in found:
        when = pd.to_datetime(c.date, utc=True, errors="coerce")
        if when is not pd.NaT:
            colour = "#888" if c.expected else ("#b00" if c.direction == "worse" else "#070")
            ax.axvline(when, color=colour, ls="--", lw=1)
    ax.axhline(1.0, color="grey", lw=1)
    ax.set(title=title, xlabel="run started (UTC)", ylabel="effect ratio (arm / baseline)")
    ax.set_yscale("log")
    readable_log(ax.yaxis)
    ax.grid(alpha=0.3)
    fig.autofmt_xdate()
    # below the axes, never over them: twelve series' labels inside hid the TLS history's upper lines
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.3), frameon=False, handlelength=3)
    return fig


def table_html(df: pd.DataFrame) -> str:
    cols = [
        "run",
        "started",
        "commit",
        "scale",
        "target",
        "claim",
        "verdict",
        "ratio",
        "ci low",
        "ci high",
        "server",
        "speed class",
    ]
    show = df[[c for c in cols if c in df]].copy()
    if "started" in show:  # to the minute, with a space to wrap at: the run's name holds the rest
        started = pd.to_datetime(show.pop("started"), utc=True, errors="coerce").dt.strftime("%Y-%m-%d %H:%M")
        show.insert(1, "started (UTC)", started.fillna(""))
    for c in ("ratio", "ci low", "ci high"):
        if c in show:
            show[c] = show[c].map(_shown)
    if "speed class" in show and "vcpu slowdown (x)" in df:  # one column of the machine's speed: A4 holds no more
        slow = df["vcpu slowdown (x)"].map(_shown)
        pairs = zip(show["speed class"], slow, strict=True)
        show["speed class"] = [f"{c}; vCPU {s}x its fastest" if s else c for c, s in pairs]
        show = show.rename(columns={"speed class": "machine speed"})
    if "run" in show:  # a run's name wraps after its separators (summary.breakable), every other cell escaped
        show["run"] = show["run"].map(summary.breakable)
    text = {c: (lambda v: str(html.escape(str(v)))) for c in show.columns if c != "run"}
    return show.to_html(index=False, escape=False, border=0, formatters=text)


def _shown(v: Any) -> str:
    return "" if v is None or v != v else significant(float(v), 3)


def section(root: Path, study: str, title: str, df: pd.DataFrame | None = None) -> str:
    """The index's history section of one study (empty when it has fewer than two runs with verdicts)."""
    df = collect(root, study) if df is None else df
    if not len(df) or df["run"].nunique() < 2:
        return ""
    found = changes(df, root)
    png = plot_png(df, f"{title}: effects across runs", found)
    img = (
        f"<img alt='{title}: each claim's effect across runs, by date' src='data:image/png;base64,{png}'>"
        if png
        else ""
    )
    return (
        f"<h3>History ({df['run'].nunique()} runs; {len(found)} change(s) detected)</h3>{img}"
        f"<details><summary>every claim in every run</summary>{table_html(df)}</details>"
    )


FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet would read a text cell as a formula by


def export_csv(df: pd.DataFrame, path: Path) -> Path:
    """The series as CSV (one row per run and claim), for a spreadsheet or another tool. Text cells come from
    run records (a target's or a run's name, a copied-in run's claim): one a spreadsheet would run as a formula
    is written with a leading apostrophe, numbers as they are."""
    cols = [c for c in df.columns if c != "date"]
    out = df[cols].copy()
    for c in out.columns:
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            out[c] = out[c].map(lambda v: f"'{v}" if isinstance(v, str) and v.startswith(FORMULA) else v)
    path.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(path, index=False)
    return path


def change_dicts(found: list[Change]) -> list[dict[str, Any]]:
    return [asdict(c) | {"change_pct": c.change_pct} for c in found]
