"""Preconditions: every claim declares them, each can fail, none reads the compared arms' difference, and a
failed one makes the verdict 'not testable here', counted apart everywhere counts appear."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis import preconditions as pre
from secoverhead.analysis.claimcheck import Grounds, screen, verdict_of
from secoverhead.analysis.verdicts import ClaimVerdict, Verdict
from secoverhead.reporting import summary
from secoverhead.studies.audit import claims as audit_claims
from secoverhead.studies.auth import claims as auth_claims
from secoverhead.studies.https import claims as https_claims
from secoverhead.studies.protocol.conditions import host
from secoverhead.studies.protocol.judging import conditions, screened, study_verdicts
from secoverhead.studies.tde import claims as tde_claims
from secoverhead.studies.tls import claims as tls_claims
from secoverhead.suite.index import _tally

CLAIMS = list(registry.claims().values())
EVERY = [(c, p) for c in CLAIMS for p in c.preconditions]


def _passing(p: pre.Precondition):
    """A value on the side of the limit where the precondition holds."""
    if p.op == "equals":
        return p.limit
    if isinstance(p.limit, tuple):
        return (p.limit[0] - 1, 0) if p.op in ("below", "at_most") else (p.limit[0] + 1, 0)
    return p.limit * 0.5 if p.op in ("below", "at_most") else p.limit * 2 + 1


def _failing(p: pre.Precondition):
    """A value on the side of the limit where it fails (the limit itself where the comparison is strict)."""
    if p.op == "equals":
        return not p.limit if isinstance(p.limit, bool) else object()
    if isinstance(p.limit, tuple):
        return (p.limit[0] + 1, 0) if p.op in ("below", "at_most") else (p.limit[0] - 1, 0)
    if p.op in ("below", "above"):
        return p.limit
    return p.limit * 2 + 1 if p.op == "at_most" else p.limit * 0.5


def _verdict(claim: registry.Claim, verdict: Verdict = Verdict.REPRODUCED) -> ClaimVerdict:
    return verdict_of(claim.study, claim.id, verdict, "ratio 1.5 [1.4, 1.6]", part="MongoDB", level=4)


def _all_passing(claim: registry.Claim) -> dict:
    return {p.condition: _passing(p) for p in claim.preconditions}


def test_every_claim_names_its_mechanism_and_at_least_one_precondition():
    for c in CLAIMS:
        assert c.mechanism and c.preconditions, c.id
        for p in c.preconditions:
            assert p.why and p.where and p.condition in pre.CONDITIONS, (c.id, p)


def test_the_registry_refuses_a_claim_without_preconditions(registry_from):
    with pytest.raises(ValueError, match="preconditions"):
        registry_from(
            "- {id: x, study: s, source: suite, claim: c, metric: tps, why: w, mechanism: m,"
            " reading: {effect: e, shape: above, line: 1}}\n"
        )


def test_a_precondition_needs_its_why_where_and_a_known_condition():
    with pytest.raises(ValueError, match="unknown condition"):
        pre.Precondition("cores_of_the_moon", "at_least", 1, "w", "w")
    with pytest.raises(ValueError, match="why"):
        pre.Precondition("host_cores", "at_least", 1, "", "somewhere")
    with pytest.raises(ValueError, match="exactly one"):
        pre.Precondition.from_dict({"condition": "host_cores", "at_least": 1, "below": 3, "why": "w", "where": "w"})


@pytest.mark.parametrize("claim, precondition", EVERY, ids=[f"{c.study}:{c.id}:{p.condition}" for c, p in EVERY])
def test_each_precondition_can_fail_and_then_the_claim_is_not_testable_here(claim, precondition):
    held = screen([_verdict(claim)], _all_passing(claim))[0]
    assert held.verdict == Verdict.REPRODUCED and all(c["holds"] for c in held.preconditions)
    failing = _all_passing(claim) | {precondition.condition: _failing(precondition)}
    v = screen([_verdict(claim)], failing)[0]
    assert v.verdict == Verdict.NOT_TESTABLE, (claim.id, precondition)
    assert v.testable_where == precondition.where and "Measured instead" in v.evidence
    (bad,) = [c for c in v.preconditions if c["holds"] is False]
    assert bad["condition"] == precondition.condition and bad["required"] in v.evidence
    assert not v.decided and not v.wants_rounds and v.needs == []  # more rounds cannot make it testable


def test_no_precondition_reads_the_compared_arms_difference():
    """Every condition is of the environment, of the baseline arm alone, or of an arm's components against the
    baseline's rate; the baseline's are computed from the runs the engine hands over, which are the baseline arm's
    only (the components' hook: test_a_component_condition_never_sees_a_compared_arms_throughput)."""
    assert {pre.CONDITIONS[p.condition][2] for _, p in EVERY} <= {pre.ENVIRONMENT, pre.BASELINE, pre.COMPONENTS}
    assert not {"tps", "qps", "server_cpu_cores", "server_cpu_us_per_query"} & set(pre.ARM_COMPONENTS)
    seen: list[set] = []

    def baseline(part, runs):
        seen.append(set(runs["arm"]))
        return {}

    runs = pd.DataFrame({"arm": ["base", "cand", "base", "cand"], "tps": [1.0, 0.5, 1.0, 0.1]})
    conditions("p", ["base", "cand"], {"host_cores": 2}, runs, baseline)
    assert seen == [{"base"}]


def _study_runs(base: dict, cand: dict, factors: dict | None = None) -> pd.DataFrame:
    rows = []
    for rnd in range(4):
        for arm, metrics in (("base", base), ("cand", cand)):
            rows.append({"arm": arm, "round": rnd, **(factors or {}), **metrics})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "fn, metrics",
    [
        (tls_claims.baseline_conditions, {"query_ms_median": 0.8, "total_ms_median": 20.0}),
        (auth_claims.baseline_conditions, {"server_cpu_us_per_op": 300.0, "client_cpu_us_per_op": 900.0}),
        (https_claims.baseline_conditions, {"server_cpu_us_per_op": 30.0}),
        (
            lambda part, runs: tde_claims.baseline_conditions(SimpleNamespace(emulate_iops="reads"), "4c16g", runs),
            {"server_cpu_pct_of_limit": 70.0, "iops_read": 600.0},
        ),
    ],
)
def test_a_studys_baseline_conditions_do_not_move_with_the_candidate(fn, metrics):
    """Each study's baseline conditions on the engine's path: the candidate arm's values, however wild, leave
    them alone (they never reach them)."""
    factors = {"workload": "oltp_read_only", "threads": 16}
    got = []
    for scale in (1.0, 0.01, 100.0):
        runs = _study_runs(metrics, {k: v * scale for k, v in metrics.items()}, factors)
        got.append(conditions("4c16g", ["base", "cand"], {}, runs, fn))
    assert got[0] == got[1] == got[2] and all(v is not None for v in got[0].values()), got


def test_an_unknown_condition_leaves_the_verdict_standing_and_says_so():
    claim = registry.get("audit", "general_log-loss")
    v = screen([_verdict(claim)], {"server_cpu_room_cores": None})[0]
    assert v.verdict == Verdict.REPRODUCED and v.preconditions[0]["holds"] is None
    assert "not known here" in summary.claims_html([v.as_dict()])


def test_versions_compare_element_by_element_and_kinds_never_mix():
    assert pre.holds("below", (5, 4), (5, 18)) and not pre.holds("below", (6, 1), (5, 18))
    assert pre.holds("at_least", True, 1) is None and pre.holds("at_least", "2", 1) is None
    assert pre.holds("at_least", float("nan"), 1) is None
    assert (
        pre.condition_text((6, 1)) == "6.1"
        and pre.condition_text(0.6, "cores") == "0.6 cores"
        and pre.condition_text(0.42, "share") == "42 %"
    )
    assert pre.condition_text(1587.4, "us") == "1,587 us"


@pytest.mark.parametrize(
    "limit, design, host, expected",
    [(0.6, "duet", 2, False), (0.0, "duet", 2, False), (0.0, "interleaved", 2, True), (1.5, "duet", 2, True)],
)
def test_audit_needs_more_than_one_core_of_room(monkeypatch, limit, design, host, expected):
    monkeypatch.setattr(audit_claims, "host", lambda: {"host_cores": host, "kernel_version": [6, 1]})
    p = SimpleNamespace(mysql_host="", server_cpu_limit=limit, part_design=lambda part: design, threads=200)
    cond = audit_claims.environment_conditions(p)
    claim = registry.get("audit", "general_log-loss")
    v = screen([_verdict(claim)], cond)[0]
    assert (v.verdict != Verdict.NOT_TESTABLE) == expected, cond
    own = SimpleNamespace(
        mysql_host="db.example", server_cpu_limit=0, part_design=lambda part: "interleaved", threads=8
    )
    assert audit_claims.environment_conditions(own)["server_cpu_room_cores"] is None  # a user's server: unknown


@pytest.mark.parametrize("threads, testable", [(16, False), (99, False), (100, True), (200, True)])
def test_general_logs_claims_need_a_load_where_the_logs_lock_can_convoy(threads, testable):
    """At the original's 200 threads (a hundred at least) general_log's loss by waiting can show; at 16 the
    claim is not testable here, whatever the server's CPU room."""
    p = SimpleNamespace(mysql_host="", server_cpu_limit=0.0, part_design=lambda part: "interleaved", threads=threads)
    cond = audit_claims.environment_conditions(p) | {"server_cpu_room_cores": 2.0}
    for claim_id in ("general_log-loss", "general_log-worst"):
        v = screen([_verdict(registry.get("audit", claim_id))], cond)[0]
        assert (v.verdict != Verdict.NOT_TESTABLE) == testable, (claim_id, threads)
    small = screen([_verdict(registry.get("audit", "server_audit-small"))], cond)[0]
    assert small.verdict != Verdict.NOT_TESTABLE  # the small-cost claims do not ask it


@pytest.mark.parametrize("share, testable", [(0.12, False), (0.49, False), (0.5, True), (1.4, True), (None, True)])
def test_every_audit_claim_needs_a_log_whose_writes_could_bound_tps(share, testable):
    """Where general_log's writes would hold its log under half of each second at the baseline's TPS, no log here
    can make the server wait on its writes: every audit claim is then not testable here. Unknown (no general log
    timed: MariaDB's part, a user's server) leaves the precondition unchecked."""
    for claim in registry.of_study("audit"):
        cond = _all_passing(claim) | {"log_writes_share_at_baseline": share}
        v = screen([_verdict(claim)], cond)[0]
        assert (v.verdict != Verdict.NOT_TESTABLE) == testable, (claim.id, share)


def _audit_runs(rounds: dict[int, tuple[float, float]], **extra) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(A's runs, general_log's runs): per round, A's TPS and general_log's log file time per transaction."""
    base = pd.DataFrame({"arm": "A: no audit", "round": list(rounds), "tps": [t for t, _ in rounds.values()]})
    holds = [h for _, h in rounds.values()]
    log = pd.DataFrame({"arm": "general_log", "round": list(rounds), "log_io_us_per_txn": holds, **extra})
    return base, log


def test_audits_log_share_is_per_round_the_general_logs_hold_times_the_baselines_tps():
    base, log = _audit_runs({0: (500.0, 200.0), 1: (400.0, 1000.0), 2: (450.0, 2000.0)})
    # rounds: 0.1, 0.4, 0.9 of each second: the median round, not the product of medians (0.45 x 1000 us)
    assert audit_claims.component_conditions("MySQL", base, log)["log_writes_share_at_baseline"] == pytest.approx(0.4)
    assert audit_claims.component_conditions("MySQL", base.drop(columns="round"), log.drop(columns="round"))[
        "log_writes_share_at_baseline"
    ] == pytest.approx(450 * 1000 / 1e6)  # no rounds: the medians
    untimed = log.drop(columns="log_io_us_per_txn")
    assert audit_claims.component_conditions("MySQL", base, untimed) == {"log_writes_share_at_baseline": None}
    other = log.assign(arm="binlog only")  # no general log in the part (MariaDB's)
    assert audit_claims.component_conditions("MariaDB", base, other) == {"log_writes_share_at_baseline": None}
    assert audit_claims.component_conditions("MySQL", base.iloc[0:0], log) == {"log_writes_share_at_baseline": None}
    nan_rounds = log.assign(log_io_us_per_txn=float("nan"))
    assert audit_claims.component_conditions("MySQL", base, nan_rounds) == {"log_writes_share_at_baseline": None}


def test_a_component_condition_never_sees_a_compared_arms_throughput():
    """judging.conditions hands the component hook the other arms' ARM_COMPONENTS columns alone."""
    from secoverhead.studies.protocol.judging import conditions

    base, log = _audit_runs({0: (500.0, 200.0)}, tps=123.0, server_cpu_cores=1.0)
    seen = {}

    def hook(part, baseline, others):
        seen.update(baseline=set(baseline["arm"]), columns=set(others), arms=set(others["arm"]))
        return {"x": 1}

    held = conditions("MySQL", ["A: no audit", "general_log"], {"e": 2}, pd.concat([base, log]), None, hook)
    assert held == {"e": 2, "x": 1}
    assert seen["baseline"] == {"A: no audit"} and seen["arms"] == {"general_log"}
    assert seen["columns"] == {"arm", "round", "log_io_us_per_txn"}  # no tps, no CPU


def test_audits_pressure_is_the_baselines_median_and_unknown_for_a_users_server():
    runs = pd.DataFrame({"arm": ["A: no audit"] * 3, "noise_cpu_pressure": [0.9, 0.2, 0.95]})
    embedded, own = SimpleNamespace(mysql_host=""), SimpleNamespace(mysql_host="db.example")
    assert audit_claims.baseline_conditions(embedded, "MySQL", runs) == {"baseline_cpu_pressure": 0.9}
    assert audit_claims.baseline_conditions(own, "MySQL", runs) == {"baseline_cpu_pressure": None}
    for here in ("127.0.0.1", "localhost", "::1"):  # a user's server on this host shares its CPUs with the load
        local = SimpleNamespace(mysql_host=here)
        assert audit_claims.baseline_conditions(local, "MySQL", runs) == {"baseline_cpu_pressure": 0.9}, here
    assert (
        audit_claims.baseline_conditions(SimpleNamespace(mysql_host="10.0.0.5"), "MySQL", runs)["baseline_cpu_pressure"]
        is None
    )
    assert audit_claims.baseline_conditions(embedded, "MySQL", runs.iloc[0:0]) == {"baseline_cpu_pressure": None}


@pytest.mark.parametrize("share, fast", [(0.12, True), (0.5, False), (None, False)])
@pytest.mark.parametrize("cpu_falls", [True, False])
def test_the_audit_note_says_a_log_whose_writes_cannot_bind_shows_no_serialising_log(share, fast, cpu_falls):
    rng = np.random.default_rng(3)
    rows = [
        {"arm": arm, "round": r, "tps": t * rng.lognormal(0, 0.005),
         "server_cpu_cores": (1.5 if arm == "A: no audit" or not cpu_falls else 1.3) * rng.lognormal(0, 0.005)}
        for r in range(8)
        for arm, t in (("A: no audit", 1000.0), ("general_log", 900.0))
    ]  # fmt: skip
    note = audit_claims.contention_note(pd.DataFrame(rows), room=2.0, log_share=share)
    assert ("not a log whose writes serialise the server" in note) == fast
    assert ("held its log 12 % of each second" in note) == fast
    assert ("CPU use fell with TPS, as in the original" in note) == cpu_falls
    if not fast:
        assert ("CPU use held" in note) != cpu_falls


def test_the_audit_note_does_not_conclude_cpu_under_a_quota_of_one_core():
    rng = np.random.default_rng(1)
    rows = [
        {"arm": arm, "round": r, "tps": t * rng.lognormal(0, 0.005), "server_cpu_cores": 0.6 * rng.lognormal(0, 0.005)}
        for r in range(8)
        for arm, t in (("A: no audit", 1000.0), ("general_log", 900.0))
    ]
    runs = pd.DataFrame(rows)
    assert "CPU use held while TPS fell" in audit_claims.contention_note(runs)
    forced = audit_claims.contention_note(runs, room=0.6)
    assert "cannot tell CPU from waiting" in forced and "CPU use held" not in forced


def test_tde_8c32g_asks_more_than_two_cores_give():
    p = SimpleNamespace(emulate_iops="reads", part_design=lambda part: "duet")
    small, large = tde_claims.environment_conditions(p, "4c16g"), tde_claims.environment_conditions(p, "8c32g")
    if host()["host_cores"] == 2:
        assert small["cores_left_for_clients"] >= 0.5 > large["cores_left_for_clients"]
    assert small["writes_throttled"] is False


def test_not_testable_claims_leave_holms_family():
    """Holm's step-down counts the claims that make a test: two testable claims are judged at alpha/2, then
    alpha/1, whatever the number of claims not testable here beside them."""
    claim = registry.get("audit", "general_log-loss")
    level = {"a": 0.02, "b": 0.05}

    def judge(runs, alpha):
        out = []
        for k in ("a", "b", "x", "y"):
            v = _verdict(claim, Verdict.REPRODUCED if alpha >= level.get(k, 0) - 1e-12 else Verdict.INCONCLUSIVE)
            v.id = k
            if k in "xy":
                v.verdict = Verdict.NOT_TESTABLE
            out.append(v)
        return out

    part = SimpleNamespace(name="p", arms=["A"], runs=lambda: None, alpha=0.05, metadata=lambda: {}, server={})
    result = type("R", (), {"params": SimpleNamespace(claim_errors="holm"), "__iter__": lambda self: iter([part])})()
    got = {v.id: v for v in study_verdicts(result, lambda p: judge)}
    assert "decided at alpha/2" in got["a"].evidence and "decided at alpha/1" in got["b"].evidence
    assert got["x"].verdict == Verdict.NOT_TESTABLE and "Holm" not in got["x"].evidence


def test_counts_keep_not_testable_apart_everywhere():
    claim = registry.get("audit", "general_log-loss")
    held = _verdict(claim)
    forced = screen([_verdict(claim)], {"server_cpu_room_cores": 0.6})[0]
    own = screen([_verdict(registry.get("audit", "binlog only-small"))], {"server_cpu_room_cores": 0.6})[0]
    vs = [held.as_dict(), forced.as_dict(), own.as_dict()]
    assert summary.tally(vs) == (
        "published claims: 1 reproduced, 1 not testable here; the suite's own: 1 not testable here"
    )
    assert (
        _tally(vs)
        == "published claims: 1 of 2 decided, 1 not testable here; the suite's own: 0 of 1 decided, 1 not testable here"
    )
    record = forced.as_dict()
    assert record["verdict"] == "not testable here" and record["preconditions"][0]["value"] == 0.6
    assert record["testable_where"] and "not testable here" in summary.claims_html(vs)


def test_a_costs_little_verdict_says_what_it_saw_of_rare_stalls_and_tests_their_split():
    from secoverhead.studies.protocol.judging import binomial_tail, episodes

    assert binomial_tail(5, 5) == 1 / 32 and binomial_tail(0, 7) == 1.0 and binomial_tail(0, 0) == 1.0
    small = verdict_of(
        "audit", "server_audit-small", Verdict.REPRODUCED, "e", grounds=Grounds(needs=[{"arm": "A"}, {"arm": "X"}])
    )
    strays = [{"block": f"{i}:X", "low_arm": "X"} for i in range(4)] + [{"block": "9:X", "low_arm": "A"}]
    text = episodes(small, strays, recorded=True)
    assert "5 one-off duet(s)" in text and "4 of them fell in the candidate" in text and "p=0.19" in text
    assert "neither counted nor bounded" in episodes(small, [], recorded=False)
    assert "no one-off duet was recorded" in episodes(small, [], recorded=True)
    loss = verdict_of(
        "audit", "general_log-loss", Verdict.REPRODUCED, "e", grounds=Grounds(needs=[{"arm": "A"}, {"arm": "X"}])
    )
    costly = episodes(loss, strays, recorded=True)  # a claim that a feature costs much: the split, no bound
    assert "4 of them fell in the candidate" in costly and "typical run" not in costly
    assert episodes(loss, [], recorded=True) == ""
    assert {c.id for c in CLAIMS if c.bounds_cost} == {
        "reused",
        "high-concurrency-loss",
        "server_audit-small",
        "init_connect + binlog-small",
        "binlog only-small",
    }
    untestable = screen(
        [verdict_of("audit", "server_audit-small", Verdict.REPRODUCED, "e", grounds=Grounds(needs=[{"arm": "A"}]))],
        {"server_cpu_room_cores": 0.6},
    )[0]
    assert episodes(untestable, strays, recorded=True) == ""  # judges nothing, so says nothing of stalls


@pytest.mark.parametrize("blocked, expected", [(1.5, "may be waiting as well"), (1.0, "the loss is CPU, not waiting")])
def test_the_audit_note_concludes_cpu_only_when_threads_blocked_no_more(blocked, expected):
    rng = np.random.default_rng(2)
    rows = [
        {
            "arm": arm,
            "round": r,
            "tps": t * rng.lognormal(0, 0.005),
            "server_cpu_cores": 1.5 * rng.lognormal(0, 0.005),
            "server_offcpu_us_per_txn": 100.0 * b * rng.lognormal(0, 0.005),
        }
        for r in range(8)
        for arm, t, b in (("A: no audit", 1000.0, 1.0), ("general_log", 900.0, blocked))
    ]
    assert expected in audit_claims.contention_note(pd.DataFrame(rows), room=2.0)


def test_tde_reads_the_iops_cap_at_both_ends_each_at_its_strictest_workload():
    """At the fewest threads every workload must wait on its reads (the highest workload's share is read), at the
    most every workload must sit at the cap (the lowest's): a workload at the cap with one thread makes the
    latency-bound condition fail, one below the cap at sixteen the cap-bound one."""
    cap = 1050.0
    shares = {("oltp_read_only", 1): 0.5, ("oltp_write_only", 1): 0.95, ("oltp_read_only", 16): 0.99,
              ("oltp_write_only", 16): 0.7}  # fmt: skip
    rows = [
        {"arm": "encryption off", "round": r, "workload": w, "threads": t, "iops_read": s * cap}
        for r in range(3)
        for (w, t), s in shares.items()
    ]
    got = tde_claims.baseline_conditions(SimpleNamespace(emulate_iops="reads"), "4c16g", pd.DataFrame(rows))
    assert got["baseline_read_iops_share_fewest"] == pytest.approx(0.95)
    assert got["baseline_read_iops_share_most"] == pytest.approx(0.7)
    claim = registry.get("tde", "low-concurrency-loss")
    v = screen([_verdict(claim)], _all_passing(claim) | got)[0]
    assert v.verdict == Verdict.NOT_TESTABLE
    failed = {c["condition"] for c in v.preconditions if c["holds"] is False and "iops" in c["condition"]}
    assert failed == {"baseline_read_iops_share_fewest", "baseline_read_iops_share_most"}


def test_a_claim_not_testable_here_is_described_at_95_percent_without_promising_rounds():
    """A look of the sequential design spends a small alpha (99.94 % at the first of three); a claim not testable
    here makes no test, so what it measured is shown at 95 %, and no number of rounds is said to decide it."""
    rng = np.random.default_rng(4)
    rows = [
        {"arm": arm, "round": r, "tps": t * rng.lognormal(0, 0.03), "log_io_us_per_txn": 200.0}
        for r in range(3)
        for arm, t in (("A: no audit", 700.0), ("general_log", 620.0))
    ]  # the log's writes hold it 200 us x 700 TPS = 14 % of each second
    p = SimpleNamespace(mysql_host="")
    judge = screened(
        functools.partial(audit_claims.part_claims, "MySQL"),
        "MySQL",
        ["A: no audit", "general_log"],
        {"server_cpu_room_cores": 2.0, "load_threads": 200},
        functools.partial(audit_claims.baseline_conditions, p),
        audit_claims.component_conditions,
    )
    (loss,) = [v for v in judge(pd.DataFrame(rows), 0.0006) if v.id.endswith("general_log-loss")]
    assert loss.verdict == Verdict.NOT_TESTABLE and "Measured instead" in loss.evidence
    assert "CI at 95 %" in loss.evidence and "99.94" not in loss.evidence
    assert "undecided after" not in loss.evidence and loss.rounds_needed is None
    testable = [dict(r, log_io_us_per_txn=1000.0) for r in rows]  # 70 %
    (judged,) = [v for v in judge(pd.DataFrame(testable), 0.0006) if v.id.endswith("general_log-loss")]
    assert judged.verdict != Verdict.NOT_TESTABLE and "CI at 99.94 %" in judged.evidence  # the look's own level


def _with_superseded(claim: registry.Claim, *old: registry.Superseded) -> registry.Claim:
    import dataclasses

    return dataclasses.replace(claim, superseded=old)


def test_a_report_after_a_reading_changed_shows_the_verdict_under_the_old_reading(monkeypatch):
    """The same intervals read under the reading before the change: reproduced above 1.02, inconclusive against
    a line of 2.0 that its interval straddles, refuted under a line of 3.0."""
    from secoverhead.analysis.readings import Reading

    claim = registry.get("auth", "auth-server-cpu")
    olds = [registry.Superseded(f"2026-12-0{k}", f"line {line}", Reading.above("e", line)) for k, line in
            ((3, 2.0), (2, 3.0))]  # fmt: skip
    monkeypatch.setattr(registry, "get", lambda study, cid: _with_superseded(claim, *olds))
    grounds = Grounds(intervals=(([[1.8, 2.6]], None),), rounds=4)
    v = verdict_of("auth", claim.id, claim.decide(([[1.8, 2.6]], None)), "e", part="MongoDB", grounds=grounds)
    assert v.verdict == Verdict.REPRODUCED
    assert [b["verdict"] for b in v.before] == ["inconclusive", "not reproduced"]
    line = summary.before_text(v.as_dict())
    assert "inconclusive under its definition before 2026-12-03 (line 2.0)" in line
    assert "not reproduced under its definition before 2026-12-02" in line
    html = summary.claims_html([v.as_dict()])
    assert "before 2026-12-03" in html and "this run under it: inconclusive" in html


def test_a_precondition_added_since_does_not_screen_the_old_definition(monkeypatch):
    """A precondition added by the change makes the verdict not testable, and leaves the old one standing; one the
    claim always had screens both."""
    claim = registry.get("tde", "cpu-pp")
    added, always = claim.preconditions[-1].condition, claim.preconditions[0].condition
    old = registry.Superseded("2026-12-03", "the split precondition added", without=(added,))
    monkeypatch.setattr(registry, "get", lambda study, cid: _with_superseded(claim, old))
    new_fails = _all_passing(claim) | {added: _failing(claim.preconditions[-1])}
    v = screen([_verdict(claim)], new_fails)[0]
    assert v.verdict == Verdict.NOT_TESTABLE and v.before[0]["verdict"] == "reproduced"
    both_fail = _all_passing(claim) | {always: _failing(claim.preconditions[0])}
    v = screen([_verdict(claim)], both_fail)[0]
    assert v.verdict == Verdict.NOT_TESTABLE and v.before[0]["verdict"] == "not testable here"


def test_every_audit_claim_shows_its_verdicts_under_the_cpu_pressure_rule_and_before_it():
    """The registry's own audit entries (CHANGES.md, 2026-11-29 and 2026-12-04): the CPU-pressure precondition,
    dropped, still screens the definition that had it; the log-share one, added, screens only the definition of
    record; the definition before both is screened by neither."""
    claims = registry.of_study("audit")
    assert claims
    for claim in claims:
        share = next(p for p in claim.preconditions if p.condition == "log_writes_share_at_baseline")
        pressure = next(h for h in claim.superseded[0].had if h.condition == "baseline_cpu_pressure")
        assert not any(p.condition == "baseline_cpu_pressure" for p in claim.preconditions), claim.id
        full_cpus = _all_passing(claim) | {"baseline_cpu_pressure": _failing(pressure)}
        v = screen([_verdict(claim)], full_cpus)[0]
        assert v.verdict == Verdict.REPRODUCED, claim.id
        assert [b["verdict"] for b in v.before] == ["not testable here", "reproduced"], claim.id
        assert v.before[0]["preconditions"][0]["holds"] is False
        fast_log = _all_passing(claim) | {"log_writes_share_at_baseline": _failing(share), "baseline_cpu_pressure": 0.1}
        v = screen([_verdict(claim)], fast_log)[0]
        assert v.verdict == Verdict.NOT_TESTABLE, claim.id
        assert [b["verdict"] for b in v.before] == ["reproduced", "reproduced"], claim.id
        both = fast_log | {"baseline_cpu_pressure": _failing(pressure)}
        assert [b["verdict"] for b in screen([_verdict(claim)], both)[0].before] == ["not testable here", "reproduced"]


def test_a_superseded_definition_may_name_a_precondition_it_had(registry_from):
    entry = ("- {id: x, study: s, source: suite, claim: c, metric: tps, why: w, mechanism: m,"
             " reading: {effect: e, quantity: ratio, shape: above, line: 1},"
             " preconditions: [{condition: baseline_server_cpu_us_per_op, at_least: 1, why: w, where: h}],"
             " superseded: [{until: '2026-12-04', change: c,"
             " had: [{condition: baseline_cpu_pressure, at_most: 0.5, why: w, where: h}]}]}\n")  # fmt: skip
    (claim,) = registry_from(entry).values()
    (had,) = claim.superseded[0].had
    assert (had.condition, had.op, had.limit) == ("baseline_cpu_pressure", "at_most", 0.5)
    with pytest.raises(ValueError):
        registry_from(entry.replace("at_most: 0.5, ", ""))  # a dropped precondition is a whole one


def test_a_superseded_definition_names_its_date_its_change_and_what_it_was(registry_from):
    entry = ("- {id: x, study: s, source: suite, claim: c, metric: tps, why: w, mechanism: m,"
             " reading: {effect: e, quantity: ratio, shape: above, line: 1},"
             " preconditions: [{condition: baseline_server_cpu_us_per_op, at_least: 1, why: w, where: h}],"
             " superseded: [%s]}\n")  # fmt: skip
    with pytest.raises(ValueError, match="superseded"):
        registry_from(entry % "{until: '2026-12-03', change: c}")  # neither the old reading nor what was added
    with pytest.raises(ValueError, match="superseded"):
        registry_from(entry % "{change: c, without: [baseline_server_cpu_us_per_op]}")
    got = registry_from(entry % "{until: '2026-12-03', change: c, without: [baseline_server_cpu_us_per_op]}")
    assert got[("s", "x")].superseded == (
        registry.Superseded("2026-12-03", "c", None, ("baseline_server_cpu_us_per_op",)),
    )


def test_the_audit_note_sets_general_logs_writes_beside_the_time_between_as_transactions():
    rng = np.random.default_rng(5)
    rows = [
        {"arm": arm, "round": r, "tps": t * rng.lognormal(0, 0.005), "server_cpu_cores": 1.5,
         **({"log_io_us_per_txn": 262.0} if arm == "general_log" else {})}
        for r in range(6)
        for arm, t in (("A: no audit", 500.0), ("general_log", 400.0))
    ]  # fmt: skip
    note = audit_claims.contention_note(pd.DataFrame(rows), room=2.0, log_share=0.13)
    assert "general_log's writes took 262 us a transaction, against 2,0" in note
    assert "us between two of A's transactions" in note
    untimed = audit_claims.contention_note(pd.DataFrame(rows).drop(columns="log_io_us_per_txn"), room=2.0)
    assert "writes took" not in untimed


def test_every_condition_reads_in_words_on_the_first_screen():
    assert set(pre.WORDS) == set(pre.CONDITIONS)
    p = pre.Precondition("round_trip_ms", "at_least", 0.375, "w", "h")
    assert p.said() == "the round trip at least 0.375 ms"
    share = pre.Precondition("log_writes_share_at_baseline", "at_least", 0.5, "w", "h")
    assert share.said() == "general_log's writes' share of each second at the baseline's TPS at least 50 %"
    check = share.check({"log_writes_share_at_baseline": 0.09})
    assert check["said"] == share.said() and check["shown"] == "9 %" and check["holds"] is False
    line = summary.claims_html([dict(_verdict(registry.get("audit", "general_log-loss")).as_dict(),
                                     preconditions=[check])])  # fmt: skip
    assert "needs general_log&#39;s writes&#39; share" in line or "needs general_log's writes' share" in line
