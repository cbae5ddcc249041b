"""The real engines `make setup` fetches: each starts here, takes a login with each of its mechanisms over plain TCP
and over TLS, says what it negotiated and what it links, and leaves nothing running."""

from __future__ import annotations

from pathlib import Path

import pytest

from secoverhead.servers.endpoints import session_tls
from secoverhead.servers.engines import MONGOD_4_2, MONGOD_6_0, MYSQL_8_0

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _need(build) -> None:
    if not build.available:
        pytest.skip(f"{build.server} is not fetched here ({build.path}): `make setup` fetches it")


def _gone(pids: list[int]) -> bool:
    return not any(Path(f"/proc/{p}").exists() for p in pids)


@pytest.mark.parametrize("build", [MONGOD_4_2, MONGOD_6_0], ids=lambda b: b.name)
def test_mongod_logs_in_with_both_scram_mechanisms_plain_and_over_tls(build):
    _need(build)
    from secoverhead.servers.mongod import MongodServer

    with MongodServer(build=build.name, auth=True, tls=True) as m:
        facts = m.describe()
        assert facts["version"] == build.server.split()[-1] and facts["server"] == build.server
        assert ("OpenSSL 1.1.1" if "4.2" in build.name else "OpenSSL 3") in facts["openssl"]
        for mechanism in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
            for tls in (False, True):
                client = m.endpoint.client(tls=tls, mechanism=mechanism)
                try:
                    status = client.admin.command("connectionStatus")
                    assert status["authInfo"]["authenticatedUsers"][0]["user"] == m.endpoint.users[mechanism]
                finally:
                    client.close()
        pids = list(m.pids)
    assert pids and _gone(pids)


def test_seed_000s_replica_set_reads_from_a_secondary_and_counts_every_members_connections():
    """Three members and a hidden read-only one, auth and TLS: a client seeded with the three reads from a
    secondary, each arm's connections are counted over every member, and every member stops."""
    _need(MONGOD_4_2)
    from secoverhead.servers.labels import settled_transport
    from secoverhead.servers.replica_set import MongodReplicaSet

    with MongodReplicaSet(build=MONGOD_4_2.name, auth=True, tls=True) as rs:
        facts = rs.describe()
        assert facts["topology"]["members"] == 3 and facts["topology"]["read_only_members"] == 1
        assert len(rs.pids) == 4 and "replicaSet=" in rs.endpoint.uri
        # settled means every readable member checks the primary's signed clock (a fresh key cache refused it)
        assert rs._members_refusing_the_primarys_clock() == []
        client = rs.endpoint.client(mechanism="SCRAM-SHA-256")
        client.ycsb.usertable.insert_one({"_id": "user1"})
        client.close()
        rs.settle()
        for tls, version in ((False, None), (True, "1.3")):
            before = rs.transport()
            client = rs.endpoint.client(tls=tls, mechanism="SCRAM-SHA-256")
            try:
                cursor = client.ycsb.usertable.find().limit(1)
                assert next(cursor)["_id"] == "user1"
                assert cursor.address in client.secondaries and cursor.address != client.primary
            finally:
                client.close()
            seen = settled_transport(version, before, rs.transport, "the set", tls_only_client=tls)
            assert seen.connections >= 3  # a monitor per seed, a pool
        pids = list(rs.pids)
    assert _gone(pids)


def test_mongod_refuses_a_wrong_password_for_each_mechanism():
    _need(MONGOD_6_0)
    import pymongo
    from pymongo.errors import OperationFailure

    from secoverhead.servers.mongod import MongodServer

    with MongodServer(auth=True, tls=False) as m:
        for mechanism in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
            args = m.endpoint.client_args(mechanism=mechanism) | {"password": "not-the-password"}
            client = pymongo.MongoClient(**args)
            with pytest.raises(OperationFailure, match="Authentication failed"):
                client.admin.command("connectionStatus")
            client.close()


def test_mysql_8_logs_in_plain_and_over_tls_and_says_what_it_negotiated():
    _need(MYSQL_8_0)
    from secoverhead.servers.mysql import MySQLServer

    with MySQLServer(tls=True) as s:
        facts = s.describe()
        assert facts["version"] == "8.0.31" and facts["server"] == "MySQL 8.0.31" and "1.1.1q" in facts["openssl"]
        assert int(facts["sync_binlog"]) == 1 and int(facts["log_bin"]) == 1  # as MySQL 8.0 ships
        for tls, want in ((True, "TLSv1.3"), (False, "")):
            conn = s.endpoint.connect(tls=tls)
            try:
                assert session_tls(conn)["tls_version"] == want
                cur = conn.cursor()
                cur.execute("SELECT CURRENT_USER()")
                assert cur.fetchone()[0].startswith("bench@")
            finally:
                conn.close()
        pids = list(s.pids)
    assert pids and _gone(pids)


@pytest.mark.parametrize("build", [MONGOD_4_2, MONGOD_6_0], ids=lambda b: b.name)
def test_mongod_asks_the_random_source_once_per_scram_login_and_not_without_auth(build):
    """Seed 001's mechanism, asked of mongod: a SCRAM conversation's server nonce comes from the kernel's random
    source (4.2.6: an open and an 8 KiB read of /dev/urandom per login; 6.0.5: a 4 KiB read on a kept descriptor);
    a connection without auth asks nothing of it."""
    _need(build)
    from secoverhead.servers.mongod import MongodServer
    from secoverhead.workloads.logins import per_connection

    with (
        MongodServer(build=build.name, auth=False, tls=False) as off,
        MongodServer(build=build.name, auth=True, tls=False) as on,
    ):
        plain = per_connection(off.endpoint, mechanism=None, server_cpu=off.cpu, pids=off.pids, connections=20)
        scram = per_connection(
            on.endpoint, mechanism="SCRAM-SHA-256", server_cpu=on.cpu, pids=on.pids, connections=20, split_ticks=50
        )
    assert plain["random_calls_per_op"] < 0.25, plain
    assert 0.9 <= scram["random_calls_per_op"] <= 1.5 and scram["bytes_per_op"] >= 1024, scram
    # The split is sampled at kernel ticks: 20 logins hold about five (this test once read 0 system ticks of
    # them). A login's socket calls and random reads are system time, and over the >= 20 ticks the batch waits
    # for even on a busy machine (50 asked, 5 s at most) a zero share of them is a broken split, not chance.
    ticks = scram["server_cpu_user_ticks"] + scram["server_cpu_system_ticks"]
    assert ticks >= 20 and scram["cpu_connections"] >= 20, scram
    assert scram["server_cpu_system_ticks"] > 0 and scram["server_system_us_per_op"] > 0, scram


@pytest.mark.parametrize(
    "audit, binlog", [("none", False), ("none", True), ("general_log", False), ("init_connect_binlog", False)]
)
def test_mysql_8_runs_each_audit_approach_it_has_without_a_plugin(audit, binlog):
    """The audit study's MySQL-side arms on MySQL 8.0: no binary log for the baseline, the binary log with
    sync_binlog=1 as MySQL 8.0 ships it, general_log into its file, init_connect's logins into a table beside the
    binary log; each shown to record a marker (the audit study's own check)."""
    _need(MYSQL_8_0)
    from secoverhead.servers.mysql import MySQLServer
    from secoverhead.studies.audit.declarations import Arm
    from secoverhead.studies.audit.runner import verify_audit

    with MySQLServer(tls=False, audit=audit, binlog=binlog, cpu_limit=1.0) as s:
        facts = s.describe()
        found = verify_audit(s, Arm("x", audit=audit, binlog=binlog, is_audit=audit != "none"))
        logging = int(facts["log_bin"]) == 1
        assert logging == (binlog or audit == "init_connect_binlog")
        if logging:
            assert int(facts["sync_binlog"]) == 1
        assert (audit == "general_log") == ("general.log" in found)
        assert (audit == "init_connect_binlog") == ("login row" in found)
        assert (binlog and audit == "none") == (found == "binlog")
        assert facts["cpu_limit_method"] != "none"


@pytest.mark.parametrize("audit, binlog, log", [("general_log", False, "query_log"), ("none", True, "binlog")])
def test_mysql_8_times_its_threads_waits_on_the_log_the_arm_keeps(audit, binlog, log):
    """The audit study's log waits, read from the server's own performance_schema: statements written to the general
    log (or commits to the binary log, each synced) show time spent on that log's file and count its locks; a
    server without that log shows none of its file's waits."""
    _need(MYSQL_8_0)
    from secoverhead.servers import logwaits
    from secoverhead.servers.mysql import MySQLServer

    with MySQLServer(tls=False, audit=audit, binlog=binlog, log_waits=True) as s:
        admin = s.admin()
        try:
            before = logwaits.read(admin)
            cur = admin.cursor()
            cur.execute("CREATE TABLE IF NOT EXISTS sbtest.w (id INT PRIMARY KEY AUTO_INCREMENT, v INT)")
            for i in range(200):
                cur.execute("INSERT INTO sbtest.w (v) VALUES (%s)", (i,))
            after = logwaits.read(admin)
        finally:
            admin.close()
    names = set(after)
    assert f"wait/io/file/sql/{log}" in names, sorted(names)
    assert any(n.startswith("wait/synch/mutex/") for n in names), sorted(names)  # the locks are timed too
    m = logwaits.summarise(before, after, transactions=200, threads=1, window_s=1.0)
    assert m["log_io_us_per_txn"] > 0, m  # every statement wrote the log: its writes took some time
    other = "binlog" if log == "query_log" else "query_log"
    spent = after.get(f"wait/io/file/sql/{other}", (0, 0))[1] - before.get(f"wait/io/file/sql/{other}", (0, 0))[1]
    assert spent == 0, (other, spent)


def test_a_mongodb_arm_whose_connections_are_not_what_it_declares_fails_the_run():
    """mongod counts each connection it accepted by TLS version: a run declared TLS whose probe connected plain
    (or the reverse) fails, naming what was negotiated; a run that is what it says passes and says how many."""
    _need(MONGOD_4_2)
    from secoverhead.servers.labels import LabelMismatch
    from secoverhead.servers.mongod import MongodServer
    from secoverhead.studies.tls.declarations import Arm
    from secoverhead.studies.tls.runner import _checked
    from secoverhead.workloads import probes

    with MongodServer(build=MONGOD_4_2.name, auth=True, tls=True) as m:
        e, mech = m.endpoint, "SCRAM-SHA-256"

        def probe(tls: bool):
            return lambda: probes.mongo_connection_probe(e, iterations=3, tls=tls, mechanism=mech)

        ok = _checked(m, Arm("TLS", "rsa", True), probe(True))
        assert ok.info["negotiated"]["tls"] == "TLS 1.3"
        assert ok.info["negotiated"]["connections"] >= 3
        assert _checked(m, Arm("no TLS", "rsa", False), probe(False)).info["negotiated"]["tls"] == "none"
        with pytest.raises(LabelMismatch, match=r"a TLS 1\.3 arm's \d+ connection.*negotiated none over TLS"):
            _checked(m, Arm("TLS", "rsa", True), probe(False))
        with pytest.raises(LabelMismatch, match=r"a plain arm's \d+ connection.*over TLS 1\.3"):
            _checked(m, Arm("no TLS", "rsa", False), probe(True))
