"""Parsers, on output captured from real runs of the tools (tests/fixtures) and small hand-made cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from secoverhead.core.errors import ConfigError, SecoverheadError
from secoverhead.workloads import http
from secoverhead.workloads.sysbench import MARKER, SysbenchOptions, failure, parse_report
from secoverhead.workloads.ycsb import fnv_hash64, ycsb_key

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_ab_summary_and_tls():
    s = http.parse_ab((FIXTURES / "ab_tls12.txt").read_text())
    assert s["requests"] == 200 and s["failed"] == 0 and s["concurrency"] == 2
    assert s["rps"] > 0 and s["latency_mean_ms"] > 0 and s["duration_s"] > 0
    assert s["tls_protocol"] == "TLSv1.2" and "RSA" in s["cipher"]


def test_ab_percentile_table():
    pct = http.parse_ab_percentiles((FIXTURES / "ab_percentiles.csv").read_text())
    assert len(pct) == 101 and pct["percent"].iloc[-1] == 100
    assert pct["latency_ms"].is_monotonic_increasing


def test_s_time_summary():
    s = http.parse_s_time((FIXTURES / "s_time_reuse.txt").read_text())
    assert s["connections"] == 3230 and s["real_s"] == 2 and s["client_user_s"] == pytest.approx(0.43)
    with pytest.raises(SecoverheadError, match="no summary"):
        http.parse_s_time("connect: Connection refused")
    # a busy host (make test beside a busy core, 2026-11-29): 35 resumed connections in under 5 ms of user time
    busy = "35 connections in 0.00s; inf connections/user sec, bytes read 6895\n"
    busy += "35 connections in 2 real seconds, 197 bytes read per connection"
    assert http.parse_s_time(busy) == {"connections": 35, "client_user_s": 0.0, "real_s": 2.0}


def test_wrk_json_line():
    line = (
        'SECOVERHEAD_WRK {"duration_us":2000000,"requests":1000,"bytes":90000,"errors_connect":0,'
        '"errors_read":1,"errors_write":0,"errors_status":2,"errors_timeout":0,"latency_mean_us":512.5,'
        '"latency_stdev_us":10.0,"latency_max_us":9000,"percentiles_us":{"50":400,"99":2000,"99.9":5000}}'
    )
    s = http.parse_wrk("Running 2s test\n" + line + "\n")
    assert s["rps"] == 500 and s["errors"] == 3 and s["latency_mean_ms"] == pytest.approx(0.5125)
    assert s["latency_p99_ms"] == 2.0 and s["latency_p99_9_ms"] == 5.0
    with pytest.raises(SecoverheadError, match="no summary"):
        http.parse_wrk("unable to connect to 127.0.0.1:1 Connection refused")


def test_sysbench_report_from_a_real_run():
    final, intervals = parse_report((FIXTURES / "sysbench_point_select.txt").read_text())
    assert final["events"] > 0 and final["reads"] == final["events"]  # point select: one read per event
    assert final["latency_min"] <= final["latency_avg"] <= final["latency_max"]
    assert len(intervals) >= 1 and (intervals["tps"] > 0).all()
    assert set(intervals.columns) >= {"time_s", "tps", "qps", "read_qps", "write_qps", "latency_ms_pct"}


def test_sysbench_report_without_a_final_block_is_an_error():
    with pytest.raises(SecoverheadError, match="no final report"):
        parse_report("FATAL: unable to connect to MySQL server")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"script": "oltp_nonsense"}, "not found"),
        ({"threads": 0}, "threads"),
        ({"time": 0}, "bounded"),
        ({"rand_type": "chaotic"}, "rand_type"),
        ({"percentile": 101}, "percentile"),
    ],
)
def test_sysbench_options_are_validated(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SysbenchOptions(**kwargs)


def test_ycsb_keys_follow_coreworkload_hashing():
    # FNV-1a-64 over 8 octets with Java's signed arithmetic, then abs (YCSB Utils.fnvhash64).
    assert fnv_hash64(0) == 6284781860667377211
    assert ycsb_key(0) == "user6284781860667377211"
    assert ycsb_key(5, ordered=True) == "user5"
    assert len({ycsb_key(i) for i in range(10_000)}) == 10_000


def test_http_load_refuses_non_loopback_targets():
    with pytest.raises(ConfigError, match="loopback"):
        http.run_ab("http://10.0.0.1/", requests=1, concurrency=1)
    with pytest.raises(ConfigError, match="loopback"):
        http.run_s_time("192.168.1.1", 443, resume=False, tls_version="TLSv1.2", seconds=1)


def test_a_failed_sysbench_says_its_fatal_line_not_its_interval_reports():
    report = MARKER + '{"kind":"interval","events":38,"errors":0,"reconnects":0}'
    out = "\n".join([report] * 20 + ["FATAL: The event queue is full. This means ...", report])
    assert failure(out, -6) == "FATAL: The event queue is full. This means ..."
    assert failure("\n".join([report] * 3), -6) == "no output; signal 6"
    assert failure("Threads started!\nsomething odd", 1) == "Threads started! something odd"
