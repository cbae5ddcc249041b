"""Audit study: tables and figures."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd

from secoverhead.analysis.claimcheck import as_judged
from secoverhead.analysis.compare import compare_arms
from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.reporting import plots
from secoverhead.reporting.tables import summarize_runs
from secoverhead.studies.audit.claims import (
    LOG_SHARE,
    baseline_conditions,
    component_conditions,
    contention_note,
    log_file_busy,
    log_share,
)
from secoverhead.studies.audit.declarations import BASELINE, NOT_RUN, SIX_MONTHS_S, STUDY
from secoverhead.studies.protocol.judging import DESCRIBED_ALPHA, conditions, published
from secoverhead.studies.protocol.predictions import Prediction, published_value
from secoverhead.studies.protocol.predictions import table as predictions_table


def summary(part: Part) -> pd.DataFrame:
    return summarize_runs(
        part.runs(),
        ["qps", "tps", "tps_per_server_core", "latency_p95_ms", "server_cpu_cores", "server_cpu_us_per_query"],
        ["arm"],
    )


def difference_table(part: Part) -> pd.DataFrame:
    """(X - A) / A for TPS, server CPU use, throughput per server core, server CPU per query and the server
    threads' waits per transaction, with CIs, paired by round."""

    rows = []
    runs = part.runs()
    for metric, better in (
        ("tps", True),  # what every claim is decided on
        ("server_cpu_cores", True),  # CPU use: falling with TPS is waiting, not CPU (contention_note)
        ("tps_per_server_core", True),
        ("server_cpu_us_per_query", False),
        ("server_blocking_waits_per_txn", False),  # where the time off CPU goes: blocked (locks, writes) ...
        ("server_offcpu_us_per_txn", False),
        ("server_runqueue_us_per_txn", False),  # ... or waiting for a CPU
    ):
        if metric not in runs:
            continue
        for arm, c in compare_arms(
            runs, metric, baseline=BASELINE, higher_is_better=better, confidence=1 - part.alpha
        ).items():
            rows.append(
                {
                    "arm": arm,
                    "metric": metric,
                    "A median": c.baseline_median,
                    "arm median": c.candidate_median,
                    "(X - A) / A %": c.change_pct,
                    "CI low %": (c.ci_low - 1) * 100,
                    "CI high %": (c.ci_high - 1) * 100,
                    "n": c.n_text,
                    "change": str(c.change),
                }
            )
    return pd.DataFrame(rows)


def mechanism_table(part: Part) -> pd.DataFrame:
    """Per arm: log bytes per transaction and per query, the server's write syscalls and bytes per query
    (all files: InnoDB, logs), and server CPU per query; and each arm's extra over A."""

    cols = [
        "audit_bytes_per_transaction",
        "audit_bytes_per_query",
        "server_write_syscalls_per_query",
        "server_write_bytes_per_query",
        "server_cpu_us_per_query",
    ]
    t = summarize_runs(part.runs(), cols, ["arm"])
    keep = ["arm", "runs"] + [c for c in cols if c in t]
    t = t[keep].copy()
    base = t[t["arm"] == BASELINE]
    for c in ("server_write_syscalls_per_query", "server_cpu_us_per_query"):
        if c in t and len(base):
            t[f"extra {c} over A"] = t[c] - float(base[c].iloc[0])
    return t


def regime_table(part: Part) -> pd.DataFrame:
    """What bounds each arm, before any verdict is read: a transaction's time in a connection's thread, its server
    CPU, the time the server's threads were blocked (off CPU, not waiting for one: the scheduler's counters, read
    inside each run so the connections' threads count) and how much more than the baseline's, and of that the wait
    on the log where the server times it (the log file's writes and syncs, its locks, the group commit: MySQL 8.0's
    performance_schema), the share of the threads' time on the log and the log's utilisation (its file's time per
    second: a log written under one lock serialises every statement as it nears 1). server_audit's logger is not
    instrumented: its row has the blocked time (what its log adds is in the excess over the baseline), not the
    log's own columns. Medians over each arm's runs."""
    runs = part.runs()
    if not len(runs) or "tps" not in runs:
        return pd.DataFrame()
    threads = int((part.metadata().get("parameters") or {}).get("threads") or 0)
    rows = []
    medians = runs.assign(log_busy=log_file_busy(runs)).groupby("arm", sort=False).median(numeric_only=True)
    nan = float("nan")
    base_blocked = (
        medians["server_offcpu_us_per_txn"].get(BASELINE, nan) if "server_offcpu_us_per_txn" in medians else nan
    )
    for arm, c in medians.loc[sorted(medians.index, key=lambda a: a != BASELINE)].iterrows():
        blocked = c.get("server_offcpu_us_per_txn", nan)
        rows.append(
            {
                "arm": arm,
                "threads": threads,
                "TPS": c["tps"],
                "ms per transaction (a thread's)": threads / c["tps"] * 1000 if threads and c["tps"] else nan,
                "server CPU, ms": c.get("server_cpu_us_per_op", nan) / 1000,
                "blocked, ms": blocked / 1000,
                "blocked more than A, ms": (blocked - base_blocked) / 1000,
                "waiting on the log, ms": c.get("log_wait_us_per_txn", nan) / 1000,
                "of which its locks, ms": c.get("log_lock_us_per_txn", nan) / 1000,
                "share of thread time waiting on the log": c.get("log_wait_share", nan),
                "log utilisation": c.get("log_busy", nan),
                "server CPU, cores busy": c.get("server_cpu_cores", nan),
            }
        )
    return pd.DataFrame(rows)


def log_table(part: Part) -> pd.DataFrame:
    """Per approach, what its log holds the server to, beside Percona's and Scylla's published figures (records
    per query, the sink against the hook): records and bytes per transaction, its writes' time per transaction (a
    lower bound on its lock's hold) and their share of each second at A's TPS (1 / that share bounds TPS at a
    multiple of A's), the share of thread time waiting on the log; and, where the approach has a null sink, the
    hook apart from the write: its server CPU per transaction with the sink discarding (over A's) and what
    writing the record adds (the real log's runs less the discarding ones), from rounds of three runs after the
    rounds: A, the sink discarding, the real log. Medians over each arm's runs; blank where not measured
    (server_audit's log is not timed)."""
    runs = part.runs()
    if not len(runs) or "tps" not in runs or BASELINE not in set(runs["arm"]):
        return pd.DataFrame()
    medians = runs.groupby("arm", sort=False).median(numeric_only=True)
    nan = float("nan")
    base, a_runs = medians.loc[BASELINE], runs[runs["arm"] == BASELINE]
    sinks = part.extras.get("null_sink") or {}
    rows = []
    for arm, c in medians.drop(index=BASELINE).iterrows():
        sink = sinks.get(arm) or {}
        null, real = sink.get("null") or {}, sink.get("real") or {}
        beside = sink.get("baseline") or base  # A of the sink's own minutes, where they ran it
        cpu = "server_cpu_us_per_op"
        rows.append(
            {
                "arm": arm,
                "records per transaction": c.get("audit_records_per_transaction", nan),
                "bytes per transaction": c.get("audit_bytes_per_transaction", nan),
                "log's writes per transaction, µs": c.get("log_io_us_per_txn", nan),
                "their share of each second at A's TPS": _or_nan(log_share(a_runs, runs[runs["arm"] == arm])),
                "share of thread time waiting on the log": c.get("log_wait_share", nan),
                "server CPU per transaction over A, µs": c.get(cpu, nan) - base.get(cpu, nan),
                "null sink: what is left": sink.get("left", ""),
                "hook: CPU over A with the sink discarding, µs": null.get(cpu, nan) - beside.get(cpu, nan),
                "write: CPU the real log adds to it, µs": real.get(cpu, nan) - null.get(cpu, nan),
                "TPS, sink discarding / real log": null.get("tps", nan) / real.get("tps", nan) if real else nan,
            }
        )
    return pd.DataFrame(rows)


def _or_nan(x: float | None) -> float:
    return float("nan") if x is None else x


def storage_table(part: Part) -> pd.DataFrame:
    """Six months of audit log: raw at the measured and at the original's TPS, compressed (ratios measured on
    the arm's real log), and with daily rotation keeping only compressed days."""

    runs = part.runs()
    if "audit_bytes_per_transaction" not in runs:
        return pd.DataFrame()
    comp = part.extras.get("compression", {})
    rows = []
    for arm, g in runs.groupby("arm"):
        b = g["audit_bytes_per_transaction"].dropna()
        if not len(b):
            continue
        bpt, tps = float(np.median(b)), float(np.median(g["tps"]))
        raw_orig = bpt * 1150 * SIX_MONTHS_S / 1e9
        ratio = comp.get(arm, {}).get("zstd_ratio") or comp.get(arm, {}).get("gzip_ratio")
        rows.append(
            {
                "arm": arm,
                "bytes per transaction": bpt,
                "measured TPS": tps,
                "6 months raw at the measured TPS (GB)": bpt * tps * SIX_MONTHS_S / 1e9,
                "6 months raw at the original's 1150 TPS (GB)": raw_orig,
                "gzip ratio": comp.get(arm, {}).get("gzip_ratio"),
                "zstd ratio": comp.get(arm, {}).get("zstd_ratio"),
                "6 months compressed at 1150 TPS (GB)": raw_orig / ratio if ratio else None,
                "with daily rotation: one raw day + compressed rest (GB)": (raw_orig / 182.5)
                + (raw_orig * 181.5 / 182.5) / ratio
                if ratio
                else None,
            }
        )
    return pd.DataFrame(rows).sort_values("bytes per transaction", ascending=False)


def tps_vs_a(part: Part) -> pd.DataFrame:
    """Each arm's TPS against A as its claim reads it: one comparison at a time (no widening over the arms), paired
    by round, at the confidence of the part's final look (the alpha its verdicts spend), with the between-run sd
    the claims add (data/claims/between_runs.yaml): the interval drawn is the interval judged."""
    runs = part.runs()
    rows = []
    if "tps" not in runs:
        return pd.DataFrame()
    arms = [a for a in dict.fromkeys(runs["arm"]) if a != BASELINE]
    for arm in arms:
        c = compare_arms(
            runs, "tps", baseline=BASELINE, candidates=[arm], higher_is_better=True, confidence=1 - part.alpha
        ).get(arm)
        if c is not None:
            lo, hi = as_judged(STUDY, "tps", c)
            rows.append(
                {"arm": arm, "(X - A) / A %": c.change_pct, "CI low %": (lo - 1) * 100, "CI high %": (hi - 1) * 100}
            )
    return pd.DataFrame(rows)


def figures(part: Part) -> list[tuple[Any, str]]:
    out = []
    tps = tps_vs_a(part)
    if len(tps):
        out.append(
            (
                plots.bar_with_ci(
                    tps,
                    x="arm",
                    y="(X - A) / A %",
                    lo="CI low %",
                    hi="CI high %",
                    title="TPS change versus no audit",
                    ylabel="(X - A) / A, %",
                ),
                "TPS, the metric every audit claim is decided on. Bars below zero lose TPS to auditing; error bars: "
                f"the interval each arm's claim against A reads (paired by round, {100 * (1 - part.alpha):.4g} % at "
                "the final look, the arm alone, with the between-run sd added); the difference table above widens "
                "them over the arms together and leaves the between-run sd out.",
            )
        )
    storage = storage_table(part)
    if len(storage):
        out.append(
            (
                plots.bar_with_ci(
                    storage.assign(lo=storage["bytes per transaction"], hi=storage["bytes per transaction"]),
                    x="arm",
                    y="bytes per transaction",
                    lo="lo",
                    hi="hi",
                    title="Audit log bytes per transaction",
                    ylabel="bytes",
                ),
                "Log written per oltp_read_write transaction (18 statements); the binlog holds only "
                "the writes, so init_connect + binlog records logins and changes but not reads.",
            )
        )
    return out


def conclusion_notes(result: StudyResult) -> list[str]:
    part, runs = result.first, result.first.runs()
    environment = part.metadata().get("conditions") or {}
    held = conditions(part.name, part.arms, environment, runs, functools.partial(baseline_conditions, result.params),
                      component_conditions)  # fmt: skip
    # a description: never a look's spent level
    note = contention_note(runs, DESCRIBED_ALPHA, held.get("server_cpu_room_cores"), held.get(LOG_SHARE))
    return [note] if note else []


def not_run_table() -> pd.DataFrame:
    return pd.DataFrame([{"arm": a, "why it is not run here": w} for a, w in NOT_RUN.items()])


def verification_table(part: Part) -> pd.DataFrame:
    v = part.extras.get("verification", {})
    return pd.DataFrame({"arm": list(v), "audit records found before measuring": list(v.values())})


# Seed 004's machine: 200 sysbench threads, a low-end VM whose cores and speed are not stated, at 1,150 TPS and
# 75 % CPU without audit (data/published/audit.csv)
WHY = {
    "QPS": "statements per transaction: the original's oltp script against this one ({per_txn:.1f} here)",
    "TPS": (
        "not predicted: the VM's cores and speed are not stated ('a low-end VM'); its 1,150 TPS at 75 % CPU at this "
        "machine's {cpu_us:,.0f} us of CPU a transaction would take {cores:.2f} of this machine's cores"
    ),
    "general_log": (
        "the log's hold per transaction: {hold_us:,.0f} us of file time here (this machine's log device and CPU), "
        "{bound}; the published loss needs {needed_us:,.0f} us a transaction ({times:.1f}x this machine's) from a "
        "log device the original does not describe, or lock convoys the model leaves out"
    ),
    "not here": {
        "McAfee audit plugin": "not predicted: "
        + NOT_RUN["McAfee audit plugin"].removeprefix("not installable here: "),
        "RDS (no audit)": "not predicted: the RDS instance's class is not stated",
        "-": "a retention rule, not a measurement: the storage it needs is the storage table's",
    },
}


def predictions(part: Part) -> list[Prediction]:
    """Seed 004's figures predicted for its VM from this part's components, per run: QPS from its TPS and the
    statements per transaction measured here; general_log's TPS change from the three bounds of a closed system
    (the VM's cores, taken as 1,150 TPS at 75 % CPU, over general_log's CPU per transaction; the log's hold per
    transaction, 1 / its file time; the baseline's own TPS); the rest not predicted, each with why."""
    runs = part.runs()
    if not len(runs) or not {"tps", "arm"} <= set(runs) or BASELINE not in set(runs["arm"]):
        return []
    pub = published(STUDY)
    tps, cpu_share = published_value(pub, "TPS", BASELINE), published_value(pub, "CPU", BASELINE) / 100
    a = runs[runs["arm"] == BASELINE]
    per_txn = (a["qps"] / a["tps"]) if "qps" in a else pd.Series(dtype=float)
    cpu_a = float(a["server_cpu_us_per_op"].median()) if "server_cpu_us_per_op" in a else np.nan
    facts = {"per_txn": per_txn.median(), "cpu_us": cpu_a, "cores": tps * cpu_a / 1e6 / cpu_share}
    rows = [
        Prediction("QPS", BASELINE, "queries/s", published_value(pub, "QPS", BASELINE),
                   components=f"the original's {tps:,.0f} TPS x statements per transaction here",
                   measured=a["tps"].median() * facts["per_txn"], why=WHY["QPS"].format(**facts),
                   part=part.name).over(tps * per_txn),
        Prediction("TPS", BASELINE, "transactions/s", tps, measured=a["tps"].median(), why=WHY["TPS"].format(**facts),
                   part=part.name),
        Prediction("CPU", BASELINE, "%", cpu_share * 100, why=WHY["TPS"].format(**facts), part=part.name),
    ]  # fmt: skip
    log = runs[runs["arm"] == "general_log"]
    if len(log) and "log_io_us_per_txn" in log:
        cpu_bound = tps / cpu_share * cpu_a / log["server_cpu_us_per_op"]
        log_bound = 1e6 / log["log_io_us_per_txn"]
        change = 100 * (np.minimum(np.minimum(cpu_bound, log_bound), tps) / tps - 1)
        hold = float(log["log_io_us_per_txn"].median())
        loss = published_value(pub, "TPS change vs A", "general_log")
        needed = 1e6 / (tps * (1 + loss / 100))  # the hold at which 1 / hold is the published TPS with the log
        facts |= {"hold_us": hold, "bound": f"which bounds TPS at {1e6 / hold:,.0f}" if hold > 0 else "no bound",
                  "needed_us": needed, "times": needed / hold if hold > 0 else float("nan")}  # fmt: skip
        measured = 100 * (log["tps"].median() / a["tps"].median() - 1)
        rows.append(Prediction("TPS change vs A", "general_log", "%", loss,
                               components="the least of the VM's cores over general_log's CPU per transaction, 1 / "
                               "the log's file time per transaction, and the original's TPS",
                               measured=measured, why=WHY["general_log"].format(**facts),
                               part=part.name).over(change))  # fmt: skip
    return rows


def prediction_table(result: StudyResult) -> pd.DataFrame:
    """Every part's predictions, then the figures no part can predict, each with why."""
    pub = published(STUDY)
    rows = [p for part in result for p in predictions(part)]
    for measure, arm in (("TPS", "McAfee audit plugin"), ("QPS and TPS vs the test VM", "RDS (no audit)"),
                         ("log retention required", "-")):  # fmt: skip
        row = pub[(pub["measure"] == measure) & (pub["arm"] == arm)].iloc[0]
        rows.append(Prediction(measure, arm, str(row["unit"]), float(row["value"]), why=WHY["not here"][arm]))
    return predictions_table(rows)


def published_table() -> pd.DataFrame:
    return published(STUDY)
