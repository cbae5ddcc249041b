"""TLS study: the original's claims on each engine's runs."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from secoverhead.analysis.claimcheck import Rule, judge
from secoverhead.analysis.reads import Ratio
from secoverhead.analysis.verdicts import ClaimVerdict
from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.servers.builds import build_note
from secoverhead.studies.protocol.conditions import median, ratio
from secoverhead.studies.protocol.judging import study_verdicts
from secoverhead.studies.tls.declarations import BASELINE, RTT_PART, STUDY

if TYPE_CHECKING:
    import pandas as pd

RULES = (  # the claims' words, metrics, readings and preconditions: data/claims/registry.yaml
    Rule(STUDY, "setup", (Ratio(BASELINE, "TLS"),), measure="build + first query: median per run", unit="ms"),
    Rule(STUDY, "reused", (Ratio(BASELINE, "TLS"),), measure="query on a reused client: median per run", unit="ms"),
)


def part_claims(engine: str, runs: pd.DataFrame, alpha: float = 0.05, engine_note: str = "") -> list[ClaimVerdict]:
    """The original's two claims on one engine's runs: set-up markedly slower, reused client barely."""
    return judge([replace(r, engine_note=engine_note) for r in RULES], runs, alpha, part=engine)


def baseline_conditions(part: str, runs: pd.DataFrame) -> dict[str, Any]:
    """What the preconditions read of the plain arm: how much longer its set-up takes than its reused query
    (whether a connection is built per measurement)."""
    return {"baseline_setup_over_reused": ratio(median(runs, "total_ms_median"), median(runs, "query_ms_median"))}


def claims(result: StudyResult) -> list[ClaimVerdict]:
    """The claims per part: each engine on loopback, and MongoDB behind the original's round trip, where the
    reused-client claim is testable (its precondition reads the round trip)."""

    def judge(part: Part):
        note = engine_notes(part).get("engine", "")
        return lambda runs, alpha: part_claims(part.name, runs, alpha, note)

    return study_verdicts(result, judge, baseline_conditions)


def engine_notes(part: Part) -> dict[str, str]:
    """How the server build and set-up differ from the original's, to print next to the numbers."""
    notes = {}
    if note := build_note(part.server):
        notes["engine"] = note
    elif part.servers and any(f.get("embedded") for f in part.servers.values()):  # a report from before builds
        notes["engine"] = f"{part.label}: recorded before a part named its server build"
    embedded = any(f.get("embedded") for f in part.servers.values())
    if part.name == RTT_PART:
        notes["network"] = (
            "the server sits in a network namespace behind a user-space delay line set to the original's round "
            "trip; client and server still share the machine's 2 cores"
        )
    elif embedded:
        notes["network"] = (
            "client and server share a 2-core machine over loopback; the original used a separate "
            "client VM, so its round trips cost more, and TLS's extra round trips more still"
        )
    return notes | {f"note {i + 1}": n for i, n in enumerate(part.notes)}
