"""How often a claim's rule gives the wrong verdict, through the real path: the runner (duet rounds, sequential
looks with alpha spending, later rounds only for undecided cells, the time budget's stop) with synthetic
measurements, and the study's own claim rule reading the registry.

The truth is put where a wrong verdict is likeliest: just outside the region a verdict claims (a true TPS loss
of 14.9 % against "about 30 %, 15-45 %": a *reproduced* is wrong), so the rate measured is the rule's worst
case. Stalls (a run losing `stall_loss` of its TPS) hit a chosen arm in a share of runs; they are part of that
arm's true cost, which the truth includes. Every scenario runs the audit study's quick plan as `make reports`
runs it (quick.yaml through the study runner) at this machine's measured noise (RUN_SD).

    .venv/bin/python benchmarks/claim_error_rates.py [experiments] [scenario numbers, e.g. 0,2]
    .venv/bin/python benchmarks/claim_error_rates.py aa [experiments]

`aa`: the audit study's quick plan as `make reports` runs it (its Params, `run_experiment`, five arms, its
design, looks, alpha spending, the claim rules), every arm the same server (an A/A/A/A/A run) with stalls drawn for each
run of each arm apart; per claim, the share of experiments whose verdict the truth contradicts. The unit test
tests/unit/test_claim_error_rates.py runs the same function.

A pure simulation (no server, nothing timed): two of them may share the machine's two cores.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from secoverhead.analysis import claim_registry as registry
from secoverhead.core import params as params_mod
from secoverhead.core import paths
from secoverhead.measurement.experiment import Measurement
from secoverhead.measurement.results import ResultStore
from secoverhead.studies.audit import claims as audit_claims
from secoverhead.studies.audit import declarations as audit_declarations
from secoverhead.studies.protocol.runner import run_experiment


@dataclass(frozen=True)
class Scenario:
    name: str
    claim_id: str  # an audit claim (verdict id)
    candidate: str
    true_ratio: float  # candidate TPS / baseline TPS, stalls included
    wrong: str  # the verdict that would be wrong at this truth
    stall_rate: float = 0.0
    stall_arm: str = ""  # "" none, "candidate", "both"
    stall_loss: float = 0.3
    budget_stop: bool = False


SCENARIOS = (
    Scenario("general_log loss 14.9 % (outside 15-45 %)", "general_log-loss", "general_log", 0.851, "reproduced"),
    Scenario("general_log loss 15.1 % (inside)", "general_log-loss", "general_log", 0.849, "not reproduced"),
    Scenario(
        "server_audit 10.1 % slower (outside 0.90-1.02)", "server_audit-small", "server_audit", 0.899, "reproduced"
    ),
    Scenario(
        "server_audit 10.1 %, time budget stops at the first look",
        "server_audit-small",
        "server_audit",
        0.899,
        "reproduced",
        budget_stop=True,
    ),
    Scenario(
        "server_audit 10.1 %, stalls in both arms (5 % of runs)",
        "server_audit-small",
        "server_audit",
        0.899,
        "reproduced",
        stall_rate=0.05,
        stall_arm="both",
    ),
    Scenario(
        "server_audit 10.1 % incl. stalls in its own arm (5 % of runs)",
        "server_audit-small",
        "server_audit",
        0.899,
        "reproduced",
        stall_rate=0.05,
        stall_arm="candidate",
    ),
    Scenario(
        "server_audit 10.1 % incl. stalls in its own arm (10 % of runs)",
        "server_audit-small",
        "server_audit",
        0.899,
        "reproduced",
        stall_rate=0.10,
        stall_arm="candidate",
    ),
)

# Scenarios whose wrong-verdict rate the design bounds by alpha (no stall belongs to one arm): the test asserts
# the bound on these and reports the others as measured.
BOUNDED = tuple(s for s in SCENARIOS if s.stall_arm != "candidate")

# This machine's noise in the audit study's quick plan (interleaved, no quota; make reports of 2026-11-26):
# per-round sd of log(arm / A) of TPS 0.08-0.19 over four arms, i.e. a run's sd of about 0.1 on each side.
RUN_SD = 0.1


def _quick_plan(seed: int, directory: Path, name: str) -> audit_declarations.Params:
    """The audit study's quick parameters as `make reports` runs them (quick.yaml), without profiling."""
    values = params_mod.read_file(paths.ROOT / "papermill-params" / "audit" / "quick.yaml")
    values |= {"seed": seed, "profile": False, "progress": "off", "experiment_id": name}
    p = params_mod.build(audit_declarations.Params, values, study="audit")
    p.output_dir = str(directory)  # what the pipeline sets
    return p


def _run(p: audit_declarations.Params, arms: list[str], measure, *, max_seconds: float = 1e9) -> ResultStore:
    """The quick plan through the study runner (its design, looks, alpha spending, retakes, budget stop) with
    the audit claims as its judge; returns the store at the final look."""
    return run_experiment(
        p, "audit", p.experiment_id, arms=arms, measure=measure, servers={},
        judge=functools.partial(audit_claims.part_claims, "audit"), design=p.part_design("audit"),
        max_seconds=max_seconds,
    )  # fmt: skip


def one(s: Scenario, seed: int, directory: Path, *, run_sd: float = RUN_SD) -> str:
    """One experiment's verdict on the scenario's claim, the audit study's quick plan run as make reports runs
    it, with the baseline and the scenario's candidate only."""
    rng = np.random.default_rng(seed)
    p = _quick_plan(seed, directory, f"e{seed}")
    arms = [audit_declarations.BASELINE, s.candidate]
    # the candidate's level without stalls, so that its mean TPS (stalls included) is the true ratio
    stall_mean = 1 - s.stall_rate * s.stall_loss if s.stall_arm in ("candidate", "both") else 1.0
    base_mean = 1 - s.stall_rate * s.stall_loss if s.stall_arm == "both" else 1.0
    level = s.true_ratio * base_mean / stall_mean

    def measure(arm: str, factors: dict) -> Measurement:
        x = (level if arm == s.candidate else 1.0) * math.exp(rng.normal(0, run_sd))
        hit = s.stall_arm == "both" or (s.stall_arm == "candidate" and arm == s.candidate)
        if hit and rng.random() < s.stall_rate:
            x *= 1 - s.stall_loss
        return Measurement({"tps": 1000.0 * x, "transactions": 4000.0 * x, "queries": 72000.0 * x})

    store = _run(p, arms, measure, max_seconds=0.0 if s.budget_stop else 1e9)
    alpha = float(store.metadata().get("final_alpha") or p.alpha)
    v = next((v for v in audit_claims.part_claims("audit", store.runs(), alpha) if v.id == s.claim_id), None)
    return str(v.verdict) if v is not None else "inconclusive"


def _rate_chunk(s: Scenario, seeds: list[int]) -> int:
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        return sum(one(s, i, Path(d)) == s.wrong for i in seeds)


def rate(s: Scenario, experiments: int, processes: int = 1) -> tuple[int, float, float]:
    """(wrong verdicts, their share, its Monte-Carlo standard error) over seeds 0..experiments-1."""
    from concurrent.futures import ProcessPoolExecutor

    chunks = [list(range(i, experiments, processes)) for i in range(processes)]
    if processes > 1:
        with ProcessPoolExecutor(processes) as pool:
            wrong = sum(pool.map(_rate_chunk, [s] * processes, chunks))
    else:
        wrong = _rate_chunk(s, chunks[0])
    p = wrong / experiments
    return wrong, p, math.sqrt(max(p * (1 - p), 1e-12) / experiments)


def aa_wrong() -> dict[str, str]:
    """Per audit claim, the verdict an A/A truth (every arm alike: TPS ratio 1, loss 0 %) contradicts."""
    out = {}
    for c in registry.of_study("audit"):
        truth = 0.0 if "loss" in c.reading.effect else 1.0
        label = c.reading.label_of(truth, truth)
        out[c.id] = {"reproduce": "not reproduced", "refute": "reproduced"}.get(label, "")
    return out


def aa_one(
    seed: int, directory: Path, *, stall_rate: float = 0.05, stall_loss: float = 0.3, run_sd: float = RUN_SD
) -> dict[str, str]:
    """One A/A experiment of the audit study's quick plan through run_experiment: claim id -> verdict."""
    p = _quick_plan(seed, directory, f"aa{seed}")
    rng = np.random.default_rng(seed)

    def measure(arm: str, factors: dict) -> Measurement:
        x = math.exp(rng.normal(0, run_sd))
        if rng.random() < stall_rate:  # each run of each arm draws its own stall
            x *= 1 - stall_loss
        return Measurement({"tps": 1000.0 * x, "transactions": 4000.0 * x, "queries": 72000.0 * x})

    store = _run(p, [a.name for a in p.arm_list()], measure)
    alpha = float(store.metadata().get("final_alpha") or p.alpha)
    return {v.id: str(v.verdict) for v in audit_claims.part_claims("audit", store.runs(), alpha)}


def _aa_chunk(seeds: list[int], kw: dict) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        return [aa_one(i, Path(d), **kw) for i in seeds]


def aa_rates(experiments: int, processes: int = 1, **kw) -> dict[str, tuple[int, float, float]]:
    """Per claim: (wrong verdicts, their share, its Monte-Carlo standard error) over `experiments` A/A runs,
    seeds 0..experiments-1 (so a rerun gives the same figures), split over `processes` (a pure simulation: it
    may use every core when nothing is being measured)."""
    from concurrent.futures import ProcessPoolExecutor

    wrong_of = aa_wrong()
    wrong = dict.fromkeys(wrong_of, 0)
    chunks = [list(range(i, experiments, processes)) for i in range(processes)]
    if processes > 1:
        with ProcessPoolExecutor(processes) as pool:
            results = [v for part in pool.map(_aa_chunk, chunks, [kw] * processes) for v in part]
    else:
        results = _aa_chunk(chunks[0], kw)
    for verdicts in results:
        for cid, verdict in verdicts.items():
            wrong[cid] += verdict == wrong_of.get(cid)
    out = {}
    for cid, k in wrong.items():
        q = k / experiments
        out[cid] = (k, q, math.sqrt(max(q * (1 - q), 1e-12) / experiments))
    return out


if __name__ == "__main__" and sys.argv[1:2] == ["aa"]:
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    for cid, (k, q, se) in aa_rates(n, processes=os.cpu_count() or 1).items():
        print(f"A/A {cid}: wrong '{aa_wrong()[cid]}' {k} of {n} = {q * 100:.1f} % (+-{se * 100:.1f})")
elif __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    chosen = [int(i) for i in sys.argv[2].split(",")] if len(sys.argv) > 2 else range(len(SCENARIOS))
    for s in (SCENARIOS[i] for i in chosen):
        k, p, se = rate(s, n, processes=os.cpu_count() or 1)
        print(f"{s.name}: wrong '{s.wrong}' {k} of {n} = {p * 100:.1f} % (+-{se * 100:.1f})")
