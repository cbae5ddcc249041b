"""Study 4: HTTPS vs HTTP under load. Where a TLS connection's server CPU goes (the full handshake's
signature and key exchange), and how much ECDSA certificates, session resumption (by cache or by ticket)
and keep-alive win back. nginx serves a small JSON response from one worker pinned to a core; the load
clients are pinned to another. Server CPU per request is the primary measure; ab never resumes, so the
resumed arms use `openssl s_time -reuse`, and nginx's own log proves whether sessions were resumed.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..measurement import Measurement
from ..report import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, ClaimVerdict
from ..results import ResultStore
from ..servers import NginxServer
from ..stats import bootstrap_medians, compare
from ..workloads import http
from .common import StudyParams, run_experiment


@dataclass(frozen=True)
class Arm:
    name: str
    server: str  # key of the nginx instance
    tool: str  # ab | wrk | s_time
    tls: str | None  # None (HTTP), "TLSv1.2", "TLSv1.3"
    keepalive: bool = False
    resume: bool = False


ARMS = (
    Arm("HTTP", "rsa", "ab", None),
    Arm("HTTP keep-alive", "rsa", "wrk", None, keepalive=True),
    Arm("TLS 1.2 full, RSA", "rsa", "ab", "TLSv1.2"),
    Arm("TLS 1.2 full, ECDSA", "ecdsa", "ab", "TLSv1.2"),
    Arm("TLS 1.3 full, RSA", "rsa", "ab", "TLSv1.3"),
    Arm("TLS 1.3 full, ECDSA", "ecdsa", "ab", "TLSv1.3"),
    Arm("TLS 1.2 full, RSA (s_time)", "rsa", "s_time", "TLSv1.2"),
    Arm("TLS 1.2 resumed, session cache", "cache", "s_time", "TLSv1.2", resume=True),
    Arm("TLS 1.2 resumed, ticket", "tickets", "s_time", "TLSv1.2", resume=True),
    Arm("TLS 1.3 resumed, session cache", "cache", "s_time", "TLSv1.3", resume=True),
    Arm("TLS 1.3 resumed, ticket", "tickets", "s_time", "TLSv1.3", resume=True),
    Arm("HTTPS keep-alive", "rsa", "wrk", "TLSv1.3", keepalive=True),
)
SERVERS = {
    "rsa": {"cert_type": "rsa"},
    "ecdsa": {"cert_type": "ecdsa"},
    "cache": {"cert_type": "rsa", "session_tickets": False},
    "tickets": {"cert_type": "rsa", "session_cache": False},
}


@dataclass
class HttpsParams(StudyParams):
    experiment_id: str = "https"
    arms: list[str] = None  # None: all
    run_seconds: int = 2
    concurrency: int = 4  # ab -c, wrk connections, s_time processes
    max_requests: int = 1_000_000  # ab -n: runs are bounded in count as well as time
    client_cpus: str = "auto"  # "auto": the core the server is not on; "": no pinning

    def __post_init__(self) -> None:
        super().__post_init__()
        known = [a.name for a in ARMS]
        if self.arms is None:
            self.arms = known
        unknown = [a for a in self.arms if a not in known]
        if unknown:
            raise ValueError(f"unknown arm(s) {unknown}; known: {known}")
        if self.run_seconds < 1 or self.concurrency < 1:
            raise ValueError("run_seconds and concurrency must be >= 1")
        if self.client_cpus == "auto":
            self.client_cpus = "1" if (os.cpu_count() or 1) > 1 else ""


@dataclass
class HttpsResult:
    store: ResultStore
    arms: list[str]
    servers: dict[str, dict[str, Any]]
    crypto: dict[str, float]
    notes: list[str]

    def runs(self) -> pd.DataFrame:
        return self.store.runs()


def _load(arm: Arm, server: NginxServer, p: HttpsParams):
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


def run(p: HttpsParams, *, progress: bool = True) -> HttpsResult:
    arms = {a.name: a for a in ARMS if a.name in p.arms}
    crypto = http.openssl_speed(1)
    with contextlib.ExitStack() as stack:
        servers = {
            key: stack.enter_context(NginxServer(worker_core=0, **kw))
            for key, kw in SERVERS.items()
            if any(a.server == key for a in arms.values())
        }

        def measure(name: str, factors: dict) -> Measurement:
            arm = arms[name]
            srv = servers[arm.server]
            m = http.measure(
                _load(arm, srv, p),
                server_pids=srv.worker_pids(),
                access_log=srv.access_log_path,
                https_port=srv.endpoint.https_port if arm.tls else None,
            )
            m.info |= {"tool": arm.tool, "tls": arm.tls, "keepalive": arm.keepalive, "resume": arm.resume}
            return m

        facts = {f"nginx ({k})": s.describe() for k, s in servers.items()}
        store = run_experiment(p, p.experiment_id, arms=list(arms), measure=measure, servers=facts, progress=progress)
    notes = [
        f"nginx worker pinned to core 0; load clients pinned to core(s) {p.client_cpus or 'any'}",
        "ab is single-threaded and pays a full handshake's client crypto per request: full-handshake arms are "
        "usually client-bound, so their requests/s is the client's limit; server CPU per request is not",
        "resumed arms use openssl s_time -reuse (ab never resumes); every arm's resumption is checked in nginx's log",
    ]
    store.update_metadata(notes=notes, crypto=crypto)
    return HttpsResult(store, list(arms), facts, crypto, notes)


# -- analysis -------------------------------------------------------------------------------------------
def _cpu(runs: pd.DataFrame, arm: str) -> np.ndarray:
    return runs.loc[runs["arm"] == arm, "server_cpu_us_per_op"].to_numpy(dtype=float)


def summary(res: HttpsResult) -> pd.DataFrame:
    from ..report import summarize_runs

    runs = res.runs()
    cols = ["server_cpu_us_per_op", "rps", "client_cpu_cores"]
    if "server_resumed_fraction" in runs:
        cols.append("server_resumed_fraction")
    t = summarize_runs(runs, cols, ["arm"])
    t["client-bound runs"] = runs.groupby("arm", sort=False)["client_bound"].sum().reindex(t["arm"]).to_numpy()
    return t


def resumption_check(res: HttpsResult) -> pd.DataFrame:
    """Per arm: what nginx logged. Resumed arms must show resumption, full-handshake arms must not."""
    runs = res.runs()
    rows = []
    for a in ARMS:
        if a.name not in res.arms or a.tls is None or a.keepalive:
            continue
        frac = runs.loc[runs["arm"] == a.name, "server_resumed_fraction"]
        ok = (frac > 0.9).all() if a.resume else (frac < 0.05).all()
        rows.append(
            {
                "arm": a.name,
                "expected": "resumed" if a.resume else "full handshakes",
                "server-logged resumed fraction (min-max)": f"{frac.min():.3f} - {frac.max():.3f}",
                "as expected": bool(ok),
            }
        )
    return pd.DataFrame(rows)


def recovery(res: HttpsResult, full: str, candidate: str, *, seed: int = 0) -> tuple[float, float, float]:
    """Share of a full handshake's extra server CPU (over plain HTTP) that candidate wins back, with a
    bootstrap 95 % CI: 1 - (candidate - HTTP) / (full - HTTP)."""
    runs = res.runs()
    rng = np.random.default_rng(seed)
    h, f, c = (np.sort(_cpu(runs, a)) for a in ("HTTP", full, candidate))
    if not (len(h) and len(f) and len(c)):
        return (np.nan, np.nan, np.nan)
    point = 1 - (np.median(c) - np.median(h)) / (np.median(f) - np.median(h))
    bh, bf, bc = (bootstrap_medians(x, 4000, rng) for x in (h, f, c))
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = 1 - (bc - bh) / (bf - bh)
    return float(point), float(np.nanpercentile(boot, 2.5)), float(np.nanpercentile(boot, 97.5))


def crypto_share(res: HttpsResult) -> pd.DataFrame:
    """How much of a full handshake's extra server CPU the certificate's signature explains."""
    s = summary(res).set_index("arm")["server_cpu_us_per_op"]
    if "HTTP" not in s:
        return pd.DataFrame()
    rows = []
    for arm, sign in (
        ("TLS 1.2 full, RSA", "rsa2048_sign_us"),
        ("TLS 1.3 full, RSA", "rsa2048_sign_us"),
        ("TLS 1.2 full, ECDSA", "ecdsa_p256_sign_us"),
        ("TLS 1.3 full, ECDSA", "ecdsa_p256_sign_us"),
    ):
        if arm in s:
            extra = s[arm] - s["HTTP"]
            rows.append(
                {
                    "arm": arm,
                    "server CPU per request (us)": s[arm],
                    "over plain HTTP (us)": extra,
                    "signature, openssl speed (us)": res.crypto.get(sign),
                    "X25519 key exchange (us)": res.crypto.get("x25519_derive_us"),
                    "signature share of the extra %": 100 * res.crypto.get(sign, np.nan) / extra
                    if extra > 0
                    else np.nan,
                }
            )
    return pd.DataFrame(rows)


def claims(res: HttpsResult, *, seed: int = 0) -> list[ClaimVerdict]:
    runs = res.runs()
    out = []
    full = "TLS 1.2 full, RSA"
    if {"HTTP", full} <= set(res.arms):
        c = compare(_cpu(runs, "HTTP"), _cpu(runs, full), seed=seed)
        from ..report import claim_direction

        out.append(
            claim_direction(
                "A full TLS handshake multiplies server CPU per request several times over plain "
                "HTTP (original: 8000 -> 500 requests/s, 16x)",
                c,
                expect="slower",
                min_ratio=3.0,
                measure="server CPU us per request (TLS 1.2, RSA-2048, ab)",
                engine_note="nginx + OpenSSL 3.0, not a Go service",
            )
        )
    for cand, label in (
        ("TLS 1.2 full, ECDSA", "An ECDSA certificate"),
        ("TLS 1.2 resumed, session cache", "Session resumption (cache)"),
        ("TLS 1.2 resumed, ticket", "Session resumption (ticket)"),
        ("HTTPS keep-alive", "Keep-alive"),
    ):
        if {"HTTP", full, cand} <= set(res.arms):
            point, lo, hi = recovery(res, full, cand, seed=seed)
            v = REPRODUCED if lo > 0.5 else NOT_REPRODUCED if hi < 0.5 else INCONCLUSIVE
            n = len(_cpu(runs, cand))
            if n < 4:
                v = INCONCLUSIVE
            out.append(
                ClaimVerdict(
                    f"{label} wins back most of a full handshake's server CPU",
                    v,
                    f"recovers {point * 100:.0f} % of the extra CPU [bootstrap 95 % CI {lo * 100:.0f}, "
                    f"{hi * 100:.0f}] (n={n} runs per arm)",
                    "1 - (arm - HTTP) / (full RSA - HTTP), server CPU per request",
                    "nginx + OpenSSL 3.0",
                )
            )
    return out


def published() -> pd.DataFrame:
    from . import PUBLISHED

    return pd.read_csv(PUBLISHED / "https.csv")
