"""MariaDB: each security feature is proven on when asked for and off when not, on a real server."""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path

import mysql.connector
import pytest

from secoverhead.core.errors import ConfigError, ServerStartError
from secoverhead.servers import CertificateSet, MariaDBServer, server_offers_tls, session_tls

pytestmark = pytest.mark.integration


def run(endpoint, sql, *, tls=False, params=None):
    conn = endpoint.connect(tls=tls, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute(sql, params)
        rows = cur.fetchall() if cur.with_rows else None
        return rows
    finally:
        conn.close()


# -- TLS ---------------------------------------------------------------------------------------------
def test_tls_off_means_plain_only():
    with MariaDBServer(tls="off") as db:
        conn = db.endpoint.connect(tls=False)
        assert session_tls(conn) == {"tls_version": "", "cipher": ""}
        conn.close()
        facts = db.describe()
        assert facts["have_ssl"] != "YES"
        assert facts["version"].startswith("10.") and "OpenSSL" in facts["version_ssl_library"]
        assert not server_offers_tls(db.endpoint.host, db.endpoint.port)
        with pytest.raises(ConfigError, match="does not offer TLS"):
            db.endpoint.connect(tls=True)


@pytest.mark.parametrize("cert_type, kex_word", [("rsa", "RSA"), ("ecdsa", "ECDSA")])
def test_tls_on_negotiates_a_cipher_with_the_requested_key_type(cert_type, kex_word):
    # TLS 1.2 cipher names carry the signature algorithm, so they prove the certificate type.
    with MariaDBServer(tls="on", cert_type=cert_type, tls_versions="TLSv1.2") as db:
        conn = db.endpoint.connect(tls=True)
        tls = session_tls(conn)
        conn.close()
        assert tls["tls_version"] == "TLSv1.2"
        assert kex_word in tls["cipher"].split("-")[1], tls
        plain = db.endpoint.connect(tls=False)  # "on" still allows plain TCP
        assert session_tls(plain)["cipher"] == ""
        plain.close()
        facts = db.describe()
        assert facts["have_ssl"] == "YES" and facts["negotiated_tls"]["cipher"] == tls["cipher"]
        assert server_offers_tls(db.endpoint.host, db.endpoint.port)


def test_tls_required_refuses_plain_tcp():
    with MariaDBServer(tls="required") as db:
        with pytest.raises(mysql.connector.Error) as err:
            db.endpoint.connect(tls=False)
        assert err.value.errno == 1045
        conn = db.endpoint.connect(tls=True)
        tls = session_tls(conn)
        conn.close()
        assert tls["tls_version"] == "TLSv1.3" and tls["cipher"].startswith("TLS_")
        assert db.describe()["require_secure_transport"] == "ON"


# -- encryption at rest ------------------------------------------------------------------------------
def _marker_in_ibd(db: MariaDBServer) -> bool:
    marker = f"SECOVERHEAD-MARKER-{uuid.uuid4().hex}"
    run(db.endpoint, "CREATE TABLE marker (id INT PRIMARY KEY AUTO_INCREMENT, c VARCHAR(200)) ENGINE=InnoDB")
    conn = db.endpoint.connect(tls=False)
    cur = conn.cursor()
    cur.executemany("INSERT INTO marker (c) VALUES (%s)", [(marker,)] * 200)
    conn.commit()
    conn.close()
    admin = db.admin()
    cur = admin.cursor()
    cur.execute("FLUSH TABLES sbtest.marker FOR EXPORT")  # forces the pages to disk
    cur.execute("UNLOCK TABLES")
    admin.close()
    data = (db.run_dir / "data" / "sbtest" / "marker.ibd").read_bytes()
    return marker.encode() in data


def test_marker_is_readable_on_disk_without_encryption():
    with MariaDBServer(encryption=False) as db:
        assert _marker_in_ibd(db)
        assert db.describe()["innodb_encrypt_tables"] == "OFF"


def test_marker_is_absent_on_disk_with_encryption():
    with MariaDBServer(encryption=True) as db:
        assert not _marker_in_ibd(db)
        facts = db.describe()
        assert facts["innodb_encrypt_tables"] == "ON" and facts["innodb_encrypt_log"] == "ON"
        assert facts["encrypt_tmp_files"] == "ON" and facts["innodb_encrypt_temporary_tables"] == "ON"
        admin = db.admin()
        cur = admin.cursor()
        cur.execute(
            "SELECT ENCRYPTION_SCHEME FROM information_schema.INNODB_TABLESPACES_ENCRYPTION WHERE NAME='sbtest/marker'"
        )
        assert cur.fetchone()[0] == 1
        admin.close()
        # The key file on disk is encrypted: no plain "id;hex" lines.
        keys = db.run_dir / "keys"
        assert not (keys / "keys.txt").exists()
        assert b";" not in (keys / "keys.enc").read_bytes()[:64] or (keys / "keys.enc").read_bytes()[:8] == b"Salted__"


# -- audit -------------------------------------------------------------------------------------------
def _wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.mark.parametrize("mode", ["general_log", "server_audit"])
def test_log_audit_modes_record_a_query(mode):
    marker = f"audit_marker_{uuid.uuid4().hex[:8]}"
    with MariaDBServer(audit=mode) as db:
        log: Path = db.audit_logs[0]
        run(db.endpoint, f"SELECT '{marker}'")
        assert _wait_for(lambda: log.exists() and marker in log.read_text(errors="replace"))
        text = log.read_text(errors="replace")
        assert "bench" in text  # the connection is recorded with its user
        if mode == "server_audit":
            assert "CONNECT" in text and "QUERY" in text


def test_audit_none_writes_no_log():
    with MariaDBServer(audit="none") as db:
        run(db.endpoint, "SELECT 'nothing to see'")
        assert db.audit_logs == []
        facts = db.describe()
        assert facts["general_log"] == "OFF" and facts["log_bin"] == "OFF" and facts["init_connect"] == ""
        assert facts.get("server_audit_logging") in (None, "OFF")


def test_init_connect_binlog_records_logins_and_writes():
    marker = f"ic_marker_{uuid.uuid4().hex[:8]}"
    with MariaDBServer(audit="init_connect_binlog") as db:
        run(db.endpoint, "CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, c VARCHAR(64))")
        run(db.endpoint, "INSERT INTO t (c) VALUES (%s)", params=(marker,))
        admin = db.admin()
        cur = admin.cursor()
        cur.execute("SELECT COUNT(*) FROM secoverhead_audit.accesslog WHERE user_host LIKE 'bench@%'")
        assert cur.fetchone()[0] >= 2  # one row per bench login
        admin.close()
        binlogs = b"".join(p.read_bytes() for p in (db.run_dir / "binlog").glob("mariadb-bin.0*"))
        assert marker.encode() in binlogs
        assert db.describe()["log_bin"] == "ON"


def test_init_connect_is_not_bypassed_by_the_bench_user():
    # init_connect is skipped for SUPER / CONNECTION ADMIN: the bench user must hold neither.
    with MariaDBServer() as db:
        grants = " ".join(r[0] for r in run(db.endpoint, "SHOW GRANTS"))
        assert "SUPER" not in grants and "CONNECTION ADMIN" not in grants and "ALL PRIVILEGES ON *.*" not in grants


def test_binlog_alone():
    with MariaDBServer(binlog=True) as db:
        facts = db.describe()
        assert facts["log_bin"] == "ON" and facts["init_connect"] == ""


# -- resources ---------------------------------------------------------------------------------------
def test_buffer_pool_and_extra_options_take_effect():
    with MariaDBServer(buffer_pool="48M", extra_options={"innodb_flush_log_at_trx_commit": 2}) as db:
        facts = db.describe()
        assert int(facts["innodb_buffer_pool_size"]) == 48 * 1024 * 1024
        assert facts["innodb_flush_log_at_trx_commit"] == "2"


def test_a_small_buffer_pool_keeps_the_data_it_has_room_for():
    # InnoDB's default free-page target (1,536 pages, half kept free) emptied pools of a few MiB: a table
    # that fits was read from disk again on every scan
    with MariaDBServer(extra_options={"innodb_buffer_pool_chunk_size": "1M"}) as db:
        size = db.set_buffer_pool(8 << 20)
        assert size == 8 << 20 and db.variables(["innodb_lru_scan_depth"])["innodb_lru_scan_depth"] == "100"
        conn = db.admin()
        try:
            cur = conn.cursor()
            cur.execute("CREATE DATABASE bp")
            cur.execute("CREATE TABLE bp.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
            cur.execute(
                "INSERT INTO bp.t SELECT seq, REPEAT('x', 200) FROM bp.seq_1_to_12000"
            )  # about 3 MiB: fits in 8 MiB
            conn.commit()
            db.flush_dirty_pages()

            def disk_reads_of_a_scan() -> int:
                cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'")
                before = int(cur.fetchone()[1])
                cur.execute("SELECT COUNT(*), SUM(LENGTH(pad)) FROM bp.t")
                assert cur.fetchone()[0] == 12000
                cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'")
                return int(cur.fetchone()[1]) - before

            disk_reads_of_a_scan()
            time.sleep(2)  # give the page cleaner time to evict what it would
            assert disk_reads_of_a_scan() <= 5
        finally:
            conn.close()


def test_cpu_limit_by_cgroup_quota():
    with MariaDBServer(cpu_limit=0.5) as db:
        facts = db.describe()
        if facts["cpu_limit_method"] != "cgroup-v1-quota":
            pytest.skip("cgroup v1 cpu controller not writable here")
        assert facts["cpu_cfs_quota_us"] == 50_000
        group = facts["cpu_limit_cgroup"].removeprefix("/sys/fs/cgroup/cpu")
        assert f":cpu:{group}" in Path(f"/proc/{db.pids[0]}/cgroup").read_text()
    assert not Path(facts["cpu_limit_cgroup"]).exists()  # removed after stop


def test_cpu_limit_by_affinity():
    with MariaDBServer(cpu_limit=1, cpu_limit_method="affinity") as db:
        facts = db.describe()
        assert facts["cpu_limit_method"] == "affinity" and facts["cpu_affinity"] == [0]
        status = Path(f"/proc/{db.pids[0]}/status").read_text()
        assert "Cpus_allowed_list:\t0\n" in status


# -- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tls": "maybe"}, "tls='maybe'"),
        ({"audit": "syslog"}, "audit='syslog'"),
        ({"cert_type": "dsa"}, "cert_type='dsa'"),
        ({"buffer_pool": "lots"}, "buffer_pool"),
        ({"tls_versions": "SSLv3"}, "tls_versions"),
        ({"cpu_limit": 64}, "cpu_limit"),
        ({"extra_options": {"bad name": 1}}, "not a valid my.cnf option"),
    ],
)
def test_bad_options_are_rejected_before_start(kwargs, message, run_base):
    before = set(run_base.iterdir())
    with pytest.raises(ConfigError, match=message):
        MariaDBServer(**kwargs)
    assert set(run_base.iterdir()) == before  # nothing was created


def test_missing_certificate_file_is_a_clear_error(tmp_path):
    certs = CertificateSet(ca_cert=tmp_path / "ca.pem", server_cert=tmp_path / "s.pem", server_key=tmp_path / "k.pem")
    with pytest.raises(ConfigError, match="does not exist"):
        MariaDBServer(tls="on", certificates=certs)


def test_port_in_use_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} .* in use"), MariaDBServer(port=port):
            pass


def test_server_that_fails_to_start_quotes_its_log(run_base):
    before = set(run_base.iterdir())
    with (
        pytest.raises(ServerStartError, match="no_such_variable"),
        MariaDBServer(extra_options={"no_such_variable": 1}),
    ):
        pass
    assert set(run_base.iterdir()) == before  # its private directory is removed too


def test_limits_are_lifted_for_a_while_and_restored():
    """A load or a write-back runs without the emulated instance's limits; the measurement after runs under them."""
    with MariaDBServer(cpu_limit=0.5, iops=(500, 400)) as db:
        if db.limiter is None or db.limiter.group is None:
            pytest.skip("no cgroup CPU quota here (affinity cannot change while the server runs)")
        with db.limits_lifted():
            assert db.limiter.cores == len(os.sched_getaffinity(0))
            if db.io_limiter is not None:
                assert (db.io_limiter.read_iops, db.io_limiter.write_iops) == (0, 0)
        assert db.limiter.cores == 0.5
        assert db.limiter.describe()["cpu_cfs_quota_us"] == db.limiter.describe()["cpu_cfs_period_us"] // 2
        if db.io_limiter is not None:
            assert (db.io_limiter.read_iops, db.io_limiter.write_iops) == (500, 400)
            with db.limits_lifted(io=False):
                assert db.io_limiter.read_iops == 500
