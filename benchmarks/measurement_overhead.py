"""How much the measuring itself costs (not a timed test; run with `make bench`).

1. Probe overhead: a reused-connection probe (timestamps and sample storage around each query) against a
   bare loop of the same queries, as a share of one query's latency. Goal: <= 2 %.
2. compare_arms() on a run table of 1,000 rounds. Goal: < 1 s.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pandas as pd

from secoverhead.analysis.compare import compare_arms
from secoverhead.servers import MariaDBServer
from secoverhead.workloads import paced, probes
from secoverhead.workloads.short_connections import ConnectSpec

N = 3000
ROUNDS = 7


def bare_loop_s(endpoint) -> float:
    """The same query on a kept connection (the library's operation, workloads/paced.py) with nothing around it."""
    spec = ConnectSpec("mysql", endpoint.connect_args(tls=False), query="SELECT 1")
    with paced.sql_operations(spec, kinds=("query",)) as ops:
        query = ops["query"]
        for _ in range(50):
            query()
        t0 = time.perf_counter()
        for _ in range(N):
            query()
        return time.perf_counter() - t0


def probe_loop_s(endpoint) -> tuple[float, float]:
    t0 = time.perf_counter()
    m = probes.mysql_reused_probe(endpoint, iterations=N, warmup=50)
    return time.perf_counter() - t0, m.metrics["query_ms_median"]


def main() -> None:
    with MariaDBServer() as db:
        bare, probed, medians = [], [], []
        for _ in range(ROUNDS):  # interleaved, like every other comparison in this project
            bare.append(bare_loop_s(db.endpoint))
            p, med = probe_loop_s(db.endpoint)
            probed.append(p)
            medians.append(med)
    per_query_overhead_ms = (statistics.median(probed) - statistics.median(bare)) / N * 1e3
    share = per_query_overhead_ms / statistics.median(medians) * 100
    print(
        f"probe overhead: {per_query_overhead_ms * 1e3:.2f} us per query "
        f"= {share:.2f} % of a {statistics.median(medians) * 1e3:.0f} us reused-connection query "
        f"(median of {ROUNDS} interleaved rounds; it includes the probe's set-up and info query) goal <= 2 %"
    )

    rng = np.random.default_rng(0)
    rounds = 1000
    runs = pd.DataFrame(
        {"arm": ["a", "b"] * rounds, "round": np.repeat(np.arange(rounds), 2), "x": rng.lognormal(0, 0.1, 2 * rounds)}
    ).assign(run_id=lambda d: range(len(d)))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        compare_arms(runs, "x", baseline="a")
        times.append(time.perf_counter() - t0)
    print(f"compare_arms() on {rounds} rounds: {statistics.median(times) * 1e3:.0f} ms (median of 5; goal < 1000 ms)")


if __name__ == "__main__":
    main()
