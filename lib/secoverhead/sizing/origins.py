"""Where each line of a calculation was priced from: the report, its scale, the server build of the part, how
fast the measuring vCPU ran, and whether that report could test its claims on the part.

A cost read from a report whose claims were *not testable here* is still this machine's measured CPU, but the
report could not show the original's mechanism (a log too quick to bound throughput, a round trip on loopback):
the answer says so beside the number rather than leaving the reader to find it in another report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.core.report import build_name, readable
from secoverhead.measurement.parts import part_slug
from secoverhead.series.reports import vcpu_slowdown
from secoverhead.sizing.estimate import LineResult
from secoverhead.sizing.sources import Source

NOT_TESTABLE = "not testable here"


@dataclass(frozen=True)
class Origin:
    """One report a line's price was read from, as far as it bears on the price."""

    study: str
    part: str
    run: str  # the report's folder under reports/<study>/
    scale: str
    builds: tuple[str, ...]  # the part's server builds, as its experiment recorded them
    commit: str
    vcpu_slowdown: float | None  # the measuring vCPU against its fastest, before the report's rounds
    claims: int  # the report's claims on the part
    not_testable: tuple[str, ...]  # their ids where the report found them not testable here
    why: str  # the first of those claims' failed preconditions, in words

    def text(self) -> str:
        """`audit/2026…-quick (quick; MySQL 8.0.31; vCPU 1.31× its fastest, priced at its own speed)`, and the
        warning when there is one."""
        facts = [self.scale or "scale unknown", " / ".join(self.builds) or "server build not recorded"]
        if self.vcpu_slowdown is not None:
            facts.append(f"vCPU {self.vcpu_slowdown:.2f}× its fastest, priced at its own speed")
        text = f"{self.study}/{self.run} ({'; '.join(facts)})"
        return f"{text}: {self.warning()}" if self.not_testable else text

    def warning(self) -> str:
        n, k = self.claims, len(self.not_testable)
        why = f" ({self.why})" if self.why else ""
        if k == n:
            which = "its claim" if n == 1 else f"all {n} of its claims"
            tail = "this prices the CPU this machine measured, not a reproduction of the original's cost"
        else:
            which = f"{k} of its {n} claims"
            tail = "read that report before relying on this price"
        verb = "was" if k == 1 else "were"
        return f"{which} on {self.part} {verb} not testable here{why}; {tail}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"text": self.text()}


def of(results: Sequence[LineResult], sources: Mapping[str, Source]) -> dict[str, list[Origin]]:
    """Line key -> the reports it was priced from, once each (a cost pooled over a series: each of them)."""
    found: dict[tuple[str, str, Path], Origin] = {}
    out: dict[str, list[Origin]] = {}
    for r in results:
        mine = []
        for priced in r.priced:
            m = priced.measure
            exp = sources[m.study].experiment(m.part)  # its folder's name keys the builds the report recorded
            for report in priced.reports:
                key = (m.study, m.part, report)
                if key not in found:
                    found[key] = origin(report, m.study, m.part, exp.path.name if exp else "")
                mine.append(found[key])
        out[r.line.key] = list(dict.fromkeys(mine))
    return out


def grouped(results: Sequence[LineResult], origins: Mapping[str, Sequence[Origin]]) -> list[str]:
    """One line per set of reports: the lines priced from them, then the reports (the answer's "priced from")."""
    groups: dict[tuple[Origin, ...], list[str]] = {}
    for r in results:
        groups.setdefault(tuple(origins.get(r.line.key, ())), []).append(r.line.label)
    return [f"{', '.join(labels)}: {'; '.join(o.text() for o in found)}" for found, labels in groups.items() if found]


def origin(run_dir: Path, study: str, part: str, experiment: str) -> Origin:
    """What a report says of the part a price was read from."""
    report = readable(run_dir)
    claims = _claims(run_dir, part)
    failing = [v for v in claims if v.get("verdict") == NOT_TESTABLE]
    return Origin(
        study=study,
        part=part,
        run=run_dir.name,
        scale=report.scale if report else "",
        builds=tuple(_builds(report.servers.get(experiment, []) if report else [])),
        commit=report.commit if report else "",
        vcpu_slowdown=vcpu_slowdown(run_dir),
        claims=len(claims),
        not_testable=tuple(str(v.get("id", "")) for v in failing),
        why=_why(failing),
    )


def _claims(run_dir: Path, part: str) -> list[dict[str, Any]]:
    """The report's verdicts on the part (a one-part study's verdicts name no part: all of them)."""
    listed = [v for v in (read_verdicts(run_dir) or {}).get("verdicts", []) if isinstance(v, dict)]
    return [v for v in listed if not v.get("part") or part_slug(str(v["part"])) == part_slug(part)]


def _builds(servers: Sequence[Mapping[str, Any]]) -> list[str]:
    """The part's builds, a stand-in labelled as one wherever its numbers appear."""
    named = [(build_name(s), s.get("stands_in_for")) for s in servers]
    return list(dict.fromkeys(f"{b}, standing in for {stand_in}" if stand_in else b for b, stand_in in named if b))


def _why(failing: Sequence[Mapping[str, Any]]) -> str:
    for v in failing:
        for check in v.get("preconditions") or []:
            if isinstance(check, dict) and check.get("holds") is False:
                return f"{check.get('said') or check.get('condition')}: {check.get('shown', check.get('value'))}"
    return ""
