"""A link with a set round trip: the server side in a namespace of its own, the delay line between.

The round trip is measured here with something other than the link's own calibration: an echo server started
inside the namespace and one byte bounced on a kept TCP connection (what a query on a reused client pays).
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time

import pytest

from secoverhead.core import owners
from secoverhead.core.errors import ConfigError
from secoverhead.network import Link, available

pytestmark = [pytest.mark.quiet, pytest.mark.skipif(available() is not None, reason=str(available()))]

ECHO = """
import socket
s = socket.socket(); s.bind((%r, 7007)); s.listen(4)
c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while (b := c.recv(64)):
    c.sendall(b)
"""


def _echo_rtts(link: Link, n: int) -> list[float]:
    echo = subprocess.Popen(link.wrap([sys.executable, "-c", ECHO % link.peer_addr]))
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                conn = socket.create_connection((link.peer_addr, 7007), timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            out = []
            for _ in range(n):
                t = time.perf_counter_ns()
                conn.sendall(b"x")
                assert conn.recv(64) == b"x"
                out.append((time.perf_counter_ns() - t) / 1e6)
        return out
    finally:
        echo.kill()
        echo.wait()


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_one_millisecond_round_trip_is_measured_within_ten_percent():
    with Link(1.0) as link:
        # the path alone must leave room for a hold; a busy CI host slowed it to 0.60 ms once (0.1-0.3 here), and the
        # hold then made up the rest (measured 0.97 ms)
        assert link.floor_ms < 1.0 and link.hold_us > 0, "the path alone must leave room for the hold"
        rtts = _echo_rtts(link, 300)[20:]  # after the first packets through a cold path
        # CPU noise on a shared machine only ever adds delay (a busy core late to wake the line or the echo): the
        # lower quartile is the hold, within 10 % below and 20 % above (1.116 once, when the host slowed the line's
        # unheld path to 0.84 ms); the median stays within 25 % (once 1.106 beside a busy core)
        quartile, median = statistics.quantiles(rtts, n=4)[0], statistics.median(rtts)
        assert -0.10 <= quartile - 1.0 <= 0.20, f"echo round trip {quartile:.3f} ms (lower quartile) on a 1 ms link"
        assert abs(median - 1.0) <= 0.25, f"echo round trip {median:.3f} ms (median) on a 1 ms link"
        stats = link.stats()
        assert min(stats["packets"]) > 300  # both ways, every probe and echo went through the line
        facts = link.describe()
        assert facts["rtt_set_ms"] == 1.0 and abs(facts["rtt_measured_ms"] - 1.0) <= 0.25  # its own median
        namespace = link.namespace
        assert namespace in _namespaces()
    assert namespace not in _namespaces(), "the namespace outlives its link"
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"h{namespace.removeprefix('so-').replace('-', 'x')}" not in links, "a TUN device outlives its link"


def test_no_hold_is_faster_than_a_held_link():
    with Link(0) as plain:
        fast = statistics.median(_echo_rtts(plain, 200)[20:])
    with Link(2.0) as slow:
        held = statistics.median(_echo_rtts(slow, 100)[10:])
    # the hold is there and is the one set: the unheld path is well under it (0.84 ms once, the host slowing the
    # line, against 0.1-0.3 usually), the held one at 2 ms give or take what the unheld path adds
    assert fast < 1.0 and held - fast > 1.0 and 1.8 < held < 2.2 + fast, (fast, held)


def test_a_round_trip_below_the_floor_or_out_of_range_is_refused():
    with pytest.raises(ConfigError, match="outside"):
        Link(-1)
    with pytest.raises(ConfigError, match="below this link's floor"), Link(0.001):
        pass
    assert not any(n.startswith(f"so-{owners.me()}-") for n in _namespaces()), "a refused link left its namespace"


def test_the_round_trips_counted_for_seed_000_are_those_a_long_link_shows():
    """The round trips tls counts (ROUND_TRIPS) come from the protocols, for the server build its round-trip part
    runs on (mongod 4.2); at 0 and at 50 ms the first query's time must differ by that many round trips (within
    one). The link is long so that the CPU of a connection, which varies by several ms between the two conditions
    on a busy machine (11 ms once beside other work: 1.2 round trips of a 10 ms link, 1.1 of a 20 ms one in CI's
    quiet phase), stays a quarter of a round trip or less."""
    from secoverhead.servers.builds import nearest
    from secoverhead.studies.tls import declarations as tls_declarations
    from secoverhead.workloads import probes
    from secoverhead.workloads.ycsb import load_usertable

    mech = "SCRAM-SHA-256"
    times: dict[tuple[float, bool], float] = {}
    measured: dict[float, float] = {}
    build, why = nearest(tls_declarations.PART_BUILDS[tls_declarations.RTT_PART])
    assert not why, f"the round-trip part's build is not here: {why}"
    for rtt in (0, 50.0):
        with Link(rtt) as link, build.server(tls=True, auth=True, link=link) as srv:
            client = srv.endpoint.client(mechanism=mech)
            load_usertable(client, 10, seed=1)
            client.close()
            measured[rtt] = link.measured_ms
            for tls_on in (False, True):
                m = probes.mongo_connection_probe(srv.endpoint, iterations=15, tls=tls_on, mechanism=mech)
                times[(rtt, tls_on)] = m.metrics["first_query_ms_median"]
    for tls_on, version in ((False, "no TLS"), (True, "TLS 1.3")):
        k = (times[(50.0, tls_on)] - times[(0, tls_on)]) / (measured[50.0] - measured[0])
        expected = tls_declarations.ROUND_TRIPS["first_query_ms_median"][version]
        assert abs(k - expected) <= 1.0, f"{version}: {k:.2f} round trips measured, {expected} counted"


def test_a_namespace_whose_owner_is_gone_is_swept():
    from secoverhead.network import sweep_stale

    dead = subprocess.Popen(["true"])
    dead.wait()  # a PID that no longer runs
    name = f"so-{dead.pid}-1"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert name in sweep_stale()
        assert name not in _namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
