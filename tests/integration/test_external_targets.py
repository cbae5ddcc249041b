"""External targets: the same interface pointed at a server we did not start (here: a real MariaDB and a
real FerretDB started for the test, then named by host/port or URI). Bad input fails before any load."""

from __future__ import annotations

import pytest

from secoverhead.core.errors import AuthenticationError, ConfigError, UnreachableServerError
from secoverhead.host.process import free_port, live_processes
from secoverhead.servers import ExternalMongo, ExternalMySQL, FerretDBServer, MariaDBServer, make_certificates

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def mariadb():
    with MariaDBServer(tls="on") as db:
        yield db


@pytest.fixture(scope="module")
def ferret():
    with FerretDBServer(auth=True) as server:
        yield server


def mysql_kwargs(db, **over):
    e = db.endpoint
    return {"host": e.host, "port": e.port, "user": e.user, "database": e.database, **over}


def test_external_mysql_with_password_from_env(mariadb, monkeypatch):
    monkeypatch.setenv("SECOVERHEAD_TEST_MYSQL_PW", mariadb.endpoint.password.reveal())
    before = len(live_processes())
    with ExternalMySQL(
        **mysql_kwargs(mariadb, password_env="SECOVERHEAD_TEST_MYSQL_PW"),
        tls=True,
        ca_file=mariadb.endpoint.ca_file,
        instance_class="db.t3.medium",
    ) as ext:
        assert ext.pids == [] and len(live_processes()) == before  # nothing started
        facts = ext.describe()
        assert facts["engine"] == "MariaDB" and facts["embedded"] is False
        assert facts["check_connection_cipher"] and facts["instance_class"] == "db.t3.medium"
        assert mariadb.endpoint.password.reveal() not in repr(facts)
        conn = ext.endpoint.connect(tls=True)
        conn.close()
    assert mariadb.pids  # leaving the context stops nothing


def test_external_mysql_with_password_file(mariadb, tmp_path):
    pw = tmp_path / "pw"
    pw.write_text(mariadb.endpoint.password.reveal() + "\n")
    with ExternalMySQL(**mysql_kwargs(mariadb, password_file=pw)) as ext:
        assert ext.describe()["check_connection_cipher"] == ""


def test_wrong_password_is_an_authentication_error(mariadb, monkeypatch):
    monkeypatch.setenv("SECOVERHEAD_TEST_MYSQL_PW", "wrong-password")
    with (
        pytest.raises(AuthenticationError, match="rejected user 'bench'"),
        ExternalMySQL(**mysql_kwargs(mariadb, password_env="SECOVERHEAD_TEST_MYSQL_PW")),
    ):
        pass


def test_unreachable_server_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("SECOVERHEAD_TEST_MYSQL_PW", "x")
    with (
        pytest.raises(UnreachableServerError, match="cannot reach"),
        ExternalMySQL(host="127.0.0.1", port=free_port(), user="u", password_env="SECOVERHEAD_TEST_MYSQL_PW"),
    ):
        pass


def test_missing_password_source_is_a_config_error(mariadb):
    with pytest.raises(ConfigError, match="password_env"), ExternalMySQL(**mysql_kwargs(mariadb)):
        pass
    with (
        pytest.raises(ConfigError, match="is not set"),
        ExternalMySQL(**mysql_kwargs(mariadb, password_env="SECOVERHEAD_UNSET_VARIABLE")),
    ):
        pass


def test_bad_certificate_is_a_config_error(mariadb, monkeypatch, tmp_path):
    monkeypatch.setenv("SECOVERHEAD_TEST_MYSQL_PW", mariadb.endpoint.password.reveal())
    with pytest.raises(ConfigError, match="does not exist"):
        ExternalMySQL(**mysql_kwargs(mariadb, password_env="SECOVERHEAD_TEST_MYSQL_PW"), ca_file=tmp_path / "no.pem")
    other_ca = make_certificates(tmp_path / "other").ca_cert  # a CA that did not sign the server's certificate
    with (
        pytest.raises(ConfigError, match=r"TLS .* failed"),
        ExternalMySQL(**mysql_kwargs(mariadb, password_env="SECOVERHEAD_TEST_MYSQL_PW"), tls=True, ca_file=other_ca),
    ):
        pass


def test_external_mongo(ferret, monkeypatch):
    e = ferret.endpoint
    monkeypatch.setenv("SECOVERHEAD_TEST_MONGO_PW", e.password.reveal())
    uri = f"mongodb://{e.host}:{e.port}/"
    with ExternalMongo(uri=uri, username=e.users["SCRAM-SHA-256"], password_env="SECOVERHEAD_TEST_MONGO_PW") as ext:
        client = ext.endpoint.client(mechanism="SCRAM-SHA-256")
        client.ycsb.usertable.insert_one({"external": True})
        client.close()
        facts = ext.describe()
        assert facts["embedded"] is False and facts["version"]
        # FerretDB's serverStatus has no process times: its CPU is not measured, and the facts say why
        assert ext.cpu is None and "no process CPU times" in facts["server_cpu"], facts["server_cpu"]
    monkeypatch.setenv("SECOVERHEAD_TEST_MONGO_PW", "wrong")
    with (
        pytest.raises(AuthenticationError),
        ExternalMongo(uri=uri, username="bench_sha256", password_env="SECOVERHEAD_TEST_MONGO_PW"),
    ):
        pass


def test_external_mongo_bad_input():
    with pytest.raises(ConfigError, match="no credentials in the MongoDB URI"):
        ExternalMongo(uri="mongodb://user:secret@127.0.0.1:27017/")
    with pytest.raises(ConfigError, match="mongodb://"):
        ExternalMongo(uri="http://127.0.0.1/")
    with (
        pytest.raises(UnreachableServerError),
        ExternalMongo(uri=f"mongodb://127.0.0.1:{free_port()}/", connect_timeout=1),
    ):
        pass


def test_a_mongodb_srv_uri_that_does_not_resolve_is_one_line(monkeypatch):
    """pymongo resolves a mongodb+srv:// name when the client is made, before the try that said why: a traceback."""
    monkeypatch.setenv("SRV_TEST_PW", "Zq-unusual-Pass-881")
    server = ExternalMongo(uri="mongodb+srv://nosuch.invalid/", username="u", password_env="SRV_TEST_PW")
    with pytest.raises(UnreachableServerError, match=r"cannot use MongoDB at mongodb\+srv://nosuch\.invalid/"):
        server.start()
