"""A server the project did not start is measured through its own counters: a mongod named by URI gives its
process CPU through serverStatus, and it agrees with /proc on the same process (mongod 4.2.6 and 6.0.5)."""

from __future__ import annotations

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
