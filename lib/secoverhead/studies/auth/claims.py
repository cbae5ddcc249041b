"""Auth study: the original's claims (MongoDB's SCRAM and pooling, MySQL's pooling) and the nonce mechanism."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from secoverhead.analysis.claimcheck import RatioClaim
from secoverhead.analysis.verdicts import ClaimVerdict
from secoverhead.measurement.parts import StudyResult
from secoverhead.studies.auth.declarations import STUDY
from secoverhead.studies.protocol.conditions import median
from secoverhead.studies.protocol.judging import study_verdicts

if TYPE_CHECKING:
    import pandas as pd

CLAIMS: dict[str, tuple[RatioClaim, ...]] = {  # words, metrics and readings: data/claims/registry.yaml
    "MongoDB": (
        RatioClaim(
            STUDY,
            "auth-server-cpu",
            "auth off",
            "SCRAM-SHA-256",
            measure="server CPU us per connection, per run",
            engine_note="FerretDB, not mongod",
            unit="us",
            at="concurrency",
        ),
        RatioClaim(
            STUDY,
            "auth-client-cpu",
            "auth off",
            "SCRAM-SHA-256",
            measure="client CPU us per connection, per run",
            engine_note="pymongo",
            unit="us",
            at="concurrency",
        ),
        RatioClaim(
            STUDY,
            "pooling",
            "SCRAM-SHA-256",
            "pooled SCRAM-SHA-256",
            measure="server CPU us per request, per run",
            engine_note="FerretDB, not mongod",
            through="auth off",
            unit="us",
            at="concurrency",
        ),
    ),
    "MySQL": (
        RatioClaim(
            STUDY,
            "pooling",
            "password",
            "pooled password",
            measure="server CPU us per request, per run",
            engine_note="MariaDB 10.11, not MySQL",
            unit="us",
            at="concurrency",
        ),
    ),
    "nonce": (
        RatioClaim(
            STUDY,
            "system-cpu",
            "userspace",
            "syscall",
            measure="system CPU ns per nonce, per run",
            engine_note="this kernel's /dev/urandom, Python workers",
            unit="ns",
            at="workers",
        ),
    ),
}


def part_claims(
    part: str, runs: pd.DataFrame, alpha: float = 0.05, *, top: int | None = None, top_workers: int | None = None
) -> list[ClaimVerdict]:
    """The claims one part can check: MongoDB's auth and pooling costs, MySQL's pooling, the nonce mechanism;
    each at the highest concurrency (or worker count) measured (top, top_workers: the plan's, when given)."""
    if top is None and "concurrency" in runs and len(runs):
        top = int(runs["concurrency"].max())
    if top_workers is None:
        top_workers = int(runs["workers"].max()) if "workers" in runs and len(runs) else 8
    out = []
    for claim in CLAIMS.get(part, ()):
        v = claim.check(runs, alpha, level=top_workers if claim.at == "workers" else top, part=part)
        if v is not None:
            out.append(v)
    return out


def baseline_conditions(part: str, runs: pd.DataFrame) -> dict[str, Any]:
    """Whether the baseline arm's CPU per operation is measured at all, on the server and on the client."""
    return {
        "baseline_server_cpu_us_per_op": median(runs, "server_cpu_us_per_op"),
        "baseline_client_cpu_us_per_op": median(runs, "client_cpu_us_per_op"),
    }


def claims(result: StudyResult) -> list[ClaimVerdict]:
    p = result.params
    top, top_workers = max(p.concurrency), max(p.nonce_workers)
    return study_verdicts(
        result,
        lambda part: lambda runs, alpha: part_claims(part.name, runs, alpha, top=top, top_workers=top_workers),
        baseline_conditions,
    )
