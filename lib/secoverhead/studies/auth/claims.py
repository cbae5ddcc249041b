"""Auth study: the original's claims (MongoDB's SCRAM and pooling, MySQL's pooling) and the nonce mechanism."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from secoverhead.analysis.claimcheck import Rule, judge
from secoverhead.analysis.reads import Ratio
from secoverhead.analysis.verdicts import ClaimVerdict
from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.servers.builds import build_note
from secoverhead.studies.auth.declarations import STUDY, engine_of
from secoverhead.studies.protocol.conditions import median
from secoverhead.studies.protocol.judging import study_verdicts

if TYPE_CHECKING:
    import pandas as pd

# A duet whose ratio of server CPU per connection strays this far (in log, or 3 robust sd of its cell) from its
# cell's earlier duets is recorded, kept in the statistics, and its arm shown (analysis/outliers.py): three
# times the per-round sd measured here (FerretDB 0.09, MariaDB 0.11-0.13, benchmarks/README.md A/A table; not yet
# measured on mongod).
STALL_LOG = 0.3
OUTLIER = ("server_cpu_us_per_op", STALL_LOG)

RULES: dict[str, tuple[Rule, ...]] = {  # words, metrics, readings, preconditions: data/claims/registry.yaml
    "MongoDB": (
        Rule(
            STUDY,
            "auth-server-cpu",
            (Ratio("auth off", "SCRAM-SHA-256", at="concurrency"),),
            measure="server CPU us per connection, per run",
            unit="us",
        ),
        Rule(
            STUDY,
            "auth-client-cpu",
            (Ratio("auth off", "SCRAM-SHA-256", at="concurrency"),),
            measure="client CPU us per connection, per run",
            engine_note="pymongo",
            unit="us",
        ),
        Rule(
            STUDY,
            "pooling",
            (Ratio("SCRAM-SHA-256", "pooled SCRAM-SHA-256", at="concurrency", through="auth off"),),
            measure="server CPU us per request, per run",
            unit="us",
        ),
    ),
    "MySQL": (
        Rule(
            STUDY,
            "pooling",
            (Ratio("password", "pooled password", at="concurrency"),),
            measure="server CPU us per request, per run",
            engine_note="MariaDB 10.11, not MySQL",
            unit="us",
        ),
    ),
    "nonce": (
        Rule(
            STUDY,
            "system-cpu",
            (Ratio("userspace", "syscall", at="workers"),),
            measure="system CPU ns per nonce, per run",
            engine_note="this kernel's /dev/urandom, Python workers",
            unit="ns",
        ),
    ),
}


def part_claims(
    part: str,
    runs: pd.DataFrame,
    alpha: float = 0.05,
    *,
    top: int | None = None,
    top_workers: int | None = None,
    server_note: str = "",
) -> list[ClaimVerdict]:
    """The claims one part can check: MongoDB's auth and pooling costs, MySQL's pooling, the nonce mechanism;
    each at the highest concurrency (or worker count) measured (top, top_workers: the plan's, when given).
    server_note: what the MySQL part ran on (the embedded MariaDB, or the user's MySQL), over the rule's default."""
    levels = {k: v for k, v in (("concurrency", top), ("workers", top_workers)) if v is not None}
    rules = RULES.get(engine_of(part), ())
    if server_note and engine_of(part) == "MySQL":
        rules = tuple(replace(r, engine_note=server_note) for r in rules)
    return judge(rules, runs, alpha, part=part, levels=levels)


def baseline_conditions(part: str, runs: pd.DataFrame) -> dict[str, Any]:
    """Whether the baseline arm's CPU per operation is measured at all, on the server and on the client."""
    return {
        "baseline_server_cpu_us_per_op": median(runs, "server_cpu_us_per_op"),
        "baseline_client_cpu_us_per_op": median(runs, "client_cpu_us_per_op"),
    }


def claims(result: StudyResult) -> list[ClaimVerdict]:
    p = result.params
    top, top_workers = max(p.concurrency), max(p.nonce_workers)

    def judge_part(part: Part):
        note = build_note(part.server)
        return lambda runs, alpha: part_claims(
            part.name, runs, alpha, top=top, top_workers=top_workers, server_note=note
        )

    return study_verdicts(result, judge_part, baseline_conditions)
