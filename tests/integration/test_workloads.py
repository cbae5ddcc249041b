"""Workloads against real servers: sysbench over TCP, socket and TLS; the YCSB loader; connection probes;
HTTP load with ab, wrk and s_time, resumption proven from nginx's log."""

from __future__ import annotations

from functools import partial

import pytest

from secoverhead.core.errors import ConfigError
from secoverhead.servers import FerretDBServer, MariaDBServer, NginxServer
from secoverhead.workloads import http, probes
from secoverhead.workloads.sysbench import Sysbench, SysbenchOptions
from secoverhead.workloads.ycsb import load_usertable, ycsb_key

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def mariadb():
    with MariaDBServer(tls="on") as db:
        yield db


@pytest.fixture(scope="module")
def ferret():
    with FerretDBServer(tls=True, auth=True) as server:
        yield server


@pytest.fixture(scope="module")
def web():
    with NginxServer(cert_type="ecdsa") as server:
        yield server


def ssl_accepts(db) -> int:
    conn = db.admin()
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL STATUS LIKE 'Ssl_accepts'")
    n = int(cur.fetchone()[1])
    conn.close()
    return n


OPTS = SysbenchOptions(script="oltp_read_write", tables=2, table_size=500, threads=2, time=2)


@pytest.mark.parametrize("via, tls", [("tcp", False), ("socket", False), ("tcp", True)])
def test_sysbench_runs_and_reports(mariadb, via, tls):
    sb = Sysbench(mariadb.endpoint, via=via, tls=tls)
    sb.prepare(OPTS)
    assert sb.prepared(OPTS)
    before = ssl_accepts(mariadb)
    m = sb.measure(OPTS, mariadb.cpu)
    handshakes = ssl_accepts(mariadb) - before
    assert (handshakes >= OPTS.threads) if tls else handshakes == 0  # TLS really used, or really not
    x = m.metrics
    assert x["tps"] > 0 and x["write_qps"] > 0 and x["read_qps"] > x["write_qps"]
    assert x["latency_p95_ms"] > 0 and x["latency_max_ms"] >= x["latency_avg_ms"]
    # two threads of oltp_read_write on 1,000 rows deadlock now and then; sysbench retries them (ignored errors)
    assert x["errors"] <= max(2, 0.01 * x["transactions"])
    assert x["server_cpu_total_s"] > 0 and x["server_cpu_us_per_op"] > 0
    assert len(m.intervals) >= 1
    assert mariadb.endpoint.password.reveal() not in m.info["command"]
    assert f"--mysql-ssl={'on' if tls else 'off'}" in m.info["command"]


def test_sysbench_prepare_is_skipped_when_the_data_is_there(mariadb):
    sb = Sysbench(mariadb.endpoint)
    sb.prepare(OPTS)
    assert sb.prepare(OPTS) is False


def test_sysbench_bad_input(mariadb):
    with pytest.raises(ConfigError, match="socket"):
        Sysbench(mariadb.endpoint, via="socket", tls=True)
    with MariaDBServer() as plain, pytest.raises(ConfigError, match="does not offer TLS"):
        Sysbench(plain.endpoint, tls=True)


def test_ycsb_load_into_ferretdb(ferret):
    client = ferret.endpoint.client(mechanism="SCRAM-SHA-256")
    try:
        first = load_usertable(client, 300, batch_size=128)
        assert first.inserted == 300 and first.docs_per_s > 0 and not first.skipped
        assert load_usertable(client, 300).skipped
        doc = client.ycsb.usertable.find_one({"_id": ycsb_key(7)})
        assert sorted(k for k in doc if k != "_id") == [f"field{i}" for i in range(10)]
        assert all(len(doc[f"field{i}"]) == 100 and isinstance(doc[f"field{i}"], bytes) for i in range(10))
    finally:
        client.close()


@pytest.mark.parametrize("tls", [False, True])
def test_mongo_connection_probe(ferret, tls):
    m = probes.mongo_connection_probe(
        ferret.endpoint, iterations=5, tls=tls, mechanism="SCRAM-SHA-256", server_cpu=ferret.cpu
    )
    s = m.samples
    assert len(s) == 5 and (s["total_ms"] >= s["construct_ms"]).all()
    assert s["checkout_ms"].notna().all() and (s["checkout_ms"] > 0).all()
    assert m.metrics["total_ms_median"] > 0 and m.metrics["server_cpu_us_per_op"] >= 0
    assert m.info["tls"] is tls and m.info["auth_mechanism"] == "SCRAM-SHA-256"


def test_mongo_reused_probe(ferret):
    m = probes.mongo_reused_probe(
        ferret.endpoint, iterations=50, tls=True, mechanism="SCRAM-SHA-1", server_cpu=ferret.cpu, warmup=5
    )
    assert len(m.samples) == 50 and m.metrics["query_ms_median"] > 0


@pytest.mark.parametrize("tls", [False, True])
def test_mysql_probes_record_client_and_tls(mariadb, tls):
    m = probes.mysql_connection_probe(mariadb.endpoint, iterations=10, tls=tls, server_cpu=mariadb.cpu)
    assert len(m.samples) == 10 and m.metrics["connect_ms_median"] > 0
    assert m.info["client_implementation"] == "C extension"
    assert bool(m.info["cipher"]) is tls
    r = probes.mysql_reused_probe(mariadb.endpoint, iterations=50, tls=tls, server_cpu=mariadb.cpu, warmup=5)
    assert r.metrics["query_ms_median"] > 0 and len(r.samples) == 50


def test_pure_python_client_is_flagged(mariadb):
    m = probes.mysql_connection_probe(mariadb.endpoint, iterations=2, tls=True, use_pure=True)
    assert m.info["client_implementation"] == "pure Python" and "client artefact" in m.info["warning"]


def test_two_short_connection_loads_at_once_count_only_their_own_client_cpu(mariadb):
    """A duet runs two loads as threads of one process. The shorter one's workers are reaped while the longer
    one still runs: counted by rusage, the longer one's client CPU would hold both (the sum above what every
    worker used); counted by the workers themselves, each holds its own."""
    import resource
    from concurrent.futures import ThreadPoolExecutor

    from secoverhead.workloads.short_connections import ConnectSpec, run_short_connections

    spec = ConnectSpec("mysql", mariadb.endpoint.connect_args(tls=False))

    def load(seconds):
        return run_short_connections(spec, concurrency=2, ops_per_worker=100_000, max_seconds=seconds)

    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with ThreadPoolExecutor(2) as pool:
        longer, shorter = [f.result() for f in [pool.submit(load, 2.5), pool.submit(load, 1.0)]]
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    every_worker = (kids1.ru_utime - kids0.ru_utime) + (kids1.ru_stime - kids0.ru_stime)
    own = [m.metrics["client_cpu_total_s"] for m in (longer, shorter)]
    assert all(c > 0 for c in own) and sum(own) <= every_worker + 0.01
    assert longer.metrics["operations"] > shorter.metrics["operations"] > 0


def _measure(web, load):
    return http.measure(load, server_cpu=web.cpu, access_log=web.access_log_path, https_port=web.endpoint.https_port)


def test_ab_never_resumes_and_reports_tls(web):
    m = _measure(
        web, lambda: http.run_ab(web.endpoint.url(tls=True), requests=100, concurrency=2, tls_protocol="TLS1.2")[::2]
    )
    assert m.metrics["requests"] == 100 and m.metrics["failed"] == 0
    assert m.metrics["server_full_handshakes"] == 100 and m.metrics["server_resumed"] == 0
    assert m.info["tls_protocol"] == "TLSv1.2" and "ECDSA" in m.info["cipher"]
    assert m.metrics["server_cpu_total_s"] > 0


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
def test_s_time_resumes_when_asked(web, version):
    new = _measure(
        web,
        partial(
            http.run_s_time, web.endpoint.host, web.endpoint.https_port, resume=False, tls_version=version, seconds=1
        ),
    )
    reuse = _measure(
        web,
        partial(
            http.run_s_time, web.endpoint.host, web.endpoint.https_port, resume=True, tls_version=version, seconds=1
        ),
    )
    assert new.metrics["server_resumed_fraction"] == 0
    assert reuse.metrics["server_resumed_fraction"] > 0.95
    assert new.metrics["requests"] > 10 and reuse.metrics["requests"] > 10


def test_wrk_keepalive_and_close(web):
    ka = _measure(web, partial(http.run_wrk, web.endpoint.url(tls=False), duration_s=1, connections=2))
    close = _measure(
        web, partial(http.run_wrk, web.endpoint.url(tls=True), duration_s=1, connections=2, keepalive=False)
    )
    assert ka.metrics["requests"] > 100 and ka.metrics["errors"] == 0
    assert close.metrics["server_resumed_fraction"] > 0.9  # wrk resumes on its own with Connection: close
    # server CPU per request is the steady figure: a TLS connection per request costs far more than keep-alive
    assert close.metrics["server_cpu_us_per_op"] > 3 * ka.metrics["server_cpu_us_per_op"]
