"""Claims judged on a part's runs: preconditions checked on the environment and the baseline arm, one-off duets
as a sensitivity check, Holm over a study's claims."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.claimcheck import screen
from secoverhead.analysis.preconditions import ARM_COMPONENTS
from secoverhead.analysis.verdicts import Verdict
from secoverhead.core import paths
from secoverhead.core.units import p_text
from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.servers.builds import build_note

if TYPE_CHECKING:
    from secoverhead.analysis.verdicts import ClaimVerdict

Judge = Callable[[pd.DataFrame, float], "list[ClaimVerdict]"]
# A claim not testable here is described, not judged: what the run measured, at 95 %, never at the level a look
# of the sequential design spent (99.94 % at the first of three looks)
DESCRIBED_ALPHA = 0.05
# (part name, the baseline arm's runs alone) -> conditions a precondition may read (analysis/preconditions.py)
BaselineConditions = Callable[[str, pd.DataFrame], dict[str, Any]]
# (part name, the baseline arm's runs, the other arms' runs cut to ARM_COMPONENTS) -> conditions
ComponentConditions = Callable[[str, pd.DataFrame, pd.DataFrame], dict[str, Any]]


def conditions(
    part: str,
    arms: Sequence[str],
    environment: Mapping[str, Any],
    runs: pd.DataFrame,
    baseline: BaselineConditions | None,
    components: ComponentConditions | None = None,
) -> dict[str, Any]:
    """What the preconditions read: the environment's conditions, those of the baseline arm (arms[0]), which is
    handed its own runs only, and those of the other arms' mechanisms, handed their ARM_COMPONENTS columns only:
    no precondition can read the compared arms' difference."""
    if runs is None:
        runs = pd.DataFrame()
    has_arms = len(runs) and "arm" in runs and arms
    own = runs[runs["arm"] == arms[0]] if has_arms else runs.iloc[0:0]
    held = {**environment, **(baseline(part, own) if baseline is not None else {})}
    if components is not None:
        others = runs[runs["arm"] != arms[0]] if has_arms else runs.iloc[0:0]
        held |= components(part, own, others[[c for c in ("arm", "round", *ARM_COMPONENTS) if c in others]])
    return held


def screened(
    judge: Judge,
    part: str,
    arms: Sequence[str],
    environment: Mapping[str, Any],
    baseline: BaselineConditions | None,
    components: ComponentConditions | None = None,
) -> Judge:
    """The judge whose verdicts are screened by their claims' preconditions (claimcheck.screen)."""

    def judge_screened(runs: pd.DataFrame, alpha: float) -> list[ClaimVerdict]:
        held = conditions(part, arms, environment, runs, baseline, components)
        verdicts = screen(judge(runs, alpha), held)
        if alpha >= DESCRIBED_ALPHA or all(v.verdict != Verdict.NOT_TESTABLE for v in verdicts):
            return verdicts
        described = {v.id: v for v in screen(judge(runs, DESCRIBED_ALPHA), held)}
        return [described.get(v.id, v) if v.verdict == Verdict.NOT_TESTABLE else v for v in verdicts]

    return judge_screened


def judged(part: Part, judge: Judge, runs: pd.DataFrame | None = None) -> list[ClaimVerdict]:
    """The part's claims on all its runs (`runs`, when the caller has read them already): the verdicts. Where
    duets were recorded as one-offs (outliers.py), each verdict carries what the same rule gives without them,
    labelled as a sensitivity check: it never decides."""
    runs = part.runs() if runs is None else runs
    verdicts = judge(runs, part.alpha)
    meta = part.metadata()
    strays = meta.get("outlier_duets") or []
    for v in verdicts:
        v.episodes = episodes(v, strays, recorded=bool(meta.get("outlier_watch")) or bool(strays))
    blocks = {d.get("block") for d in strays}
    if not verdicts or not blocks or "block" not in runs:
        return verdicts
    without = {v.id: v for v in judge(runs[~runs["block"].isin(blocks)], part.alpha)}
    fell = ", ".join(sorted({str(d.get("low_arm")) for d in strays}))
    for v in verdicts:
        if v.id in without:
            v.sensitivity = (
                f"without the {len(blocks)} one-off duet(s) (metric fell in: {fell}): {without[v.id].verdict} "
                "(a check, not the verdict)"
            )
    return verdicts


def episodes(v: ClaimVerdict, strays: Sequence[Mapping[str, Any]], *, recorded: bool) -> str:
    """What a verdict says of rare stalls: the one-off duets recorded in its arms, how many fell in the
    candidate, and the exact binomial test of a split toward it (one-sided, half and half under no difference).
    A claim that a feature costs little (registry: bounds_cost) says so even when none was recorded: its verdict
    judges the typical run, not how often the candidate stalls."""
    reg = v.registered
    if not reg or v.verdict == Verdict.NOT_TESTABLE:
        return ""
    bounds_cost = registry.get(reg["study"], reg["id"]).bounds_cost
    arms = {str(n.get("arm")) for n in v.needs}
    mine = [d for d in strays if not arms or {_worse(d)} <= arms]
    if not mine:
        if not bounds_cost:
            return ""
        return (
            "judges the typical run: "
            + ("no one-off duet was recorded in its arms" if recorded else "this design records no one-off runs")
            + ", so a rare stall that belongs to one arm is neither counted nor bounded here"
        )
    baseline = str(v.needs[0].get("arm")) if v.needs else ""
    k, n = sum(_worse(d) != baseline for d in mine), len(mine)
    split = (
        f"{n} one-off duet(s) recorded in its arms, {k} of them fell in the candidate (exact binomial toward the "
        f"candidate, one-sided {p_text(binomial_tail(k, n))})"
    )
    if not bounds_cost:
        return split
    return f"judges the typical run: {split}; how often the candidate stalls is not bounded by this verdict"


def _worse(d: Mapping[str, Any]) -> str:
    """The arm a one-off duet went the bad way in (records before worse_arm: the one whose metric fell)."""
    return str(d.get("worse_arm", d.get("low_arm")))


def binomial_tail(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2): how surprising k of n stalls in one arm would be were stalls blind
    to the arm."""
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n if n else 1.0


def study_verdicts(
    result: StudyResult,
    judge_of: Callable[[Part], Judge | None],
    baseline: BaselineConditions | None = None,
    components: ComponentConditions | None = None,
) -> list[ClaimVerdict]:
    """Every claim of the study, each part judged by judge_of(part) (None: the part has no claims), its
    preconditions checked on the environment the part recorded, on `baseline` (the baseline arm's conditions) and
    on `components` (the other arms' mechanisms against the baseline's rate).
    With claim_errors=holm, Holm's step-down over the study's testable claims: with k claims still undecided,
    each is judged at alpha/k (alpha: its part's final alpha); those decided leave, and the rest are judged again
    at alpha over the claims still left, until none more decides. A claim is decided at the first level where
    its rule decides, which is Holm's procedure on the level at which each claim first decides. A claim not
    testable here makes no test and is not in the family."""
    pairs = [
        (
            part,
            screened(j, part.name, part.arms, part.metadata().get("conditions") or {}, baseline, components),
            part.runs(),
        )
        for part in result
        if (j := judge_of(part)) is not None
    ]  # runs read once
    first = {(part.name, v.id): v for part, j, runs in pairs for v in judged(part, j, runs)}
    if result.params.claim_errors != "holm" or not first:
        return with_servers(first, [part for part, _, _ in pairs])
    untestable = {key for key, v in first.items() if v.verdict == Verdict.NOT_TESTABLE}
    m, settled = len(first) - len(untestable), {}
    latest: dict[tuple[str, str], ClaimVerdict] = {}
    while len(settled) < m:
        k = m - len(settled)
        latest = {(part.name, v.id): v for part, j, runs in pairs for v in j(runs, part.alpha / k)}
        newly = {key: v for key, v in latest.items() if key not in settled and key not in untestable and v.decided}
        if not newly:
            break
        for v in newly.values():
            v.evidence += f" [Holm over the study's {m} claims: decided at alpha/{k}]"
        settled |= newly
    out = {}
    for key, v in first.items():
        if key in untestable:
            out[key] = v
            continue
        w = settled.get(key) or latest.get(key) or v
        if key not in settled:
            w.evidence += f" [Holm over the study's {m} claims: undecided at alpha/{m - len(settled)}]"
        w.sensitivity = v.sensitivity
        out[key] = w
    return with_servers(out, [part for part, _, _ in pairs])


def with_servers(verdicts: Mapping[tuple[str, str], ClaimVerdict], parts: Sequence[Part]) -> list[ClaimVerdict]:
    """Each verdict with its part and the server build that part ran on: every number names its server (and, where
    its rule says nothing of the engine, what the build is)."""
    by_name = {part.name: part for part in parts}
    for (part, _), v in verdicts.items():
        v.part, v.server = part, by_name[part].server
        v.engine_note = v.engine_note or build_note(v.server)
    return list(verdicts.values())


def published(study: str) -> pd.DataFrame:
    """The original study's figures, one row per figure, with units and sources."""

    return pd.read_csv(paths.PUBLISHED / f"{study}.csv")
