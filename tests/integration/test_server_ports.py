"""A port picked free and bound by another process before the server binds it does not fail the start."""

from __future__ import annotations

import pytest

from secoverhead.servers.engines import MONGOD_6_0
from secoverhead.servers.mongod import MongodServer

pytestmark = pytest.mark.integration


def test_a_port_taken_between_its_pick_and_the_servers_bind_is_picked_again(monkeypatch):
    """Another process (a test run's other worker) bound the port picked for mysqld before mysqld did: the start is
    made again on a new port, not failed."""
    import socket

    from secoverhead.host import process
    from secoverhead.servers import mongod as module

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    picks: list[int] = []

    def pick(port, host="127.0.0.1"):
        picks.append(taken.getsockname()[1] if not picks else process.pick_port(port, host))
        return picks[-1]

    monkeypatch.setattr(module, "pick_port", pick)
    try:
        with MongodServer(build=MONGOD_6_0.name, tls=False) as mongod:
            assert mongod.endpoint.port == picks[-1] != picks[0] and mongod.endpoint.answers()
    finally:
        taken.close()
    assert len(picks) == 2
