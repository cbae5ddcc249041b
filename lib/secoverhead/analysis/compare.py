"""The one comparison path (after benchstat's benchproc): from a table of runs to comparisons.

`compare_arms(runs, metric, baseline=..., by=[...])` groups runs into cells (one combination of the `by`
factors), compares every candidate arm with the baseline inside each cell, on run summaries, paired by round
where the rounds are complete. The comparisons made in one call are one family: their intervals are
Bonferroni-widened (confidence 1 - alpha / m) and their p-values Holm-adjusted, so whatever a claim reads from
one call holds together at the stated confidence. A claim asks for exactly the comparisons it rests on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from secoverhead.analysis.stats import (
    CONFIDENCE,
    DUET,
    NOISE,
    PAIRED,
    Comparison,
    RatioEstimate,
    change,
    holm,
    paired_difference,
    paired_ratio,
    welch_difference,
    welch_ratio,
)

Key = Any  # candidate name, or (candidate, *cell values) when grouping by factors


def _block_column(g: pd.DataFrame) -> str | None:
    """Runs are compared within blocks: the round (interleaved), or one duet of a round (both arms at once)."""
    return "block" if "block" in g else "round" if "round" in g else None


def _per_block(g: pd.DataFrame, metric: str) -> pd.Series:
    """One summary per block: where a run was repeated in its block (a run the noise monitor flagged, taken
    again), the mean of both. Both are kept: the re-take was chosen by the machine's noise, not by its value,
    but keeping only the second would let a stall the monitor happened to flag vanish from the comparison."""
    g = g[np.isfinite(g[metric].to_numpy(dtype=float))]
    key = _block_column(g)
    if key is None:
        return pd.Series(dtype=float)
    return g.groupby(key)[metric].mean()


def _common_blocks(base: pd.DataFrame, cand: pd.DataFrame, metric: str) -> tuple[pd.Series, pd.Series, pd.Index]:
    """Each arm's summary per block, and the blocks that hold both (what a paired comparison reads)."""
    b, c = _per_block(base, metric), _per_block(cand, metric)
    return b, c, b.index.intersection(c.index)


def estimate(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    metric: str,
    *,
    confidence: float,
    paired: bool | None,
    quantity: str = "ratio",
    between: tuple[float, float] | None = None,
) -> tuple[RatioEstimate, list[str]]:
    """Paired by round when possible (and not refused), else Welch (a ratio's taking in `between`, the sd of a
    level between reports and its degrees of freedom); warnings say what was left out."""
    paired_fn, unpaired_fn = (
        (paired_ratio, welch_ratio) if quantity == "ratio" else (paired_difference, welch_difference)
    )
    warnings: list[str] = []
    if paired is not False and _block_column(base) and _block_column(cand):
        b, c, common = _common_blocks(base, cand, metric)
        if len(common) >= 2:
            left = len(b) + len(c) - 2 * len(common)
            if left:
                warnings.append(f"{left} run(s) without a partner in their round left out of the pairing")
            est = paired_fn(b[common].to_numpy(), c[common].to_numpy(), confidence=confidence)
            if any(":" in str(k) for k in common):  # duet blocks: "round:candidate:cell"
                est.design = DUET
            if est.zeros:
                warnings.append(f"{est.zeros} round(s) with zero {metric} in one arm: a total loss, in the interval")
            return est, warnings
        if paired:
            warnings.append("fewer than 2 rounds hold both arms: unpaired comparison")
    spread = {"between_sd": between[0], "between_df": between[1]} if between and quantity == "ratio" else {}
    return unpaired_fn(base[metric], cand[metric], confidence=confidence, **spread), warnings


def per_round(runs: pd.DataFrame, metric: str, arms: Sequence[str]) -> pd.DataFrame:
    """Rounds x arms of one metric (one summary per block, _per_block), complete rounds only: for statistics of several
    arms at once, computed within each round."""
    if not len(runs) or metric not in runs:
        return pd.DataFrame(columns=list(arms))
    cols = {a: _per_block(runs[runs["arm"] == a], metric) for a in arms}
    return pd.DataFrame(cols).dropna()


def block_log_ratios(runs: pd.DataFrame, metric: str, baseline: str, candidate: str) -> np.ndarray:
    """log(candidate / baseline) within each block (round or duet) that holds both arms."""
    if not len(runs) or metric not in runs:
        return np.array([])
    b = _per_block(runs[runs["arm"] == baseline], metric)
    c = _per_block(runs[runs["arm"] == candidate], metric)
    common = b.index.intersection(c.index)
    ratio = (c[common] / b[common]).to_numpy(dtype=float)
    return np.log(ratio[np.isfinite(ratio) & (ratio > 0)])  # a noise floor: a total loss has no log (claims keep it)


@dataclass(frozen=True)
class Settings:
    """How a comparison is made and read, bundled (as benchmath bundles its thresholds) so that adding one adds
    no argument. family: how many comparisons share the error budget (default: the ones made in one call).
    quantity: "ratio" (candidate / baseline) or "difference" (candidate - baseline, for percentage points).
    between: a cell's between-run sd of the log and its degrees of freedom (or None), where the arms' runs come from
    reports of their own (stats.welch_ratio takes it in; ratios, unpaired)."""

    higher_is_better: bool = False
    confidence: float = CONFIDENCE
    family: int | None = None
    noise: float = NOISE
    paired: bool | None = None
    quantity: str = "ratio"
    between: Callable[[dict], tuple[float, float] | None] | None = None


def compare_arms(
    runs: pd.DataFrame,
    metric: str,
    *,
    baseline: str,
    candidates: Sequence[str] | None = None,
    by: Sequence[str] = (),
    **settings: Any,
) -> dict[Key, Comparison]:
    """Every candidate against baseline on metric, per cell of `by`; `settings` are Settings' fields. One
    family: intervals Bonferroni-widened, p-values Holm-adjusted."""
    s = Settings(**settings)
    if runs is None or not len(runs) or metric not in runs:
        return {}
    planned = _planned(runs, baseline, candidates, by)
    m = s.family or len(planned) or 1
    level = 1.0 - (1.0 - s.confidence) / m
    out = {key: _comparison(metric, base, cand, cell, level, m, s) for key, cell, base, cand in planned}
    if len(out) > 1:
        for c, p in zip(out.values(), holm([c.p_value for c in out.values()]), strict=True):
            c.p_value = float(p)
            c.test += ", Holm-adjusted"
    return out


def _planned(
    runs: pd.DataFrame, baseline: str, candidates: Sequence[str] | None, by: Sequence[str]
) -> list[tuple[Key, dict, pd.DataFrame, pd.DataFrame]]:
    """(key, cell, baseline's runs, candidate's runs) for every candidate in every cell holding both."""
    arms = list(candidates) if candidates is not None else [a for a in dict.fromkeys(runs["arm"]) if a != baseline]
    groups = runs.groupby(list(by), sort=False) if by else [((), runs)]
    planned = []
    for cell_key, g in groups:
        cell_key = cell_key if isinstance(cell_key, tuple) else (cell_key,)
        cell = dict(zip(by, (v.item() if hasattr(v, "item") else v for v in cell_key), strict=True))
        base = g[g["arm"] == baseline]
        for arm in arms:
            cand = g[g["arm"] == arm]
            if len(base) and len(cand):
                planned.append(((arm, *cell.values()) if by else arm, cell, base, cand))
    return planned


def _comparison(
    metric: str, base: pd.DataFrame, cand: pd.DataFrame, cell: dict, level: float, family: int, s: Settings
) -> Comparison:
    """One candidate against the baseline in one cell, at the family's confidence `level`."""
    between = s.between(cell) if s.between else None
    est, warnings = estimate(base, cand, metric, confidence=level, paired=s.paired, quantity=s.quantity,
                             between=between)  # fmt: skip
    bv, cv = base[metric].to_numpy(dtype=float), cand[metric].to_numpy(dtype=float)
    # Paired: medians of the blocks compared, not of every run. A baseline run of another candidate's duet,
    # or of a round this arm no longer ran in, is not this comparison's (audit: medians 714 -> 633 beside a
    # paired ratio of 0.984, the baseline's taken over duets with four other arms).
    mb, mc = bv, cv
    if est.design in (PAIRED, DUET):
        b, c, common = _common_blocks(base, cand, metric)
        mb, mc = b[common].to_numpy(dtype=float), c[common].to_numpy(dtype=float)
    if est.n < 2:
        warnings.append("fewer than 2 runs (or rounds) per arm: nothing can be decided")
    shift = 0 if s.quantity == "ratio" else 1  # a difference is read for change as the ratio 1 + d
    return Comparison(
        metric=metric,
        baseline=str(base["arm"].iloc[0]),
        candidate=str(cand["arm"].iloc[0]),
        cell=cell,
        baseline_median=float(np.nanmedian(mb)) if len(mb) else float("nan"),
        candidate_median=float(np.nanmedian(mc)) if len(mc) else float("nan"),
        ratio=est.ratio,
        ci_low=est.ci_low,
        ci_high=est.ci_high,
        confidence=level,
        p_value=est.p_value,
        change=change(shift + est.ratio, shift + est.ci_low, shift + est.ci_high, noise=s.noise,
                      higher_is_better=s.higher_is_better),
        n_baseline=int(np.isfinite(bv).sum()),
        n_candidate=int(np.isfinite(cv).sum()),
        n_pairs=est.n if est.design in (PAIRED, DUET) else 0,
        design=est.design,
        test=est.test,
        ci_method=est.ci_method,
        higher_is_better=s.higher_is_better,
        noise=s.noise,
        family=family,
        quantity=s.quantity,
        warnings=warnings,
    )  # fmt: skip


def table(comparisons: dict[Key, Comparison], *, unit: str = "") -> pd.DataFrame:
    """One row per comparison, benchstat-style: medians, ratio with CI, p, change, n as runs or rounds."""
    rows = []
    for key, c in comparisons.items():
        label = key if isinstance(key, str) else " / ".join(map(str, key))
        u = f" ({unit})" if unit else ""
        rows.append(
            {
                "comparison": f"{label} vs {c.baseline}",
                "metric": c.metric,
                f"baseline median{u}": c.baseline_median,
                f"candidate median{u}": c.candidate_median,
                "change %": round(c.change_pct, 1) if np.isfinite(c.ratio) else np.nan,
                "CI of ratio": f"{c.ci_low:.3f} - {c.ci_high:.3f} ({c.confidence * 100:.3g} %)",
                "p": float(f"{c.p_value:.2g}") if np.isfinite(c.p_value) else np.nan,
                "change": str(c.change),
                "n": c.n_text,
                "design": c.design,
                "warnings": "; ".join(c.warnings),
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Contrast:
    """The candidate's effect (candidate / baseline) at one level of a factor against its effect at another."""

    baseline: str
    candidate: str
    factor: str
    level: Any
    reference: Any

    def logs(self, runs: pd.DataFrame, metric: str, by: Sequence[str]) -> list[tuple[dict, pd.Series, pd.Series]]:
        """Per cell of `by`: the candidate/baseline ratio at `level` and at `reference`, each indexed by round
        (the rounds holding both levels)."""
        if runs is None or not len(runs) or metric not in runs or "round" not in runs:
            return []
        groups = runs.groupby(list(by), sort=False) if by else [((), runs)]
        out = []
        for cell_key, g in groups:
            cell_key = cell_key if isinstance(cell_key, tuple) else (cell_key,)
            cell = dict(zip(by, (v.item() if hasattr(v, "item") else v for v in cell_key), strict=True))
            ratios = {
                lv: _ratios_by_round(g[g[self.factor] == lv], metric, self.baseline, self.candidate)
                for lv in (self.level, self.reference)
            }
            common = ratios[self.level].index.intersection(ratios[self.reference].index)
            if len(common):
                out.append((cell, ratios[self.level][common], ratios[self.reference][common]))
        return out

    def comparison(
        self,
        cell: dict,
        at_level: np.ndarray,
        at_ref: np.ndarray,
        *,
        metric: str,
        confidence: float,
        family: int,
        test: str = "paired t test on per-round log ratios of ratios",
    ) -> Comparison:
        est = paired_ratio(at_ref, at_level, confidence=confidence)
        return Comparison(
            metric=metric,
            baseline=f"{self.candidate}/{self.baseline} at {self.reference}",
            candidate=f"{self.candidate}/{self.baseline} at {self.level}",
            cell=cell,
            baseline_median=float(np.median(at_ref)),
            candidate_median=float(np.median(at_level)),
            ratio=est.ratio,
            ci_low=est.ci_low,
            ci_high=est.ci_high,
            confidence=est.confidence,
            p_value=est.p_value,
            change=change(est.ratio, est.ci_low, est.ci_high),
            n_baseline=len(at_ref),
            n_candidate=len(at_level),
            n_pairs=est.n,
            design=PAIRED,
            test=test,
            ci_method=est.ci_method,
            family=family,
        )


def interaction(
    runs: pd.DataFrame,
    metric: str,
    *,
    by: Sequence[str] = (),
    confidence: float = CONFIDENCE,
    family: int | None = None,
    **contrast: Any,
) -> dict[Key, Comparison]:
    """Does the candidate's effect differ between two levels of a factor (`contrast`: Contrast's fields)? Per
    round, log(candidate/baseline) at `level` minus the same at `reference` (a ratio of ratios), paired by round,
    per cell of `by`. ratio < 1: the candidate loses more at `level` than at `reference` (higher is better)."""
    c = Contrast(**contrast)
    planned = c.logs(runs, metric, by)
    m = family or len(planned) or 1
    name = f"{c.level} vs {c.reference}"
    out: dict[Key, Comparison] = {}
    for cell, at_level, at_ref in planned:
        out[(name, *cell.values()) if by else name] = c.comparison(
            {**cell, c.factor: name},
            at_level.to_numpy(),
            at_ref.to_numpy(),
            metric=metric,
            confidence=1.0 - (1.0 - confidence) / m,
            family=m,
        )
    return out


def combined_interaction(
    runs: pd.DataFrame,
    metric: str,
    *,
    baseline: str,
    candidate: str,
    factor: str,
    pairs: Sequence[tuple[Any, Any]],
    over: Sequence[str] = (),
    confidence: float = CONFIDENCE,
) -> Comparison | None:
    """One comparison for "the candidate's effect is larger at these levels than at those": per round, the mean
    over every (level, reference) pair and every cell of `over` of the log ratio of ratios, then a paired t
    test over rounds (rounds missing any of them are left out). One family member instead of one per cell:
    a claim about the levels, not about each cell, gets the precision of all of them."""
    series = []
    for level, reference in pairs:
        contrast = Contrast(baseline, candidate, factor, level, reference)
        for _, at_level, at_ref in contrast.logs(runs, metric, over):
            series.append(np.log(at_level) - np.log(at_ref))
    if not series:
        return None
    d = pd.concat(series, axis=1).dropna().mean(axis=1)
    levels = " / ".join(dict.fromkeys(str(lv) for lv, _ in pairs))
    refs = " / ".join(dict.fromkeys(str(r) for _, r in pairs))
    return Contrast(baseline, candidate, factor, levels, refs).comparison(
        {factor: f"{levels} vs {refs}", **({o: "combined" for o in over})},
        np.exp(d.to_numpy()),
        np.ones(len(d)),
        metric=metric,
        confidence=confidence,
        family=1,
        test=f"paired t test on per-round log ratios of ratios, averaged over {', '.join(over) or 'pairs'}",
    )


def _ratios_by_round(runs: pd.DataFrame, metric: str, baseline: str, arm: str) -> pd.Series:
    """arm / baseline within each block that holds both, indexed by the block's round."""
    b = _per_block(runs[runs["arm"] == baseline], metric)
    c = _per_block(runs[runs["arm"] == arm], metric)
    common = b.index.intersection(c.index)
    ratio = (c[common] / b[common]).where(lambda s: s > 0).dropna()
    if _block_column(runs) == "block":
        rounds = runs.groupby("block")["round"].first()
        ratio.index = rounds.reindex(ratio.index).to_numpy()
        ratio = ratio.groupby(level=0).last()
    return ratio


def relative(
    runs: pd.DataFrame,
    metric: str,
    *,
    baseline: str,
    candidates: Sequence[str],
    reference: str,
    higher_is_better: bool = False,
    confidence: float = CONFIDENCE,
    family: int | None = None,
) -> dict[str, Comparison]:
    """Each candidate against a reference arm that is not the baseline, through the baseline: per round,
    (candidate / baseline) / (reference / baseline). In a duet design the two never ran together, but each ran
    beside the baseline, so this keeps what the duets cancel; interleaved, it equals candidate / reference."""
    ref = _ratios_by_round(runs, metric, baseline, reference)
    planned = [(c, _ratios_by_round(runs, metric, baseline, c)) for c in candidates]
    m = family or len(planned) or 1
    level = 1.0 - (1.0 - confidence) / m
    out: dict[str, Comparison] = {}
    for cand, series in planned:
        common = ref.index.intersection(series.index)
        if not len(common):
            continue
        est = paired_ratio(ref[common].to_numpy(), series[common].to_numpy(), confidence=level)
        rr, rc = runs[runs["arm"] == reference][metric], runs[runs["arm"] == cand][metric]
        out[cand] = Comparison(
            metric=metric,
            baseline=reference,
            candidate=cand,
            cell={},
            baseline_median=float(rr.median()),
            candidate_median=float(rc.median()),
            ratio=est.ratio,
            ci_low=est.ci_low,
            ci_high=est.ci_high,
            confidence=level,
            p_value=est.p_value,
            change=change(est.ratio, est.ci_low, est.ci_high, higher_is_better=higher_is_better),
            n_baseline=len(rr),
            n_candidate=len(rc),
            n_pairs=est.n,
            design=f"through {baseline}, paired by round",
            test="paired t test on per-round log ratios of ratios",
            ci_method=est.ci_method,
            higher_is_better=higher_is_better,
            family=m,
        )
    return out
