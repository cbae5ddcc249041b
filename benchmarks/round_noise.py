"""The per-round noise the reports show, for the error-rate harness (claim_error_rates.py's MEASURED): for each of
its plans, the sd over a report's rounds of log(candidate / baseline) in every cell (of the difference, for a
metric in percentage points), lowest, median and highest over the reports given, and the rounds they took.

    .venv/bin/python benchmarks/round_noise.py REPORT_DIR [REPORT_DIR ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

# plan -> (experiment, metric, baseline, candidate), as claim_error_rates.PLANS reads them
PLANS = {
    "audit": ("audit-mysql", "tps", "A: no audit", "general_log"),
    "audit-sa": ("audit-mariadb", "tps", "A: no audit", "server_audit"),
    "tls-setup": ("tls-mysql", "total_ms_median", "no TLS", "TLS"),
    "tls-reused": ("tls-mongodb-rtt", "query_ms_median", "no TLS", "TLS"),
    "auth": ("auth-mongodb", "server_cpu_us_per_op", "auth off", "SCRAM-SHA-256"),
    "https": ("https", "server_cpu_us_per_op", "HTTP", "TLS 1.2 full, RSA"),
    "tde": ("tde-4c16g", "tps", "encryption off", "encryption on"),
    "tde-cpu": ("tde-4c16g", "server_cpu_pct_of_limit", "encryption off", "encryption on"),
}
ADDITIVE = {"tde-cpu"}


def cells(report: Path, plan: str) -> list[tuple[float, int]]:
    """(per-round sd, rounds) of each cell of one report's experiment for the plan."""
    exp, metric, base, cand = PLANS[plan]
    path = report / "results" / exp / "results.parquet"
    if not path.exists():
        return []
    r = pd.read_parquet(path)
    r = r[(~r["warmup"]) & (r["metric"] == metric)]
    factors = [c for c in r.columns if c.startswith("factor_")]
    out = []
    for _, g in r.groupby(factors) if factors else [((), r)]:
        p = g.pivot_table(index="round", columns="arm", values="value")
        if base not in p or cand not in p:
            continue
        x = (p[cand] - p[base]) if plan in ADDITIVE else (np.log(p[cand]) - np.log(p[base]))
        x = x.dropna()
        if len(x) >= 2:
            out.append((float(x.std(ddof=1)), len(x)))
    return out


def main(reports: list[str]) -> None:
    for plan in PLANS:
        found = [c for d in reports for c in cells(Path(d), plan)]
        if not found:
            print(f"{plan}: no cells")
            continue
        sds = np.array([sd for sd, _ in found])
        rounds = sorted({n for _, n in found})
        print(
            f"{plan}: {len(found)} cells of {len(reports)} reports, per-round sd lowest {sds.min():.4f}, "
            f"median {np.median(sds):.4f}, highest {sds.max():.4f}; rounds {rounds}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
