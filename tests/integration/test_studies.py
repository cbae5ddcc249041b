"""Each study's main effect on real servers, with signals large enough to hold on a noisy 2-core machine
(CPU per operation, bytes written, handshakes; not small throughput differences)."""

from __future__ import annotations

import pytest

from secoverhead.studies import audit, auth, https, tde, tls

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_tls_makes_mysql_connection_setup_slower_but_not_reused_queries_much(tmp_path):
    p = tls.TlsParams(
        output_dir=str(tmp_path),
        mongo_enabled=False,
        extra_arms=False,
        repetitions=4,
        warmup=1,
        mysql_connect_iterations=15,
        mysql_reused_iterations=100,
    )
    res = tls.run(p, progress=False)["MySQL"]
    comps = tls.comparisons(res)
    setup = comps[("build + first query", "TLS")]
    assert setup.verdict == "slower" and setup.ci_low > 1.5  # a TLS handshake per connection: ~4x here
    reused = comps[("query on a reused client", "TLS")]
    assert reused.ratio < setup.ratio / 2  # once connected, TLS costs a small fraction of what set-up does
    table = tls.reproduction_table(res)
    assert list(table["measure (ms)"]) == list(tls.MYSQL_MEASURES.values())


def test_tls_on_ferretdb_records_pool_checkout(tmp_path):
    p = tls.TlsParams(
        output_dir=str(tmp_path),
        mysql_enabled=False,
        extra_arms=False,
        repetitions=2,
        warmup=0,
        mongo_record_count=200,
        mongo_connect_iterations=5,
        mongo_reused_iterations=20,
    )
    res = tls.run(p, progress=False)["MongoDB"]
    s = res.samples()
    conn = s[s["probe"] == "connection"]
    assert conn["checkout_ms"].notna().all() and len(conn) == 2 * 2 * 5
    assert conn.loc[conn["arm"] == "TLS", "total_ms"].median() > conn.loc[conn["arm"] == "no TLS", "total_ms"].median()


def test_auth_pooling_and_nonce_mechanism(tmp_path):
    p = auth.AuthParams(
        output_dir=str(tmp_path),
        mongo_enabled=False,
        concurrency=[2],
        repetitions=4,
        warmup=1,
        mysql_ops_per_worker=150,
        nonce_workers=[2],
        nonces_per_run=400_000,
    )
    parts = auth.run(p, progress=False)
    pool = auth.per_concurrency(parts["MySQL"], "server_cpu_us_per_op", "password", "pooled password")
    c = pool[("pooled password vs password", 2)]
    assert c.ratio < 0.5  # reusing a connection saves most of the server's per-request CPU
    nonce = auth.nonce_comparison(parts["nonce"])[("system ns per nonce, syscall vs user-space", 2)]
    assert nonce.ratio > 1.5 and nonce.ci_low > 1.0  # a syscall per nonce is system time; user space is not


def test_https_handshake_resumption_and_keepalive(tmp_path):
    arms = ["HTTP", "TLS 1.2 full, RSA", "TLS 1.2 resumed, session cache", "HTTPS keep-alive"]
    p = https.HttpsParams(output_dir=str(tmp_path), arms=arms, repetitions=2, warmup=0, run_seconds=1)
    res = https.run(p, progress=False)
    s = https.summary(res).set_index("arm")["server_cpu_us_per_op"]
    assert s["TLS 1.2 full, RSA"] > 5 * s["HTTP"]  # ~30x here
    assert s["TLS 1.2 resumed, session cache"] < s["TLS 1.2 full, RSA"] / 2
    assert s["HTTPS keep-alive"] < s["TLS 1.2 resumed, session cache"]
    assert https.resumption_check(res)["as expected"].all()
    share = https.crypto_share(res).set_index("arm")
    assert 0 < share.loc["TLS 1.2 full, RSA", "signature share of the extra %"] < 150


def test_audit_arms_write_what_they_should(tmp_path):
    p = audit.AuditParams(output_dir=str(tmp_path), repetitions=1, warmup=0, run_seconds=2)
    res = audit.run(p, progress=False)
    assert set(res.verification) == set(audit.EMBEDDED_ARMS)
    storage = audit.storage_table(res).set_index("arm")["bytes per transaction"]
    # server_audit logs every statement with its connection and table; general_log the statement text only
    assert storage["server_audit"] > storage["general_log"] > 300
    assert "A: no audit" not in storage  # the baseline writes no audit log at all
    assert set(audit.difference_table(res)["arm"]) == set(audit.EMBEDDED_ARMS) - {audit.BASELINE}


def test_tde_encryption_adds_server_cpu_per_transaction_when_io_bound(tmp_path):
    # The published TPS effects (<= 20 %) drown in this machine's throughput noise; the CPU each transaction
    # costs the server does not: with the 4c16g buffer-pool ratio every page read or flushed is decrypted or
    # encrypted (here +15-45 % CPU per write transaction).
    p = tde.TdeParams(
        output_dir=str(tmp_path),
        profiles=["4c16g"],
        workloads=["oltp_write_only"],
        threads=[2],
        repetitions=4,
        warmup=1,
        tables=2,
        table_size=50000,
        run_seconds=2,
    )
    res = tde.run(p, progress=False)["4c16g"]
    facts = list(res.servers.values())
    assert {f["innodb_encrypt_tables"] for f in facts} == {"OFF", "ON"}
    for f in facts:
        assert f["cpu_limit_cores"] == 0.6 and f["cpu_limit_method"] in ("cgroup-v1-quota", "affinity")
        ratio = f["buffer_pool_sizing"]["data_to_buffer_pool"]
        assert ratio == pytest.approx(tde.PROFILES["4c16g"].data_to_buffer_pool, rel=0.35)
    cpu = tde.cpu_per_transaction(res)[("oltp_write_only", 2)]
    assert cpu.ratio > 1.05 and cpu.baseline_median > 0
    loss = tde.loss_table(tde.tps_comparisons(res))
    assert len(loss) == 1 and loss["loss CI low %"].notna().all()
    assert (res.runs()["server_cpu_pct_of_limit"] > 0).all()
