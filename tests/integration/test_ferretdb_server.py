"""FerretDB: TLS listener and SCRAM authentication proven on when asked for and off when not."""

from __future__ import annotations

import socket

import pymongo
import pytest
from pymongo import errors

from secoverhead.core.errors import ConfigError
from secoverhead.servers import FerretDBServer, probe_tls

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured():
    with FerretDBServer(tls=True, auth=True, cert_type="ecdsa") as server:
        yield server


@pytest.fixture(scope="module")
def open_server():
    with FerretDBServer() as server:
        yield server


def test_tls_listener_negotiates_tls_with_the_requested_key(secured):
    e = secured.endpoint
    hs = probe_tls(e.host, e.tls_port, e.ca_file)
    assert hs.protocol in ("TLSv1.2", "TLSv1.3") and hs.cipher
    assert hs.key_type == "ecdsa"


def test_tls_listener_refuses_a_plain_client(secured):
    e = secured.endpoint
    client = pymongo.MongoClient(host=e.host, port=e.tls_port, directConnection=True, serverSelectionTimeoutMS=1500)
    with pytest.raises(errors.PyMongoError):
        client.admin.command("hello")
    client.close()


def test_plain_listener_is_not_tls(open_server):
    e = open_server.endpoint
    assert e.tls_port is None
    with pytest.raises(OSError):
        probe_tls(e.host, e.port, None, timeout=2)
    with pytest.raises(ConfigError, match="no TLS listener"):
        e.client(tls=True)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
@pytest.mark.parametrize("tls", [False, True])
def test_scram_succeeds_with_the_right_password(secured, mechanism, tls):
    client = secured.endpoint.client(tls=tls, mechanism=mechanism)
    try:
        client.ycsb.usertable.insert_one({"mech": mechanism, "tls": tls})
        assert client.ycsb.usertable.find_one({"mech": mechanism, "tls": tls}) is not None
        status = client.admin.command("connectionStatus")
        assert status["authInfo"]["authenticatedUsers"][0]["user"] == secured.endpoint.users[mechanism]
    finally:
        client.close()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_scram_fails_with_code_18_on_a_wrong_password(secured, mechanism):
    e = secured.endpoint
    client = pymongo.MongoClient(
        host=e.host,
        port=e.port,
        directConnection=True,
        username=e.users[mechanism],
        password="definitely-wrong",
        authMechanism=mechanism,
        serverSelectionTimeoutMS=3000,
    )
    with pytest.raises(errors.OperationFailure) as err:
        client.ycsb.usertable.find_one()
    client.close()
    assert err.value.code == 18


def test_unauthenticated_reads_are_refused_when_auth_is_on(secured):
    client = secured.endpoint.client()
    with pytest.raises(errors.OperationFailure) as err:
        client.ycsb.usertable.find_one()
    client.close()
    assert err.value.code == 13


def test_auth_off_needs_no_credentials(open_server):
    client = open_server.endpoint.client()
    client.ycsb.usertable.insert_one({"x": 1})
    assert client.ycsb.usertable.count_documents({}) >= 1
    client.close()
    assert open_server.describe()["auth"] is False


def test_describe_labels_the_engine_honestly(secured):
    facts = secured.describe()
    assert facts["engine"] == "FerretDB" and facts["version"] == "v1.24.0"
    assert facts["tls_library"] == "Go crypto/tls" and "mongod" in facts["emulates"]
    assert facts["auth_mechanisms"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert facts["negotiated_tls"]["key_type"] == "ecdsa" and facts["negotiated_tls"]["cipher"]
    assert "password" not in repr(facts).lower()


def test_password_is_not_on_the_command_line(secured):
    pw = secured.endpoint.password.reveal()
    for pid in secured.pids:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert pw.encode() not in f.read()


def test_bad_inputs_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="binary not found"):
        FerretDBServer(binary=tmp_path / "no-ferretdb")
    with pytest.raises(ConfigError, match="cert_type"):
        FerretDBServer(tls=True, cert_type="ed448")
    with pytest.raises(ConfigError, match="true or false"):
        FerretDBServer(tls="yes")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(ConfigError, match="in use"), FerretDBServer(port=s.getsockname()[1]):
            pass
