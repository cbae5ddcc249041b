"""One MongoDB connection per request, as the original's PHP driver made them: a socket, the handshake (isMaster),
a SCRAM conversation, one find, close.

Why not pymongo here: a pymongo client opens a monitor connection of its own beside the one that authenticates (a
second, streaming one against a 4.4+ server), so a short operation through it is two server connections (three on
mongod 6.0), and only one of them authenticates. The server CPU of those monitors, unauthenticated, was 40 % of
mongod 4.2.6's CPU per short operation with auth off (300 of 750 us, 2026-11-29), and it divided the effect the
original measured per connection. pymongo stays the client of the pooled arm and of every other study.

Only what one connection needs is spoken: OP_MSG (MongoDB 3.6 and later, FerretDB), isMaster (mongod 4.2.6
predates `hello`), SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677), TLS through the ssl module. No
speculative authentication and no session: the original's driver had neither."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import ssl
import struct
from typing import Any

import bson
from bson.binary import Binary

OP_MSG = 2013
HEADER = struct.Struct("<iiii")
# what drivers send about themselves in their handshake, which the server parses and logs
CLIENT = {"driver": {"name": "secoverhead-wire", "version": "1"}, "os": {"type": "Linux"}}


class WireError(Exception):
    """The server refused a command (its errmsg) or closed the connection."""


FIND_ONE = {"find": "usertable", "filter": {}, "limit": 1, "singleBatch": True, "$db": "ycsb"}


def one_request(args: dict[str, Any], query: dict[str, Any] = FIND_ONE) -> None:
    """Connect as pymongo's keyword arguments (host, port, tls, tlsCAFile, username, password, authSource,
    authMechanism, socketTimeoutMS) say, authenticate when they name a user, run the query (one document of the
    auth study's collection), close."""
    with _connect(args) as sock:
        conn = _Connection(sock)
        conn.command({"isMaster": 1, "client": CLIENT, "$db": "admin"})
        if args.get("username"):
            scram(conn, args)
        conn.command(dict(query))


def usable(args: dict[str, Any]) -> bool:
    """Whether the arguments name one server this client can reach by itself (host and port, or a URI of one host
    not asked to discover a set; a SCRAM mechanism or none); a set to discover is pymongo's."""
    return _address(args) is not None and args.get("authMechanism") in (None, *HASHES)


def _address(args: dict[str, Any]) -> tuple[str, int, dict[str, Any]] | None:
    """(host, port, TLS options) of the one server the arguments name, or None."""
    host = str(args.get("host", ""))
    if not host.startswith("mongodb"):
        return (host, int(args["port"]), args) if "port" in args and args.get("directConnection", True) else None
    if not host.startswith("mongodb://"):
        return None  # mongodb+srv: hosts from DNS
    from pymongo.uri_parser import parse_uri  # deferred: as pymongo is, for the CLI's checks

    uri = parse_uri(host)
    opts = {k.lower(): v for k, v in uri["options"].items()} | {k.lower(): v for k, v in args.items()}
    if len(uri["nodelist"]) != 1 or (opts.get("replicaset") and not opts.get("directconnection")):
        return None
    name, port = uri["nodelist"][0]
    tls = {"tls": opts.get("tls") or opts.get("ssl"), "tlsCAFile": opts.get("tlscafile")}
    return name, int(port), tls | {"tlsAllowInvalidHostnames": opts.get("tlsallowinvalidhostnames", False)}


def _connect(args: dict[str, Any]) -> socket.socket:
    address = _address(args)
    if address is None:
        raise WireError("not one server: pymongo's to discover")
    host, port, tls = address
    timeout = float(args.get("socketTimeoutMS") or 30_000) / 1000
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if not tls.get("tls"):
        return sock
    context = ssl.create_default_context(cafile=tls.get("tlsCAFile"))
    context.check_hostname = not tls.get("tlsAllowInvalidHostnames", False)
    return context.wrap_socket(sock, server_hostname=host)


class _Connection:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.request_id = 0

    def command(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Send one OP_MSG (flags 0, one body section) and read its reply; a reply without ok: 1 raises."""
        self.request_id += 1
        body = struct.pack("<IB", 0, 0) + bson.encode(doc)
        self.sock.sendall(HEADER.pack(HEADER.size + len(body), self.request_id, 0, OP_MSG) + body)
        length, _, _, opcode = HEADER.unpack(self._read(HEADER.size))
        payload = self._read(length - HEADER.size)
        if opcode != OP_MSG or payload[4] != 0:
            raise WireError(f"unexpected reply (opcode {opcode}, section {payload[4]})")
        reply = bson.decode(payload[5 : 5 + struct.unpack_from("<i", payload, 5)[0]])
        if reply.get("ok") != 1:
            raise WireError(f"{next(iter(doc))}: {reply.get('errmsg', reply)}")
        return reply

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise WireError("the server closed the connection")
            data += chunk
        return bytes(data)


HASHES = {"SCRAM-SHA-1": "sha1", "SCRAM-SHA-256": "sha256"}


def scram(conn: Any, args: dict[str, Any], nonce: str | None = None) -> None:
    """RFC 5802's conversation in MongoDB's saslStart/saslContinue, the server's signature checked (nonce: the
    client's, random unless a test vector gives it)."""
    mechanism, source = args.get("authMechanism") or "SCRAM-SHA-256", args.get("authSource") or "admin"
    digest = HASHES[mechanism]
    user = str(args["username"]).replace("=", "=3D").replace(",", "=2C")
    nonce = nonce or base64.b64encode(os.urandom(24)).decode()
    first_bare = f"n={user},r={nonce}"
    reply = conn.command(
        {
            "saslStart": 1,
            "mechanism": mechanism,
            "payload": Binary(f"n,,{first_bare}".encode()),
            "autoAuthorize": 1,
            "options": {"skipEmptyExchange": True},
            "$db": source,
        }
    )
    server_first = bytes(reply["payload"]).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    if not fields["r"].startswith(nonce):
        raise WireError("the server's nonce does not extend the client's")
    salted = hashlib.pbkdf2_hmac(digest, _password(mechanism, args), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.digest(salted, b"Client Key", digest)
    final_bare = f"c=biws,r={fields['r']}"
    message = f"{first_bare},{server_first},{final_bare}".encode()
    signature = hmac.digest(hashlib.new(digest, client_key).digest(), message, digest)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    reply = conn.command(
        {
            "saslContinue": 1,
            "conversationId": reply["conversationId"],
            "payload": Binary(f"{final_bare},p={proof}".encode()),
            "$db": source,
        }
    )
    expected = base64.b64encode(hmac.digest(hmac.digest(salted, b"Server Key", digest), message, digest)).decode()
    if bytes(reply["payload"]).decode() != f"v={expected}":
        raise WireError("the server's SCRAM signature does not match: not the server the password belongs to")
    while not reply.get("done"):  # servers before 4.4 end with an empty exchange
        reply = conn.command(
            {"saslContinue": 1, "conversationId": reply["conversationId"], "payload": Binary(b""), "$db": source}
        )


def _password(mechanism: str, args: dict[str, Any]) -> bytes:
    """SCRAM-SHA-1 on MongoDB hashes the MongoDB-CR digest (hex MD5 of user:mongo:password), SCRAM-SHA-256 the
    SASLprep'd password."""
    password = str(args["password"])
    if mechanism == "SCRAM-SHA-1":
        return hashlib.md5(f"{args['username']}:mongo:{password}".encode()).hexdigest().encode()
    from pymongo.saslprep import saslprep  # the same preparation pymongo applies

    return saslprep(password).encode()
