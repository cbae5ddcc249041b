"""A server the project did not start is measured through its own counters: a mongod named by URI gives its
process CPU through serverStatus, and it agrees with /proc on the same process (mongod 4.2.6 and 6.0.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from secoverhead.host.metrics import CpuMeter, ProcCpu
from secoverhead.servers import ExternalMongo
from secoverhead.servers.engines import MONGOD_4_2, MONGOD_6_0
from secoverhead.servers.mongod import MongodServer

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("build", [MONGOD_4_2.name, MONGOD_6_0.name])
def test_a_named_mongods_serverstatus_cpu_is_its_proc_cpu(build):
    with MongodServer(build=build, tls=False) as mongod:
        uri = f"mongodb://{mongod.endpoint.host}:{mongod.endpoint.port}/"
        with ExternalMongo(uri=uri) as named:
            facts = named.describe()
            assert facts["server_cpu"].startswith("mongod serverStatus"), facts
            assert 0 <= facts["server_cpu_background_cores"] < 2.5  # a rate, whatever else the machine does
            client = mongod.endpoint.client()
            coll = client.secoverhead_test.counters
            proc = ProcCpu(mongod.pids)
            with CpuMeter(named.cpu) as by_status:
                before = proc.take()
                for i in range(3000):
                    coll.insert_one({"i": i, "pad": "x" * 200})
                    coll.find_one({"i": i})
                after = proc.take()
            client.close()
        by_proc = sum(proc.seconds(before, after))
        by_counters = by_status.server.total_s
        # one process's getrusage and its /proc ticks (10 ms each, two readings): the same CPU
        assert by_proc > 0.3, by_proc
        assert abs(by_counters - by_proc) <= 0.05 + 0.08 * by_proc, (by_counters, by_proc)
        assert by_status.server.system_s > 0 and by_status.server.user_s > 0
    assert named.cpu is not None  # the source stays what was read; its connection closed with the server's exit


def test_a_named_mongod_without_counters_asked_is_not_measured_and_says_so():
    with MongodServer(build=MONGOD_6_0.name, tls=False) as mongod:
        uri = f"mongodb://{mongod.endpoint.host}:{mongod.endpoint.port}/"
        with ExternalMongo(uri=uri, server_cpu="none") as named:
            assert named.cpu is None and named.describe()["server_cpu"] == "not measured (server_cpu none)"


def test_mysqls_statement_cpu_leaves_out_most_of_a_tls_connections_cost():
    """Why a named MySQL's CPU is not read from performance_schema: over TLS short connections its statement CPU
    holds a small part of mysqld's (14 % here; the handshake is outside statements), though the counter works."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "statement_cpu.py"
    spec = importlib.util.spec_from_file_location("statement_cpu", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    shares = bench.shares(queries=3000, connections=100)
    statement, whole = shares["short connections, TLS"]
    assert whole > 0.1 and 0 < statement < 0.5 * whole, shares
    statement, whole = shares["reused connection, point selects"]
    assert 0 < statement < whole, shares


# -- the DBA's host: /proc over SSH, process-exporter, node_exporter ---------------------------------------------
PW = "Watched-Pw-4711"
SOURCES = ["ssh", "process-exporter", "node_exporter"]


@pytest.fixture(scope="module")
def host_sshd(tmp_path_factory):
    from tests.integration.watchers import sshd

    with sshd(tmp_path_factory.mktemp("sshd")) as s:
        yield s


@pytest.fixture(scope="module")
def mysql8():
    from secoverhead.servers.engines import MYSQL_8_0
    from secoverhead.servers.mysql import MySQLServer

    if not MYSQL_8_0.available:
        pytest.skip("MySQL 8.0 is not fetched here: `make setup` fetches it")
    with MySQLServer(tls=True) as s:
        conn = s.admin()
        conn.cursor().execute("CREATE USER 'dba'@'%' IDENTIFIED BY %s", (PW,))
        conn.close()
        yield s


def _spec(source: str, sshd, tmp_path, stack, server, name: str) -> dict:
    """The source's parameters, pointed at this server's process alone (other tests' servers may run beside it)."""
    import re

    from tests.integration.watchers import exporter

    if source == "ssh":
        where = sshd.spec(str(server.pids[0]))
        return {"server_cpu": where, "ssh_key": str(sshd.key), "known_hosts": str(sshd.known_hosts)}
    kind = "process" if source == "process-exporter" else "node"
    url = stack.enter_context(exporter(kind, tmp_path, (name, f".*{re.escape(str(server.run_dir))}.*")))
    return {"server_cpu": f"{url}#{name}" if kind == "process" else url}


def _host_cpu_s() -> float:
    """Every CPU's user, nice, system, irq and softirq time in /proc/stat: what node_exporter adds up."""
    from secoverhead.host.metrics import TICK_S

    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6)) * TICK_S


def _measured_or_refused(source: str, named, stack, engine: str):
    """The named server's CPU source. node_exporter's whole host is this machine, where the load runs too: the
    server refuses it as its CPU and says why; the source itself is still checked, opened here directly."""
    from secoverhead.servers.remote_cpu import CpuSpec, remote_cpu

    facts = named.describe()
    if source != "node_exporter":
        assert facts["server_cpu"] == named.cpu.method and named.background_cores is not None, facts
        return named.cpu
    assert named.cpu is None and named.background_cores is None, facts
    assert facts["server_cpu"].startswith("not measured (node_exporter at http"), facts
    assert "would be counted as the server's" in facts["server_cpu"], facts
    opened = remote_cpu(CpuSpec.parse("server_cpu", named.server_cpu), engine)
    stack.callback(opened.close)
    return opened


def _agree(source: str, meter, proc_s: float, host_s: float) -> None:
    by_source = meter.server.total_s
    print(f"{source}: {by_source:.3f} s by the source, {proc_s:.3f} s by /proc, host {host_s:.3f} s")
    if source == "node_exporter":  # the whole host's: the server's CPU, the client's and everything else
        assert by_source >= 0.9 * proc_s - 0.05, (by_source, proc_s)
        assert abs(by_source - host_s) <= 0.1 + 0.08 * host_s, (by_source, host_s)
        assert "whole host" in meter.source.method
        return
    # one process's ticks read two ways (10 ms each, two readings each): the same CPU
    assert proc_s > 0.2, (proc_s, by_source)
    assert abs(by_source - proc_s) <= 0.05 + 0.08 * proc_s, (by_source, proc_s)


@pytest.mark.parametrize("source", SOURCES)
def test_a_named_mysqls_cpu_from_its_host_is_its_proc_cpu(source, mysql8, host_sshd, tmp_path, monkeypatch):
    """MySQL 8.0's own counter leaves out connections and TLS; its host's /proc does not."""
    import contextlib

    from secoverhead.servers import ExternalMySQL

    monkeypatch.setenv("WATCHED_PW", PW)
    with contextlib.ExitStack() as stack:
        where = _spec(source, host_sshd, tmp_path, stack, mysql8, "mysqld")
        named = stack.enter_context(
            ExternalMySQL(
                host="127.0.0.1", port=mysql8.endpoint.port, user="dba", password_env="WATCHED_PW", tls=True, **where
            )
        )
        cpu = _measured_or_refused(source, named, stack, "MySQL")
        proc = ProcCpu(mysql8.pids)
        with CpuMeter(cpu) as meter:
            before, host_before = proc.take(), _host_cpu_s()
            for _ in range(300):  # new TLS connections: the handshakes a statement counter cannot see
                conn = named.endpoint.connect(tls=True)
                cur = conn.cursor()
                cur.execute("SELECT 1")
                cur.fetchall()
                conn.close()
            conn = named.endpoint.connect(tls=False)
            cur = conn.cursor()
            for i in range(3000):
                cur.execute("SELECT %s", (i,))
                cur.fetchall()
            conn.close()
            after, host_after = proc.take(), _host_cpu_s()
    _agree(source, meter, sum(proc.seconds(before, after)), host_after - host_before)


@pytest.fixture(scope="module")
def mongod6():
    with MongodServer(build=MONGOD_6_0.name, tls=False) as mongod:
        yield mongod


@pytest.mark.parametrize("source", SOURCES)
def test_a_named_mongods_cpu_from_its_host_is_its_proc_cpu(source, mongod6, host_sshd, tmp_path):
    import contextlib

    mongod = mongod6
    with contextlib.ExitStack() as stack:
        where = _spec(source, host_sshd, tmp_path, stack, mongod, "mongod")
        uri = f"mongodb://{mongod.endpoint.host}:{mongod.endpoint.port}/"
        named = stack.enter_context(ExternalMongo(uri=uri, **where))
        cpu = _measured_or_refused(source, named, stack, "MongoDB")
        client = mongod.endpoint.client()
        coll = client.secoverhead_test.counters
        proc = ProcCpu(mongod.pids)
        with CpuMeter(cpu) as meter:
            before, host_before = proc.take(), _host_cpu_s()
            for i in range(3000):
                coll.insert_one({"i": i, "pad": "x" * 200})
                coll.find_one({"i": i})
            after, host_after = proc.take(), _host_cpu_s()
        client.close()
    _agree(source, meter, sum(proc.seconds(before, after)), host_after - host_before)


def test_an_ssh_source_that_cannot_log_in_or_finds_two_servers_says_why_in_one_line(host_sshd, tmp_path):
    from secoverhead.core.errors import ConfigError, UnreachableServerError
    from secoverhead.servers.remote_cpu import CpuSpec, remote_cpu

    two = r"\d server processes on 127\.0\.0\.1.*name one as ssh://host/PID"
    with (
        MongodServer(build=MONGOD_6_0.name, tls=False),
        MongodServer(build=MONGOD_6_0.name, tls=False),
        pytest.raises(ConfigError, match=two),
    ):
        remote_cpu(CpuSpec.parse("x", host_sshd.spec()), "MongoDB", str(host_sshd.key), str(host_sshd.known_hosts))
    with pytest.raises(UnreachableServerError, match="host key is not in known_hosts"):
        empty = tmp_path / "known_hosts"
        empty.write_text("")
        remote_cpu(CpuSpec.parse("x", host_sshd.spec("1")), "MongoDB", str(host_sshd.key), str(empty))
    with pytest.raises(ConfigError, match="no nosuchd process"):
        remote_cpu(
            CpuSpec.parse("x", host_sshd.spec("nosuchd")), "MongoDB", str(host_sshd.key), str(host_sshd.known_hosts)
        )


# -- a study's CPU claims on the DBA's MySQL, measured on its host -------------------------------------------------
STUDY_ARGS = {
    "auth": {"mongo_enabled": "false", "nonce_enabled": "false", "repetitions": 3},
    "tls": {"files": "tests/fixtures/tls_tiny.yaml", "rtt_enabled": "false"},
}


def _cli(study: str, tmp_path, args: dict):
    import os
    import subprocess
    import sys

    files = args.pop("files", None)
    argv = [sys.executable, "-m", "secoverhead.app.cli", "run", study, "--reports", str(tmp_path / "reports")]
    argv += [x for k, v in args.items() for x in ("-p", k, str(v))]
    argv += ["-f", str(Path(__file__).parents[2] / files)] if files else []
    env = os.environ | {"WATCHED_PW": PW, "SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


def _results(study: str, tmp_path, args: dict, cpu_measured: bool = True) -> tuple[dict, dict]:
    """A study's run through the CLI: its verdicts, and its (one) part's metadata; its runs measured the server's
    CPU, or (cpu_measured False) none did."""
    import csv
    import json

    res = _cli(study, tmp_path, args)
    assert res.returncode == 0, res.stderr[-3000:]
    results = next((tmp_path / "reports").rglob("verdicts.json")).parent
    part = next(results.glob("*/metadata.json")).parent
    with (part / "results.csv").open() as f:
        metrics = {row["metric"] for row in csv.DictReader(f)}
    assert bool({m for m in metrics if "server_cpu_us_per_op" in m}) is cpu_measured, metrics
    return json.loads((results / "verdicts.json").read_text()), json.loads((part / "metadata.json").read_text())


def _run(study: str, tmp_path, server, where: dict, cpu_measured: bool = True) -> tuple[dict, dict, list[str]]:
    """A study's MySQL part on a named MySQL 8.0, its CPU read from `where`: the run's verdicts, the server's facts
    and the part's notes."""
    conn = server.admin()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS sbtest")
    cur.execute("GRANT ALL PRIVILEGES ON sbtest.* TO 'dba'@'%'")
    conn.close()
    args = {
        "mysql_host": "127.0.0.1",
        "mysql_port": server.endpoint.port,
        "mysql_user": "dba",
        "mysql_password_env": "WATCHED_PW",
        "mysql_server_cpu": where["server_cpu"],
        **STUDY_ARGS[study],
    }
    if "ssh_key" in where:
        args |= {"server_cpu_ssh_key": where["ssh_key"], "server_cpu_ssh_known_hosts": where["known_hosts"]}
    verdicts, meta = _results(study, tmp_path, args, cpu_measured)
    return verdicts, meta["servers"]["mysql"], meta["notes"]


def _source_noted(facts: dict, notes: list[str]) -> None:
    assert facts["server_cpu"] and facts["server_cpu_background_cores"] is not None, facts
    assert any(n.startswith(f"server CPU read from {facts['server_cpu']}") for n in notes), (facts, notes)


@pytest.mark.parametrize("source", ["ssh", "process-exporter"])
def test_the_pooling_claim_is_decided_on_a_named_mysql_from_its_hosts_cpu(source, mysql8, host_sshd, tmp_path):
    """Without a CPU source the claim is not testable on a named MySQL; with one it is decided. A pool's server CPU
    per request is a tenth of a short connection's here (0.09x [0.08, 0.11] on 2026-11-30), five times below the
    line: no busy core moves three rounds of it that far."""
    import contextlib

    with contextlib.ExitStack() as stack:
        where = _spec(source, host_sshd, tmp_path, stack, mysql8, "mysqld")
        verdicts, facts, notes = _run("auth", tmp_path, mysql8, where)
    pooling = [v for v in verdicts["verdicts"] if v["id"] == "MySQL:pooling"]
    assert pooling and all(v["verdict"] == "reproduced" for v in pooling), pooling  # a pool logs in once
    assert all(v["preconditions"][0]["holds"] for v in pooling), pooling
    assert all("MariaDB" not in v["engine_note"] and "MySQL 8.0" in v["engine_note"] for v in pooling), pooling
    _source_noted(facts, notes)
    assert ("over ssh" if source == "ssh" else "process-exporter group mysqld") in facts["server_cpu"]


def test_a_tls_run_on_a_named_mysql_on_this_machine_does_not_take_the_whole_hosts_cpu_for_the_servers(
    mysql8, host_sshd, tmp_path
):
    """node_exporter adds up the host's CPUs, and the load runs on this one: the server's CPU is not measured and
    the report says why, while set-up time, a client's clock, is still decided."""
    import contextlib

    with contextlib.ExitStack() as stack:
        node = _spec("node", host_sshd, tmp_path, stack, mysql8, "")
        verdicts, facts, notes = _run("tls", tmp_path, mysql8, node, cpu_measured=False)
    assert facts["server_cpu"].startswith("not measured (node_exporter at http"), facts
    assert any("would be counted as the server's" in n for n in notes), notes
    setup = [v for v in verdicts["verdicts"] if v["id"] == "MySQL:setup"]
    assert setup and all(v["verdict"] == "reproduced" for v in setup), setup


# -- SCRAM's server CPU on the DBA's mongod, against a staging one without auth ------------------------------------
@pytest.fixture(scope="module")
def named_mongods():
    """The original's mongod 4.2 twice, handed over as a DBA's: one with auth and the DBA's account, one without."""
    build = MONGOD_4_2.name
    with MongodServer(build=build, auth=True, tls=False) as on, MongodServer(build=build, tls=False) as off:
        client = on.admin()
        client.admin.command("createUser", "dba", pwd=PW, roles=["root"])
        client.close()
        yield on, off


def _mongo_args(on, off_uri: str, **more) -> dict:
    return {
        "mongo_uri": f"mongodb://127.0.0.1:{on.endpoint.port}/",
        "mongo_username": "dba",
        "mongo_password_env": "WATCHED_PW",
        "mongo_noauth_uri": off_uri,
        "mysql_enabled": "false",
        "nonce_enabled": "false",
        "repetitions": 3,
        "concurrency": "[2]",  # quick scale's: 40 connections per worker, dozens of 10-ms ticks per run
        "ops_per_worker": 40,
        **more,
    }


def test_scrams_server_cpu_is_decided_between_a_named_mongod_and_one_without_auth(named_mongods, host_sshd, tmp_path):
    """The auth-off arms run on the server without auth, so the SCRAM claim is judged on the DBA's servers: the
    auth-on server's CPU read over ssh, the other's by its serverStatus. SCRAM adds commands (saslStart,
    saslContinue) and their hashing to every connection: its server CPU per connection is above auth off's. Whether
    it is above twice auth off's is not asserted: on mongod 4.2.6 it sits on that line (1.96x [1.76, 2.20] over six
    quick reports), where no one run decides it. The claims that do not sit on their lines are decided."""
    on, off = named_mongods
    off_uri = f"mongodb://127.0.0.1:{off.endpoint.port}/"
    ssh = {"server_cpu_ssh_key": host_sshd.key, "server_cpu_ssh_known_hosts": host_sshd.known_hosts}
    args = _mongo_args(on, off_uri, mongo_server_cpu=host_sshd.spec(str(on.pids[0])), **ssh)
    verdicts, meta = _results("auth", tmp_path, args)
    scram = [v for v in verdicts["verdicts"] if v["id"] == "MongoDB:auth-server-cpu"]
    assert scram and all(v["verdict"] != "not testable here" for v in scram), scram
    assert all(v["preconditions"][0]["holds"] and v["ratio"] > 1.0 for v in scram), scram
    assert all("mongod 4.2.6" in v["engine_note"] for v in scram), scram
    others = [v for v in verdicts["verdicts"] if v["id"] in ("MongoDB:pooling", "MongoDB:auth-client-cpu")]
    assert len(others) == 2 and all(v["verdict"] == "reproduced" for v in others), others
    servers = meta["servers"]
    assert "over ssh" in servers["mongodb"]["server_cpu"], servers
    assert servers["mongodb auth off"]["authentication"].startswith("off (read back"), servers
    assert servers["mongodb auth off"]["server_cpu"].startswith("mongod serverStatus"), servers
    assert any(n.startswith("auth off: server CPU read from mongod serverStatus") for n in meta["notes"])


def test_a_server_said_to_run_without_auth_that_asks_for_it_is_refused_in_one_line(named_mongods, tmp_path):
    on, _ = named_mongods
    res = _cli("auth", tmp_path, _mongo_args(on, f"mongodb://localhost:{on.endpoint.port}/"))  # itself, renamed
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "requires authentication" in res.stderr, res.stderr
    assert not list((tmp_path / "reports").rglob("run.json"))  # refused before a run began
