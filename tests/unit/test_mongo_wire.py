"""The wire client's SCRAM against RFC 7677's SCRAM-SHA-256 exchange, its framing, and when a study may use it."""

from __future__ import annotations

import hashlib
import struct

import bson
import pytest

from secoverhead.workloads import mongo_wire

# RFC 7677, section 3: user "user", password "pencil"
NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
ARGS = {"username": "user", "password": "pencil", "authMechanism": "SCRAM-SHA-256", "authSource": "admin"}


class Server:
    """The RFC's server side of the conversation, as MongoDB frames it: what the client sent, and the replies."""

    def __init__(self, final: str = SERVER_FINAL, done_at: int = 2) -> None:
        self.sent: list[dict] = []
        self.replies = [
            {"ok": 1, "conversationId": 1, "payload": SERVER_FIRST.encode(), "done": False},
            {"ok": 1, "conversationId": 1, "payload": final.encode(), "done": done_at == 2},
            {"ok": 1, "conversationId": 1, "payload": b"", "done": True},
        ]

    def command(self, doc: dict) -> dict:
        self.sent.append(doc)
        return self.replies[len(self.sent) - 1]


def test_the_client_proof_is_rfc_7677s():
    server = Server()
    mongo_wire.scram(server, ARGS, nonce=NONCE)
    start, final = server.sent
    assert bytes(start["payload"]) == f"n,,n=user,r={NONCE}".encode()
    assert start["mechanism"] == "SCRAM-SHA-256" and start["$db"] == "admin"
    assert bytes(final["payload"]).decode() == CLIENT_FINAL


def test_a_server_before_4_4_gets_its_empty_exchange():
    server = Server(done_at=3)
    mongo_wire.scram(server, ARGS, nonce=NONCE)
    assert len(server.sent) == 3 and bytes(server.sent[2]["payload"]) == b""


def test_a_server_that_does_not_know_the_password_is_refused():
    with pytest.raises(mongo_wire.WireError, match="signature"):
        mongo_wire.scram(Server(final="v=" + "A" * 44), ARGS, nonce=NONCE)


def test_a_server_nonce_that_does_not_extend_the_clients_is_refused():
    with pytest.raises(mongo_wire.WireError, match="nonce"):
        mongo_wire.scram(Server(), ARGS, nonce="another-nonce")


def test_scram_sha_1_hashes_mongodbs_digest_of_the_password():
    # MongoDB's SCRAM-SHA-1 password: hex MD5 of "user:mongo:password" (what pymongo sends too)
    assert mongo_wire._password("SCRAM-SHA-1", ARGS) == hashlib.md5(b"user:mongo:pencil").hexdigest().encode()
    assert mongo_wire._password("SCRAM-SHA-256", ARGS) == b"pencil"


class Socket:
    def __init__(self, reply: dict, opcode: int = mongo_wire.OP_MSG) -> None:
        body = struct.pack("<IB", 0, 0) + bson.encode(reply)
        self.data = mongo_wire.HEADER.pack(mongo_wire.HEADER.size + len(body), 1, 1, opcode) + body
        self.out = b""

    def sendall(self, b: bytes) -> None:
        self.out += b

    def recv(self, n: int) -> bytes:
        k = min(n, 3)  # a few bytes at a time: reads must be assembled
        chunk, self.data = self.data[:k], self.data[k:]
        return chunk


def test_a_command_is_one_op_msg_and_its_reply_is_read_whole():
    sock = Socket({"ok": 1, "n": 7})
    assert mongo_wire._Connection(sock).command({"ping": 1, "$db": "admin"})["n"] == 7
    length, request, _, opcode = mongo_wire.HEADER.unpack(sock.out[:16])
    assert (length, request, opcode) == (len(sock.out), 1, mongo_wire.OP_MSG)
    assert bson.decode(sock.out[21:]) == {"ping": 1, "$db": "admin"}


@pytest.mark.parametrize(
    "reply, opcode, error",
    [
        ({"ok": 0, "errmsg": "Authentication failed."}, mongo_wire.OP_MSG, "Authentication failed"),
        ({"ok": 1}, 1, "unexpected reply"),
    ],
)
def test_a_refusal_or_another_reply_raises(reply, opcode, error):
    with pytest.raises(mongo_wire.WireError, match=error):
        mongo_wire._Connection(Socket(reply, opcode)).command({"ping": 1})


def test_a_closed_connection_raises():
    sock = Socket({"ok": 1})
    sock.data = sock.data[:10]
    with pytest.raises(mongo_wire.WireError, match="closed"):
        mongo_wire._Connection(sock).command({"ping": 1})


@pytest.mark.parametrize(
    "args, usable",
    [
        ({"host": "127.0.0.1", "port": 27017, "directConnection": True}, True),
        ({"host": "127.0.0.1", "port": 27017, "authMechanism": "SCRAM-SHA-1"}, True),
        ({"host": "mongodb://a:1,b:2/?replicaSet=rs"}, False),  # a set to discover: pymongo's
        ({"host": "mongodb://a:1/?replicaSet=rs"}, False),
        ({"host": "mongodb://a:1/?replicaSet=rs&directConnection=true"}, True),
        ({"host": "mongodb://a:1/"}, True),  # a user's one server, named by a URI
        ({"host": "mongodb+srv://cluster.example.net/"}, False),  # hosts from DNS
        ({"host": "127.0.0.1", "port": 27017, "directConnection": False}, False),
        ({"host": "127.0.0.1", "port": 27017, "authMechanism": "MONGODB-X509"}, False),
    ],
)
def test_the_wire_client_is_used_only_for_one_server_it_can_speak_to(args, usable):
    assert mongo_wire.usable(args) is usable


@pytest.mark.parametrize(
    "args, address",
    [
        ({"host": "db", "port": 27017, "tls": True, "tlsCAFile": "/ca.pem"}, ("db", 27017, True, "/ca.pem")),
        ({"host": "db", "port": 27017}, ("db", 27017, None, None)),
        ({"host": "mongodb://db:27018/?tls=true"}, ("db", 27018, True, None)),
        ({"host": "mongodb://db:27018/", "tls": True, "tlsCAFile": "/ca.pem"}, ("db", 27018, True, "/ca.pem")),
    ],
)
def test_the_server_and_its_tls_are_read_from_the_arguments_or_the_uri(args, address):
    host, port, tls = mongo_wire._address(args)
    assert (host, port, tls.get("tls"), tls.get("tlsCAFile")) == address
