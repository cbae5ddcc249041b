"""Preconditions: what an environment must offer for a claim's mechanism to show at all, declared in the
registry beside the reading, before any data.

A precondition reads one *condition*: a fact of the environment the claim was measured in (the server's CPU
room, the kernel, whether writes can queue at the disk), of the baseline arm alone (how long its plain query
takes, how much of its quota it uses), or of what a compared arm's mechanism costs per operation against the
baseline's rate (ARM_COMPONENTS: a log's write time per transaction, never the arm's throughput). Never the
compared arms' difference: a condition that read the effect would let the data choose whether it is judged. Where
one fails, the claim is *not testable here*: the run's numbers are reported as what it measured instead, with the
place the claim can be tested.

Conditions are numbers, booleans or versions (lists of integers, compared element by element). A condition the
run could not know (a user's own server whose cores are not visible) leaves its precondition unchecked: the
verdict stands and says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENVIRONMENT, BASELINE, COMPONENTS = "environment", "baseline arm", "baseline's rate and an arm's components"

# What a condition may read of a compared arm (studies/protocol/judging.py hands over these columns alone): what
# its mechanism costs per transaction, which no claim reads, never its throughput or CPU, which the claims do.
ARM_COMPONENTS = ("log_io_us_per_txn", "log_lock_us_per_txn", "audit_bytes_per_transaction",
                  "audit_records_per_transaction")  # fmt: skip

# Every condition a precondition may read: what it is, its unit, and where it comes from. A baseline condition
# is computed from the baseline arm's runs alone (studies/protocol/judging.py hands over only those).
CONDITIONS: dict[str, tuple[str, str, str]] = {
    "host_cores": ("cores of the machine the servers run on", "cores", ENVIRONMENT),
    "server_cpu_room_cores": (
        "CPU a server can use at once: its quota, else the host's cores shared by the servers running at once",
        "cores",
        ENVIRONMENT,
    ),
    "cores_left_for_clients": (
        "the host's cores less the CPU quotas of the servers that run at once",
        "cores",
        ENVIRONMENT,
    ),
    "kernel_version": ("the kernel's version (major, minor)", "", ENVIRONMENT),
    "load_threads": ("the load's concurrent client threads (sysbench --threads)", "threads", ENVIRONMENT),
    "writes_throttled": ("the data disk limits write IOPS as well as reads", "", ENVIRONMENT),
    "round_trip_ms": ("the round trip between client and server, median of TCP connects", "ms", ENVIRONMENT),
    "server_random_calls_per_login": (
        "calls into the kernel's random source per SCRAM login on the MongoDB part's server build, the fewest over "
        "its mechanisms (strace)",
        "calls",
        ENVIRONMENT,
    ),
    "baseline_setup_over_reused": (
        "the baseline's connection set-up (build + first query) over its reused query, medians",
        "x",
        BASELINE,
    ),
    "baseline_server_cpu_us_per_op": ("the baseline's server CPU per operation, median", "us", BASELINE),
    "baseline_cpu_pressure": (
        "the share of the baseline's time a runnable thread on the server's host waited for a CPU (PSI cpu some), "
        "median over its runs",
        "share",
        BASELINE,
    ),
    "log_writes_share_at_baseline": (
        "the share of each second the per-statement log's writes would hold it at the baseline's throughput: "
        "general_log's file time per transaction (performance_schema, median over its runs) times the baseline's "
        "TPS (median)",
        "share",
        COMPONENTS,
    ),
    "baseline_client_cpu_us_per_op": ("the baseline's client CPU per operation, median", "us", BASELINE),
    "baseline_cpu_share_of_quota": (
        "the baseline server's CPU use as a share of its quota, median per cell, the highest cell",
        "share",
        BASELINE,
    ),
    "baseline_read_iops_share_fewest": (
        "the baseline server's read IOPS as a share of its limit at the fewest threads, median, the highest workload",
        "share",
        BASELINE,
    ),
    "baseline_read_iops_share_most": (
        "the baseline server's read IOPS as a share of its limit at the most threads, median, the lowest workload",
        "share",
        BASELINE,
    ),
    "baseline_split_factor_fewest": (
        "how far CPU's share of one baseline transaction at the fewest threads lies from the model of the original's "
        "instance at that thread count (its CPU, reads and flushes, the original's SSD), the farthest workload; a "
        "factor, 1 for the original's split",
        "x",
        BASELINE,
    ),
    "baseline_split_factor_most": (
        "how far the share of what bounds the baseline at the most threads lies from the model of the original's "
        "instance at that thread count (the share of its cores where CPU bounds it, of its IOPS where the device "
        "does, CPU's share of a transaction where neither does), the farthest workload; a factor, 1 for the "
        "original's split",
        "x",
        BASELINE,
    ),
}

# Each condition as a reader's first screen says it, a few words before its limit ("the round trip at least 0.375
# ms"); CONDITIONS says it in full.
WORDS: dict[str, str] = {
    "host_cores": "the host's cores",
    "server_cpu_room_cores": "the server's CPU room",
    "cores_left_for_clients": "the cores left for the clients",
    "kernel_version": "the kernel",
    "load_threads": "the load's threads",
    "writes_throttled": "writes throttled at the disk",
    "round_trip_ms": "the round trip",
    "server_random_calls_per_login": "random-source calls per login",
    "baseline_setup_over_reused": "the baseline's set-up over its reused query",
    "baseline_server_cpu_us_per_op": "the baseline's server CPU per operation",
    "baseline_cpu_pressure": "the baseline's CPU pressure",
    "log_writes_share_at_baseline": "general_log's writes' share of each second at the baseline's TPS",
    "baseline_client_cpu_us_per_op": "the baseline's client CPU per operation",
    "baseline_cpu_share_of_quota": "the baseline's CPU share of its quota",
    "baseline_read_iops_share_fewest": "the baseline's share of its read IOPS at the fewest threads",
    "baseline_read_iops_share_most": "the baseline's share of its read IOPS at the most threads",
    "baseline_split_factor_fewest": "how far a one-thread transaction's split is from the original's",
    "baseline_split_factor_most": "how far the most threads' split is from the original's",
}
OP_WORDS = {"at_least": "at least", "above": "above", "at_most": "at most", "below": "below", "equals": ""}

OPS = {
    "at_least": (">=", lambda v, x: v >= x),
    "above": (">", lambda v, x: v > x),
    "at_most": ("<=", lambda v, x: v <= x),
    "below": ("<", lambda v, x: v < x),
    "equals": ("=", lambda v, x: v == x),
}


@dataclass(frozen=True)
class Precondition:
    """`condition` `op` `limit`, with why the mechanism needs it (physics or the original's words) and where a
    claim that fails it can be tested."""

    condition: str
    op: str
    limit: Any
    why: str
    where: str

    def __post_init__(self) -> None:
        if self.condition not in CONDITIONS:
            raise ValueError(f"unknown condition {self.condition!r}: one of {sorted(CONDITIONS)}")
        if self.op not in OPS:
            raise ValueError(f"{self.condition}: the comparison is one of {sorted(OPS)}")
        if not self.why.strip() or not self.where.strip():
            raise ValueError(f"{self.condition}: a precondition says why the mechanism needs it and where to test it")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Precondition:
        ops = [k for k in OPS if k in d]
        if len(ops) != 1:
            raise ValueError(f"{d.get('condition')}: exactly one of {sorted(OPS)}")
        limit = d[ops[0]]
        return cls(
            str(d.get("condition", "")),
            ops[0],
            tuple(limit) if isinstance(limit, list) else limit,
            " ".join(str(d.get("why", "")).split()),
            " ".join(str(d.get("where", "")).split()),
        )

    @property
    def source(self) -> str:
        return CONDITIONS[self.condition][2]

    def describe(self) -> str:
        unit = CONDITIONS[self.condition][1]
        return f"{self.condition} {OPS[self.op][0]} {condition_text(self.limit, unit)}"

    def said(self) -> str:
        """The precondition in a reader's words: "the round trip at least 0.375 ms"."""
        unit = CONDITIONS[self.condition][1]
        return " ".join(w for w in (WORDS[self.condition], OP_WORDS[self.op], condition_text(self.limit, unit)) if w)

    def check(self, conditions: Mapping[str, Any]) -> dict[str, Any]:
        """This precondition on these conditions: the value read and whether it holds (None: not known)."""
        value = conditions.get(self.condition)
        value = tuple(value) if isinstance(value, list) else value
        return {
            "condition": self.condition,
            "text": CONDITIONS[self.condition][0],
            "source": self.source,
            "required": self.describe(),
            "said": self.said(),
            "value": list(value) if isinstance(value, tuple) else value,
            "shown": condition_text(value, CONDITIONS[self.condition][1]),
            "holds": holds(self.op, value, self.limit),
            "why": self.why,
            "where": self.where,
        }


def holds(op: str, value: Any, limit: Any) -> bool | None:
    """Whether value op limit; None when the value is unknown (missing, NaN) or of another kind than the limit."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(limit, bool) != isinstance(value, bool) or isinstance(limit, tuple) != isinstance(value, tuple):
        return None
    try:
        return bool(OPS[op][1](value, limit))
    except TypeError:
        return None


def condition_text(value: Any, unit: str = "") -> str:
    """A condition's value as a reader sees it: '0.6 cores', 'true', '6.1', 'unknown'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unknown"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ".".join(str(x) for x in value)
    if isinstance(value, int | float):
        if unit == "share":
            return f"{value * 100:.0f} %"
        text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
        return f"{text}{'×' if unit == 'x' else f' {unit}' if unit else ''}"
    return str(value)
