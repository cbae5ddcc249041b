"""How often a standing verdict ever shows a decided verdict for a claim whose truth sits exactly on its line, read
every night: the error a reader who looks every morning for a month or a year is exposed to. Each simulated night
adds one report whose estimate is the truth, plus a between-report shift (the claim's between-run sd) and its own
error; every look from the second report on goes through analysis.pooling.pooled_verdict, the code the index, the
reports and `secoverhead.load` judge with. Beside it, the rate at which a night's own verdict (that report alone,
each calibrated at alpha on its own) decides on some night: the headline before standing verdicts.

    .venv/bin/python benchmarks/standing_error.py [NIGHTS] [HISTORIES]   # default 365 nights, 400 histories

tests/unit/test_pooling.py runs the same simulation at 30 nights (a rule change that breaks it fails there)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from secoverhead.analysis import claim_registry
from secoverhead.analysis.pooling import ALPHA, from_scale, pooled_verdict


@dataclass(frozen=True)
class Scenario:
    """A claim on its line: its cells, the between-report sd and each report's own standard error (both on the
    analysis scale)."""

    study: str
    claim: str
    cells: tuple[str, ...]
    between: float
    own: float

    def truth(self) -> float:
        """The line of the claim's reading on the analysis scale (a ratio's log; a loss's ratio's log)."""
        reading = claim_registry.get(self.study, self.claim).reading
        line = reading.cuts[0]  # one line: shape above or below
        return math.log(1 - line / 100) if reading.quantity == "loss" else math.log(line)


def _declared(study: str, metric: str) -> float:
    term = claim_registry.between_runs().get((study, metric))
    return term.sd if term is not None else 0.0


def scenarios() -> list[Scenario]:
    """The claims issue 78 simulated, at the between-run sd the registry declares and a quick report's own error."""
    return [
        Scenario("auth", "auth-server-cpu", ("",), _declared("auth", "server_cpu_us_per_op"), 0.02),
        Scenario("tls", "setup", ("",), _declared("tls", "total_ms_median"), 0.02),
        Scenario("https", "full-handshake", ("",), _declared("https", "server_cpu_us_per_op"), 0.03),
        Scenario("tde", "high-concurrency-loss", ("read-only", "write-only"), _declared("tde", "tps"), 0.01),
    ]


def _judged(s: Scenario, values: np.ndarray) -> list[dict]:
    """One report's `judged`, as verdicts.json records it (the intervals are what the report showed, unread here)."""
    names = list(s.cells) if len(s.cells) > 1 else []
    return [{"cells": names, "intervals": [[0, 0]] * len(s.cells),
             "estimates": [[float(v), s.own] for v in values]}]  # fmt: skip


def history(s: Scenario, nights: int, rng: np.random.Generator) -> tuple[bool, bool]:
    """(the standing verdict decided at some look, a night's own verdict decided on some night) in one history."""
    truth = s.truth()
    values = truth + rng.normal(0, s.between, (nights, 1)) + rng.normal(0, s.own, (nights, len(s.cells)))
    reports = [_judged(s, v) for v in values]
    standing = False
    for k in range(2, nights + 1):
        pv = pooled_verdict(s.study, s.claim, reports[:k], ALPHA)
        if pv is not None and pv.verdict.decided:
            standing = True
            break
    return standing, _nightly(s, values)


def _nightly(s: Scenario, values: np.ndarray) -> bool:
    """Whether a night's own intervals, each calibrated at alpha on its own (the report's spread known: its own error
    and the between-run sd, split over the cells as one report splits it), judged by the claim's reading, decided on
    some night: each night a fresh test at alpha, as a headline of each night's own verdict was."""
    claim = claim_registry.get(s.study, s.claim)
    quantity = claim.reading.quantity
    half = NormalDist().inv_cdf(1 - ALPHA / 2 / len(s.cells)) * math.hypot(s.own, s.between)
    for night in values:
        intervals = [from_scale(quantity, v - half, v + half) for v in night]
        if claim.decide((intervals, None)).decided:
            return True
    return False


def rates(s: Scenario, nights: int, histories: int, seed: int = 78) -> tuple[int, int]:
    """(histories whose standing verdict ever decided, those whose night's own verdict ever did), of `histories`
    (each claim's histories drawn apart: the seed and the claim's name)."""
    rng = np.random.default_rng([seed, *map(ord, s.claim)])
    got = [history(s, nights, rng) for _ in range(histories)]
    return sum(a for a, _ in got), sum(b for _, b in got)


def main(argv: list[str]) -> int:
    nights = int(argv[0]) if argv else 365
    histories = int(argv[1]) if len(argv) > 1 else 400
    print(f"truth on each claim's line, {nights} nightly reports, {histories} histories, alpha {ALPHA:g}")
    for s in scenarios():
        standing, nightly = rates(s, nights, histories)
        print(
            f"{s.study} {s.claim}: between-run sd {s.between:.3f}, own se {s.own:.3f}: standing verdict ever decided "
            f"in {standing}/{histories} ({standing / histories:.1%}); a night's own in {nightly}/{histories} "
            f"({nightly / histories:.1%})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
