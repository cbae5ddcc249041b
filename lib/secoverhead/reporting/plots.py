"""Plots a DBA looks at rather than reads. Each function returns a figure; `report.show(fig, caption)` displays it
with its one-line caption and closes it (notebooks never reach for matplotlib themselves)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
import seaborn as sns


def overlaps(fig, tolerance_px: float = 1.0) -> list[str]:
    """Pairs of visible, non-empty texts of a drawn figure (titles, axis and tick labels, legends, annotations)
    whose boxes overlap by more than `tolerance_px` each way: labels a reader cannot read."""
    fig.canvas.draw()  # at the figure's own dpi: every extent from one drawing
    renderer = fig.canvas.get_renderer()
    ticks, shown = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks |= {id(tick.label1), id(tick.label2)}
            lo, hi = sorted(axis.get_view_interval())
            at = 0 if axis is ax.xaxis else 1  # a tick label's position along its axis is its tick's
            shown += [t for t in axis.get_ticklabels(which="both") if lo <= t.get_position()[at] <= hi]
    texts = [t for t in fig.findobj(matplotlib.text.Text) if id(t) not in ticks] + shown
    boxes = [(t.get_text().strip(), t.get_window_extent(renderer)) for t in texts
             if t.get_visible() and t.get_text().strip()]  # fmt: skip
    out = []
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1 :]:
            w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
            h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
            if w > tolerance_px and h > tolerance_px:
                out.append(f"{a[:40]!r} / {b[:40]!r}")
    return out


def title_of(fig) -> str:
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    return (fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else "") or (titles[0] if titles else "")


# One colour per arm (or any group a picture names) across a report: assigned the first time a name is drawn in
# this kernel, so "TLS" is the same colour in every figure of the study.
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
_COLOURS: dict[str, str] = {}


def colour_of(name: object) -> str:
    key = str(name)
    if key not in _COLOURS:
        _COLOURS[key] = _PALETTE[len(_COLOURS) % len(_PALETTE)]
    return _COLOURS[key]


def ecdf(samples: pd.DataFrame, value: str, by: str, *, title: str, xlabel: str, log: bool = False):
    """ECDF of value per group: the whole distribution, tails included (a picture; runs are the unit of n)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, g in samples.groupby(by, sort=True):
        x = np.sort(g[value].dropna().to_numpy())
        if len(x):
            ax.step(
                x,
                np.arange(1, len(x) + 1) / len(x),
                where="post",
                label=f"{name} ({len(x)} samples)",
                color=colour_of(name),
            )
    ax.set(title=title, xlabel=xlabel, ylabel="fraction of samples <= x")
    if log:
        ax.set_xscale("log")
        readable_log(ax.xaxis)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def readable_log(axis) -> None:
    """A log axis in plain numbers (1.2, 2, 10), never 9.8x10^-1, its ticks where a reader needs them (LogTicks);
    minor ticks unlabelled (labelled, they collide: 3x10^-1 / 4x10^-1)."""
    axis.set_major_locator(LogTicks())
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


class LogTicks(matplotlib.ticker.Locator):
    """1, 2 and 5 of each decade where a log axis spans more than 4x; evenly spaced round numbers where it spans
    less (a set-up ratio between 0.9 and 1.9 had no tick between 1 and 2)."""

    def __call__(self):
        return self.tick_values(*self.axis.get_view_interval())

    def tick_values(self, vmin: float, vmax: float):
        lo, hi = sorted((vmin, vmax))
        if lo <= 0 or hi > 4 * lo:
            return matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)).tick_values(lo, hi)
        ticks = matplotlib.ticker.MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
        return ticks[ticks > 0]


def paired_rounds(ratios: pd.DataFrame, *, title: str, ylabel: str, line: float | None = None):
    """Each round's ratio of an arm to its baseline (columns: arms; rows: rounds), the two measured in the same
    round: the paired picture of what a comparison reads, round by round, on a log axis around 1."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ratios = ratios.set_axis(pd.to_numeric(ratios.index, errors="coerce")).sort_index()  # round 10 after 9
    for arm in ratios.columns:
        y = ratios[arm].dropna()
        ax.plot(y.index, y.to_numpy(), marker="o", lw=1, label=str(arm), color=colour_of(arm))
    ax.axhline(1.0, color="grey", lw=1)
    if line is not None:
        ax.axhline(line, color="#555", lw=1, ls="--", label=f"the claim's line ({line:g}×)")
    ax.set_yscale("log")
    readable_log(ax.yaxis)
    values = [v for v in ratios.to_numpy(dtype=float).ravel() if np.isfinite(v) and v > 0] + [1.0, line or 1.0]
    ax.set_ylim(min(values) / 1.15, max(values) * 1.15)  # room above the top tick for its label below the title
    ax.set(title=title, xlabel="round", ylabel=ylabel)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # round 2, never round 1.25
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def bar_with_ci(
    table: pd.DataFrame, *, x: str, y: str, lo: str, hi: str, title: str, ylabel: str, hue: str | None = None
):
    """Medians as horizontal bars with their CI as error bars: one row per label, so long arm names never
    collide (`ylabel` names the value axis, which runs across)."""
    labels = list(dict.fromkeys(table[x]))
    groups = [(None, table)] if hue is None else list(table.groupby(hue, sort=False))
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(labels) * len(groups) + 1.4))
    height = 0.8 / len(groups)
    for i, (name, g) in enumerate(groups):
        g = g.set_index(x).reindex(labels)
        pos = np.arange(len(labels)) + i * height - 0.4 + height / 2
        err = np.vstack([g[y] - g[lo], g[hi] - g[y]]).clip(min=0)
        colours = [colour_of(v) for v in labels] if hue is None else colour_of(name)
        ax.barh(pos, g[y], height, xerr=err, capsize=3, label=name, color=colours)
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.invert_yaxis()  # the first label on top, as a table reads
    ax.set(title=title, xlabel=ylabel)
    if hue is not None:
        ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def lines(
    table: pd.DataFrame,
    *,
    x: str,
    y: str,
    hue: str,
    title: str,
    ylabel: str,
    band: bool = False,
    logx: bool = False,
):
    """A metric over a factor (threads, concurrency), one line per arm, with its interval as a band when `band`
    (the columns `<y>_ci_low` and `<y>_ci_high`); a factor measured at one level only is bars (a line through one
    point says nothing)."""
    lo, hi = (f"{y}_ci_low", f"{y}_ci_high") if band else (None, None)
    if table[x].nunique() < 2 and lo and hi:
        return bar_with_ci(table, x=hue, y=y, lo=lo, hi=hi, title=f"{title} ({x} {table[x].iloc[0]})", ylabel=ylabel)
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, g in table.groupby(hue, sort=False):
        g = g.sort_values(x)
        ax.plot(g[x], g[y], marker="o", label=str(name), color=colour_of(name))
        if lo and hi:
            ax.fill_between(g[x], g[lo], g[hi], alpha=0.15, color=colour_of(name))
    ax.set(title=title, ylabel=ylabel, xlabel=x)
    if logx:
        ax.set_xscale("log", base=2)
        levels = sorted(table[x].unique())
        ax.set_xticks(levels, [f"{v:g}" for v in levels])  # the levels measured, not overlapping powers
        ax.minorticks_off()
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def stacked_bar(
    table: pd.DataFrame,
    *,
    x: str,
    parts: Sequence[str],
    labels: Sequence[str],
    title: str,
    ylabel: str,
    boundary: tuple[str, str] | None = None,
):
    """One horizontal bar per row of table, split into parts (e.g. user and system CPU); `ylabel` names the
    value axis, which runs across. `boundary`: two columns, the low and high ends of where the first part ends
    (a sampled split's interval), drawn as a whisker across that edge."""
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(table) + 1.4))
    left = np.zeros(len(table))
    names = table[x].astype(str).tolist()
    for col, label in zip(parts, labels, strict=True):
        vals = table[col].to_numpy(dtype=float)
        ax.barh(names, vals, left=left, label=label)
        left += np.nan_to_num(vals)
    if boundary is not None:
        edge = table[parts[0]].to_numpy(dtype=float)
        lo, hi = (table[c].to_numpy(dtype=float) for c in boundary)
        ax.errorbar(edge, names, xerr=[edge - lo, hi - edge], fmt="none", ecolor="black", capsize=3, lw=1)
    ax.invert_yaxis()
    ax.set(title=title, xlabel=ylabel)
    ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
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

    grid = table.pivot_table(index=index, columns=columns, values=values, aggfunc="median")
    fig, ax = plt.subplots(figsize=(1.2 * max(4, grid.shape[1]) + 2, 0.6 * max(3, grid.shape[0]) + 1.5))
    # a colour bar over values that are nearly all one (every cell at 99.99 %) would print its ticks as offsets
    # from "+9.999e1": plain numbers only
    plain = matplotlib.ticker.ScalarFormatter(useOffset=False)
    plain.set_scientific(False)
    colour_bar = {"label": label, "format": plain}
    sns.heatmap(grid, annot=True, fmt=fmt, cmap="RdBu_r", center=center, ax=ax, cbar_kws=colour_bar)
    ax.set(title=title)
    fig.tight_layout()
    return fig


def ratios(
    comparisons: dict, *, title: str, xlabel: str = "ratio candidate / baseline", threshold: float | None = None
):
    """Each comparison's ratio with its interval, against 1 (and a claim's threshold): a forest plot."""
    items = list(comparisons.items())
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(items) + 1.5))
    for i, (_, c) in enumerate(items):
        ax.errorbar(c.ratio, i, xerr=[[max(c.ratio - c.ci_low, 0)], [max(c.ci_high - c.ratio, 0)]], fmt="o", capsize=3)
    ax.set_yticks(range(len(items)), [k if isinstance(k, str) else " / ".join(map(str, k)) for k, _ in items])
    ax.axvline(1.0, color="grey", lw=1)
    if threshold is not None:
        ax.axvline(threshold, color="tab:red", lw=1, ls="--", label=f"claim's threshold {threshold:g}")
        ax.legend(fontsize=8)
    ax.set(title=title, xlabel=xlabel)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
