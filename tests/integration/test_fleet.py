"""A fleet on a real Dask cluster: a scheduler and two workers as separate processes, each worker a client host in
a network namespace of its own (a veth pair to this machine; its traffic stays here), loading two MariaDB servers
this test starts, named in the fleet file as targets of the user's would be. Checks: every job's report comes
back into one reports/ and one index grouped by target; no two load jobs ran on one client host at once, nor on
one target (from the runs' start and end times); a worker killed mid-job leaves a run that the retry resumes to
its planned runs, repeating none; a load from both hosts at once merges their throughput and histograms."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from secoverhead.measurement.results import ResultStore
from secoverhead.network import Host, available
from secoverhead.servers import MariaDBServer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(available() is not None, reason=str(available())),
]
PW = "Fleet-Bench-Pw-7731"
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on {port}")


class Cluster:
    """A scheduler on this host and one worker per namespace host, named client-a, client-b."""

    def __init__(self, hosts: list[Host], tmp: Path) -> None:
        self.hosts, self.tmp, self.port = hosts, tmp, _free_port()
        self.procs: dict[str, subprocess.Popen] = {}
        self.address = f"tcp://127.0.0.1:{self.port}"
        # a dead worker's target lock is released when its lease times out (30 s by default): 5 s here
        self.env = os.environ.copy() | {
            "FLEET_PW": PW,
            "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "3",
            "DASK_DISTRIBUTED__SCHEDULER__LOCKS__LEASE_TIMEOUT": "5s",
            "DASK_DISTRIBUTED__SCHEDULER__LOCKS__LEASE_VALIDATION_INTERVAL": "1s",
        }
        self.env.pop("PYTEST_CURRENT_TEST", None)

    def start(self) -> None:
        log = open(self.tmp / "scheduler.log", "w")  # noqa: SIM115 - closed with the process
        self.procs["scheduler"] = subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "0.0.0.0", "--port", str(self.port), "--no-dashboard"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )
        _wait_port(self.port)
        for name, host in zip(("client-a", "client-b"), self.hosts, strict=True):
            self.start_worker(name, host)

    def start_worker(self, name: str, host: Host) -> None:
        log = open(self.tmp / f"{name}.log", "a")  # noqa: SIM115 - closed with the process
        self.procs[name] = subprocess.Popen(
            host.wrap(
                [
                    str(BIN / "dask"),
                    "worker",
                    f"tcp://{host.gateway}:{self.port}",
                    "--name",
                    name,
                    "--resources",
                    "load=1",
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                ]
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )

    def worker_pid(self, name: str) -> int:
        """The worker's own process (ip netns exec execs it, so it is the one we started)."""
        return self.procs[name].pid

    def stop(self) -> None:
        for p in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fleet")
    with Host() as a, Host() as b:
        c = Cluster([a, b], tmp)
        try:
            c.start()
            yield c
        finally:
            c.stop()


@pytest.fixture(scope="module")
def targets():
    """Two MariaDB servers the test starts, listening where the namespaces reach them, the bench user's password
    set to the one the workers' environment holds."""
    with (
        MariaDBServer(tls="on", extra_options={"bind-address": "0.0.0.0"}) as one,
        MariaDBServer(tls="on", extra_options={"bind-address": "0.0.0.0"}) as two,
    ):
        for db in (one, two):
            conn = db.admin()
            conn.cursor().execute(f"ALTER USER 'bench'@'%' IDENTIFIED BY '{PW}'")
            conn.close()
        yield {"db-one": one, "db-two": two}


def _target(db: MariaDBServer, host: Host, clients: list[str]) -> dict:
    return {
        "params": {
            "mysql_host": host.gateway,
            "mysql_port": db.endpoint.port,
            "mysql_user": "bench",
            "mysql_password_env": "FLEET_PW",
        },
        "clients": clients,
    }


def _fleet(cli_env: dict, cluster: Cluster, spec: dict, reports: Path, timeout: float = 600):
    path = reports.parent / f"fleet-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return subprocess.run(
        [str(BIN / "secoverhead"), "fleet", str(path), "--scheduler", cluster.address, "--reports", str(reports)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env,
    )


def _start_fleet(cluster: Cluster, spec: dict, reports: Path) -> subprocess.Popen:
    """The fleet running in the background, its output piped (a test acts on it while it runs)."""
    path = reports.parent / "fleet.yaml"
    path.write_text(yaml.safe_dump(spec))
    argv = [str(BIN / "secoverhead"), "fleet", str(path), "--scheduler", cluster.address, "--reports", str(reports)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster.env)


def _span(run: Path) -> tuple[float, float, str, str]:
    meta = json.loads((run / "run.json").read_text())
    from datetime import datetime

    t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()  # noqa: E731
    return t(meta["started"]), t(meta["finished"]), meta["client_hosts"][-1], meta["target"]


TLS = {"study": "tls", "params": {"mongo_enabled": False, "repetitions": 2, "warmup": 0, "extra_arms": False}}
AUTH = {
    "study": "auth",
    "params": {
        "mongo_enabled": False,
        "nonce_enabled": False,
        "repetitions": 2,
        "warmup": 0,
        "concurrency": [1],
        "design": "interleaved",
    },
}


def test_a_fleet_of_two_targets_and_two_studies_on_two_client_hosts(cluster, targets, tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    spec = {
        "targets": {name: _target(db, cluster.hosts[0], ["client-a", "client-b"]) for name, db in targets.items()},
        "studies": [TLS, AUTH],
        "retries": 1,
    }
    res = _fleet(cluster.env, cluster, spec, reports)
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-2000:])
    runs = sorted(p.parent for p in reports.glob("*/*/run.json") if not p.parent.is_symlink())
    assert len(runs) == 4
    spans = [_span(r) for r in runs]
    assert {s[3] for s in spans} == {"db-one", "db-two"} and {s[2] for s in spans} <= {"client-a", "client-b"}
    for i, a in enumerate(spans):  # one load job per client host, and per target, at any moment
        for b in spans[i + 1 :]:
            apart = a[1] <= b[0] or b[1] <= a[0]
            assert apart or (a[2] != b[2] and a[3] != b[3]), (a, b)
    for r in runs:
        assert json.loads((r / "run.json").read_text())["status"] == "ok"
    index = (reports / "index.html").read_text()
    assert index.count("db-one") >= 2 and index.count("db-two") >= 2  # a row per run, by target
    summary = json.loads(next((reports / "fleet").glob("*.json")).read_text())
    assert sorted(j["key"] for j in summary["jobs"]) == ["auth@db-one", "auth@db-two", "tls@db-one", "tls@db-two"]
    assert all(j["status"] == "ok" and j["duration_s"] > 0 for j in summary["jobs"])
    assert PW not in res.stdout + res.stderr and not any(
        PW.encode() in f.read_bytes() for f in reports.rglob("*") if f.is_file()
    )


def test_a_worker_killed_mid_job_is_retried_with_resume_and_repeats_no_run(cluster, targets, tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    tls = {"study": "tls", "params": TLS["params"] | {"repetitions": 6, "mysql_connect_iterations": 150}}
    spec = {
        "targets": {"db-one": _target(targets["db-one"], cluster.hosts[0], ["client-a", "client-b"])},
        "studies": [tls],
        "retries": 2,
    }
    proc = _start_fleet(cluster, spec, reports)
    deadline = time.monotonic() + 240
    victim = None
    while victim is None and time.monotonic() < deadline:  # the first run recorded: kill the worker running it
        done = list(reports.glob("tls/*/results/*/runs/*.json"))
        meta = next(iter(reports.glob("tls/*/run.json")), None)
        if done and meta is not None:
            victim = json.loads(meta.read_text())["client_hosts"][0]
        time.sleep(0.2)
    assert victim is not None, "no run started"
    os.kill(cluster.worker_pid(victim), signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    host = cluster.hosts[0] if victim == "client-a" else cluster.hosts[1]
    cluster.start_worker(victim, host)  # the cluster as the other tests found it
    assert proc.returncode == 0, (out[-2000:], err[-2000:])
    run = next(p.parent for p in reports.glob("tls/*/run.json") if not p.parent.is_symlink())
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "ok" and meta["resumed"] >= 1 and meta["client_hosts"][0] == victim
    assert len(meta["client_hosts"]) >= 2  # the retry ran on a client host of the target, after the killed one
    store = ResultStore(run / "results", "tls-mysql")
    # a noise retake runs a key twice on purpose (info retake_of); a resume must not run any a second time
    keys = [r.key for r in store.records() if r.status == "ok" and "retake_of" not in r.info]
    assert len(keys) == len(set(keys)), "a run was repeated"
    md = store.metadata()
    assert md["status"] == "complete" and "interrupt" not in md["stop_reason"]  # it ended as an unbroken one ends
    assert len(keys) == md["completed_runs"]  # every run it counts was made once, across the two attempts


def test_a_worker_killed_mid_job_and_restarted_gets_its_job_back(cluster, targets, tmp_path):
    """The target's only client host dies mid-job and comes back (a service manager restarting it): the job is
    placed on it again and resumes, within a bound; the summary says so."""
    reports = tmp_path / "reports"
    reports.mkdir()
    tls = {"study": "tls", "params": TLS["params"] | {"repetitions": 4, "mysql_connect_iterations": 150}}
    spec = {
        "targets": {"db-one": _target(targets["db-one"], cluster.hosts[0], ["client-a"])},
        "studies": [tls],
        "retries": 2,
    }
    proc = _start_fleet(cluster, spec, reports)
    deadline = time.monotonic() + 240
    while not list(reports.glob("tls/*/results/*/runs/*.json")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(reports.glob("tls/*/results/*/runs/*.json")), (
        f"no run started: {proc.poll()} {proc.stderr.read()[-800:] if proc.poll() is not None else ''}"
    )
    os.kill(cluster.worker_pid("client-a"), signal.SIGKILL)
    cluster.procs["client-a"].wait(30)
    time.sleep(3)
    cluster.start_worker("client-a", cluster.hosts[0])
    out, err = proc.communicate(timeout=400)  # bound: the job's whole time twice over
    assert proc.returncode == 0, (out[-2000:], err[-2000:])
    run = next(p.parent for p in reports.glob("tls/*/run.json") if not p.parent.is_symlink())
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "ok" and meta["resumed"] >= 1 and meta["client_hosts"][:2] == ["client-a", "client-a"]
    (summary,) = (reports / "fleet").glob("*.json")
    assert [j["status"] for j in json.loads(summary.read_text())["jobs"]] == ["ok"]


def test_a_fleet_stopped_by_a_signal_writes_its_summary(cluster, targets, tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    spec = {"targets": {"db-two": _target(targets["db-two"], cluster.hosts[0], ["client-b"])}, "studies": [TLS]}
    proc = _start_fleet(cluster, spec, reports)
    deadline = time.monotonic() + 240
    while not list(reports.glob("tls/*/run.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    (summary,) = (reports / "fleet").glob("*.json")
    (job,) = json.loads(summary.read_text())["jobs"]
    assert job["key"] == "tls@db-two" and job["status"] == "interrupted"


@pytest.mark.quiet  # the hosts' start skew: a neighbour's load could delay one host's start
def test_one_server_loaded_from_both_hosts_at_once_merges_their_counts(cluster, targets):
    from distributed import Client

    from secoverhead.workloads.multihost import run_on_hosts
    from secoverhead.workloads.short_connections import ConnectSpec, run_short_connections

    db = targets["db-two"]
    args = db.endpoint.connect_args(tls=False) | {"host": cluster.hosts[0].gateway}
    spec = ConnectSpec("mysql", args).without_secret("env", "FLEET_PW")
    with Client(cluster.address, timeout=30) as client:
        m = run_on_hosts(
            ["client-a", "client-b"],
            run_short_connections,
            spec,
            concurrency=2,
            ops_per_worker=60,
            max_seconds=30,
            server_cpu=db.cpu,
            client=client,
        )
    hosts = m.info["hosts"]
    assert set(hosts) == {"client-a", "client-b"}
    assert m.metrics["operations"] == sum(h["operations"] for h in hosts.values()) == 2 * 2 * 60
    assert m.metrics["ops_per_s"] == pytest.approx(sum(h["ops_per_s"] for h in hosts.values()))
    assert m.metrics["latency_count"] == m.metrics["operations"]  # the merged histogram holds every connection
    assert set(m.samples["host"]) == {"client-a", "client-b"} and len(m.samples) == m.metrics["operations"]
    assert m.metrics["server_cpu_us_per_op"] > 0 and m.metrics["start_skew_s"] < 0.25
