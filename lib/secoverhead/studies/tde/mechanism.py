"""TDE study: the mechanism (pages, I/O, CPU per transaction) and the model that predicts the original's figures.

The model of the original (seed 002, ../shared/MODELS.md), in components a run measures: a transaction on the
original's instance costs its server CPU (this machine's, as the same speed per core), its reads at the SSD's read
latency and its flushes at the SSD's flush latency. N threads in a closed loop reach the least of three rates: the
cores over the CPU per transaction, the IOPS over the reads per transaction, and N over one transaction's time. The
same model predicts the original's published figures (predict) and gates every emulated cell
(claims.baseline_conditions): a cell is the original's when its time splits as the model says the original's did.
It ignores lock and mutex contention, I/O merging and group commit, and the original's access pattern (unknown);
where those dominate, it fails, and its residuals say so."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from secoverhead.analysis import claim_registry
from secoverhead.analysis.compare import compare_arms
from secoverhead.analysis.readings import REPRODUCE
from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.studies.tde.declarations import OFF, ON, instance_of
from secoverhead.studies.tde.instances import (
    ORIGINAL,
    ORIGINAL_THREADS,
    SSD_FLUSH_LATENCY_US,
    SSD_READ_LATENCY_US,
    Instance,
)


class Cost(NamedTuple):
    """One transaction's measured components: foreground server CPU (us), read requests and flushes."""

    cpu_us: float
    reads: float
    flushes: float

    def wait_us(self) -> float:
        """The time one transaction waits on the original's device."""
        return self.reads * SSD_READ_LATENCY_US + self.flushes * SSD_FLUSH_LATENCY_US


class Split(NamedTuple):
    """Where the original's time went at a thread count: the rate it reached, what bound it, and the shares of its
    CPU and IOPS used, with CPU's share of one transaction's own time."""

    tps: float
    bound: str  # "CPU" | "IOPS" | "latency"
    cpu_utilisation: float  # of the instance's cores
    iops_utilisation: float  # of the instance's IOPS
    cpu_share_of_txn: float  # CPU / (CPU + device wait) of one transaction


def original(inst: Instance, threads: int, cost: Cost) -> Split:
    """The original instance at `threads` with these components."""
    cpu_s, txn_s = cost.cpu_us / 1e6, (cost.cpu_us + cost.wait_us()) / 1e6
    rates = {
        "CPU": inst.cores / cpu_s if cpu_s > 0 else math.inf,
        "IOPS": inst.iops / cost.reads if cost.reads > 0 else math.inf,
        "latency": threads / txn_s if txn_s > 0 else math.inf,
    }
    bound = min(rates, key=rates.get)
    tps = rates[bound]
    return Split(
        tps,
        bound,
        tps * cpu_s / inst.cores,
        tps * cost.reads / inst.iops,
        cost.cpu_us / (cost.cpu_us + cost.wait_us()) if cost.cpu_us + cost.wait_us() > 0 else math.nan,
    )


def factor(measured: float, model: float) -> float:
    """How far apart two shares are, as a factor of at least 1 (inf where either is missing or zero)."""
    if not (measured > 0 and model > 0) or not (math.isfinite(measured) and math.isfinite(model)):
        return math.inf
    return max(measured / model, model / measured)


MECHANISM = (
    "pages_read_per_txn",
    "pages_written_per_txn",
    "pages_decrypted_per_txn",
    "pages_encrypted_per_txn",
    "data_read_bytes_per_txn",
    "data_written_bytes_per_txn",
    "log_written_bytes_per_txn",
    "fsyncs_per_txn",
    "data_reads_per_txn",
    "data_writes_per_txn",
    "server_cpu_us_per_op",
)


def ceilings(result: StudyResult) -> pd.DataFrame:
    """Each emulated instance's limits and the ceilings measured under them: the highest TPS and IOPS any cell
    reached (medians over its runs), and the CPU share of the limit there."""

    rows = []
    for part in result:
        if part.name == "external":
            continue
        runs = part.runs()
        if not len(runs):
            continue
        facts = next((v for k, v in part.servers.items() if k.startswith("mysql")), {})
        sizing = facts.get("buffer_pool_sizing", {})
        cells = runs.groupby(["workload", "threads", "arm"]).median(numeric_only=True)
        cells["iops"] = cells.get("iops_read", 0) + cells.get("iops_write", 0)
        for workload, g in cells.groupby(level="workload"):
            top = g["tps"].idxmax()
            rows.append(
                {
                    "instance": part.name,
                    "CPU limit (cores)": facts.get("cpu_limit_cores"),
                    "IOPS limit (read / write)": f"{facts.get('iops_limit_read') or 'none'} / "
                    f"{facts.get('iops_limit_write') or 'none'}",
                    "data disk": part.servers.get("data disk", {}).get("data_disk", ""),
                    "buffer pool (MiB)": round(sizing.get("buffer_pool_bytes", 0) / 2**20, 1),
                    "data : buffer pool": sizing.get("data_to_buffer_pool"),
                    "workload": workload,
                    "max TPS": g["tps"].max(),
                    "at (threads, arm)": f"{top[1]}, {top[2]}",
                    "max IOPS measured": g["iops"].max() if "iops_read" in g else None,
                    "CPU % of limit there": g.loc[top, "server_cpu_pct_of_limit"]
                    if "server_cpu_pct_of_limit" in g
                    else None,
                }
            )
    return pd.DataFrame(rows)


# A cell is bound by a limit it uses this much of (the preconditions' cap-bound line, the utilisation law's
# queue); below the latency-bound line (0.8) a read waits on the device, not on the cap.
BOUND_SHARE = 0.9


def regime_table(result: StudyResult) -> pd.DataFrame:
    """What bounds each cell, before any verdict is read: for the baseline arm (encryption off), per workload and
    thread count, where a transaction's time goes (server CPU, the wait for its reads at the device's latency, the
    rest: queueing for the CPU quota, the IOPS cap, locks and the client) and how much of the IOPS cap and the CPU
    quota it uses. Medians over the arm's runs."""
    rows = []
    for part in result:
        facts = next((v for k, v in part.servers.items() if k.startswith("mysql")), {})
        runs = part.runs()
        if part.name == "external" or not len(runs) or "threads" not in runs:
            continue
        base = runs[runs["arm"] == OFF].groupby(["workload", "threads"]).median(numeric_only=True)
        for (workload, threads), c in base.iterrows():
            rows.append(_regime_row(part.name, workload, int(threads), c, facts))
    return pd.DataFrame(rows)


def _regime_row(instance: str, workload: str, threads: int, c: pd.Series, facts: dict[str, Any]) -> dict[str, Any]:
    """One cell's regime: a transaction's time split, the shares of the cap and the quota, and what bounds it."""
    cap, latency_ms = facts.get("iops_limit_read"), (facts.get("read_latency_us") or 0) / 1000
    per_txn_ms = threads / c["tps"] * 1000 if c.get("tps") else float("nan")
    cpu_ms = c.get("server_cpu_us_per_op", float("nan")) / 1000
    wait_ms = c.get("data_reads_per_txn", float("nan")) * latency_ms
    iops_share = c.get("iops_read", float("nan")) / cap if cap else float("nan")
    cpu_share = c.get("server_cpu_pct_of_limit", float("nan")) / 100
    bound = (
        "the IOPS cap"
        if iops_share >= BOUND_SHARE
        else "the CPU quota"
        if cpu_share >= BOUND_SHARE
        else "its reads' latency"
        if wait_ms >= cpu_ms
        else "CPU"
    )
    return {
        "instance": instance,
        "workload": workload,
        "threads": threads,
        "ms per transaction (a thread's)": per_txn_ms,
        "server CPU, ms": cpu_ms,
        "waiting for reads, ms": wait_ms,
        "the rest, ms": per_txn_ms - cpu_ms - wait_ms,
        "share of IOPS cap": iops_share,
        "share of CPU quota": cpu_share,
        "bound by": bound,
    }


def mechanism_table(part: Part) -> pd.DataFrame:
    """What InnoDB did per transaction, off and on: pages read, written, decrypted and encrypted, bytes, redo
    log, fsyncs, and the server's CPU (medians over runs)."""
    runs = part.runs()
    cols = [c for c in MECHANISM if c in runs]
    return runs.groupby(["workload", "threads", "arm"], sort=False)[cols].median().reset_index()


def explained(part: Part) -> pd.DataFrame:
    """The extra CPU per transaction with encryption on, against what the AES work alone predicts: pages
    encrypted and decrypted per transaction x the AES-256-CTR cost of a 16 KiB page on this machine, set up per
    page as InnoDB does (the bulk `openssl speed` figure where that was not measured)."""

    runs = part.runs()
    cal = part.extras.get("calibration", {})
    aes = cal.get("aes_256_ctr_page_as_server_us") or cal.get("aes_256_ctr_us_per_page")
    if "server_cpu_us_per_op" not in runs or not aes:
        return pd.DataFrame()
    delta = compare_arms(
        runs, "server_cpu_us_per_op", baseline=OFF, candidates=[ON], by=["workload", "threads"], quantity="difference"
    )
    rows = []
    for c in delta.values():
        on = runs[
            (runs["arm"] == ON) & (runs["workload"] == c.cell["workload"]) & (runs["threads"] == c.cell["threads"])
        ]
        pages = float((on.get("pages_decrypted_per_txn", 0) + on.get("pages_encrypted_per_txn", 0)).median())
        predicted = pages * aes
        rows.append(
            {
                "workload": c.cell["workload"],
                "threads": c.cell["threads"],
                "extra CPU per txn, measured (us)": c.ratio,
                "CI": f"{c.ci_low:+.0f} to {c.ci_high:+.0f}",
                "pages en/decrypted per txn": pages,
                "AES per page (us, calibration)": aes,
                "predicted from AES alone (us)": predicted,
                "AES share of the extra %": 100 * predicted / c.ratio if c.ratio > 0 else np.nan,
                "measured extra per page (us)": c.ratio / pages if pages > 0 else np.nan,
            }
        )
    return pd.DataFrame(rows)


def concurrency_table(part: Part) -> pd.DataFrame:
    """What changes between one thread and the most (seed 002's "I/O merging at high concurrency"), per workload
    and arm: pages and I/O requests per transaction, pages per write request (above 1: writes merged), fsyncs
    and redo bytes per transaction (group commit shares them), CPU per transaction; medians over runs, with the
    ratio many / one."""

    runs = part.runs()
    if not len(runs) or "threads" not in runs or runs["threads"].nunique() < 2:
        return pd.DataFrame()
    runs = runs.copy()
    page = 16384.0
    if {"data_written_bytes_per_txn", "data_writes_per_txn"} <= set(runs):
        runs["pages_per_write_request"] = runs["data_written_bytes_per_txn"] / page / runs["data_writes_per_txn"]
    if {"data_reads_per_txn", "data_writes_per_txn"} <= set(runs):
        runs["io_requests_per_txn"] = runs["data_reads_per_txn"] + runs["data_writes_per_txn"]
    cols = [
        c
        for c in (
            "pages_read_per_txn",
            "pages_written_per_txn",
            "io_requests_per_txn",
            "pages_per_write_request",
            "fsyncs_per_txn",
            "log_written_bytes_per_txn",
            "server_cpu_us_per_op",
        )
        if c in runs
    ]
    rows = []
    lo, hi = runs["threads"].min(), runs["threads"].max()
    for (workload, arm), g in runs.groupby(["workload", "arm"], sort=False):
        med = g.replace([np.inf, -np.inf], np.nan).groupby("threads")[cols].median()
        if lo not in med.index or hi not in med.index:
            continue
        for c in cols:
            one, many = float(med.loc[lo, c]), float(med.loc[hi, c])
            rows.append(
                {
                    "workload": workload,
                    "arm": arm,
                    "per transaction": c.removesuffix("_per_txn").removesuffix("_per_op").replace("_", " "),
                    f"{lo} thread{'s' if lo > 1 else ''}": one,
                    f"{hi} threads": many,
                    "many / one": many / one if one else np.nan,
                }
            )
    return pd.DataFrame(rows)


READ_LATENCY_MS = SSD_READ_LATENCY_US / 1000  # a 16 KiB random read from the original's local SSD


FSYNC_LATENCY_MS = 0.5  # assumed: a redo-log fsync on the same


MODEL_ASSUMPTIONS = (
    "First-order model: per transaction, the CPU time, pages read and written and fsyncs measured here at the "
    "same data-to-buffer-pool ratio (uniform access); the original's cores and IOPS; assumed latencies of "
    f"{READ_LATENCY_MS} ms per page read and {FSYNC_LATENCY_MS} ms per fsync; the same speed per core as this "
    "machine. Throughput is the least of what the cores, the IOPS and the threads' latency allow; encryption adds "
    "only its measured CPU per transaction. It ignores lock and mutex contention, I/O merging and group commit "
    "(which make high concurrency cheaper per transaction), the original's access pattern (unknown) and MySQL's "
    "keyring against MariaDB's file_key_management: where those dominate it fails."
)


def predict(part: Part) -> pd.DataFrame:
    """Predicted TPS loss and CPU rise with TDE on the original's instance this one emulates, per workload, at one
    thread and at many, beside the published conclusions."""

    if instance_of(part.name) not in ORIGINAL:
        return pd.DataFrame()
    inst = ORIGINAL[instance_of(part.name)]
    runs = part.runs()
    need = {"server_cpu_us_per_op", "pages_read_per_txn", "pages_written_per_txn", "fsyncs_per_txn"}
    if not need <= set(runs):
        return pd.DataFrame()
    rows = []
    for workload, g in runs.groupby("workload", sort=False):
        med = g.groupby("arm").median(numeric_only=True)
        if OFF not in med.index or ON not in med.index:
            continue
        off, on = med.loc[OFF], med.loc[ON]
        ios = off["pages_read_per_txn"] + off["pages_written_per_txn"]
        wait_s = (off["pages_read_per_txn"] * READ_LATENCY_MS + off["fsyncs_per_txn"] * FSYNC_LATENCY_MS) / 1e3
        for threads in ORIGINAL_THREADS:
            tps = {}
            cpu = {}
            for arm, c_us in ((OFF, off["server_cpu_us_per_op"]), (ON, on["server_cpu_us_per_op"])):
                by_cpu = inst.cores * 1e6 / c_us
                by_io = inst.iops / ios if ios > 0 else float("inf")
                by_latency = threads / (c_us / 1e6 + wait_s)
                tps[arm] = min(by_cpu, by_io, by_latency)
                cpu[arm] = 100 * tps[arm] * c_us / (inst.cores * 1e6)
            bound = min(
                ("CPU", inst.cores * 1e6 / off["server_cpu_us_per_op"]),
                ("IOPS", inst.iops / ios if ios > 0 else float("inf")),
                ("latency", threads / (off["server_cpu_us_per_op"] / 1e6 + wait_s)),
                key=lambda kv: kv[1],
            )[0]
            loss = 100 * (1 - tps[ON] / tps[OFF])
            published = "loss up to ~20 %" if threads == 1 else "loss under 5 %"
            cpu_range = (0.06, 4.22) if instance_of(part.name) == "4c16g" else (0.12, 2.86)
            rows.append(
                {
                    "instance": part.name,
                    "workload": workload,
                    "threads": threads,
                    "bound by (off)": bound,
                    "predicted TPS off": tps[OFF],
                    "predicted TPS on": tps[ON],
                    "predicted loss %": loss,
                    "published": published,
                    "agrees": _within_registered(loss, threads == ORIGINAL_THREADS[0]),
                    "predicted CPU rise (pp)": cpu[ON] - cpu[OFF],
                    "published CPU rise (pp)": f"{cpu_range[0]}-{cpu_range[1]}",
                }
            )
    return pd.DataFrame(rows)


def _within_registered(loss: float, fewest_threads: bool) -> bool:
    """A predicted loss in the region the registry's reading reproduces: at the fewest threads the band of the
    low-concurrency claim (5 % to 25 %, ~20 % rounded), at the most under the high-concurrency claim's line (5 %)."""
    claim = claim_registry.get("tde", "low-concurrency-loss" if fewest_threads else "high-concurrency-loss")
    reading = claim.readings()[-1]  # the loss reading (the low-concurrency claim's first reading is its contrast)
    return reading.labels[reading.region(loss)] == REPRODUCE
