"""The protocol's run: one calibration, the time budget shared by the parts, each part's servers and experiment."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import within
from secoverhead.core.runlock import HELD_ENV, hold_servers, server_addresses
from secoverhead.core.runs import check_inside
from secoverhead.host import calibration
from secoverhead.host.profiling import PERIOD_NS, profiler_for
from secoverhead.measurement.experiment import Experiment, ExperimentPlan, Profiling
from secoverhead.measurement.parts import Part, StudyResult, part_slug
from secoverhead.measurement.plan import cell_of
from secoverhead.measurement.results import ResultStore
from secoverhead.studies.protocol.conditions import host
from secoverhead.studies.protocol.judging import BaselineConditions, ComponentConditions, screened
from secoverhead.studies.protocol.params import StudyParams

if TYPE_CHECKING:
    import pandas as pd

    from secoverhead.analysis.verdicts import ClaimVerdict
    from secoverhead.workloads.measurement import Measurement


def experiment_plan(
    p: StudyParams, experiment_id: str, arms: Sequence[str], factors: Mapping[str, Sequence[Any]] | None = None
) -> ExperimentPlan:
    """One experiment's plan from the study's parameters: its time budget is all of the study's, a noisy run may be
    taken again (within the budget), and a part without claims still gets the rounds of a first look."""
    return ExperimentPlan(
        experiment_id,
        arms=tuple(arms),
        factors=factors or {},
        repetitions=p.repetitions,
        warmup=p.warmup,
        seed=p.seed,
        design=p.design,
        max_seconds=p.max_minutes * 60,
        max_retakes=max(1, p.planned_runs() // 20),
        min_rounds=p.look_schedule().rounds[0],
        speed_check_s=calibration.SPEED_CHECK_S,
    )


def run_experiment(
    p: StudyParams,
    plan: ExperimentPlan,
    *,
    measure: Callable[[str, dict], Measurement],
    about: Mapping[str, Any],
    judge: Callable[[pd.DataFrame, float], list[ClaimVerdict]] | None = None,
    profiling: Profiling | None = None,
) -> ResultStore:
    """Run (or resume) one experiment under p's results directory and return its store.

    judge(runs, alpha): the part's claims at a look; their `needs` steer later rounds (sequential design).
    about: what its metadata records of where it ran (study, servers, calibration; the parameters are p's)."""
    store = ResultStore(p.results_dir(), plan.experiment_id)
    parameters = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    exp = Experiment(plan, store, about={"parameters": parameters, **about}, progress=p.show_progress())

    def decide(index: int, alpha: float) -> set[tuple[str, tuple]]:
        needed = set()
        for v in judge(store.runs(), alpha) if judge is not None else []:
            if v.wants_rounds:
                for need in v.needs:
                    need = dict(need)
                    needed.add(cell_of(need.pop("arm"), need))
        return needed

    looks = p.look_schedule() if judge is not None else None
    exp.run(measure, looks=looks, decide=decide if judge is not None else None, profiling=profiling)
    return store


@dataclass
class PartPlan:
    """What one experiment of a study needs, built by the study inside the part's server stack."""

    arms: list[str]  # the baseline first
    measure: Callable[[str, dict], Measurement]
    facts: dict[str, Any]
    notes: list[str] = dataclasses.field(default_factory=list)
    factors: dict[str, Sequence[Any]] = dataclasses.field(default_factory=dict)
    servers: dict[str, Any] = dataclasses.field(default_factory=dict)  # arm -> server it ran on (profiles)
    judge: Callable[[pd.DataFrame, float], list[ClaimVerdict]] | None = None
    profile_factors: list[dict[str, Any]] | None = None
    ops_metric: str = "operations"  # the run metric counting operations (to express profiles per operation)
    profile_period_ns: int = PERIOD_NS  # CPU time per profile sample: shorter where a profiling run spends little
    profile_measure: Callable[[str, dict], Measurement] | None = None  # what a profiling run does, if not measure
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)
    # What the claims' preconditions read of the servers' environment, known before any run, beyond this machine's
    # cores and kernel (run_parts adds those), and how the baseline arm's own runs give the rest
    conditions: dict[str, Any] = dataclasses.field(default_factory=dict)
    baseline_conditions: BaselineConditions | None = None
    component_conditions: ComponentConditions | None = None  # and how the other arms' components give more
    finish: Callable[[ResultStore], dict[str, Any]] | None = None  # while the servers still run: more extras
    outlier: tuple[str, float] | None = None  # duets: (metric, log deviation) marking a one-off duet (Experiment)


def run_parts(
    p: StudyParams, study: str, names: Sequence[str], plan: Callable[[str, contextlib.ExitStack], PartPlan]
) -> StudyResult:
    """The protocol's run: one machine-speed calibration, the time budget shared by the parts, and per part its
    servers (stopped when the part ends), its interleaved experiment, and its Part."""

    if p.replays():  # a finished report's notebook run again: what its run recorded, nothing measured
        return replay(p, study, names)
    held = os.environ.get(HELD_ENV, "").split("|")  # the pipeline's process holds these for its kernel
    release = hold_servers([a for a in server_addresses(p) if a not in held], f"{study} notebook")
    try:
        return _measured(p, study, names, plan)
    finally:
        release()


def _measured(
    p: StudyParams, study: str, names: Sequence[str], plan: Callable[[str, contextlib.ExitStack], PartPlan]
) -> StudyResult:
    cal = calibration.shared()
    budget = p.budget()
    weights = [p.PART_WEIGHTS.get(name, 1.0) for name in names]
    parts: dict[str, Part] = {}
    for i, name in enumerate(names):
        with contextlib.ExitStack() as stack:
            part_plan = plan(name, stack)
            share = budget.share(weights[i], sum(weights[i:]))
            parts[name] = _run_part(p, study, name, part_plan, cal, share)
    return StudyResult(study, p, parts, tuple(p.PRIMARY_METRICS))


def experiment_of(p: StudyParams, study: str, part: str) -> str:
    """A part's experiment id: the study's, or the study's and the part's name in letters, digits and dashes
    ("tls-mongodb-on-mongod-6.0")."""
    return p.experiment_id if part == study else f"{p.experiment_id}-{part_slug(part)}"


def _run_part(p: StudyParams, study: str, name: str, pp: PartPlan, cal: Mapping[str, Any], seconds: float) -> Part:
    """One part, its servers up: its conditions recorded before any run, its claims screened by their
    preconditions, its experiment run within its share of the budget, its extras kept."""
    exp_id = experiment_of(p, study, name)
    environment = host() | pp.conditions  # this machine's, then what the study knows of its servers
    judge = None
    if pp.judge is not None and not p.aa:  # an A/A run has no claims: it runs every planned round
        judge = screened(pp.judge, name, pp.arms, environment, pp.baseline_conditions, pp.component_conditions)
    ResultStore(p.results_dir(), exp_id).update_metadata(conditions=environment)  # before any run
    exp_plan = dataclasses.replace(
        experiment_plan(p, exp_id, pp.arms, pp.factors),
        design=p.part_design(name),
        max_seconds=seconds,
        outlier=pp.outlier,
    )
    about = {"study": study, "servers": pp.facts, "calibration": cal}
    store = run_experiment(
        p, exp_plan, measure=pp.measure, about=about, judge=judge, profiling=_profiling(p, pp, exp_id)
    )
    extras = {"calibration": cal, **pp.extras, **(pp.finish(store) if pp.finish else {})}
    kept = {k: v for k, v in extras.items() if k != "calibration" and _plain(v)}
    store.update_metadata(notes=pp.notes, extra_keys=sorted(kept), **kept)
    return Part(name, store, pp.arms, pp.facts, pp.notes, extras)


def _profiling(p: StudyParams, pp: PartPlan, exp_id: str) -> Profiling | None:
    """The part's profiling round, when p.profile is on and the part names the servers its arms run on."""
    profiler = (
        profiler_for(p, pp.servers, ops_metric=pp.ops_metric, period_ns=pp.profile_period_ns) if pp.servers else None
    )
    if profiler is None:
        return None
    profiler.bind(ResultStore(p.results_dir(), exp_id).path / "profiles")
    return Profiling(profiler.attach, factors=pp.profile_factors, measure=pp.profile_measure)


def replay(p: StudyParams, study: str, names: Sequence[str]) -> StudyResult:
    """The parts a finished run recorded, read back without starting anything (read-only): each experiment's
    runs, arms, servers' settings, notes and the extras its metadata kept. A part the run never reached is
    left out. A report is read only inside itself: its results folder and every file in it."""
    run = Path(p.params_from).resolve().parent
    if not within(p.results_dir(), run):
        raise ConfigError(f"output_dir {p.output_dir[:120]} is not inside the report it replays ({run})")
    check_inside(run)
    parts: dict[str, Part] = {}
    for name in names:
        exp_id = experiment_of(p, study, name)
        if not (p.results_dir() / exp_id / "metadata.json").is_file():
            continue
        store = ResultStore(p.results_dir(), exp_id, readonly=True)
        meta = store.metadata()
        keys = meta.get("extra_keys")  # a run recorded before extras were listed: every metadata field offered
        extras = {"calibration": meta.get("calibration") or {}} | (
            {k: meta[k] for k in keys if k in meta} if isinstance(keys, list) else dict(meta)
        )
        arms = [str(a) for a in (meta.get("plan") or {}).get("arms") or []]
        parts[name] = Part(name, store, arms, meta.get("servers") or {}, list(meta.get("notes") or []), extras)
    if not parts:
        raise ConfigError(f"{p.results_dir()} holds no recorded experiment of {study} (remeasure=True measures)")
    return StudyResult(study, p, parts, tuple(p.PRIMARY_METRICS), recorded=True)


def _plain(value: Any) -> bool:
    return isinstance(value, dict | list | str | int | float | bool)
