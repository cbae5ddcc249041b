"""A load curve's rounds on a real server (protocol/load_runs.py): every rate in ABBA pairs, the server's CPU
per statement from its cgroup, the rates met near the rates asked, and the curve the calculator reads from them."""

from __future__ import annotations

import functools
import os

from secoverhead.servers import MariaDBServer
from secoverhead.sizing.curves import levels
from secoverhead.studies.protocol.load_runs import measure
from secoverhead.studies.protocol.loads import Curve, Side
from secoverhead.workloads import paced
from secoverhead.workloads.short_connections import ConnectSpec


def test_a_load_curve_paces_each_rate_in_abba_pairs_and_reads_the_servers_cpu_per_statement():
    curve = Curve("query", "statement", "B", "A", (100.0, 400.0), 0.5, 2)
    with MariaDBServer() as db:
        spec = ConnectSpec("mysql", db.endpoint.connect_args(tls=False), query="SELECT 1")
        side = Side(functools.partial(paced.sql_operations, spec, kinds=("query",)), db.cpu, float(os.cpu_count()))
        got = measure(curve, side, side)  # the same server both ways: an A/A curve
    rounds = got["rounds"]
    assert [(r["rate"], r["pair"], r["arm"]) for r in rounds] == [
        (rate, pair, arm) for rate in (100.0, 400.0) for pair, arm in ((0, "A"), (0, "B"), (1, "B"), (1, "A"))
    ]
    # paced, never ahead: at most the rate asked (plus the one due at the start); a busy machine may fall behind
    assert all(0.3 * r["rate"] <= r["rate_met"] <= r["rate"] * 1.05 + 1 / r["seconds"] for r in rounds)
    assert all(r["cpu_us_per_op"] > 0 and r["server_cores"] > 0 for r in rounds)
    lv = levels(got, 0.95)
    assert [v.rate for v in lv] == [100.0, 400.0] and all(v.extra.lo <= v.extra.point <= v.extra.hi for v in lv)


def test_nginx_load_curves_give_a_tls_request_and_a_full_handshake_their_extra_cpu():
    """HTTP against HTTPS on one nginx, as the HTTPS study's curves run: the handshake costs the server more than
    a plain connection, whatever the machine's noise at these rates (a full RSA handshake is hundreds of µs)."""
    from secoverhead.servers import NginxServer
    from secoverhead.studies.https import runner
    from secoverhead.studies.https.declarations import Params

    p = Params(load_rates={"new": [30.0]}, load_seconds=1.0, load_pairs=2)
    with NginxServer(worker_core=0, cert_type="rsa") as srv:
        (got,) = runner._load_curves(p, {"rsa": srv})
    assert not got["error"] and got["arm"] == "TLS 1.3 full, RSA" and len(got["rounds"]) == 4
    (level,) = levels(got, 0.95)
    assert level.extra.point > 0
