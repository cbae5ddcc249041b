"""Each study's main effect on real servers, with signals large enough to hold on a noisy 2-core machine
(CPU per operation, bytes written, handshakes; not small throughput differences)."""

from __future__ import annotations

import json

import pytest

from secoverhead.reporting.tables import across_builds
from secoverhead.studies.audit import declarations as audit_declarations
from secoverhead.studies.audit import runner as audit_runner
from secoverhead.studies.audit import tables as audit_tables
from secoverhead.studies.auth import claims as auth_claims
from secoverhead.studies.auth import declarations as auth_declarations
from secoverhead.studies.auth import runner as auth_runner
from secoverhead.studies.https import declarations as https_declarations
from secoverhead.studies.https import runner as https_runner
from secoverhead.studies.https import tables as https_tables
from secoverhead.studies.tde import declarations as tde_declarations
from secoverhead.studies.tde import instances as tde_instances
from secoverhead.studies.tde import runner as tde_runner
from secoverhead.studies.tls import claims as tls_claims
from secoverhead.studies.tls import declarations as tls_declarations
from secoverhead.studies.tls import runner as tls_runner
from secoverhead.studies.tls import tables as tls_tables

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.quiet]


def test_tls_makes_mysql_connection_setup_slower_but_not_reused_queries_much(tmp_path):
    p = tls_declarations.Params(
        output_dir=str(tmp_path),
        mongo_enabled=False,
        extra_arms=False,
        repetitions=4,
        warmup=1,
        mysql_connect_iterations=15,
        mysql_reused_iterations=100,
        progress="off",
    )
    part = tls_runner.run(p)["MySQL"]
    comps = tls_tables.comparisons(part)
    setup = comps[("build + first query", "TLS")]
    assert setup.ratio > 1.5 and setup.design == "paired by round"  # a TLS handshake per connection: ~4x here
    reused = comps[("query on a reused client", "TLS")]
    # once connected, TLS costs a fraction of what set-up does: ~1.1x against ~4x here, 1.55x against 2.96x on a
    # CI run whose every TLS figure was slow
    assert reused.ratio < setup.ratio / 1.5
    table = tls_tables.reproduction_table(part)
    assert list(table["measure (ms)"]) == list(tls_declarations.MEASURES["MySQL"].values())
    assert set(part.runs()["connection_server_cpu_ns_resolution"]) == {True}  # nanosecond server CPU


def test_tls_on_mongod_records_pool_checkout_and_runs_the_other_builds_beside_it(tmp_path):
    p = tls_declarations.Params(
        output_dir=str(tmp_path),
        mysql_enabled=False,
        extra_arms=False,
        repetitions=2,
        warmup=0,
        mongo_record_count=200,
        mongo_connect_iterations=5,
        mongo_reused_iterations=20,
        progress="off",
    )
    result = tls_runner.run(p)
    part = result["MongoDB"]
    s = part.samples()
    conn = s[s["probe"] == "connection"]
    assert (
        conn["checkout_ms"].notna().all() and len(conn) >= 2 * 2 * 5 and len(conn) % 5 == 0
    )  # a noisy run may be retaken
    assert conn.loc[conn["arm"] == "TLS", "total_ms"].median() > conn.loc[conn["arm"] == "no TLS", "total_ms"].median()
    # the reused-client claim: not testable on loopback (its round trip, measured, is far below the original's),
    # judged behind the original's round trip
    reused = {v.id: v for v in tls_claims.claims(result) if v.id.endswith(":reused")}
    loop = reused["MongoDB:reused"]
    assert loop.verdict == "not testable here" and loop.preconditions[0]["value"] < 0.375 and loop.testable_where
    if p.rtt_skipped() is None:
        rtt = reused[f"{tls_declarations.RTT_PART}:reused"]
        assert rtt.verdict != "not testable here" and rtt.preconditions[0]["holds"] is True
    # the verdicts of record on mongod 4.2.6, the same claims on mongod 6.0.5 and FerretDB beside them
    assert part.server["build"] == "mongod 4.2" and part.server["version"] == "4.2.6"
    assert "1.1.1" in part.server["tls_library"]
    beside = {"MongoDB on mongod 6.0": "mongod 6.0", "MongoDB on FerretDB": "FerretDB"}
    assert {name: result[name].server["build"] for name in beside} == beside
    verdicts = tls_claims.claims(result)
    by_part = {v.part for v in verdicts}
    assert set(beside) <= by_part and all(v.server.get("build") for v in verdicts)
    assert {v.source for v in verdicts if v.part in beside} == {"extension"}  # counted apart
    assert len(across_builds(verdicts)) >= 3  # a row per part: mongod 4.2, mongod 6.0, FerretDB (and the link's)
    # every mongod run checked what its connections negotiated, FerretDB's rest on the driver's setting
    infos = [r.info for r in part.store.records()]
    assert {i["negotiated"]["tls"] for i in infos} == {"none", "TLS 1.3"}
    assert all("negotiated" not in r.info for r in result["MongoDB on FerretDB"].store.records())


def test_auth_pooling_and_nonce_mechanism(tmp_path):
    p = auth_declarations.Params(
        output_dir=str(tmp_path),
        mongo_enabled=False,
        concurrency=[2],
        repetitions=4,
        warmup=1,
        mysql_ops_per_worker=150,
        nonce_workers=[2],
        nonces_per_run=400_000,
        progress="off",
    )
    result = auth_runner.run(p)
    vs = {v.claim.split(":")[0]: v for v in auth_claims.claims(result)}
    runs = result["MySQL"].runs()
    pooled = runs.groupby("arm")["server_cpu_us_per_op"].median()
    assert pooled["pooled password"] < 0.5 * pooled["password"]  # reusing a connection saves most server CPU
    nonce = result["nonce"].runs().groupby("arm")["system_ns_per_nonce"].median()
    assert nonce["syscall"] > 1.5 * nonce["userspace"]  # a syscall per nonce is system time; user space is not
    assert "MySQL" in vs


def test_auth_duets_give_every_arm_a_server_of_its_own(tmp_path):
    p = auth_declarations.Params(
        output_dir=str(tmp_path),
        mysql_enabled=False,
        nonce_enabled=False,
        design="duet",
        concurrency=[1],
        ops_per_worker=3,
        repetitions=2,
        min_rounds=2,
        warmup=0,
        progress="off",
    )
    result = auth_runner.run(p)
    part = result["MongoDB"]
    assert part.metadata()["plan"]["design"] == "duet"
    assert len(part.servers) == 3  # auth off, auth on, and a second auth-off server for auth off + TLS
    assert part.server["build"] == "mongod 4.2"
    asked = part.extras["random_source"]  # seed 001's mechanism asked of each mongod build
    assert set(asked) >= {"mongod 4.2"}
    rows = {r["mechanism"]: r for r in asked["mongod 4.2"]}
    assert rows["auth off"]["random_calls_per_op"] < 0.25 <= 0.9 <= rows["SCRAM-SHA-256"]["random_calls_per_op"]
    assert all(r["cpu_connections"] >= r["connections"] and "server_cpu_system_ticks" in r for r in rows.values())
    runs = part.runs()
    assert (runs.groupby("block")["arm"].nunique() == 2).all()  # each duet: auth off beside one other arm
    assert set(runs[runs["arm"] != "auth off"]["partner"]) == {"auth off"}
    pooling = next(v for v in auth_claims.claims(result) if "pooling" in v.claim)
    assert "through auth off" in pooling.evidence  # the two arms never ran together
    records = [json.loads(f.read_text()) for f in part.store.path.glob("runs/*.json")]
    clients = {r["arm"]: r["info"]["client"] for r in records}
    assert all(("pymongo" in c) == arm.startswith("pooled") for arm, c in clients.items()), clients  # short: one


def test_https_handshake_resumption_and_keepalive(tmp_path):
    arms = ["HTTP", "TLS 1.2 full, RSA", "TLS 1.2 resumed, session cache", "HTTPS keep-alive"]
    p = https_declarations.Params(
        output_dir=str(tmp_path), arms=arms, repetitions=2, warmup=0, run_seconds=1, progress="off"
    )
    part = https_runner.run(p).first
    s = https_tables.summary(part).set_index("arm")["server_cpu_us_per_op"]
    assert s["TLS 1.2 full, RSA"] > 5 * s["HTTP"]  # ~30x here
    assert s["TLS 1.2 resumed, session cache"] < s["TLS 1.2 full, RSA"] / 2
    assert s["HTTPS keep-alive"] < s["TLS 1.2 resumed, session cache"]
    assert https_tables.resumption_check(part)["as expected"].all()
    share = https_tables.crypto_share(part).set_index("arm")
    assert 0 < share.loc["TLS 1.2 full, RSA", "signature share of the extra %"] < 150
    assert share.loc["TLS 1.2 full, RSA", "= signatures of this machine"] > 1  # machine-independent units


def test_audit_arms_write_what_they_should(tmp_path):
    """MySQL's approaches on MySQL 8.0, server_audit on MariaDB, each against its own engine's baseline."""
    p = audit_declarations.Params(output_dir=str(tmp_path), repetitions=2, warmup=0, run_seconds=2, progress="off")
    result = audit_runner.run(p)
    mysql, mariadb = result["MySQL"], result["MariaDB"]
    assert mysql.server["build"] == "MySQL 8.0" and mariadb.server["build"] == "MariaDB"
    assert set(mysql.extras["verification"]) == {a.name for a in audit_declarations.part_arms("MySQL")}
    assert set(mariadb.extras["verification"]) == {audit_declarations.BASELINE, "server_audit"}
    storage = {part.name: audit_tables.storage_table(part).set_index("arm")["bytes per transaction"] for part in result}
    # server_audit logs every statement with its connection and table; general_log the statement text only
    assert storage["MariaDB"]["server_audit"] > storage["MySQL"]["general_log"] > 300
    assert all("A: no audit" not in s for s in storage.values())  # the baseline writes no audit log at all
    assert set(audit_tables.difference_table(mysql)["arm"]) == {"binlog only", "init_connect + binlog", "general_log"}
    mech = audit_tables.mechanism_table(mysql).set_index("arm")
    assert mech.loc["general_log", "extra server_write_syscalls_per_query over A"] > 0.5  # a write per query
    facts = next(f for k, f in mysql.servers.items() if "binlog only" in k)
    assert int(facts["sync_binlog"]) == 1 and int(facts["log_bin"]) == 1  # the binary log as MySQL 8.0 ships it


def test_tde_encryption_adds_server_cpu_per_transaction_when_io_bound(tmp_path):
    # The published TPS effects (<= 20 %) drown in this machine's throughput noise at this size; the CPU each
    # transaction costs the server does not: with the 4c16g buffer-pool ratio every page read or flushed is
    # decrypted or encrypted.
    p = tde_declarations.Params(
        output_dir=str(tmp_path),
        instances=["4c16g"],
        workloads=["oltp_write_only"],
        threads=[2],
        repetitions=8,  # 4 rounds once gave +2 % (medians 790 vs 774 us) against +12 % in the quick runs
        min_rounds=8,  # every round, whatever the claims: at 2 threads the server sits at its quota, so the CPU
        # claim is not testable and, without this, the runner would stop at its first look (5 rounds gave +4 %)
        warmup=1,
        tables=2,
        table_size=50000,
        run_seconds=2,
        progress="off",
    )
    part = tde_runner.run(p)["4c16g"]
    facts = [f for key, f in part.servers.items() if key != "data disk"]
    assert {f["build"] for f in facts} == {"MySQL 8.0.33"}  # the original's engine, its keyring
    markers = {f["encryption_checked"]["marker"] for f in facts}  # each arm read back from its data file
    assert markers == {"absent from the data file", "readable in the data file"}
    assert part.servers["data disk"]["data_disk"]  # where the data lived (a RAM disk by default) is recorded
    for f in facts:
        assert f["cpu_limit_cores"] == pytest.approx(0.6) and f["cpu_limit_method"] in ("cgroup-v1-quota", "affinity")
        ratio = f["buffer_pool_sizing"]["data_to_buffer_pool"]
        assert ratio == pytest.approx(tde_instances.EMULATED["4c16g"].data_to_buffer_pool, rel=0.35)
    # the arms differ only in encryption: one buffer pool size for both, whatever their data sizes read
    assert len({f["buffer_pool_sizing"]["buffer_pool_bytes"] for f in facts}) == 1
    runs = part.runs()
    per_round = runs.pivot_table(index="round", columns="arm", values="server_cpu_us_per_op")
    # Paired within each round. Quick reports here give 1.09-1.35 a round in this cell's workload; a CI host busy
    # enough to double every transaction's CPU (1,860-2,420 us against 790-930) gave a median of 1.04 over 8 rounds, as
    # a neighbour inflates the memory-bound work both arms do and not the cipher. What must hold whatever the noise is
    # the sign: encryption never makes a transaction cheaper. Its size per page is test_tde_mechanism's, on a scan.
    ratio = (per_round[tde_declarations.ON] / per_round[tde_declarations.OFF]).median()
    assert ratio > 1.0, per_round
    on = runs[runs["arm"] == tde_declarations.ON]
    assert (on["pages_encrypted_per_txn"] + on["pages_decrypted_per_txn"] > 0).all()  # the mechanism, counted
    assert (runs.loc[runs["arm"] == tde_declarations.OFF, "pages_encrypted_per_txn"] == 0).all()
    assert (runs["server_cpu_pct_of_limit"] > 0).all()
