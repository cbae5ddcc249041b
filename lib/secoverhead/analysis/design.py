"""Experiment design: plans that can decide, within a budget.

Sequential rounds. An experiment runs rounds until every claim is decided or the budget ends, looking at the
data at a fixed number of planned points (looks) and never between them. Each look k spends part alpha_k of
the error budget alpha (alpha_1 + ... + alpha_K = alpha): the intervals read at look k have confidence
1 - alpha_k (widened further over the comparisons a claim rests on). By the union bound the chance that any
interval at any look misses the truth stays below alpha, whatever the looks' correlation, so stopping as soon
as the intervals decide keeps the false-positive rate <= alpha (simulated in the tests). That rate is per
claim: each of a study's claims spends its own alpha, with no correction across the claims. The spending is
alpha_k = alpha * ((k/K)^s - ((k-1)/K)^s), little early and most at the end; s = 2 by default (between
Pocock's flat and O'Brien-Fleming's steep shapes): a large effect still stops at the first look, a small one
gets the precision of the last. A study whose effects sit near their thresholds, and whose first looks never
decide, keeps more for the last look with a steeper s (the `spending` parameter; TDE's and audit's quick
plans use 4).

Feasibility. Before running, each claim's needed precision (how close to its threshold an interval must
get) is compared with the minimum detectable ratio of the plan at the final look, given the noise prior of
the claim's metric (the run-to-run coefficient of variation measured by A/A runs on these machines). A plan
that cannot decide is said to be so, and the rounds it would need are reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ALPHA = 0.05
SPENDING_POWER = 2.0


@dataclass(frozen=True)
class Looks:
    """Rounds (measured, warm-ups not counted) after which claims are evaluated, and the alpha each spends."""

    rounds: tuple[int, ...]
    alphas: tuple[float, ...]

    def alpha_at(self, index: int) -> float:
        return self.alphas[min(index, len(self.alphas) - 1)]

    def index_for(self, rounds_done: int) -> int:
        """The look that an evaluation after rounds_done rounds spends: the first planned look not below it."""
        for i, r in enumerate(self.rounds):
            if rounds_done <= r:
                return i
        return len(self.rounds) - 1

    def as_dict(self) -> dict:
        return {"rounds": list(self.rounds), "alphas": [round(a, 6) for a in self.alphas]}


def t_quantile(df: float, q: float) -> float:
    """Student's t quantile, imported when a plan is computed: importing a study (the CLI does) stays light."""
    # deferred: studies import this; the CLI checks their parameters before heavy modules load
    from secoverhead.analysis.stats import t_quantile as tq

    return tq(df, q)


def schedule(
    min_rounds: int, max_rounds: int, looks: int = 3, *, alpha: float = ALPHA, power: float = SPENDING_POWER
) -> Looks:
    """Looks evenly spread from min_rounds to max_rounds (at most `looks` of them, distinct); look k of K has
    spent alpha * (k/K)^power by its end."""
    if not 2 <= min_rounds <= max_rounds:
        raise ValueError("need 2 <= min_rounds <= max_rounds")
    if not power > 0:
        raise ValueError("need power > 0")
    k = max(1, min(looks, max_rounds - min_rounds + 1))
    if k == 1:
        rounds = (max_rounds,)
    else:
        step = (max_rounds - min_rounds) / (k - 1)
        rounds = tuple(sorted({round(min_rounds + i * step) for i in range(k)}))
        k = len(rounds)
    fractions = [((i + 1) / k) ** power for i in range(k)]
    alphas = tuple(alpha * (f - (fractions[i - 1] if i else 0.0)) for i, f in enumerate(fractions))
    return Looks(rounds, alphas)


def fixed(rounds: int, *, alpha: float = ALPHA) -> Looks:
    """A single look at the end: the classic fixed-size design."""
    return Looks((rounds,), (alpha,))


def half_width(n: int, noise_cv: float, alpha: float, comparisons: int = 1, paired: bool = True) -> float:
    """Expected half-width (in log ratio) of a two-sided interval after n rounds, for a run-to-run CV."""
    if n < 2:
        return math.inf
    sd_log = math.log1p(noise_cv) * (math.sqrt(2.0) if paired else 1.0)  # a ratio of two noisy runs
    se = sd_log / math.sqrt(n) if paired else sd_log * math.sqrt(2.0 / n)
    return t_quantile(n - 1, 1.0 - alpha / (2 * comparisons)) * se


def min_detectable_ratio(n: int, noise_cv: float, alpha: float, comparisons: int = 1, power: float = 0.8) -> float:
    """Smallest ratio (> 1) whose interval excludes 1 with the given power after n paired rounds."""
    if n < 2:
        return math.inf
    sd_log = math.log1p(noise_cv) * math.sqrt(2.0)
    z_power = t_quantile(n - 1, power)
    return math.exp((t_quantile(n - 1, 1.0 - alpha / (2 * comparisons)) + z_power) * sd_log / math.sqrt(n))


def rounds_needed(
    precision: float, noise_cv: float, alpha: float, comparisons: int = 1, limit: int = 1000
) -> int | None:
    """Rounds after which the expected interval half-width is below log(1 + precision); None if over limit."""
    target = math.log1p(precision)
    for n in range(2, limit + 1):
        if half_width(n, noise_cv, alpha, comparisons) <= target:
            return n
    return None


@dataclass(frozen=True)
class ClaimPlan:
    """What a claim needs from the design: the metric's noise prior and the precision that decides it."""

    claim: str
    noise_cv: float  # run-to-run coefficient of variation of the claim's metric (A/A prior)
    precision: float  # half-width (as a ratio - 1) the interval must reach, e.g. 0.05
    comparisons: int = 1

    @classmethod
    def from_aa(cls, claim: str, sd_log_ratio: float, precision: float, comparisons: int = 1) -> ClaimPlan:
        """From the per-round spread of log(copy / baseline) an A/A experiment measured (`make bench`): a
        paired ratio's spread is that of two runs, so one run's CV is expm1(sd / sqrt 2)."""
        return cls(claim, math.expm1(sd_log_ratio / math.sqrt(2.0)), precision, comparisons)


@dataclass(frozen=True)
class Feasibility:
    claim: str
    half_width_at_end: float
    precision: float
    rounds_needed: int | None
    feasible: bool

    def message(self, max_rounds: int) -> str:
        if self.feasible:
            return f"{self.claim}: decidable within {max_rounds} rounds (expected +-{self.half_width_at_end:.1%})"
        need = f"about {self.rounds_needed} rounds" if self.rounds_needed else "more rounds than any budget here"
        return (
            f"{self.claim}: cannot reach +-{self.precision:.1%} in {max_rounds} rounds "
            f"(expected +-{self.half_width_at_end:.1%}); needs {need}"
        )


def budget_rounds(budget_s: float, seconds_per_round: float, min_rounds: int, max_rounds: int) -> int:
    """How many rounds a time budget affords at a measured pace, between min_rounds and max_rounds."""
    if not seconds_per_round > 0:
        return max_rounds
    return int(max(min_rounds, min(max_rounds, budget_s // seconds_per_round)))


def size_up(plans: list[ClaimPlan], looks: Looks, limit: int = 1000) -> int | None:
    """The fewest rounds at which every claim's expected interval reaches its precision (None: no plan of at
    most `limit` rounds can)."""
    need = [rounds_needed(c.precision, c.noise_cv, looks.alphas[-1], c.comparisons, limit) for c in plans]
    return None if any(n is None for n in need) else max(need, default=looks.rounds[-1])


def check(plans: list[ClaimPlan], looks: Looks) -> list[Feasibility]:
    """Each claim's expected precision at the final look versus the precision it needs."""
    n, alpha = looks.rounds[-1], looks.alphas[-1]
    out = []
    for c in plans:
        hw = math.expm1(half_width(n, c.noise_cv, alpha, c.comparisons))
        need = rounds_needed(c.precision, c.noise_cv, alpha, c.comparisons)
        out.append(Feasibility(c.claim, hw, c.precision, need, hw <= c.precision))
    return out


@dataclass(frozen=True)
class NoiseFloor:
    """What an A/A experiment (two identical arms) says about a design at a given number of rounds."""

    metric: str
    design: str
    rounds_measured: int
    sd_log_ratio: float  # per-round spread of log(copy / baseline)
    offset: float  # mean ratio - 1 between the identical arms (a systematic difference, e.g. a position effect)
    rounds: int  # the planned experiment simulated
    floor: float  # 95th percentile of |ratio - 1| of such an experiment's estimate
    false_positive_rate: float  # with the looks' alpha spending
    mde: float  # smallest ratio - 1 detected with 80 % power at the last look

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def smoothed_resample(d, size: tuple[int, int], rng):
    """Draws from the measured rounds with a little Gaussian jitter, rescaled to keep their mean and variance
    (Silverman's variance-corrected smoothed bootstrap). Plain resampling of fewer rounds than the plan repeats
    values, which shrinks the spread a t interval sees and made A/A false positives look like 10-24 %."""
    # deferred: studies import this; the CLI checks their parameters before heavy modules load
    import numpy as np

    m, s = float(d.mean()), float(d.std(ddof=1))
    if not s > 0:
        return np.full(size, m)
    h = 1.06 * s * len(d) ** -0.2
    x = rng.choice(d, size=size, replace=True) - m + h * rng.standard_normal(size)
    return m + x / math.sqrt(1 + h * h / (s * s))


def aa_floor(
    log_ratios, looks: Looks, *, metric: str = "", design: str = "", trials: int = 4000, seed: int = 0
) -> NoiseFloor:
    """From the per-round log ratios of an A/A experiment, resample experiments of the planned size (smoothed,
    with replacement): the 95th percentile of |ratio - 1| they would report (offset included), how often the
    sequential looks would call them different (offset removed: the null), and the minimum detectable effect.
    Never subsets of the measured rounds: a plan of 9 drawn from 10 measured rounds has nearly the same mean
    every time (finite-population shrinkage), so the floor came out as little more than the offset."""
    # deferred: studies import this; the CLI checks their parameters before heavy modules load
    import numpy as np

    d = np.asarray([x for x in log_ratios if np.isfinite(x)], dtype=float)
    if len(d) < 3:
        raise ValueError("an A/A floor needs at least 3 rounds")
    rng = np.random.default_rng(seed)
    n = looks.rounds[-1]
    sample = smoothed_resample(d, (trials, n), rng)
    floor = float(np.percentile(np.abs(np.expm1(sample.mean(axis=1))), 95))
    null = sample - d.mean()
    fp = np.zeros(trials, dtype=bool)
    for k, r in enumerate(looks.rounds):
        x = null[:, :r]
        se = x.std(axis=1, ddof=1) / math.sqrt(r)
        q = t_quantile(r - 1, 1 - looks.alphas[k] / 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            fp |= np.abs(x.mean(axis=1)) > q * se
    sd = float(d.std(ddof=1))
    mde = math.expm1((t_quantile(n - 1, 1 - looks.alphas[-1] / 2) + t_quantile(n - 1, 0.8)) * sd / math.sqrt(n))
    return NoiseFloor(metric, design, len(d), sd, math.expm1(float(d.mean())), n, floor, float(fp.mean()), mde)
