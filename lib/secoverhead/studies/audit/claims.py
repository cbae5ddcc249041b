"""Audit study: the original's claims (general_log's throughput loss, the small ones) and where threads wait."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.claimcheck import RatioClaim, verdict_of
from secoverhead.analysis.compare import (
    compare_arms,  # pandas, which `secoverhead params` never needs
    relative,  # pandas, which `secoverhead params` never needs
)
from secoverhead.analysis.verdicts import ClaimVerdict
from secoverhead.measurement.parts import StudyResult
from secoverhead.studies.audit.declarations import ARMS, BASELINE, STUDY
from secoverhead.studies.protocol.conditions import host
from secoverhead.studies.protocol.judging import study_verdicts

if TYPE_CHECKING:
    import pandas as pd

# Every claim is decided on TPS, as the original computes every difference ("性能差異計算以TPS為準"); its words,
# the reading and why are in data/claims/registry.yaml. Throughput per server CPU-second stands beside it in
# the tables (what a CPU-bound server keeps): it cannot see a loss that is not CPU, such as the original's
# general_log, under which CPU use fell with TPS.
ENGINE = "MariaDB 10.11, not MySQL 5.7"


SMALL_CLAIMS = (
    RatioClaim(
        STUDY,
        "server_audit-small",
        BASELINE,
        "server_audit",
        higher_is_better=True,
        measure="TPS per run vs A, paired by round",
        engine_note="MariaDB's own plugin on MariaDB (the original loaded it into MySQL)",
    ),
    RatioClaim(
        STUDY,
        "init_connect + binlog-small",
        BASELINE,
        "init_connect + binlog",
        higher_is_better=True,
        measure="TPS per run vs A, paired by round",
        engine_note=ENGINE,
    ),
    RatioClaim(
        STUDY,
        "binlog only-small",
        BASELINE,
        "binlog only",
        higher_is_better=True,
        measure="TPS per run vs A, paired by round",
        engine_note=ENGINE,
    ),
)


def part_claims(part: str, runs: pd.DataFrame, alpha: float = 0.05) -> list[ClaimVerdict]:
    """The original's findings on TPS: general_log's loss and rank, and each other approach against A."""

    if not len(runs) or BASELINE not in set(runs["arm"]):
        return []
    arms = set(runs["arm"])
    out: list[ClaimVerdict] = []
    conf = 1 - alpha

    if "general_log" in arms:
        c = compare_arms(
            runs, "tps", baseline=BASELINE, candidates=["general_log"], higher_is_better=True, confidence=conf
        )["general_log"]
        lo, hi = (1 - c.ci_high) * 100, (1 - c.ci_low) * 100
        loss = registry.get(STUDY, "general_log-loss")
        sets = (([(lo, hi)], None),)
        out.append(
            verdict_of(
                STUDY,
                loss.id,
                loss.decide(*sets),
                f"TPS loss {(1 - c.ratio) * 100:.1f} % [{lo:.1f}, {hi:.1f}] ({c.confidence * 100:.4g} % CI; "
                f"{c.n_text}, {c.test}, {c.design})",
                measure="TPS per run vs A, paired by round",
                engine_note=ENGINE,
                ratio=c.ratio,
                ci_low=c.ci_low,
                ci_high=c.ci_high,
                needs=[{"arm": BASELINE}, {"arm": "general_log"}],
                intervals=sets,
                rounds=c.n_pairs,
            )
        )
        others = [a.name for a in ARMS if a.is_audit and a.name in arms and a.name != "general_log"]
        if others:
            kw = dict(baseline=BASELINE, candidates=others, reference="general_log", higher_is_better=True)
            # every approach must keep more TPS than general_log to reproduce (an intersection-union test: each
            # interval at alpha); one approach refutes, so refuting reads Bonferroni-widened intervals
            each = relative(runs, "tps", confidence=conf, family=1, **kw)
            wide = relative(runs, "tps", confidence=conf, **kw)
            worst = registry.get(STUDY, "general_log-worst")
            sets = (
                ([(x.ci_low, x.ci_high) for x in each.values()], [(wide[a].ci_low, wide[a].ci_high) for a in each]),
            )
            v = worst.decide(*sets)
            first = next(iter(each.values()))
            out.append(
                verdict_of(
                    STUDY,
                    worst.id,
                    v,
                    "; ".join(
                        f"TPS {a} / general_log {x.ratio:.3f} [{x.ci_low:.3f}, {x.ci_high:.3f}]"
                        for a, x in each.items()
                    )
                    + f" (> 1: keeps more TPS than general_log; {first.confidence * 100:.4g} % CIs, refuting on "
                    f"{next(iter(wide.values())).confidence * 100:.4g} %; {first.n_text}, {first.test})",
                    measure="each audit approach against general_log, through A, paired by round",
                    engine_note=ENGINE,
                    needs=[{"arm": a} for a in ("general_log", *others)],
                    intervals=sets,
                    rounds=min(x.n_pairs for x in each.values()),
                    cells=(list(each),),
                )
            )
    for claim in SMALL_CLAIMS:
        v = claim.check(runs, alpha)
        if v is not None:
            out.append(v)
    return out


def environment_conditions(p: Any) -> dict[str, Any]:
    """The CPU room of each server: its quota, else the host's cores shared by the servers loaded at once (two in
    a duet); unknown for a user's own server, whose cores this machine cannot see."""
    if p.mysql_host:
        room = None
    elif p.server_cpu_limit:
        room = float(p.server_cpu_limit)
    else:
        room = host()["host_cores"] / (2 if p.part_design(STUDY) == "duet" else 1)
    return {"server_cpu_room_cores": room}


def claims(result: StudyResult) -> list[ClaimVerdict]:
    return study_verdicts(result, lambda part: functools.partial(part_claims, part.name))


def contention_note(runs: pd.DataFrame, alpha: float = 0.05, room: float | None = None) -> str:
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

    text = f"general_log: TPS {pct(tps)}, server CPU use (cores busy) {pct(cores)}. "
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
        text += "Per transaction, " + ", ".join(f"{k} {pct(v)}" for k, v in waits.items()) + ". "
    blocked = waits.get("blocked time") or waits.get("blocking waits")
    queued = waits.get("run-queue time")
    if tps.ci_high < 1 and cores.ci_high < 1:
        if blocked is not None and blocked.ci_low > 1 and not (queued is not None and queued.ci_low > 1):
            return text + (
                "CPU use fell with TPS, as in the original, and the server's threads blocked more per transaction "
                "without waiting longer for a CPU: the loss is a serialising bottleneck, not CPU."
            )
        return text + (
            "CPU use fell with TPS, as in the original: the loss is time off CPU, which throughput per server "
            "core cannot show."
        )
    if room is not None and room <= 1:
        return text + (
            f"Each server could use {room:g} core at most: a loss by waiting cannot appear under such a quota (the "
            "audit claims' precondition), so this set-up cannot tell CPU from waiting."
        )
    if tps.ci_high < 1 and cores.ci_low >= 0.98:
        held = "CPU use held while TPS fell, so CPU per transaction rose"
        if blocked is not None and blocked.ci_low > 1:
            return text + (
                f"{held}; the threads also blocked more per transaction: the loss is CPU and may be waiting as "
                "well, which these intervals do not tell apart."
            )
        if blocked is not None:
            return text + f"{held}, and the threads blocked no more per transaction: the loss is CPU, not waiting."
        return text + f"{held}; blocked time was not measured, so waiting is not ruled out."
    return text + "The intervals do not tell CPU from waiting here."
