"""The wire client on the original's mongod and a later one: it authenticates with both SCRAM mechanisms, over TLS
too, is refused a wrong password, and makes one server connection per request where a pymongo client makes two or
three (its monitors): what the auth study's per-connection server CPU must not include."""

from __future__ import annotations

import pymongo
import pytest

from secoverhead.servers.builds import MONGOD_42, MONGOD_60
from secoverhead.servers.mongod import MongodServer
from secoverhead.workloads import mongo_wire

pytestmark = [pytest.mark.integration]


def _created(admin: pymongo.MongoClient) -> int:
    return admin.admin.command("serverStatus")["connections"]["totalCreated"]


def _pymongo_request(args: dict) -> None:
    client = pymongo.MongoClient(**args)
    try:
        client["ycsb"]["usertable"].find_one()
    finally:
        client.close()


@pytest.mark.parametrize("build", [MONGOD_42.fetched.name, MONGOD_60.fetched.name])
def test_one_server_connection_per_request_authenticated_as_pymongo_would(build):
    with MongodServer(build=build, tls=True, auth=True) as server:
        for mechanism in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
            for tls in (False, True):
                mongo_wire.one_request(server.endpoint.client_args(tls=tls, mechanism=mechanism))
        wrong = server.endpoint.client_args(mechanism="SCRAM-SHA-256") | {"password": "not-the-password"}
        with pytest.raises(mongo_wire.WireError, match="Authentication failed"):
            mongo_wire.one_request(wrong)
        args = server.endpoint.client_args(mechanism="SCRAM-SHA-256")
        counts, admin = {}, server.admin()  # one client counts, its own connections made before the first count
        for name, request in (("wire", mongo_wire.one_request), ("pymongo", _pymongo_request)):
            before = _created(admin)
            for _ in range(10):
                request(args)
            counts[name] = (_created(admin) - before) / 10
        admin.close()
        assert counts["wire"] == 1
        assert counts["pymongo"] >= 2  # the monitor's (and on 4.4+ the streaming RTT monitor's) beside it
