"""One fleet job, as it runs on a Dask worker (a client host of its target): hold the target's lock (a target is
loaded by one job at a time), then run the study through the CLI into the fleet's reports, or continue it with
`--resume` when an earlier attempt left it interrupted (a worker killed mid-job: its child got SIGTERM through
PDEATHSIG and finalised the run as interrupted). The worker's slot resource (`load=1`) keeps two load jobs off
one client host at once; Dask reschedules a job whose worker died and retries one that failed."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secoverhead.core.files import read_json
from secoverhead.core.paths import SCHEDULER_ENV
from secoverhead.core.report import readable
from secoverhead.core.runs import running
from secoverhead.fleet.spec import Job
from secoverhead.host.process import dies_with_owner

TARGET_LOCK = "secoverhead-target-{}"
WAIT_FOR_OWNER_S = 180.0


class JobFailed(RuntimeError):
    """The run failed or was interrupted: Dask retries the job, which resumes it."""


@dataclass
class Outcome:
    key: str
    study: str
    target: str
    run_dir: str
    status: str  # ok | failed | interrupted | refused (bad input: not retried)
    exit_code: int
    client_host: str
    started: float
    ended: float
    attempts: list[str] = field(default_factory=list)  # client hosts that ran it, in order
    error: str = ""
    verdicts: list[dict[str, str]] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return self.ended - self.started


ADDRESS_KEYS = ("mysql_host", "mysql_port", "mongo_uri", "https_url")  # what names the server a target loads
HERE_LOCKS = Path("/dev/shm/secoverhead-targets")


def target_key(target: Any) -> str:
    """The server a target loads, whatever the fleet named it: its address parameters (embedded targets: this host's
    own servers, which two fleets here must not measure at once either)."""
    address = {k: str(v) for k, v in sorted(target.params.items()) if k in ADDRESS_KEYS}
    text = json.dumps(address or {"embedded": socket.gethostname()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@contextlib.contextmanager
def held_here(target: Any) -> Iterator[None]:
    """A lock on the target on this host, across fleets: the Dask lock orders one fleet's jobs; two fleets started
    here together each have a scheduler of their own, and would otherwise load one server at once."""
    HERE_LOCKS.mkdir(mode=0o1777, parents=True, exist_ok=True)
    fd = os.open(HERE_LOCKS / f"{target_key(target)}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel on any exit of the holder
        yield
    finally:
        os.close(fd)


def _worker_name() -> str:
    with contextlib.suppress(ImportError, ValueError):
        from distributed import get_worker

        return str(get_worker().name)
    return socket.gethostname()


def _wait_for_owner(run_dir: Path) -> None:
    """An interrupted attempt finalises its run (seconds); the retry waits for its owner to be gone."""
    deadline = time.monotonic() + WAIT_FOR_OWNER_S
    while time.monotonic() < deadline:
        if not running(run_dir):
            return
        time.sleep(0.5)


def _verdicts(run_dir: Path) -> list[dict[str, str]]:
    data = read_json(run_dir / "results" / "verdicts.json")
    vs = data.get("verdicts") if isinstance(data, dict) else None
    return [{"claim": str(v.get("claim")), "verdict": str(v.get("verdict"))} for v in vs or [] if isinstance(v, dict)]


def run_job(job: Job, reports: str, scheduler: str = "", host_name: str = "", log_dir: str = "") -> Outcome:
    """Run (or resume) one job here; raises JobFailed (Dask retries it) when the run failed or was interrupted.
    host_name: this client host's name (default: the worker's)."""
    from distributed import Lock  # deferred: only on a worker

    host = host_name or _worker_name()
    root = Path(reports)
    run_dir = root / job.study / job.name
    exe = str(Path(sys.executable).with_name("secoverhead"))
    env = os.environ.copy() | ({SCHEDULER_ENV: scheduler} if scheduler else {})
    env.pop("PYTEST_CURRENT_TEST", None)
    logs = Path(log_dir or root / "fleet" / "logs")
    logs.mkdir(parents=True, exist_ok=True)
    with Lock(TARGET_LOCK.format(job.target.name)), held_here(job.target):
        started = time.time()
        earlier = readable(run_dir)
        attempts = list(earlier.client_hosts) if earlier is not None else []
        if earlier is not None and earlier.status == "ok":
            argv: list[str] | None = None  # an earlier attempt finished: nothing to do
        elif earlier is not None:
            _wait_for_owner(run_dir)
            argv = ["run", "--resume", str(run_dir), "--client-host", host]
        else:
            argv = job.argv(root, host)
        code = 0
        if argv is not None:
            with open(logs / f"{job.key.replace('@', '-at-')}.log", "ab") as out:
                proc = subprocess.Popen(
                    [exe, *argv], stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=dies_with_owner()
                )
                try:
                    code = proc.wait()
                except BaseException:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(120)
                    raise
        ended = time.time()
    report = readable(run_dir)
    status = report.status if report is not None else ("refused" if code == 2 else "failed")
    outcome = Outcome(
        job.key,
        job.study,
        job.target.name,
        str(run_dir),
        status,
        code,
        host,
        started,
        ended,
        list(report.client_hosts if report is not None and report.client_hosts else attempts or [host]),
        report.error if report is not None else "",
        _verdicts(run_dir),
    )
    if outcome.status in ("failed", "interrupted"):
        raise JobFailed(f"{job.key} on {host}: {outcome.status} ({outcome.error[:200]})")
    return outcome


def as_dict(o: Outcome) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(o) | {"duration_s": round(o.duration_s, 1)}
