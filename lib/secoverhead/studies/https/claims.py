"""HTTPS study: the original's claims on request rate and server CPU per request."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.claimcheck import RatioClaim, verdict_of
from secoverhead.analysis.compare import per_round
from secoverhead.analysis.stats import mean_interval
from secoverhead.analysis.verdicts import ClaimVerdict, Verdict
from secoverhead.measurement.parts import StudyResult
from secoverhead.studies.https.declarations import BASELINE, FULL, STUDY
from secoverhead.studies.protocol.conditions import median
from secoverhead.studies.protocol.judging import study_verdicts

if TYPE_CHECKING:
    import pandas as pd

# arms claimed to win back most of a full handshake's CPU (registered as recovery:<arm>; the cache and the
# ticket are remedies the original names, ECDSA and keep-alive the suite's own)
RECOVERY_CLAIMS = (
    "TLS 1.2 full, ECDSA",
    "TLS 1.2 resumed, session cache",
    "TLS 1.2 resumed, ticket",
    "HTTPS keep-alive",
)


def recovery(
    runs: pd.DataFrame, candidate: str, alpha: float = 0.05, family: int = 1
) -> tuple[float, float, float, int]:
    """Share of a full handshake's extra server CPU (over plain HTTP) that candidate wins back, per round
    1 - (candidate - HTTP) / (full - HTTP); the mean over rounds with its t interval, and the rounds."""

    t = per_round(runs, "server_cpu_us_per_op", [BASELINE, FULL, candidate])
    if not len(t):
        return float("nan"), float("nan"), float("nan"), 0
    rec = 1 - (t[candidate] - t[BASELINE]) / (t[FULL] - t[BASELINE])
    mean, lo, hi, _, n = mean_interval(rec.to_numpy(dtype=float), 1 - alpha / family)
    return mean, lo, hi, n


FULL_CLAIM = RatioClaim(  # words, metric and reading: data/claims/registry.yaml, as for the recovery claims
    STUDY,
    "full-handshake",
    BASELINE,
    FULL,
    measure="server CPU us per request (TLS 1.2, RSA-2048, ab), per run",
    engine_note="nginx + OpenSSL 3.0, not a Go service",
    unit="us",
)


def part_claims(part: str, runs: pd.DataFrame, alpha: float = 0.05) -> list[ClaimVerdict]:
    out = []
    arms = set(runs["arm"]) if len(runs) else set()
    full = FULL_CLAIM.check(runs, alpha)
    if full is not None:
        out.append(full)
    for cand in RECOVERY_CLAIMS:
        if {BASELINE, FULL, cand} <= arms:
            point, lo, hi, n = recovery(runs, cand, alpha)
            claim = registry.get(STUDY, f"recovery:{cand}")
            sets = (([(lo, hi)], None),)
            v = claim.decide(*sets) if n >= 2 else Verdict.INCONCLUSIVE
            out.append(
                verdict_of(
                    STUDY,
                    claim.id,
                    v,
                    f"recovers {point * 100:.0f} % of the extra CPU "
                    f"[{(1 - alpha) * 100:.4g} % CI {lo * 100:.0f}, {hi * 100:.0f}]; "
                    f"n={n} rounds, t interval of the per-round share",
                    engine_note="nginx + OpenSSL 3.0",
                    ratio=point,
                    ci_low=lo,
                    ci_high=hi,
                    needs=[{"arm": a} for a in (BASELINE, FULL, cand)],
                    intervals=sets if n >= 2 else (),
                    rounds=n,
                )
            )
    return out


def baseline_conditions(part: str, runs: pd.DataFrame) -> dict[str, Any]:
    """Whether plain HTTP's server CPU per request is measured at all."""
    return {"baseline_server_cpu_us_per_op": median(runs, "server_cpu_us_per_op")}


def claims(result: StudyResult) -> list[ClaimVerdict]:
    return study_verdicts(result, lambda part: functools.partial(part_claims, part.name), baseline_conditions)
