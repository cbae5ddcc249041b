"""A/A noise floors of each study's primary metrics in the designs it can use (part of `make bench`).

For each study an A/A experiment runs its baseline arm against an identical copy of itself (`aa`), with the
quick profile's run settings but more rounds than the quick plan, interleaved and, where every arm has a
server of its own (TDE, audit, auth's MongoDB and MySQL parts), as duets: the smaller floor decides the design
a study uses. Experiments of the quick plan's size (its sized-up rounds, or what its budget affords at the
A/A's pace) are then resampled from its rounds: the noise floor (95th percentile of |ratio - 1| such an
experiment reports with no real difference), the false-positive rate of the sequential looks, and the
minimum detectable effect (80 % power).

    python benchmarks/noise_floors.py                      # every study and design, 16 rounds each
    python benchmarks/noise_floors.py --used-design        # only the design each study uses (faster)
    python benchmarks/noise_floors.py --studies tde,audit --rounds 24
    python benchmarks/noise_floors.py --studies tde --run-seconds 2,5,10   # TDE's floor against run length
"""

from __future__ import annotations

import argparse
import tempfile
import time

import pandas as pd

from secoverhead.analysis.design import Looks, budget_rounds, schedule
from secoverhead.core.params import build, read_file
from secoverhead.reporting.tables import aa_table
from secoverhead.studies import STUDIES

# study -> (overrides that keep one cell, the primary metrics, the designs it can use)
CASES = {
    "tls": ({}, ["total_ms_median", "query_ms_median", "connection_server_cpu_us_per_op"], ["interleaved"]),
    "auth": (
        {"concurrency": [2], "nonce_workers": [8]},
        ["server_cpu_us_per_op", "system_ns_per_nonce"],
        ["interleaved", "duet"],  # duet: MongoDB and MySQL (a server per arm); nonces have no server
    ),
    "tde": (
        {"profiles": ["4c16g", "8c32g"], "threads": [1, 16]},
        ["tps", "server_cpu_us_per_op"],
        ["interleaved", "duet"],
    ),
    "https": ({}, ["server_cpu_us_per_op", "rps"], ["interleaved"]),
    "audit": ({}, ["tps", "server_cpu_us_per_query"], ["interleaved", "duet"]),
}


def quick_looks(planned, part, weights: dict[str, float]) -> Looks:
    """The looks the quick plan reaches in its budget: its sized-up rounds, or fewer where the part's share of
    max_minutes runs out first, at the A/A's own pace (two arms a round, as a baseline and one candidate)."""
    runs = part.runs()
    started = pd.to_datetime(runs["started"])
    rounds = runs["round"].nunique()
    per_round = (started.max() - started.min()).total_seconds() / max(rounds - 1, 1)
    share = planned.max_minutes * 60 * weights.get(part.name, 1.0) / sum(weights.values())
    n = budget_rounds(share, per_round, planned.min_rounds, planned.repetitions)
    return schedule(planned.min_rounds, n, planned.looks)


def floors(study: str, rounds: int, extra: dict | None = None, every_design: bool = True) -> pd.DataFrame:
    s = STUDIES[study]
    cls, module = s.Params, s.load()
    quick = read_file(s.params_dir / "quick.yaml")
    planned = build(cls, quick, study=study)
    planned.check_plan()  # sized up from the priors, as `secoverhead run` does
    overrides, metrics, designs = CASES[study]
    designs = designs if every_design else [planned.design]  # or only the design the study uses
    frames = []
    for design in designs:
        values = quick | overrides | (extra or {})
        values |= {"aa": True, "design": design, "repetitions": rounds, "min_rounds": rounds, "warmup": 1}
        values |= {"max_minutes": 60, "progress": "off", "profile": False}
        p = build(cls, values, study=study)
        with tempfile.TemporaryDirectory(prefix="secoverhead-bench-") as d:
            p.output_dir = d
            t0 = time.monotonic()
            result = module.run(p)
            weights = {name: planned.PART_WEIGHTS.get(name, 1.0) for name in result.parts}  # the quick run's parts
            looks = {name: quick_looks(planned, part, weights) for name, part in result.parts.items()}
            table = aa_table(result.parts, metrics, looks, by=cls.AA_CELLS)
            table.insert(0, "study", study)
            table["minutes"] = round((time.monotonic() - t0) / 60, 1)
            frames.append(table.assign(**{k: str(v) for k, v in (extra or {}).items()}))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--studies", default=",".join(CASES))
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--run-seconds", default="", help="TDE/audit/https: a floor per run length, e.g. 2,5,10")
    ap.add_argument("--used-design", action="store_true", help="only the design each study's quick plan uses")
    args = ap.parse_args()
    out = []
    for study in args.studies.split(","):
        lengths = [int(x) for x in args.run_seconds.split(",") if x] or [None]
        for seconds in lengths:
            extra = {"run_seconds": seconds} if seconds else None
            out.append(floors(study, args.rounds, extra, not args.used_design))
            print(out[-1].round(3).to_string(index=False), flush=True)
    table = pd.concat(out, ignore_index=True)
    print("\nA/A noise floors at each study's quick plan (resampled from the A/A rounds):")
    print(table.round(2).to_string(index=False))


if __name__ == "__main__":
    main()
