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
    """Every condition is of the environment or of the baseline arm alone, and the baseline's are computed from
    the runs the engine hands over, which are the baseline arm's only."""
    assert {pre.CONDITIONS[p.condition][2] for _, p in EVERY} <= {pre.ENVIRONMENT, pre.BASELINE}
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


@pytest.mark.parametrize("pressure, testable", [(0.94, False), (0.51, False), (0.5, True), (0.1, True), (None, True)])
def test_every_audit_claim_needs_cpus_the_load_does_not_fill(pressure, testable):
    """Where a runnable thread nearly always waits for a CPU (the load generator sharing the server's cores), a
    loss by waiting cannot reach TPS: every audit claim is then not testable here. Unknown pressure (a user's
    server elsewhere) leaves the precondition unchecked."""
    for claim in registry.of_study("audit"):
        cond = _all_passing(claim) | {"baseline_cpu_pressure": pressure}
        v = screen([_verdict(claim)], cond)[0]
        assert (v.verdict != Verdict.NOT_TESTABLE) == testable, (claim.id, pressure)


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


@pytest.mark.parametrize("pressure, hidden", [(0.94, True), (0.3, False), (None, False)])
def test_the_audit_note_says_a_full_run_queue_hides_waiting(pressure, hidden):
    rng = np.random.default_rng(3)
    rows = [
        {"arm": arm, "round": r, "tps": t * rng.lognormal(0, 0.005), "server_cpu_cores": 1.5 * rng.lognormal(0, 0.005)}
        for r in range(8)
        for arm, t in (("A: no audit", 1000.0), ("general_log", 900.0))
    ]
    note = audit_claims.contention_note(pd.DataFrame(rows), room=2.0, pressure=pressure)
    assert ("cannot reach TPS" in note) == hidden and ("CPU use held" in note) != hidden


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
        {"arm": arm, "round": r, "tps": t * rng.lognormal(0, 0.03), "noise_cpu_pressure": 0.94}
        for r in range(3)
        for arm, t in (("A: no audit", 700.0), ("general_log", 620.0))
    ]
    p = SimpleNamespace(mysql_host="")
    judge = screened(
        functools.partial(audit_claims.part_claims, "MySQL"),
        "MySQL",
        ["A: no audit", "general_log"],
        {"server_cpu_room_cores": 2.0, "load_threads": 200},
        functools.partial(audit_claims.baseline_conditions, p),
    )
    (loss,) = [v for v in judge(pd.DataFrame(rows), 0.0006) if v.id.endswith("general_log-loss")]
    assert loss.verdict == Verdict.NOT_TESTABLE and "Measured instead" in loss.evidence
    assert "CI at 95 %" in loss.evidence and "99.94" not in loss.evidence
    assert "undecided after" not in loss.evidence and loss.rounds_needed is None
    testable = [dict(r, noise_cpu_pressure=0.2) for r in rows]
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


def test_every_audit_claim_shows_its_verdict_as_it_read_before_the_cpu_pressure_precondition():
    """The registry's own audit entries: a run whose baseline filled the CPUs is not testable under the definition
    of record and judged under the one before 2026-11-29 (CHANGES.md)."""
    claims = registry.of_study("audit")
    assert claims
    for claim in claims:
        pressure = next(p for p in claim.preconditions if p.condition == "baseline_cpu_pressure")
        held = _all_passing(claim) | {"baseline_cpu_pressure": _failing(pressure)}
        v = screen([_verdict(claim)], held)[0]
        assert v.verdict == Verdict.NOT_TESTABLE, claim.id
        assert v.before and v.before[0]["verdict"] == "reproduced", claim.id


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
