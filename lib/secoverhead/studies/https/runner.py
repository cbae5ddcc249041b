"""HTTPS study: nginx per arm, and the load each arm runs."""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import replace
from functools import partial
from typing import Any

from secoverhead.measurement.parts import StudyResult
from secoverhead.servers import NginxServer
from secoverhead.studies.https.claims import baseline_conditions, part_claims
from secoverhead.studies.https.declarations import ARMS, FULL, SERVERS, STUDY, Arm, Params, load_curves
from secoverhead.studies.protocol import load_runs, loads
from secoverhead.studies.protocol.params import aa_copy
from secoverhead.studies.protocol.runner import PartPlan, run_parts
from secoverhead.workloads import http, paced


def _load(arm: Arm, server: Any, p: Params):
    e = server.endpoint
    if arm.tool == "ab":
        proto = {"TLSv1.2": "TLS1.2", "TLSv1.3": "TLS1.3"}.get(arm.tls or "")
        return lambda: http.run_ab(
            e.url(tls=arm.tls is not None),
            requests=p.max_requests,
            concurrency=p.concurrency,
            tls_protocol=proto,
            time_limit_s=p.run_seconds,
            cpus=p.client_cpus,
        )[::2]
    if arm.tool == "wrk":
        return partial(
            http.run_wrk,
            e.url(tls=arm.tls is not None),
            duration_s=p.run_seconds,
            connections=p.concurrency,
            cpus=p.client_cpus,
        )
    return partial(
        http.run_s_time,
        e.host,
        e.https_port,
        resume=arm.resume,
        tls_version=arm.tls,
        seconds=p.run_seconds,
        processes=p.concurrency,
        ca_file=e.ca_file,
        cpus=p.client_cpus,
    )


def _load_curves(p: Params, servers: dict[str, Any]) -> list[dict[str, Any]]:
    """nginx's load curves (protocol/loads.py) on the RSA server the arms share, TLS the client's choice (its
    port), this process on the client's cores as the study's load clients are."""
    srv = servers.get("rsa")
    if srv is None or p.aa or not p.load_rates:
        return []
    e = srv.endpoint

    def side(tls: bool, kind: str) -> loads.Side:
        ops = functools.partial(paced.http_operations, e.host, e.https_port if tls else e.http_port,
                                e.ca_file if tls else None)  # fmt: skip
        return loads.Side(lambda: _on_client_cpus(ops(), p.client_cpus), srv.cpu, 1.0)  # nginx: one worker

    return [load_runs.measure(c, side(False, c.kind), side(True, c.kind)) for c in load_curves(p)]


@contextlib.contextmanager
def _on_client_cpus(ops: Any, cpus: str):
    """The operations, this process pinned to the load clients' cores meanwhile (off nginx's worker)."""
    before = os.sched_getaffinity(0)
    wanted = {int(c) for c in cpus.split(",") if c.strip().isdigit()} & before
    if wanted:
        os.sched_setaffinity(0, wanted)
    try:
        with ops as got:
            yield got
    finally:
        os.sched_setaffinity(0, before)


NOTES = [
    "ab is single-threaded and pays a full handshake's client crypto per request: full-handshake arms are usually "
    "client-bound, so their requests/s is the client's limit; server CPU per request is not",
    "resumed arms use openssl s_time -reuse (ab never resumes); every arm's resumption is checked in nginx's log",
]


def run(p: Params) -> StudyResult:
    arms = {a.name: a for a in ARMS if a.name in p.arms}
    if p.aa:  # the full handshake against itself: the arm every claim is measured against
        full = next(a for a in ARMS if a.name == FULL)
        arms = {FULL: full, aa_copy(FULL): replace(full, name=aa_copy(FULL))}

    def plan(name: str, stack: contextlib.ExitStack) -> PartPlan:
        needed = {a.server for a in arms.values()}
        servers = {k: stack.enter_context(NginxServer(worker_core=0, **kw)) for k, kw in SERVERS.items() if k in needed}

        def measure(arm_name: str, factors: dict):
            arm = arms[arm_name]
            srv = servers[arm.server]
            m = http.measure(
                _load(arm, srv, p),
                server_cpu=srv.cpu,
                access_log=srv.access_log_path,
                https_port=srv.endpoint.https_port if arm.tls else None,
            )
            m.info |= {"tool": arm.tool, "tls": arm.tls, "keepalive": arm.keepalive, "resume": arm.resume}
            return m

        return PartPlan(
            arms=list(arms),
            measure=measure,
            facts={f"nginx ({k})": s.describe() for k, s in servers.items()},
            notes=[f"nginx worker pinned to core 0; load clients pinned to core(s) {p.client_cpus or 'any'}", *NOTES],
            servers={a: servers[arms[a].server] for a in arms},
            judge=functools.partial(part_claims, STUDY),
            baseline_conditions=baseline_conditions,
            ops_metric="requests",
            finish=lambda _store: {"load_curves": _load_curves(p, servers)},
        )

    return run_parts(p, STUDY, [STUDY], plan)
