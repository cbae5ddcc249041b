"""The fleet engine's overhead per job: the same four smoke jobs run through `secoverhead fleet` (a local Dask
cluster) and one by one from the CLI, alternated (fleet, CLI, CLI, fleet, ...) so the machine's drift falls on both.
Prints each repetition's wall times and the overhead per job, (fleet - CLI) / 4, as seconds and as a share of a
job. Goal: under 5 %. A benchmark, not a timed test: the figures go to benchmarks/README.md.

    .venv/bin/python benchmarks/fleet_overhead.py [repetitions]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

BIN = Path(sys.executable).parent
STUDIES = [
    {"study": "tls", "scale": "smoke", "params": {"mongo_enabled": False}},
    {"study": "https", "scale": "smoke", "params": {"arms": ["HTTP", "TLS 1.2 full, RSA"]}},
]
TARGETS = ["one", "two"]  # embedded: each job starts its own servers on this machine


def fleet_once(tmp: Path) -> float:
    spec = {"targets": {t: {"clients": []} for t in TARGETS}, "studies": STUDIES, "retries": 0}
    path = tmp / "fleet.yaml"
    path.write_text(yaml.safe_dump(spec))
    t0 = time.perf_counter()
    subprocess.run(
        [str(BIN / "secoverhead"), "fleet", str(path), "--reports", str(tmp / "fleet-reports")],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


def cli_once(tmp: Path) -> float:
    t0 = time.perf_counter()
    for target in TARGETS:
        for s in STUDIES:
            argv = [
                str(BIN / "secoverhead"),
                "run",
                s["study"],
                "--reports",
                str(tmp / "cli-reports"),
                "--target",
                target,
                "--scale",
                s["scale"],
            ]
            for k, v in s["params"].items():
                argv += [
                    "-p",
                    k,
                    yaml.safe_dump(v, default_flow_style=True).strip()
                    if isinstance(v, list)
                    else str(v).lower()
                    if isinstance(v, bool)
                    else str(v),
                ]
            subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - t0


def main(repetitions: int = 2) -> None:
    fleet, cli = [], []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for i in range(repetitions):
            order = (fleet_once, cli_once) if i % 2 == 0 else (cli_once, fleet_once)
            for f in order:
                took = f(tmp)
                (fleet if f is fleet_once else cli).append(took)
                print(f"repetition {i + 1}: {'fleet' if f is fleet_once else 'CLI  '} {took:7.1f} s", flush=True)
    jobs = len(TARGETS) * len(STUDIES)
    f, c = statistics.median(fleet), statistics.median(cli)
    per_job = (f - c) / jobs
    print(f"median of {repetitions}: fleet {f:.1f} s, CLI one by one {c:.1f} s, {jobs} jobs")
    print(f"overhead per job: {per_job:+.2f} s, {100 * per_job / (c / jobs):+.1f} % of a job ({c / jobs:.1f} s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
