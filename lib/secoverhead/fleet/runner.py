"""The fleet on Dask distributed: every (study, target) job submitted as a task restricted to the workers that are
its target's client hosts, each needing the worker's one `load` slot (so two load jobs never share a client host
at once), retried on failure (the retry resumes the run), rescheduled by Dask when its worker dies. Without a
scheduler address a LocalCluster of one worker runs the jobs one by one on this machine (the embedded default).

Workers of a real cluster are started by the user, one per client host:
    dask worker tcp://SCHEDULER:8786 --name client-a --resources load=1 --nthreads 1
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import atomic_write_json
from secoverhead.fleet.job import as_dict, run_job
from secoverhead.fleet.spec import Fleet, Job

SLOT = "load"
WAIT_FOR_WORKERS_S = 60.0
POLL_S = 2.0
# a target with no client host connected this long fails its jobs: a killed worker restarted by hand or by its
# service manager is back well within it
ORPHANED_S = 120.0


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
        with connect(scheduler) as client:
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


ADDRESS = re.compile(r"^(?:(?:tcp|tls)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.\-]{0,252}):\d{1,5}$")
CONNECT_S = 3.0  # a scheduler answers within a second; one that does not in 3 s is not one


def check_address(scheduler: str) -> str:
    """The scheduler's address as Dask takes it (tcp://host:port), or ConfigError: before anything starts."""
    if not ADDRESS.match(scheduler) or not 0 < int(scheduler.rsplit(":", 1)[1]) < 65536:
        raise ConfigError(f"--scheduler {scheduler[:80]!r}: give tcp://HOST:PORT (or tls://HOST:PORT)")
    return scheduler if "://" in scheduler else f"tcp://{scheduler}"


@contextlib.contextmanager
def connect(scheduler: str) -> Iterator[Any]:
    """A client of the scheduler, or ConfigError in one line within seconds (nothing answers, something that is
    not a Dask scheduler answers, or never answers)."""
    from distributed import Client  # deferred: Dask is heavy

    address = check_scheduler(scheduler)
    try:
        client = Client(address, timeout=CONNECT_S)
    except Exception as exc:  # it answered a moment ago; gone since
        why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise ConfigError(f"no Dask scheduler answers at {address}: {why}") from None
    with client:
        yield client


def check_scheduler(scheduler: str) -> str:
    """The address, once a Dask scheduler there has said it is one; else ConfigError, in seconds."""
    address = check_address(scheduler)
    host, port = address.split("://", 1)[1].rsplit(":", 1)
    try:
        # a closed port or an unknown host, said at once, before Dask is even loaded
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_S).close()
        # whatever answers must say it is a scheduler, within a bound: Dask's own handshake waited 60+ s on a
        # server that accepted and said nothing
        from distributed.comm import connect as comm_connect  # loaded before the clock starts (2-5 s loaded)

        said = asyncio.run(asyncio.wait_for(_identity(comm_connect, address), CONNECT_S))
    except Exception as exc:  # OSError, TimeoutError, a protocol error from whatever answered
        why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise ConfigError(f"no Dask scheduler answers at {address}: {why}") from None
    if not isinstance(said, dict) or said.get("type") != "Scheduler":
        raise ConfigError(f"no Dask scheduler answers at {address}: what answers is not one")
    return address


async def _identity(comm_connect: Any, address: str) -> Any:
    comm = await comm_connect(address, timeout=CONNECT_S)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


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


@dataclass
class Placement:
    """The fleet's jobs on the cluster: each job's future, the worker addresses it was placed for, and how often
    it was placed. Dask keeps a task's worker restriction as the addresses its names had when it was submitted,
    so a client host restarted under its name (a new address) never got its job back and the fleet waited
    forever; a job whose placement lost every address is submitted again, by name, to resume its run."""

    client: Any
    fleet: Fleet
    reports: Path
    scheduler: str
    local: bool
    echo: Any
    futures: dict[Any, Job] = field(default_factory=dict)
    placed: dict[Any, frozenset[str]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    orphaned_since: dict[str, float] = field(default_factory=dict)

    def submit(self, job: Job) -> None:
        n = self.attempts[job.key] = self.attempts.get(job.key, 0) + 1
        restrict = None if self.local else list(job.target.clients) or None
        fut = self.client.submit(
            run_job,
            job,
            str(self.reports),
            self.scheduler,
            key=f"fleet-{self.fleet.stamp}-{job.key}-{n}",
            workers=restrict,
            allow_other_workers=False,
            resources={SLOT: 1},
            retries=self.fleet.retries,
            pure=False,
        )
        self.futures[fut] = job
        self.placed[fut] = frozenset(self._addresses(job)) if not self.local else frozenset()

    def collect(self, outcomes: dict[str, dict[str, Any]]) -> None:
        """Each job's outcome as it ends; between, lost placements renewed and orphaned jobs failed."""
        from distributed import wait  # deferred: Dask is heavy

        while self.futures:
            with contextlib.suppress(TimeoutError):
                wait(list(self.futures), timeout=POLL_S, return_when="FIRST_COMPLETED")
            for fut in [f for f in self.futures if f.done()]:
                job = self.futures.pop(fut)
                try:
                    o = as_dict(fut.result())
                except Exception as exc:  # failed after every retry, or its workers kept dying
                    o = _outcome(job, self.reports, "failed", f"{type(exc).__name__}: {exc}")
                outcomes[job.key] = o
                self.echo(_line(o))
            if not self.local:
                self._renew_lost(outcomes)

    def _addresses(self, job: Job, workers: dict[str, dict[str, Any]] | None = None) -> set[str]:
        workers = _workers(self.client) if workers is None else workers
        return {workers[n]["address"] for n in job.target.clients if n in workers}

    def _renew_lost(self, outcomes: dict[str, dict[str, Any]]) -> None:
        workers = _workers(self.client)
        busy = {k for keys in self.client.processing().values() for k in keys}
        for fut, job in list(self.futures.items()):
            now = self._addresses(job, workers)
            if not now:  # no client host of its target connected: waited for, within a bound
                if job.key not in self.orphaned_since:  # said once, when it starts waiting
                    self.orphaned_since[job.key] = time.monotonic()
                    self.echo(f"{job.key}: waiting for a client host of {job.target.name}")
                if time.monotonic() - self.orphaned_since[job.key] > ORPHANED_S:
                    self._drop(fut)
                    why = f"no client host of {job.target.name} connected for {ORPHANED_S:.0f} s"
                    outcomes[job.key] = _outcome(job, self.reports, "failed", why)
                    self.echo(_line(outcomes[job.key]))
                continue
            self.orphaned_since.pop(job.key, None)
            if now & self.placed[fut] or fut.key in busy:
                continue
            if self.attempts[job.key] > self.fleet.retries + 1:
                self._drop(fut)
                why = f"its client hosts kept leaving ({self.attempts[job.key]} placements)"
                outcomes[job.key] = _outcome(job, self.reports, "failed", why)
                self.echo(_line(outcomes[job.key]))
                continue
            self._drop(fut)
            self.submit(job)
            self.echo(f"{job.key}: placed again on {', '.join(sorted(job.target.clients))} (a client host came back)")

    def _drop(self, fut: Any) -> None:
        fut.cancel()
        self.futures.pop(fut, None)
        self.placed.pop(fut, None)


def run(fleet: Fleet, reports: Path, scheduler: str | None = None, *, echo: Any = print) -> Summary:
    """Every job, each to its end (ok, failed after its retries, refused, or failed because no client host of
    its target stayed connected); the fleet's summary written to reports/fleet/<stamp>.json on any exit, a
    signal's included (jobs not finished then: interrupted). A failed job does not stop the others."""
    reports.mkdir(parents=True, exist_ok=True)
    outcomes: dict[str, dict[str, Any]] = {}
    with cluster(scheduler) as client:  # a scheduler that does not answer is refused here: nothing started yet
        try:
            if scheduler:
                wait_for_workers(client, fleet.workers)
            address = client.scheduler.address if scheduler else ""
            placement = Placement(client, fleet, reports, address, not scheduler, echo)
            for job in fleet.jobs():
                placement.submit(job)
            placement.collect(outcomes)
        finally:
            for job in fleet.jobs():  # what did not end: said so in the summary, never left out of it
                why = "the fleet stopped before it ended"
                outcomes.setdefault(job.key, _outcome(job, reports, "interrupted", why))
            summary = _write_summary(fleet, reports, scheduler, list(outcomes.values()))
    return summary


def _outcome(job: Job, reports: Path, status: str, error: str) -> dict[str, Any]:
    return {
        "key": job.key,
        "study": job.study,
        "target": job.target.name,
        "status": status,
        "run_dir": str(reports / job.study / job.name),
        "error": error[:300],
        "verdicts": [],
    }


def _write_summary(fleet: Fleet, reports: Path, scheduler: str | None, outcomes: list[dict[str, Any]]) -> Summary:
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
