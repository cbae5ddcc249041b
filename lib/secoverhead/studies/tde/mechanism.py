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
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from secoverhead.analysis import claim_registry
from secoverhead.analysis.compare import compare_arms
from secoverhead.analysis.readings import REPRODUCE
from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.studies.protocol.judging import published
from secoverhead.studies.protocol.predictions import NAN, Prediction
from secoverhead.studies.tde.declarations import OFF, ON, STUDY, instance_of
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

    @classmethod
    def of(cls, cell: Mapping[str, Any]) -> Cost:
        """A cell's components from its run summaries: foreground CPU where measured (else all the server's), read
        requests where counted (else pages read)."""
        cpu = cell.get("server_cpu_fg_us_per_op", cell.get("server_cpu_us_per_op", math.nan))
        reads = cell.get("data_reads_per_txn", cell.get("pages_read_per_txn", math.nan))
        return cls(float(cpu), float(reads), float(cell.get("fsyncs_per_txn", 0.0)))

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


def mysql_facts(part: Part) -> dict[str, Any]:
    """What a part's (first) MySQL server recorded of itself: its limits, latencies and buffer pool sizing."""
    return next((v for k, v in part.servers.items() if k.startswith("mysql")), {})


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
        facts = mysql_facts(part)
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
        facts = mysql_facts(part)
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


MODEL_ASSUMPTIONS = (
    "First-order model: per transaction, the foreground CPU time, read requests and fsyncs measured here at the "
    "same data-to-buffer-pool ratio (uniform access), in the cell at the fewest threads for one thread and at the "
    "most for many; the original's cores and IOPS; a local SSD's "
    f"{SSD_READ_LATENCY_US / 1000:g} ms per read and {SSD_FLUSH_LATENCY_US / 1000:g} ms per fsync; the same speed "
    "per core as this machine. Throughput is the least of what the cores, the IOPS and the threads' latency allow; "
    "encryption adds only its measured CPU per transaction. It ignores lock and mutex contention, I/O merging and "
    "group commit (which make high concurrency cheaper per transaction) and the original's access pattern "
    "(unknown): where those dominate it fails."
)


def predict(part: Part) -> pd.DataFrame:
    """Predicted TPS loss and CPU rise with TDE on the original's instance this one emulates, per workload, at one
    thread and at many, beside the published conclusions (medians over the runs of each cell)."""
    if instance_of(part.name) not in ORIGINAL:
        return pd.DataFrame()
    rows = []
    cpu_rise = "{}-{}".format(*published_figure(CPU_RISE, instance_of(part.name)))
    for _, workload, threads, split in _model(part.runs(), ORIGINAL[instance_of(part.name)], by_round=False):
        rows.append(
            {
                "instance": part.name,
                "workload": workload,
                "threads": threads,
                "bound by (off)": split[OFF].bound,
                "predicted TPS off": split[OFF].tps,
                "predicted TPS on": split[ON].tps,
                "predicted loss %": _loss(split),
                "published": "loss up to ~20 %" if threads == ORIGINAL_THREADS[0] else "loss under 5 %",
                "agrees": _within_registered(_loss(split), threads == ORIGINAL_THREADS[0]),
                "predicted CPU rise (pp)": _cpu_rise(split),
                "published CPU rise (pp)": cpu_rise,
            }
        )
    return pd.DataFrame(rows)


# Seed 002's figures the model predicts, as data/published/tde.csv names them
FEW_LOSS, MANY_LOSS = "TPS loss with few concurrent queries", "TPS loss with many concurrent queries"
CPU_RISE = "CPU utilisation increase"


def published_figure(measure: str, instance: str = "") -> tuple[float, float | None]:
    """One of seed 002's figures (data/published/tde.csv) as the model compares with it: a stated range its ends,
    "under x" the range 0 to x, "up to x" the value x (the largest the original saw)."""
    pub = published(STUDY)
    row = pub[(pub["measure"] == measure) & pub["engine"].str.contains(instance, regex=False)].iloc[0]
    value, unit = str(row["value"]), str(row["unit"])
    if "-" in value:
        lo, hi = value.split("-")
        return float(lo), float(hi)
    return (0.0, float(value)) if "under" in unit else (float(value), None)


def predictions(part: Part) -> list[Prediction]:
    """Seed 002's figures for the instance this part emulates, each predicted for the original's instance from this
    part's components, one prediction per round (its interval over rounds), beside this machine's own figure: the
    few- and many-thread losses (the largest over workloads, as "up to" and "under" read) and the CPU rise (the
    largest over cells, against the published range)."""
    name = instance_of(part.name)
    if name not in ORIGINAL:
        return []
    runs, inst, cal = part.runs(), ORIGINAL[name], part.extras.get("calibration", {})
    modelled, here = list(_model(runs, inst, by_round=True)), _measured(runs)
    few, many = ORIGINAL_THREADS[0], ORIGINAL_THREADS[-1]
    return [
        _prediction(FEW_LOSS, part.name, "%", published_figure(FEW_LOSS),
                    _largest_by_round(modelled, few, _loss), here.get("fewest", NAN), few,
                    WHY_LOSS[True].format(**_one_thread_facts(runs, inst, cal, published_figure(FEW_LOSS)[0]))),
        _prediction(MANY_LOSS, part.name, "%", published_figure(MANY_LOSS),
                    _largest_by_round(modelled, many, _loss), here.get("most", NAN), many, WHY_LOSS[False]),
        _prediction(CPU_RISE, part.name, "percentage points", published_figure(CPU_RISE, name),
                    _largest_by_round(modelled, None, _cpu_rise), here.get("cpu", NAN), None, WHY_CPU_RISE),
    ]  # fmt: skip


WHY_LOSS = {
    True: (
        "at one thread the loss is encryption's CPU over a transaction's whole time on the original ({txn_us:,.0f} "
        "us here: this CPU, the SSD's declared latencies); encryption added {extra_us:,.0f} us a transaction here "
        "({pages:.3g} pages en/decrypted at {aes_us:.1f} us each by the calibration), where a {target:g} % loss "
        "needs {needed_us:,.0f} us: the original's cores' speed (unstated) and its keyring's cipher path, or a "
        "device faster than declared, would have to make up the rest"
    ),
    False: (
        "at many threads the loss is zero where the IOPS bind and encryption's CPU where the cores do: which one "
        "binds the original turns on its reads per transaction (its access pattern, unknown) and I/O merging, "
        "which the model leaves out"
    ),
}
WHY_CPU_RISE = (
    "the rise is encryption's CPU per transaction times the predicted TPS over the cores: the original's TPS at "
    "each cell (which the model predicts, not measures) and its AES speed per core"
)


def _model(runs: pd.DataFrame, inst: Instance, *, by_round: bool) -> Iterator[tuple[Any, str, int, dict[str, Split]]]:
    """(round, workload, threads, {arm: Split}) for the original's instance at each of ORIGINAL_THREADS, from the
    cell at the fewest threads for one thread and at the most for many: per round, or over all runs (round None)."""
    if not len(runs) or not {"workload", "threads", "arm"} <= set(runs):
        return
    keys = ["workload", "round"] if by_round and "round" in runs else ["workload"]
    for key, g in runs.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        for threads, cell in zip(ORIGINAL_THREADS, (g["threads"].min(), g["threads"].max()), strict=True):
            med = g[g["threads"] == cell].groupby("arm").median(numeric_only=True)
            if OFF in med.index and ON in med.index:
                split = {arm: original(inst, threads, Cost.of(med.loc[arm])) for arm in (OFF, ON)}
                yield (key[1] if len(key) > 1 else None), key[0], threads, split


def _one_thread_facts(runs: pd.DataFrame, inst: Instance, cal: Mapping[str, Any], target: float) -> dict[str, float]:
    """What a one-thread loss is made of, for its reason: the original's transaction time and the CPU encryption
    added (the worst workload's fewest-threads cell, medians), its pages and AES cost (`cal`, the calibration), and
    what `target` % needs."""
    worst = max(
        (m for m in _model(runs, inst, by_round=False) if m[2] == ORIGINAL_THREADS[0]),
        key=lambda m: _loss(m[3]),
        default=None,
    )
    if worst is None:
        return dict.fromkeys(("txn_us", "extra_us", "pages", "aes_us", "target", "needed_us"), NAN)
    off, on = worst[3][OFF], worst[3][ON]
    txn_us, extra_us = 1e6 / off.tps, 1e6 / on.tps - 1e6 / off.tps  # one thread: TPS = 1 / a transaction's time
    cells = runs[(runs["workload"] == worst[1]) & (runs["arm"] == ON)]
    cells = cells[cells["threads"] == cells["threads"].min()]
    cols = [c for c in ("pages_decrypted_per_txn", "pages_encrypted_per_txn") if c in cells]
    pages = float(cells[cols].sum(axis=1).median()) if cols else NAN
    aes = cal.get("aes_256_ctr_page_as_server_us") or cal.get("aes_256_ctr_us_per_page") or NAN
    # a loss L at one thread: 1 - t / (t + x) = L, so x = t L / (1 - L)
    needed = txn_us * (target / 100) / (1 - target / 100)
    return {"txn_us": txn_us, "extra_us": extra_us, "pages": pages, "aes_us": float(aes), "target": target,
            "needed_us": needed}  # fmt: skip


def _loss(split: dict[str, Split]) -> float:
    return 100 * (1 - split[ON].tps / split[OFF].tps) if split[OFF].tps > 0 else NAN


def _cpu_rise(split: dict[str, Split]) -> float:
    return 100 * (split[ON].cpu_utilisation - split[OFF].cpu_utilisation)


def _largest_by_round(modelled: list, threads: int | None, of: Callable[[dict[str, Split]], float]) -> list[float]:
    """Per round, the largest of `of` over workloads (and over both thread counts where threads is None)."""
    out: dict[Any, float] = {}
    for rnd, _, t, split in modelled:
        if threads is None or t == threads:
            out[rnd] = max(out.get(rnd, -math.inf), of(split))
    return list(out.values())


def _measured(runs: pd.DataFrame) -> dict[str, float]:
    """This machine's own figures for seed 002's: the largest loss over workloads at the fewest and at the most
    threads (medians of each cell's runs), and the largest CPU rise of any cell in points of its CPU quota."""
    if not len(runs) or not {"workload", "threads", "arm", "tps"} <= set(runs):
        return {}
    cells = runs.groupby(["workload", "threads", "arm"]).median(numeric_only=True)
    out: dict[str, float] = {}
    for (_, threads), g in cells.groupby(level=["workload", "threads"]):
        arms = g.droplevel(["workload", "threads"])
        if OFF not in arms.index or ON not in arms.index:
            continue
        end = "fewest" if threads == runs["threads"].min() else "most" if threads == runs["threads"].max() else ""
        if end:
            out[end] = max(out.get(end, -math.inf), 100 * (1 - arms.loc[ON, "tps"] / arms.loc[OFF, "tps"]))
        if "server_cpu_pct_of_limit" in arms:
            rise = arms.loc[ON, "server_cpu_pct_of_limit"] - arms.loc[OFF, "server_cpu_pct_of_limit"]
            out["cpu"] = max(out.get("cpu", -math.inf), rise)
    return out


def _prediction(
    figure: str, part: str, unit: str, published: tuple[float, float | None], values: list[float],
    measured: float, threads: int | None, why: str,
) -> Prediction:  # fmt: skip
    cells = "the fewest threads' cell" if threads == ORIGINAL_THREADS[0] else "the most threads' cell"
    made = (
        f"CPU, reads and fsyncs per transaction of {cells if threads else 'both ends'} (each round), "
        f"{ORIGINAL[instance_of(part)].describe()}, an SSD's {SSD_READ_LATENCY_US:g}/{SSD_FLUSH_LATENCY_US:g} us per "
        "read/fsync"
    )
    return Prediction(
        figure,
        "TDE on vs off",
        unit,
        published[0],
        published[1],
        components=made,
        measured=measured,
        why=why,
        part=part,
    ).over(values)


def _within_registered(loss: float, fewest_threads: bool) -> bool:
    """A predicted loss in the region the registry's reading reproduces: at the fewest threads the band of the
    low-concurrency claim (5 % to 25 %, ~20 % rounded), at the most under the high-concurrency claim's line (5 %)."""
    claim = claim_registry.get("tde", "low-concurrency-loss" if fewest_threads else "high-concurrency-loss")
    reading = claim.readings()[-1]  # the loss reading (the low-concurrency claim's first reading is its contrast)
    return reading.labels[reading.region(loss)] == REPRODUCE
