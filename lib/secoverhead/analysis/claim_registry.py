"""The registry of claims (data/claims/registry.yaml): per claim the original's words, the metric it used and
the reading that decides it, declared before any data. The studies decide from here, so a reading lives in one
place; data/claims/CHANGES.md records why any reading ever changed."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from secoverhead.analysis.preconditions import Precondition
from secoverhead.analysis.readings import Reading, verdict_from
from secoverhead.analysis.verdicts import Verdict
from secoverhead.core import paths
from secoverhead.core.errors import ConfigError
from secoverhead.core.files import read_json
from secoverhead.core.params import read_yaml
from secoverhead.core.units import significant

# published: an original's claim, on what the original measured; extension: an original's claim carried where
# the original did not measure it (another engine, a remedy it names but does not measure); suite: this suite's
# own hypothesis. Counted apart everywhere.
SOURCES = ("published", "extension", "suite")


@dataclass(frozen=True)
class Superseded:
    """A definition the claim had until `until` (data/claims/CHANGES.md says why it changed): its reading then, the
    preconditions added since (`without`), or those it had then and has since dropped (`had`). Every report after
    the change shows the verdict under it too."""

    until: str
    change: str  # what changed, in a few words
    reading: Reading | None = None  # the first reading before the change (None: the reading did not change)
    without: tuple[str, ...] = ()  # preconditions (their conditions) the claim did not have before the change
    had: tuple[Precondition, ...] = ()  # preconditions it had before the change and no longer has

    def describe(self) -> str:
        return f"before {self.until} ({self.change})"


@dataclass(frozen=True)
class Claim:
    """One registered claim. `claim` may name {part} (an engine or instance profile) and {level}."""

    id: str
    study: str
    source: str  # published | suite
    original: str  # which original (seed), for a published claim
    claim: str
    quote: str  # the original's words, in its language
    translation: str
    metric: str  # the run metric the original's figure is on
    metric_text: str
    reading: Reading
    also: tuple[Reading, ...]  # further readings that must all reproduce (any refutes)
    why: str
    mechanism: str  # what, in the original, makes the effect: what an environment must be able to show
    preconditions: tuple[Precondition, ...]  # the weakest conditions under which the mechanism can show
    original_parts: tuple[str, ...] = ()  # a published claim: the parts the original measured (others: extension)
    bounds_cost: bool = False  # says a feature costs little: its verdict judges the typical run, not rare stalls
    revision: int = 1  # how its metric is measured: reports of another revision are another series
    superseded: tuple[Superseded, ...] = ()  # its earlier definitions, newest first

    @property
    def published(self) -> bool:
        return self.source == "published"

    def source_on(self, part: str) -> str:
        """The claim's source on one part: a published claim on a part the original did not measure (another
        engine) is an extension of it."""
        if self.source == "published" and self.original_parts and part and part not in self.original_parts:
            return "extension"
        return self.source

    def readings(self) -> tuple[Reading, ...]:
        return (self.reading, *self.also)

    def decide(self, *interval_sets: tuple[list, list | None]) -> Verdict:
        """One (intervals, refuting) pair per reading, in order: reproduced when every reading reproduces,
        refuted when any refutes."""
        holds = [r.holds(i, f) for r, (i, f) in zip(self.readings(), interval_sets, strict=True)]
        return verdict_from(all(h[0] for h in holds), any(h[1] for h in holds), what=f"{self.study}:{self.id}")

    def as_before(self, old: Superseded) -> Claim:
        """The claim as it was defined before a change (its reading then; its preconditions are screened apart)."""
        return replace(self, reading=old.reading) if old.reading is not None else self

    def rounds_to_decide(
        self, *interval_sets: tuple[list, list | None], n: int, floors: tuple[float, ...] = ()
    ) -> int | None:
        """Rough rounds every undecided cell needs to leave its straddle (the largest; see
        Reading.rounds_to_decide), None when some cell's estimate sits where no number of rounds decides, or
        where a reading's between-run floor (floors, per reading, in its unit) leaves one run no room."""
        return _most(self._undecided(interval_sets, lambda r, lo, hi, k: r.rounds_to_decide(lo, hi, n, _at(floors, k))))

    def runs_to_decide(self, *interval_sets: tuple[list, list | None], n: int) -> int | None:
        """Reports like this one that, judged together as a standing verdict, would decide every undecided cell
        (Reading.runs_to_decide)."""
        return _most(self._undecided(interval_sets, lambda r, lo, hi, k: r.runs_to_decide(lo, hi, n)))

    def _undecided(self, interval_sets: tuple, need: Any) -> list[int | None]:
        out = []
        for k, (reading, (intervals, _)) in enumerate(zip(self.readings(), interval_sets, strict=True)):
            out += [need(reading, lo, hi, k) for lo, hi in intervals if reading.label_of(lo, hi) is None]
        return out

    def describe(self) -> str:
        return "; ".join(r.describe() for r in self.readings())

    def record(self) -> dict[str, Any]:
        """What verdicts.json carries of the claim: where it comes from, its words, metric and reading."""
        return {
            "study": self.study,
            "id": self.id,
            "source": self.source,
            "original": self.original,
            "quote": self.quote,
            "translation": self.translation,
            "metric": self.metric,
            "metric_text": self.metric_text,
            "reading": [r.as_dict() for r in self.readings()],
            "reading_text": self.describe(),
            "why": self.why,
            "mechanism": self.mechanism,
            "revision": self.revision,
        }


def _most(need: list[int | None]) -> int | None:
    return None if not need or any(x is None for x in need) else max(need)  # type: ignore[type-var]


def _at(values: tuple[float, ...], k: int) -> float:
    return values[k] if k < len(values) else 0.0


def _claim(d: dict[str, Any]) -> Claim:
    if d.get("source") not in SOURCES:
        raise ValueError(f"{d.get('id')}: source must be one of {SOURCES}")
    if d["source"] != "suite" and not (d.get("original") and d.get("quote") and d.get("translation")):
        raise ValueError(f"{d['id']}: a published claim names its original, quotes it and translates the quote")
    if not str(d.get("mechanism", "")).strip() or not d.get("preconditions"):
        raise ValueError(f"{d['id']}: a claim names its mechanism and the preconditions under which it can show")
    return Claim(
        id=d["id"],
        study=d["study"],
        source=d["source"],
        original=d.get("original", ""),
        claim=d["claim"],
        quote=d.get("quote", ""),
        translation=d.get("translation", ""),
        metric=d["metric"],
        metric_text=d.get("metric_text", d["metric"]),
        reading=Reading.from_dict(d["reading"]),
        also=tuple(Reading.from_dict({**a, "combine": a.get("combine", "all")}) for a in d.get("also", ())),
        why=" ".join(str(d["why"]).split()),
        mechanism=" ".join(str(d["mechanism"]).split()),
        preconditions=tuple(Precondition.from_dict(p) for p in d["preconditions"]),
        original_parts=tuple(d.get("original_parts", ())),
        bounds_cost=bool(d.get("bounds_cost", False)),
        revision=_revision(d),
        superseded=tuple(_superseded(d["id"], e) for e in d.get("superseded", ())),
    )


def _superseded(claim_id: str, e: dict[str, Any]) -> Superseded:
    if not e.get("until") or not e.get("change") or not (e.get("reading") or e.get("without") or e.get("had")):
        raise ValueError(
            f"{claim_id}: a superseded definition names its date, the change, and the old reading, "
            "the preconditions added since or those dropped"
        )
    return Superseded(
        until=str(e["until"]),
        change=" ".join(str(e["change"]).split()),
        reading=Reading.from_dict(e["reading"]) if e.get("reading") else None,
        without=tuple(e.get("without", ())),
        had=tuple(Precondition.from_dict(h) for h in e.get("had", ())),
    )


def _revision(d: dict[str, Any]) -> int:
    revision = d.get("revision", 1)
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise ValueError(f"{d['id']}: revision is a whole number from 1")
    return revision


@functools.cache
def claims() -> dict[tuple[str, str], Claim]:
    """Every registered claim, by (study, id)."""
    entries = read_yaml(paths.CLAIMS, "claim registry") or []  # bounded, no aliases: read like user input
    out: dict[tuple[str, str], Claim] = {}
    for d in entries:
        c = _claim(d)
        if (c.study, c.id) in out:
            raise ValueError(f"{c.study}:{c.id} is registered twice")
        out[(c.study, c.id)] = c
    return out


def revision(study: str, claim_id: str) -> int:
    """How the claim's metric is measured now (1 for a claim the registry no longer holds)."""
    claim = claims().get((study, claim_id))
    return claim.revision if claim is not None else 1


def get(study: str, claim_id: str) -> Claim:
    """The registered claim (KeyError names it when the code asks for a claim the registry lacks)."""
    try:
        return claims()[(study, claim_id)]
    except KeyError:
        raise KeyError(f"claim {study}:{claim_id} is not in {paths.CLAIMS.name}") from None


def of_study(study: str) -> list[Claim]:
    return [c for (s, _), c in claims().items() if s == study]


@dataclass(frozen=True)
class BetweenRuns:
    """The sd between runs of a study's effect on one metric: declared (data/claims/between_runs.yaml, a prior),
    or learned from the reports before this one (series/learned.py, named by paths.LEARNED_ENV)."""

    sd: float
    runs: int
    estimated: str
    learned: bool = False
    engine: str = ""  # the server build(s) the runs that estimated it measured (declared priors name theirs)

    def text(self) -> str:
        if self.learned:
            return f"between-run sd {significant(self.sd, 3)} added ({self.estimated})"
        on = f" on {self.engine}" if self.engine else ""
        return f"between-run sd {significant(self.sd, 3)} added (declared from {self.runs} runs{on}, {self.estimated})"


# A between-run sd is of a log ratio or of a metric's own unit: no spread between runs of one plan reaches 100 of
# either (e^100 in a ratio), so a larger value, like NaN or infinity, is a broken file, refused by name.
MAX_BETWEEN_SD = 100.0
MAX_BETWEEN_RUNS = 100_000


@functools.cache
def between_runs() -> dict[tuple[str, str], BetweenRuns]:
    """Every declared between-run term, by (study, metric): read like user input (bounded YAML, no aliases), each
    entry checked (an sd finite in [0, MAX_BETWEEN_SD], three runs or more, a date), one ConfigError naming the file
    and the entry otherwise. The pipeline reads it before any server starts."""
    return _declared(paths.BETWEEN_RUNS, "between-run terms", named_engine=True) | _learned()


@functools.cache
def level_spread() -> dict[tuple[str, str], BetweenRuns]:
    """The declared between-run sd of an arm's level (the log of a metric), by (study, metric): what `compare` adds
    to two reports until five others of their series measured it (data/claims/between_runs_levels.yaml), checked
    as between_runs()'s entries."""
    return _declared(paths.LEVEL_SPREAD, "between-run sds of levels")


def _declared(path: Path, what: str, *, named_engine: bool = False) -> dict[tuple[str, str], BetweenRuns]:
    """The file's entries, checked; `named_engine`: each must name the server build its runs measured (a prior
    estimated on another engine than the claims now run on is stale, and a reader must be able to tell)."""
    entries = read_yaml(path, what) or []
    if not isinstance(entries, list):
        raise ConfigError(f"{path.name}: a list of entries, got {type(entries).__name__}")
    out = {}
    for i, d in enumerate(entries, 1):
        key, term = _between_entry(d, f"{path.name} entry {i}")
        if named_engine and not term.engine:
            raise ConfigError(f"{path.name} entry {i}: engine (the server build its runs measured) is missing")
        if key in out:
            raise ConfigError(f"{path.name} entry {i}: {key[0]} {key[1]} is declared twice")
        out[key] = term
    return out


def _learned() -> dict[tuple[str, str], BetweenRuns]:
    """The learned terms the pipeline wrote for this report (none outside it), checked as the declared ones."""
    path = os.environ.get(paths.LEARNED_ENV)
    if not path:
        return {}
    data = read_json(Path(path))
    if not isinstance(data, dict) or not isinstance(data.get("terms"), list):
        raise ConfigError(f"{path}: learned between-run terms missing or unreadable")
    out = {}
    for i, d in enumerate(data["terms"], 1):
        key, term = _between_entry(d, f"{path} entry {i}")
        out[key] = replace(term, learned=True)
    return out


def _between_entry(d: Any, where: str) -> tuple[tuple[str, str], BetweenRuns]:
    if not isinstance(d, dict) or not all(isinstance(d.get(k), str) and d.get(k) for k in ("study", "metric")):
        raise ConfigError(f"{where}: a mapping with study, metric, sd, runs and estimated")
    sd, runs = d.get("sd"), d.get("runs")
    if isinstance(sd, bool) or not isinstance(sd, int | float) or not 0 <= sd <= MAX_BETWEEN_SD:  # NaN fails too
        raise ConfigError(f"{where}: sd {sd!r} is not a finite number in [0, {MAX_BETWEEN_SD:g}]")
    if isinstance(runs, bool) or not isinstance(runs, int) or not 3 <= runs <= MAX_BETWEEN_RUNS:
        raise ConfigError(f"{where}: runs {runs!r} is not a whole number of runs, 3 or more")
    if not isinstance(d.get("estimated"), str) or not d["estimated"].strip():
        raise ConfigError(f"{where}: estimated (when, from which runs) is missing")
    engine = d.get("engine", "")
    if not isinstance(engine, str):
        raise ConfigError(f"{where}: engine {engine!r} is not a server build's name")
    return (d["study"], d["metric"]), BetweenRuns(float(sd), runs, d["estimated"], engine=engine.strip())


@dataclass(frozen=True)
class ErrorRate:
    """Wrong verdicts of one claim's rule in one scenario, as `make error-rates` measured them through the real
    path (benchmarks/claim_error_rates.py): `wrong` of `experiments` came out `verdict` where the truth is not."""

    study: str
    claim: str
    scenario: str
    verdict: str
    wrong: int
    experiments: int
    commit: str
    recorded: str

    @property
    def rate(self) -> float:
        return self.wrong / self.experiments

    def warning(self) -> str:
        return (
            f"Read this '{self.verdict}' with care: in {self.experiments:,} simulated experiments of this plan "
            f"({self.scenario}) the rule gave it wrongly {self.wrong:,} times ({self.rate:.1%}; `make error-rates` "
            f"at {self.commit[:10]}, {self.recorded[:10]})."
        )


def error_rates() -> list[ErrorRate]:
    """The recorded error rates, each entry checked (counts whole, wrong within experiments); one ConfigError
    naming the file and entry otherwise. None recorded: an empty list."""
    doc = read_json(paths.ERROR_RATES) if paths.ERROR_RATES.exists() else {"rates": []}
    out = []
    for i, e in enumerate(doc.get("rates", []) if isinstance(doc, dict) else [None]):
        try:
            rate = ErrorRate(**{k: e[k] for k in ErrorRate.__dataclass_fields__})
        except (KeyError, TypeError):
            raise ConfigError(f"{paths.ERROR_RATES.name} entry {i + 1}: not an error-rate record") from None
        ok = all(isinstance(x, int) and not isinstance(x, bool) for x in (rate.wrong, rate.experiments))
        if not ok or not 0 <= rate.wrong <= rate.experiments or rate.experiments < 1:
            raise ConfigError(f"{paths.ERROR_RATES.name} entry {i + 1}: {rate.wrong!r} wrong of {rate.experiments!r}")
        out.append(rate)
    return out
