"""TDE's fidelity preconditions: the model of the original's instance (mechanism.original) and the check that each
emulated cell's time splits as the model says the original's did (claims.baseline_conditions), branch by branch."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.claimcheck import screen, verdict_of
from secoverhead.analysis.verdicts import Verdict
from secoverhead.studies.tde import claims as tde_claims
from secoverhead.studies.tde import mechanism
from secoverhead.studies.tde.instances import EMULATED, ORIGINAL, SSD_FLUSH_LATENCY_US, SSD_READ_LATENCY_US

INST = ORIGINAL["4c16g"]


def test_a_transaction_waits_its_reads_and_flushes_at_the_originals_latencies():
    assert mechanism.Cost(100.0, 2.0, 1.0).wait_us() == 2 * SSD_READ_LATENCY_US + SSD_FLUSH_LATENCY_US


@pytest.mark.parametrize(
    "cost, threads, bound",
    [
        (mechanism.Cost(500.0, 2.0, 0.0), 1, "latency"),  # one thread: its own transaction's time
        (mechanism.Cost(500.0, 2.0, 0.0), 16, "IOPS"),  # 3,500 a second at 2 reads of 7,000 IOPS
        (mechanism.Cost(2000.0, 0.1, 0.0), 16, "CPU"),  # 4 cores over 2 ms
    ],
)
def test_the_original_reaches_the_least_of_its_three_rates(cost, threads, bound):
    split = mechanism.original(INST, threads, cost)
    rates = {"CPU": INST.cores / (cost.cpu_us / 1e6), "IOPS": INST.iops / cost.reads,
             "latency": threads / ((cost.cpu_us + cost.wait_us()) / 1e6)}  # fmt: skip
    assert split.bound == bound and split.tps == pytest.approx(min(rates.values()))
    assert split.cpu_share_of_txn == pytest.approx(cost.cpu_us / (cost.cpu_us + cost.wait_us()))
    assert split.cpu_utilisation <= 1 + 1e-9 and split.iops_utilisation <= 1 + 1e-9


def test_a_transaction_of_no_reads_is_never_iops_bound_and_an_empty_one_has_no_share():
    assert mechanism.original(INST, 16, mechanism.Cost(1000.0, 0.0, 0.0)).bound != "IOPS"
    assert math.isnan(mechanism.original(INST, 1, mechanism.Cost(0.0, 0.0, 0.0)).cpu_share_of_txn)


@pytest.mark.parametrize(
    "measured, model, expected",
    [(0.11, 0.46, 0.46 / 0.11), (0.46, 0.11, 0.46 / 0.11), (0.3, 0.3, 1.0), (0.0, 0.3, math.inf),
     (float("nan"), 0.3, math.inf), (0.3, math.inf, math.inf)],
)  # fmt: skip
def test_two_shares_are_a_factor_apart_either_way_and_a_missing_one_is_infinitely_far(measured, model, expected):
    assert mechanism.factor(measured, model) == pytest.approx(expected)


def _runs(tps_1: float, iops_share_16: float, cpu_us: float = 500.0, reads: float = 2.0) -> pd.DataFrame:
    """Baseline runs of 4c16g at 1 and 16 threads, each with the components the model reads."""
    rows = []
    for threads, tps, share in ((1, tps_1, 0.2), (16, 400.0, iops_share_16)):
        for r in range(3):
            rows.append({"arm": "encryption off", "round": r, "workload": "oltp_write_only", "threads": threads,
                         "tps": tps, "server_cpu_fg_us_per_op": cpu_us, "data_reads_per_txn": reads,
                         "fsyncs_per_txn": 0.0, "server_cpu_pct_of_limit": 40.0, "iops_read": share * 1000.0,
                         "iops_cap_read": 1000.0})  # fmt: skip
    return pd.DataFrame(rows)


def _conditions(runs: pd.DataFrame, instance: str = "4c16g") -> dict:
    return tde_claims.baseline_conditions(SimpleNamespace(emulate_iops="reads"), instance, runs)


def test_one_thread_splitting_as_the_originals_holds_and_one_mostly_waiting_fails():
    """At one thread the original's transaction is 500 us CPU of 900 (56 %): a cell at the same time per
    transaction splits as it did; one four times slower (the dilated wait) is 14 % CPU, 4x away."""
    txn_s = (500.0 + 2 * SSD_READ_LATENCY_US) / 1e6
    same = _conditions(_runs(1 / txn_s, 1.0))
    assert same["baseline_split_factor_fewest"] == pytest.approx(1.0)
    waiting = _conditions(_runs(0.25 / txn_s, 1.0))
    assert waiting["baseline_split_factor_fewest"] == pytest.approx(4.0)
    claim = registry.get("tde", "low-concurrency-loss")
    held = screen([_verdict(claim)], _passing(claim) | same)[0]
    failed = screen([_verdict(claim)], _passing(claim) | waiting)[0]
    assert held.verdict == Verdict.REPRODUCED
    assert failed.verdict == Verdict.NOT_TESTABLE and "CPU's share of one baseline transaction" in failed.evidence


def test_many_threads_bound_as_the_original_holds_and_one_the_cap_does_not_hold_fails():
    """At sixteen threads the model's original is IOPS-bound (2 reads of 7,000 IOPS): the cell must use the cap
    as the original used its IOPS; at half of it, another thing bounds it."""
    txn_s = (500.0 + 2 * SSD_READ_LATENCY_US) / 1e6
    at_cap = _conditions(_runs(1 / txn_s, 0.98))
    half = _conditions(_runs(1 / txn_s, 0.5))
    assert at_cap["baseline_split_factor_most"] == pytest.approx(1 / 0.98)
    assert half["baseline_split_factor_most"] == pytest.approx(2.0)
    claim = registry.get("tde", "high-concurrency-loss")
    assert screen([_verdict(claim)], _passing(claim) | at_cap)[0].verdict == Verdict.REPRODUCED
    assert screen([_verdict(claim)], _passing(claim) | half)[0].verdict == Verdict.NOT_TESTABLE


def test_an_instance_the_original_did_not_have_and_runs_without_components_are_not_judged_by_the_model():
    """The in-memory instance has no original to hold it against (unknown, so unchecked); a cell whose
    components were not recorded is infinitely far (fails) rather than passing unread."""
    assert EMULATED["in-memory"].source is None
    got = _conditions(_runs(1000.0, 1.0), instance="in-memory")
    assert got["baseline_split_factor_fewest"] is None and got["baseline_split_factor_most"] is None
    bare = _runs(1000.0, 1.0).drop(columns=["server_cpu_fg_us_per_op"])
    assert _conditions(bare)["baseline_split_factor_fewest"] == math.inf


def test_every_split_row_shows_here_beside_the_original():
    rows = tde_claims.splits(INST, _runs(1000.0, 1.0).assign(iops_share=1.0))
    assert {r["threads"] for r in rows} == {1, 16}
    for r in rows:
        assert {"CPU share of a transaction, here", "CPU share of a transaction, original", "factor"} <= set(r)


def _verdict(claim):
    return verdict_of(claim.study, claim.id, Verdict.REPRODUCED, "e", part="4c16g")


def _passing(claim) -> dict:
    """Every precondition of the claim but the split factors on its passing side."""
    out = {}
    for p in claim.preconditions:
        out[p.condition] = p.limit * 0.5 if p.op in ("below", "at_most") else p.limit * 2 + 1
    return out
