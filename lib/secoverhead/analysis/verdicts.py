"""Verdicts on claims and verdicts.json (what the report index shows without re-running anything). Standard
library only. What decides a verdict is the claim's registered reading (claim_registry.py, readings.py): reproduced
when the intervals lie where the claim says, not reproduced when they lie wholly on the wrong side, and
inconclusive otherwise: the data cannot decide. A claim whose registered preconditions fail in the environment
it was measured in is *not testable here*: the set-up cannot show the original's mechanism, so its data neither
reproduce nor refute the claim (preconditions.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from secoverhead.core.files import SCHEMA, atomic_write_json, read_json


class Verdict(StrEnum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive"
    NOT_TESTABLE = "not testable here"

    @property
    def decided(self) -> bool:
        """Reproduced or not reproduced: the data decided the claim."""
        return self in (Verdict.REPRODUCED, Verdict.NOT_REPRODUCED)


@dataclass
class ClaimVerdict:
    """A published claim checked against our runs."""

    claim: str
    verdict: Verdict
    evidence: str  # the numbers, n (runs or rounds), test and CI that decide it
    measure: str = ""
    engine_note: str = ""
    id: str = ""  # stable name, for history across runs
    ratio: float | None = None  # the effect, where it is a ratio (history plots it)
    ci_low: float | None = None
    ci_high: float | None = None
    needs: list[dict[str, Any]] = field(default_factory=list)  # (arm, cell) runs that would help decide it
    source: str = ""  # published (an original's claim) or suite (this suite's own hypothesis)
    registered: dict[str, Any] = field(default_factory=dict)  # the registry's words, metric and reading
    rounds_needed: int | None = None  # undecided: rounds that would decide it were the estimate to stay
    sensitivity: str = ""  # the verdict without the runs a sensitivity check sets aside, and why (never decides)
    judged: list[dict[str, Any]] = field(default_factory=list)  # per reading: its regions and the intervals read
    preconditions: list[dict[str, Any]] = field(default_factory=list)  # each checked: value, holds, why, where
    testable_where: str = ""  # not testable here: where the claim can be tested
    episodes: str = ""  # a "costs little" claim: what it says of rare stalls in one arm (judging.episodes)
    part: str = ""  # the part it was judged on
    server: dict[str, Any] = field(default_factory=dict)  # the server build it ran on: build, version, TLS library
    before: list[dict[str, Any]] = field(default_factory=list)  # the verdict under each earlier definition

    @property
    def decided(self) -> bool:
        return self.verdict.decided

    @property
    def wants_rounds(self) -> bool:
        """Inconclusive: more rounds may decide it (a claim not testable here gains nothing from them)."""
        return self.verdict == Verdict.INCONCLUSIVE

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = str(self.verdict)
        return d


def write_verdicts(
    output_dir: str | Path, study: str, verdicts: Sequence[ClaimVerdict], notes: Sequence[str] = ()
) -> Path:
    path = Path(output_dir) / "verdicts.json"
    doc = {"schema": SCHEMA, "study": study, "verdicts": [v.as_dict() for v in verdicts], "notes": list(notes)}
    atomic_write_json(path, doc)
    return path


def read_verdicts(run_dir: Path) -> dict[str, Any] | None:
    """verdicts.json of a report directory (None when missing or corrupt)."""
    for p in (run_dir / "verdicts.json", run_dir / "results" / "verdicts.json"):
        if p.exists():
            data = read_json(p)
            return data if isinstance(data, dict) else None
    return None
