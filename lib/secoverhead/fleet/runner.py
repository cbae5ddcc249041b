"""The fleet on Dask distributed: every (study, target) job submitted as a task restricted to the workers that are
its target's client hosts, each needing the worker's one `load` slot (so two load jobs never share a client host
at once), retried on failure (the retry resumes the run), rescheduled by Dask when its worker dies. Without a
scheduler address a LocalCluster of one worker runs the jobs one by one on this machine (the embedded default).

Workers of a real cluster are started by the user, one per client host:
    dask worker tcp://SCHEDULER:8786 --name client-a --resources load=1 --nthreads 1
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import atomic_write_json
from secoverhead.fleet.job import as_dict, run_job
from secoverhead.fleet.spec import Fleet, Job

SLOT = "load"
WAIT_FOR_WORKERS_S = 60.0


@dataclass
class Summary:
    stamp: str
    scheduler: str
    outcomes: list[dict[str, Any]]
    path: Path

    @property
    def ok(self) -> bool:
        return all(o["status"] == "ok" for o in self.outcomes)


@contextlib.contextmanager
def cluster(scheduler: str | None) -> Iterator[Any]:
    """A client of the named scheduler, or of an embedded local cluster (one worker, one slot)."""
    from distributed import Client, LocalCluster  # deferred: Dask is heavy

    for name in ("distributed", "bokeh", "tornado"):  # the cluster's chatter is not the fleet's output
        logging.getLogger(name).setLevel(logging.ERROR)
    if scheduler:
        with Client(scheduler, timeout=30) as client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            resources={SLOT: 1},
            dashboard_address=None,
            name="local",
        ) as lc,
        Client(lc) as client,
    ):
        yield client


def _workers(client: Any) -> dict[str, dict[str, Any]]:
    """Connected workers by name: their address and resources."""
    info = client.scheduler_info()["workers"]
    return {str(w.get("name")): {"address": addr, "resources": w.get("resources") or {}} for addr, w in info.items()}


def wait_for_workers(client: Any, names: set[str], timeout: float = WAIT_FOR_WORKERS_S) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = _workers(client)
        missing = sorted(names - set(found))
        if not missing:
            break
        if time.monotonic() > deadline:
            raise ConfigError(
                f"no worker named {', '.join(missing)} joined the scheduler (start each with "
                f"`dask worker ADDRESS --name NAME --resources {SLOT}=1`)"
            )
        time.sleep(0.5)
    slotless = sorted(n for n in names if found[n]["resources"].get(SLOT) != 1)
    if slotless:
        raise ConfigError(
            f"worker(s) {', '.join(slotless)} lack the resource {SLOT}=1 that keeps one load job per client host"
        )
    return found


def submit(client: Any, fleet: Fleet, reports: Path, scheduler: str, local: bool) -> dict[Any, Job]:
    futures = {}
    for job in fleet.jobs():
        restrict = None if local else list(job.target.clients) or None
        fut = client.submit(
            run_job,
            job,
            str(reports),
            scheduler,
            key=f"fleet-{fleet.stamp}-{job.key}",
            workers=restrict,
            allow_other_workers=False,
            resources={SLOT: 1},
            retries=fleet.retries,
            pure=False,
        )
        futures[fut] = job
    return futures


def run(fleet: Fleet, reports: Path, scheduler: str | None = None, *, echo: Any = print) -> Summary:
    """Every job, each to its end (ok, failed after its retries, refused); the fleet's summary written to
    reports/fleet/<stamp>.json. A failed job does not stop the others."""
    from distributed import as_completed  # deferred: Dask is heavy

    reports.mkdir(parents=True, exist_ok=True)
    outcomes: list[dict[str, Any]] = []
    with cluster(scheduler) as client:
        if scheduler:
            wait_for_workers(client, fleet.workers)
        address = client.scheduler.address if scheduler else ""
        futures = submit(client, fleet, reports, address, local=not scheduler)
        for fut in as_completed(list(futures)):
            job = futures[fut]
            try:
                o = as_dict(fut.result())
            except Exception as exc:  # failed after every retry, or its workers kept dying
                o = {
                    "key": job.key,
                    "study": job.study,
                    "target": job.target.name,
                    "status": "failed",
                    "run_dir": str(reports / job.study / job.name),
                    "error": f"{type(exc).__name__}: {exc}"[:300],
                    "verdicts": [],
                }
            outcomes.append(o)
            echo(_line(o))
    path = reports / "fleet" / f"{fleet.stamp}.json"
    summary = Summary(fleet.stamp, scheduler or "local", sorted(outcomes, key=lambda o: o["key"]), path)
    atomic_write_json(
        path,
        {
            "stamp": fleet.stamp,
            "scheduler": summary.scheduler,
            "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "jobs": summary.outcomes,
        },
    )
    return summary


def _line(o: dict[str, Any]) -> str:
    verdicts = o.get("verdicts", [])
    decided = sum(v["verdict"] in ("reproduced", "not reproduced") for v in verdicts)
    untestable = sum(v["verdict"] == "not testable here" for v in verdicts)
    hosts = " -> ".join(o.get("attempts") or []) or "-"
    took = f"{o['duration_s']:.0f} s" if "duration_s" in o else "-"
    tail = f"; {decided} of {len(verdicts)} claims decided" if verdicts else ""
    tail += f", {untestable} not testable here" if untestable else ""
    err = f"; {o['error']}" if o.get("error") and o["status"] != "ok" else ""
    return f"{o['key']}: {o['status']} in {took} on {hosts}{tail}{err}"


def table(summary: Summary) -> str:
    return "\n".join(_line(o) for o in summary.outcomes)


def load_summary(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())
