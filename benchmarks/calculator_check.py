"""Does the calculator's answer hold for a workload it never saw?

Each feature is checked on the build its study measured, with a workload at set rates that no study ran:

- tls: on a MySQL 8.0 the project starts (the TLS study's build and certificate: RSA-2048, TLS 1.3), new
  connections per second (each connects, runs the TLS study's point select once and closes) and point selects per
  second on a connection kept open, both at once; TLS off and on are the connections' own setting.
- audit: on two MariaDB servers the project starts, one without auditing and one with server_audit as the audit
  study configures it (CONNECT, QUERY, TABLE events to a file), point selects per second on a connection kept open.
- https: on an nginx the project starts as the HTTPS study does (worker pinned to core 0, RSA-2048; this client on
  the other core), new connections per second (each a full TLS 1.3 handshake and one GET, then closed) and GETs per
  second on a connection kept alive, both at once; off is the same over plain HTTP.
- scram: on two mongod of the auth study's build (4.2.6), one without auth and one with it, new connections per
  second over plain TCP (the arms the calculator prices SCRAM from; TLS is a line of its own), each one connection
  logging in with SCRAM-SHA-256 (or not at all) and reading one document, as the auth study's short connections.
- mix: TLS and general_log at once on MySQL 8.0 (two servers, the log on one; TLS the connections' setting), new
  connections and queries on a kept one, each a statement the log records; priced as the calculator prices both.

The operations are the library's (workloads/paced.py: the studies' own); nothing here talks to a server by hand.
- tde: on the TDE study's two MariaDB servers (encryption off, on), loaded as the run the calculator prices from
  was and put under the instance it prices from (CPU quota, IOPS limit, device latency, buffer pool), sysbench's
  oltp_read_only, oltp_write_only or oltp_read_write on one thread paced at a set rate, below what that thread does
  unpaced; the write-back of each round's dirty pages charged to it as the study does.

Rounds alternate off and on (ABBA, so a drift of the machine falls on both); the server's CPU is read from its
cgroup. The extra cores (on minus off, per pair of rounds, with a 95 % t interval) are set beside what
`sizing.calculate` predicts for the rates met, from the studies' newest counting runs: agreement when the measured
point lies within +-25 % of the predicted one or inside its interval.

    .venv/bin/python benchmarks/calculator_check.py --reports reports [--json out.json]

It needs finished runs of each feature's study in --reports (`make reports` makes them) and the machine to itself:
it is a benchmark."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from scipy import stats

from secoverhead import sizing
from secoverhead.core import paths
from secoverhead.core.errors import ConfigError
from secoverhead.core.params import build
from secoverhead.core.report import read_report
from secoverhead.host import calibration
from secoverhead.servers.builds import nearest
from secoverhead.servers.engines import MYSQL_8_0
from secoverhead.servers.mariadb import MariaDBServer
from secoverhead.servers.mysql import MySQLServer
from secoverhead.servers.nginx import NginxServer
from secoverhead.sizing import recipes, scaling
from secoverhead.studies.auth.declarations import PART_BUILDS as AUTH_BUILDS
from secoverhead.studies.tde import declarations as tde
from secoverhead.studies.tde.runner import as_instance
from secoverhead.workloads import mongo_wire, paced
from secoverhead.workloads.short_connections import ConnectSpec
from secoverhead.workloads.sysbench import SysbenchOptions, sbtest_table

FEATURE_STUDY = {"tls": "tls", "audit": "audit", "https": "https", "scram": "auth", "tde": "tde", "mix": "tls"}
# the mix: TLS and general_log at once on one MySQL 8.0 (both features' studies ran on it), each new connection
# and each query a statement the log records
MIX = ("tls", "audit")
MIX_APPROACH = "general_log"
TDE_WORKLOADS = ("read_only", "write_only", "read_write")  # the calculator's TDE lines, one sysbench script each
TDE_MECHANISM = (  # a TDE round's counters kept beside its CPU: the write-back, the IOPS met, pages per transaction
    "writeback_cpu_s",
    "purge_undo_left_count",
    "iops_read",
    "iops_write",
    "pages_read_per_txn",
    "pages_written_per_txn",
    "pages_decrypted_per_txn",
    "pages_encrypted_per_txn",
)
FLAG = {"new_per_s": "new", "queries_per_s": "queries", "transactions_per_s": "tps"}  # each rate's option
RATES = tuple(FLAG)
# the rates each feature's rounds run: audit opens no new connections, SCRAM's queries after a login are alike in
# both arms, TDE's load is sysbench's transactions
ASKS = {
    "tls": ("new_per_s", "queries_per_s"),
    "https": ("new_per_s", "queries_per_s"),
    "scram": ("new_per_s",),
    "audit": ("queries_per_s",),
    "tde": ("transactions_per_s",),
    "mix": ("new_per_s", "queries_per_s"),
}
SCRAM = "SCRAM-SHA-256"  # the calculator's default mechanism
QUERY = "SELECT id, k, c, pad FROM sbtest1 WHERE id = 1"  # the TLS study's probe query (tls mysql_query)
AGREEMENT = 0.25


@dataclass
class Round:
    on: bool
    seconds: float
    server_cores: float
    new_per_s: float  # rates met
    queries_per_s: float
    transactions_per_s: float = 0.0
    mechanism: dict[str, float] = field(default_factory=dict)  # TDE: what the server did, for a residual's why


def _operations(feature: str, server, on: bool):
    """The feature's two operations on `server` (workloads/paced.py: the studies' own), the feature on or off in
    the client where it lives there: TLS the connections' setting, HTTPS the port, SCRAM the login."""
    e = server.endpoint
    if feature == "https":
        return paced.http_operations(e.host, e.https_port if on else e.http_port, e.ca_file if on else None)
    if feature == "scram":  # one wire-client connection per login, as the auth study's short connections
        args = e.client_args(tls=False, mechanism=SCRAM if on else None)
        return paced.sql_operations(ConnectSpec("mongo", args, wire=mongo_wire.usable(args)), kinds=("new",))
    tls = on and feature in ("tls", "mix")
    return paced.sql_operations(ConnectSpec("mysql", e.connect_args(tls=tls), query=QUERY))


def one_round(ops: dict, new_per_s: float, queries_per_s: float, seconds: float, on: bool, server) -> Round:
    """Both rates at once for `seconds` (none of a kind at a rate of 0); the server's CPU over that time."""
    kinds = {k: (rate, ops[k]) for k, rate in (("new", new_per_s), ("query", queries_per_s)) if rate > 0}
    r = paced.paced_round(kinds, seconds, server.cpu)
    return Round(on, r.seconds, r.server_cores, r.met.get("new", 0.0), r.met.get("query", 0.0))


@contextlib.contextmanager
def _pinned_beside(core: int):
    """This process off `core` (the server's, as the HTTPS study pins nginx's worker and its clients apart)."""
    before = os.sched_getaffinity(0)
    others = before - {core}
    if others:
        os.sched_setaffinity(0, others)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def calculator_inputs(feature: str, rate: dict[str, float], workload: str) -> dict:
    """The calculator's inputs for the check's workload: only the feature's own rates, everything else at 0."""
    new, queries, tps = rate["new_per_s"], rate["queries_per_s"], rate["transactions_per_s"]
    common = {"engine": "mongodb" if feature == "scram" else "mysql", "tls_version": "1.3", "tls_key": "rsa"}
    match feature:
        case "tls":
            own = {"new_connections_per_s": new, "pooled_share": 0.0, "reused_queries_per_s": queries}
        case "audit":
            own = {"audited_statements_per_s": queries, "audit_approach": "server_audit"}
        case "scram":
            own = {"new_connections_per_s": new, "pooled_share": 0.0, "scram_mechanism": SCRAM}
        case "mix":
            own = {"new_connections_per_s": new, "pooled_share": 0.0, "reused_queries_per_s": queries,
                   "audited_statements_per_s": new + queries, "audit_approach": MIX_APPROACH}  # fmt: skip
            return {"features": list(MIX), **common, **own}
        case "https":
            requests = new + queries
            own = {"https_requests_per_s": requests, "https_new_share": new / requests, "https_resumed_share": 0.0}
        case _:
            own = {f"{w}_tps": tps if w == workload else 0.0 for w in TDE_WORKLOADS}
            own |= {"concurrency": 1}
    return {"features": ["encryption_at_rest" if feature == "tde" else feature], **common, **own}


def machine_now(checks: list[dict[str, float]]) -> dict[str, float]:
    """This machine as its vCPU ran the rounds, as the calculator's "your machine": its calibration, every
    reference slowed by the quiet speed checks taken before each round over the loop's fastest since boot (the
    calculator prices a report at the machine's own speed; the rounds run at whatever speed the vCPU had, which
    moved 1.1-2.0x within one check on 2026-12-07)."""
    cal = calibration.shared()
    now = scaling.as_it_ran(cal, calibration.slowdown(checks, cal))
    return {k: float(now[k]) for k in scaling.REFERENCES if isinstance(now.get(k), int | float)}


def _checked(round_of, order: list[bool], checks: list[dict[str, float]]) -> list:
    """Each round after a speed check of the vCPU (the servers idle between rounds: a quiet check)."""
    out = []
    for on in order:
        checks.append(calibration.speed_check())
        out.append(round_of(on))
    return out


def predicted(
    feature: str, reports: Path, rate: dict[str, float], workload: str = "read_only", speed: dict | None = None
) -> dict:
    """The calculator's server cores for the feature at these rates, from its study's newest counting run (TDE's
    on the measured instance nearest this machine's 2 cores, at 1 thread as the check runs it), on this machine
    as it runs now (`speed`; none: at the measuring machine's own speed)."""
    inputs = calculator_inputs(feature, rate, workload)
    calc = sizing.calculate(**inputs, reports_dir=str(reports), cores=2, speed=speed or {})
    iv = calc.totals.server  # every feature's lines, each at least zero, summed
    lines = {r.line.key: [r.cores.point, r.cores.lo, r.cores.hi] for r in calc.lines if r.line.side == "server"}
    study = FEATURE_STUDY[feature]
    runs = {s: str(src.run_dir) for s, src in calc.book.sources.items()}
    out = {"point": iv.point, "lo": iv.lo, "hi": iv.hi, "lines": lines, "run": runs[study], "runs": runs,
           "machine_now": speed or {}}  # fmt: skip
    out["at_load"] = [p.load.note(r.line.per) for r in calc.lines for p in r.priced if p.load is not None]
    if feature == "tde":  # the instance it priced from (the measured one nearest this machine's 2 cores)
        out["instance"] = recipes.tde_instance(calc.params, calc.book.sources, calc.target)
    return out


def measured(rounds: list[Round]) -> dict:
    """On minus off per pair of rounds (ABBA: each pair one of each), its mean and 95 % t interval."""
    pairs = [rounds[i : i + 2] for i in range(0, len(rounds) - 1, 2)]
    extra = [next(r for r in p if r.on).server_cores - next(r for r in p if not r.on).server_cores for p in pairs]
    mean, sd = statistics.fmean(extra), statistics.stdev(extra)
    half = stats.t.ppf(0.975, len(extra) - 1) * sd / len(extra) ** 0.5
    return {"point": mean, "lo": mean - half, "hi": mean + half, "pairs": extra}


def _servers(
    feature: str, a: argparse.Namespace, order: list[bool], rate: dict[str, float], checks: list
) -> tuple[list, dict]:
    """The rounds of a feature the check drives itself, on the servers its study measured; their build."""
    new, queries = rate["new_per_s"], rate["queries_per_s"]
    with contextlib.ExitStack() as stack:
        if feature == "tls":
            server = stack.enter_context(MySQLServer(tls=True))
            servers = {False: server, True: server}
        elif feature == "mix":  # TLS is the client's choice; the log, a server of its own
            servers = {on: stack.enter_context(MySQLServer(tls=True, audit=MIX_APPROACH if on else "none"))
                       for on in (False, True)}  # fmt: skip
        elif feature == "https":
            server = stack.enter_context(NginxServer(worker_core=0, cert_type="rsa"))
            stack.enter_context(_pinned_beside(0))
            servers = {False: server, True: server}
        elif feature == "scram":
            mongod, _ = nearest(AUTH_BUILDS["MongoDB"])
            servers = {on: stack.enter_context(mongod.server(tls=True, auth=on)) for on in (False, True)}
        else:
            servers = {on: stack.enter_context(MariaDBServer(audit="server_audit" if on else "none")) for on in (0, 1)}
        for server in servers.values():
            if feature not in ("https", "scram"):
                sbtest_table(server.endpoint)
        clients = {on: stack.enter_context(_operations(feature, servers[on], on)) for on in servers}
        for on, server in servers.items():
            one_round(clients[on], new, queries, 2.0, on, server)  # warm: caches, hashes, TLS context
        rounds = _checked(lambda on: one_round(clients[on], new, queries, a.seconds, on, servers[on]), order, checks)
        return rounds, servers[True].describe()


def _tde(
    a: argparse.Namespace, order: list[bool], rate: dict[str, float], want: dict, checks: list
) -> tuple[list, dict]:
    """sysbench, one thread paced at the rate, on the TDE study's two servers (encryption off, on) loaded as the
    run the calculator prices from (`want`, its answer) was and put under the instance it prices from; the
    write-back charged."""
    workload, instance = f"oltp_{a.workload}", want["instance"]
    report = read_report(Path(want["run"]))
    given = dict(report.parameters) if report is not None else {}
    p = build(tde.Params, given | {"workloads": [workload], "threads": [1], "instances": [instance]}, study="tde")
    tps = int(rate["transactions_per_s"])  # sysbench takes a whole number
    warm = SysbenchOptions(workload, p.tables, p.table_size, 1, round(a.seconds))
    opts = {workload: {1: warm}}  # the measure reads it at each call
    arm, cell = {False: tde.OFF, True: tde.ON}, {"workload": workload, "threads": 1}
    with as_instance(p, instance, opts) as (rigs, measure):
        # warm, unpaced as the study's warm-up runs: a paced sysbench aborts ("The event queue is full") where a
        # cold buffer pool falls behind, as one did here at 30/s on 2026-11-29
        for on in (False, True):
            measure(arm[on], cell)
        opts[workload][1] = replace(warm, extra={"rate": tps})
        rounds = _checked(lambda on: _tde_round(on, measure(arm[on], cell).metrics, tps), order, checks)
        return rounds, rigs[tde.ON].db.describe() | {"instance": instance}


def _tde_round(on: bool, m: dict, rate: int) -> Round:
    """A round's server CPU per transaction, at the rate asked: sysbench's paced arrivals are random (a 5-s round
    met 25-34 of 30 asked a second), and on a server spending ~1.3 ms a transaction that alone moves a round's
    cores more than encryption is priced to (2026-11-29)."""
    wall = m["duration_s"]
    why = {k: m[k] for k in TDE_MECHANISM if k in m}
    return Round(on, wall, m["server_cpu_total_s"] / m["transactions"] * rate, 0.0, 0.0, m["transactions"] / wall, why)


def check(feature: str, a: argparse.Namespace) -> dict:
    """One feature's rounds on its servers, and the calculator's answer for the rates they met."""
    order = [t for i in range(a.pairs) for t in ((False, True) if i % 2 == 0 else (True, False))]
    checks: list[dict[str, float]] = []  # one before each round
    rate = _rates(feature, a)
    if feature == "tde":  # priced at the rate asked: each round's CPU is taken per transaction at that rate
        want = predicted(feature, a.reports, rate, a.workload)
        rounds, server = _tde(a, order, rate, want, checks)
        want = predicted(feature, a.reports, rate, a.workload, machine_now(checks))
    else:
        rounds, server = _servers(feature, a, order, rate, checks)
        met = {k: statistics.fmean(getattr(r, k) for r in rounds) for k in RATES}
        want = predicted(feature, a.reports, met, speed=machine_now(checks))
    got = measured(rounds)
    ratio = got["point"] / want["point"] if want["point"] > 0 else float("nan")
    return {
        "feature": feature,
        "server": f"{server.get('engine', '')} {server.get('version', '')}".strip(),
        "instance": server.get("instance"),
        "server_facts": server,
        "workload": a.workload if feature == "tde" else None,
        "rates_asked": rate,
        "rates_met_least": {k: min(getattr(r, k) for r in rounds) for k in RATES},
        "rounds": [asdict(r) for r in rounds],
        "measured_extra_cores": got,
        "predicted_extra_cores": want,
        "measured_over_predicted": ratio,
        "behind": behind(rounds, rate),
        "agrees": None
        if behind(rounds, rate)
        else abs(ratio - 1) <= AGREEMENT or want["lo"] <= got["point"] <= want["hi"],
    }


MET = 0.95  # a round that met less of a rate asked did other work than its partner: its row checks nothing


def behind(rounds: list[Round], asked: dict[str, float]) -> str:
    """Where the client fell behind a rate in some round (feature on and off then did unlike work, and their
    difference is not the feature's cost), in words; "" when every round met every rate. TDE's rounds are taken
    per transaction at the rate asked, so they never fall behind here."""
    short = [
        f"{k} {min(getattr(r, k) for r in rounds if r.on == on):,.0f}/s of {rate:,.0f} asked with the feature "
        f"{'on' if on else 'off'}"
        for k, rate in asked.items()
        if rate > 0 and k != "transactions_per_s"
        for on in (False, True)
        if min(getattr(r, k) for r in rounds if r.on == on) < MET * rate
    ]
    return "; ".join(short)


def say(r: dict) -> str:
    got, want, rates = r["measured_extra_cores"], r["predicted_extra_cores"], r["rates_asked"]
    what = {
        "tls": f"TLS 1.3 (RSA-2048) at {rates['new_per_s']:g} new connections/s and "
        f"{rates['queries_per_s']:g} queries/s",
        "mix": f"TLS 1.3 (RSA-2048) and {MIX_APPROACH} at once, at {rates['new_per_s']:g} new connections/s and "
        f"{rates['queries_per_s']:g} queries/s",
        "audit": f"server_audit at {rates['queries_per_s']:g} statements/s",
        "https": f"HTTPS, TLS 1.3 (RSA-2048) at {rates['new_per_s']:g} new connections/s and "
        f"{rates['queries_per_s']:g} kept-alive requests/s",
        "scram": f"{SCRAM} at {rates['new_per_s']:g} new connections/s",
        "tde": f"encryption at rest, {r['instance']} instance: {rates['transactions_per_s']:g} oltp_{r['workload']} "
        "transactions/s",
    }[r["feature"]]
    return (
        f"{what} on {r['server']}: measured {got['point']:.3f} cores [{got['lo']:.3f}, {got['hi']:.3f}] extra, "
        f"predicted {want['point']:.3f} [{want['lo']:.3f}, {want['hi']:.3f}]; measured/predicted "
        f"{r['measured_over_predicted']:.2f} ({_verdict(r)})" + "".join(f"; {n}" for n in want.get("at_load", []))
    )


def _verdict(r: dict) -> str:
    if r["agrees"] is None:
        return f"not a check: the client fell behind ({r['behind']})"
    said = "agrees" if r["agrees"] else "disagrees"
    return f"{said}: within +-{AGREEMENT:.0%} or inside the predicted interval"


def _rates(feature: str, a: argparse.Namespace) -> dict[str, float]:
    """The rates a feature's rounds ask for (ASKS), the others 0."""
    return {k: float(getattr(a, FLAG[k])) if k in ASKS[feature] else 0.0 for k in RATES}


def bad_input(a: argparse.Namespace) -> str | None:
    """What makes the check unable to answer, found before any server starts: an interval needs two pairs; each
    feature a rate to measure and a finished run of its study to predict from; TLS the MySQL 8.0 its study ran."""
    if a.pairs < 2:
        return f"--pairs {a.pairs}: an interval needs at least 2 pairs of rounds"
    if not a.seconds > 0:
        return f"--seconds {a.seconds:g}: a round must last more than 0 s"
    if min(a.new, a.queries, a.tps) < 0:
        return "--new, --queries and --tps are rates: 0 or more per second"
    for feature in a.features:
        rate = _rates(feature, a)
        if sum(rate.values()) <= 0:
            asked = ", ".join(f"--{FLAG[k]} {rate[k]:g}" for k in ASKS[feature])
            return f"{feature}: nothing to measure at {asked}"
        try:
            predicted(feature, a.reports, rate, a.workload)
        except ConfigError as exc:
            return f"{feature}: the calculator cannot answer from {a.reports}: {exc}"
    if {"tls", "mix"} & set(a.features) and not MYSQL_8_0.available:
        return "tls: MySQL 8.0 is not fetched here: run `make setup`"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=Path, default=paths.ROOT / "reports")
    ap.add_argument("--features", nargs="+", default=["tls", "audit", "https"], choices=tuple(FEATURE_STUDY))
    ap.add_argument("--new", type=float, default=100.0, help="tls, https, scram: new connections per second")
    ap.add_argument("--queries", type=float, default=2000.0, help="queries (requests) per second on a kept connection")
    ap.add_argument("--tps", type=int, default=30, help="tde: sysbench transactions per second (one thread; whole)")
    ap.add_argument("--workload", default="read_only", choices=TDE_WORKLOADS, help="tde: sysbench's oltp_<workload>")
    ap.add_argument("--seconds", type=float, default=10.0, help="one round")
    ap.add_argument("--pairs", type=int, default=4, help="pairs of rounds, off and on")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    problem = bad_input(a)
    if problem:
        print(f"calculator_check: {problem}", file=sys.stderr)
        return 2
    results = []
    for feature in a.features:
        results.append(check(feature, a))
        print(say(results[-1]), flush=True)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
