"""HTTPS study: the original's claims on request rate and server CPU per request."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from secoverhead.analysis.claimcheck import Rule, judge
from secoverhead.analysis.reads import Ratio, Share
from secoverhead.analysis.verdicts import ClaimVerdict
from secoverhead.measurement.parts import StudyResult
from secoverhead.studies.https.declarations import BASELINE, FULL, STUDY
from secoverhead.studies.protocol.conditions import median
from secoverhead.studies.protocol.judging import study_verdicts

if TYPE_CHECKING:
    import pandas as pd

# arms claimed to win back most of a full handshake's CPU (registered as recovery:<arm>), each against the full
# handshake of its own TLS version: the cache and the ticket are remedies the original names (asked of TLS 1.2, the
# original's, and of TLS 1.3, whose resumption keeps an ECDHE exchange), ECDSA and keep-alive the suite's own
FULL_13 = "TLS 1.3 full, RSA"
RECOVERY_CLAIMS: dict[str, str] = {
    "TLS 1.2 full, ECDSA": FULL,
    "TLS 1.2 resumed, session cache": FULL,
    "TLS 1.2 resumed, ticket": FULL,
    "TLS 1.3 resumed, session cache": FULL_13,
    "TLS 1.3 resumed, ticket": FULL_13,
    "HTTPS keep-alive": FULL,
}

RULES = (  # words, metrics, readings and preconditions: data/claims/registry.yaml
    Rule(
        STUDY,
        "full-handshake",
        (Ratio(BASELINE, FULL),),
        measure="server CPU us per request (TLS 1.2, RSA-2048, ab), per run",
        engine_note="nginx + OpenSSL 3.0, not a Go service",
        unit="us",
    ),
    *(
        Rule(
            STUDY,
            f"recovery:{arm}",
            (Share(BASELINE, full, arm),),
            measure=f"per round, 1 - (arm - HTTP) / ({full} - HTTP) of server CPU per request",
            engine_note="nginx + OpenSSL 3.0",
        )
        for arm, full in RECOVERY_CLAIMS.items()
    ),
)


def part_claims(part: str, runs: pd.DataFrame, alpha: float = 0.05) -> list[ClaimVerdict]:
    """The full handshake's CPU cost, and the share of it each remedy wins back."""
    return judge(RULES, runs, alpha)


def baseline_conditions(part: str, runs: pd.DataFrame) -> dict[str, Any]:
    """Whether plain HTTP's server CPU per request is measured at all."""
    return {"baseline_server_cpu_us_per_op": median(runs, "server_cpu_us_per_op")}


def claims(result: StudyResult) -> list[ClaimVerdict]:
    return study_verdicts(result, lambda part: functools.partial(part_claims, part.name), baseline_conditions)
