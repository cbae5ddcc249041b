"""Audit study: the original's claims (general_log's throughput loss, the small ones) and where threads wait."""

from __future__ import annotations

import functools
from typing import Any

import pandas as pd

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.claimcheck import Rule, judge
from secoverhead.analysis.compare import compare_arms  # pandas, which `secoverhead params` never needs
from secoverhead.analysis.reads import Ratio, Relative
from secoverhead.analysis.verdicts import ClaimVerdict
from secoverhead.core.units import significant
from secoverhead.host.environment import loopback
from secoverhead.measurement.parts import StudyResult
from secoverhead.studies.audit.declarations import ARMS, BASELINE, STUDY
from secoverhead.studies.protocol.conditions import host, median
from secoverhead.studies.protocol.judging import study_verdicts

# Every claim is decided on TPS, as the original computes every difference ("性能差異計算以TPS為準"); its words,
# the reading and why are in data/claims/registry.yaml. Throughput per server CPU-second stands beside it in
# the tables (what a CPU-bound server keeps): it cannot see a loss that is not CPU, such as the original's
# general_log, under which CPU use fell with TPS. A rule judges the part whose arms it reads (MySQL's approaches on
# MySQL 8.0, server_audit on MariaDB); its verdict names that part's server build.


PER_RUN = "TPS per run vs A, paired by round"
PRESSURE = "baseline_cpu_pressure"  # the precondition until 2026-12-04 (data/claims/CHANGES.md), still shown
LOG_SHARE = "log_writes_share_at_baseline"
PER_STATEMENT_LOG = "general_log"  # the original's mechanism: every statement written to one file under a mutex
OTHERS = tuple(a.name for a in ARMS if a.is_audit and a.name != "general_log")

RULES = (  # words, metrics, readings and preconditions: data/claims/registry.yaml
    Rule(
        STUDY,
        "general_log-loss",
        (Ratio(BASELINE, "general_log", higher_is_better=True, quantity="loss"),),
        measure=PER_RUN,
    ),
    Rule(
        STUDY,
        "general_log-worst",
        (Relative(BASELINE, "general_log", OTHERS, higher_is_better=True, cells_word="approaches"),),
        measure="each audit approach of its engine against general_log, through A, paired by round (> 1: keeps "
        "more TPS)",
    ),
    Rule(
        STUDY,
        "server_audit-small",
        (Ratio(BASELINE, "server_audit", higher_is_better=True),),
        measure=PER_RUN,
        engine_note="MariaDB's own plugin on MariaDB (the original loaded it into MySQL)",
    ),
    *(
        Rule(STUDY, f"{arm}-small", (Ratio(BASELINE, arm, higher_is_better=True),), measure=PER_RUN)
        for arm in ("init_connect + binlog", "binlog only")
    ),
)


def part_claims(part: str, runs: pd.DataFrame, alpha: float = 0.05) -> list[ClaimVerdict]:
    """The original's findings on TPS: general_log's loss and rank, and each other approach against A."""
    return judge(RULES, runs, alpha)


def environment_conditions(p: Any) -> dict[str, Any]:
    """The CPU room of each server: its quota, else the host's cores shared by the servers loaded at once (two in
    a duet); unknown for a user's own server, whose cores this machine cannot see."""
    if p.mysql_host:
        room = None
    elif p.server_cpu_limit:
        room = float(p.server_cpu_limit)
    else:
        room = host()["host_cores"] / (2 if p.part_design(STUDY) == "duet" else 1)
    return {"server_cpu_room_cores": room, "load_threads": int(p.threads)}


def baseline_conditions(p: Any, part: str, runs: pd.DataFrame) -> dict[str, Any]:
    """How often a runnable thread waited for a CPU while the baseline ran (PSI, median over its runs): where one
    nearly always waits, a thread blocked on a log hands its CPU on and a loss by waiting cannot reach TPS. Unknown
    for a user's server on another host, whose CPUs this machine's pressure does not describe; a user's server on
    this one (a loopback address) shares them with the load, as the embedded servers do."""
    here = not p.mysql_host or loopback(p.mysql_host)
    return {PRESSURE: median(runs, "noise_cpu_pressure") if here else None}


def component_conditions(part: str, baseline: pd.DataFrame, others: pd.DataFrame) -> dict[str, Any]:
    """general_log's log share at the baseline's TPS (log_share); unknown where no general log was timed (MariaDB's
    part, a user's server)."""
    log = others[others["arm"] == PER_STATEMENT_LOG] if "arm" in others else others.iloc[0:0]
    return {LOG_SHARE: log_share(baseline, log)}


def log_share(baseline: pd.DataFrame, log: pd.DataFrame) -> float | None:
    """The utilisation law of a closed system: a log held h per transaction bounds TPS at 1 / h, so at the
    baseline's TPS its writes would hold it h x TPS of each second. Per round, the log's file time per transaction
    (a lower bound on its lock's hold: the writes happen under it) times the baseline's TPS, the median over rounds
    (over all runs where none are recorded); None where the log was not timed."""
    if not len(log) or "log_io_us_per_txn" not in log or not len(baseline) or "tps" not in baseline:
        return None
    key: Any = "round" if "round" in log and "round" in baseline else (lambda _: 0)
    share = (log.groupby(key)["log_io_us_per_txn"].median() * baseline.groupby(key)["tps"].median() / 1e6).dropna()
    return float(share.median()) if len(share) else None


def claims(result: StudyResult) -> list[ClaimVerdict]:
    return study_verdicts(
        result,
        lambda part: functools.partial(part_claims, part.name),
        functools.partial(baseline_conditions, result.params),
        component_conditions,
    )


def log_file_busy(runs: pd.DataFrame) -> pd.Series:
    """Per run, the share of each second the log's file was being written or synced (its utilisation); NaN where
    the server did not time its log."""
    io = runs["log_io_us_per_txn"] if "log_io_us_per_txn" in runs else float("nan")
    return io * runs["tps"] / 1e6


def _log_wait_text(runs: pd.DataFrame) -> str:
    """What the server itself timed on the general log (performance_schema), medians over the arm's runs."""
    if "log_wait_us_per_txn" not in runs or not runs["log_wait_us_per_txn"].notna().any():
        return ""
    wait, share = runs["log_wait_us_per_txn"].median(), runs["log_wait_share"].median()
    busy = log_file_busy(runs).median()
    return (
        f"The server timed its threads waiting on the general log {significant(wait / 1000, 3)} ms per transaction, "
        f"{significant(share * 100, 2)} % of their time; the log's file was busy {significant(busy * 100, 2)} % "
        "of each second. "
    )


def contention_note(
    runs: pd.DataFrame, alpha: float = 0.05, room: float | None = None, log_share: float | None = None
) -> str:
    """Whether general_log's TPS loss is CPU or a serialising bottleneck, as the original asked: with general_log
    on, did the server's CPU use (cores busy) fall with TPS, and where did its threads spend the time: blocked
    (a lock, a file write) or waiting for a CPU (the run queue), per transaction?"""

    if "general_log" not in set(runs.get("arm", [])) or "server_cpu_cores" not in runs:
        return ""
    kw = dict(baseline=BASELINE, candidates=["general_log"], confidence=1 - alpha)
    tps = compare_arms(runs, "tps", higher_is_better=True, **kw).get("general_log")
    cores = compare_arms(runs, "server_cpu_cores", **kw).get("general_log")
    if tps is None or cores is None:
        return ""

    def pct(c) -> str:
        return f"{c.change_pct:+.1f} % [{(c.ci_low - 1) * 100:+.1f}, {(c.ci_high - 1) * 100:+.1f}]"

    text = (
        f"general_log, over this run's rounds at {significant((1 - alpha) * 100, 3)} %: TPS {tps.change_pct:+.1f} % "
        f"(the interval a claim reads is drawn above), server CPU use (cores busy) {pct(cores)}. "
    )
    waits = {
        label: compare_arms(runs, metric, **kw).get("general_log")
        for metric, label in (
            ("server_blocking_waits_per_txn", "blocking waits"),
            ("server_offcpu_us_per_txn", "blocked time"),
            ("server_runqueue_us_per_txn", "run-queue time"),
        )
        if metric in runs and runs[metric].notna().any()
    }
    waits = {k: v for k, v in waits.items() if v is not None}
    if waits:
        text += "Per transaction, in the server's threads over each load (its connections' included): "
        text += ", ".join(f"{k} {pct(v)}" for k, v in waits.items()) + ". "
    text += _log_wait_text(runs[runs["arm"] == "general_log"])
    blocked = waits.get("blocked time") or waits.get("blocking waits")
    return text + _what_bounds(tps, cores, blocked, waits.get("run-queue time"), room, log_share) + _hold_text(runs)


def _hold_text(runs: pd.DataFrame) -> str:
    """general_log's writes per transaction against the time between two of the baseline's transactions (1 / its
    TPS), medians: the two figures the audit claims' precondition sets side by side."""
    log, base = runs[runs["arm"] == PER_STATEMENT_LOG], runs[runs["arm"] == BASELINE]
    if "log_io_us_per_txn" not in log or not log["log_io_us_per_txn"].notna().any() or not len(base):
        return ""
    hold, between = float(log["log_io_us_per_txn"].median()), 1e6 / float(base["tps"].median())
    return (
        f" general_log's writes took {significant(hold, 3)} us a transaction, against {significant(between, 3)} "
        "us between two of A's transactions."
    )


def _log_share_limit() -> float:
    """The registry's least share of each second the log's writes must hold it at the baseline's TPS."""
    (limit,) = [p.limit for p in registry.get(STUDY, "general_log-loss").preconditions if p.condition == LOG_SHARE]
    return float(limit)


def _what_bounds(tps: Any, cores: Any, blocked: Any, queued: Any, room: float | None, share: float | None) -> str:
    """The note's conclusion from general_log's comparisons with A (TPS, cores busy, blocked and run-queue time
    per transaction) and what the set-up let a loss by waiting show (the server's room, the share of each second
    the log's writes would hold it at the baseline's TPS)."""
    if share is not None and share < (limit := _log_share_limit()):
        seen = "CPU use fell with TPS, as in the original, but " if tps.ci_high < 1 and cores.ci_high < 1 else ""
        return (
            f"{seen}general_log's writes held its log {significant(share * 100, 2)} % of each second at the "
            f"baseline's TPS, under the {limit:.0%} a log must reach to bound TPS near it (the audit claims' "
            "precondition): a loss here is the log's CPU, or its lock held while nothing is written (a holder "
            "waiting for a CPU), not a log whose writes serialise the server."
        )
    if tps.ci_high < 1 and cores.ci_high < 1:
        if blocked is not None and blocked.ci_low > 1 and not (queued is not None and queued.ci_low > 1):
            return (
                "CPU use fell with TPS, as in the original, and the server's threads blocked more per transaction "
                "without waiting longer for a CPU: the loss is a serialising bottleneck, not CPU."
            )
        return (
            "CPU use fell with TPS, as in the original: the loss is time off CPU, which throughput per server "
            "core cannot show."
        )
    if room is not None and room <= 1:
        return (
            f"Each server could use {room:g} core at most: a loss by waiting cannot appear under such a quota (the "
            "audit claims' precondition), so this set-up cannot tell CPU from waiting."
        )
    if tps.ci_high < 1 and cores.ci_low >= 0.98:
        held = "CPU use held while TPS fell, so CPU per transaction rose"
        if blocked is not None and blocked.ci_low > 1:
            return (
                f"{held}; the threads also blocked more per transaction: the loss is CPU and may be waiting as "
                "well, which these intervals do not tell apart."
            )
        if blocked is not None:
            return f"{held}, and the threads blocked no more per transaction: the loss is CPU, not waiting."
        return f"{held}; blocked time was not measured, so waiting is not ruled out."
    return "The intervals do not tell CPU from waiting here."
