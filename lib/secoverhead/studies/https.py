"""Study 4: HTTPS vs HTTP under load. Where a TLS connection's server CPU goes (the full handshake's
signature and key exchange), and how much ECDSA certificates, session resumption (by cache or by ticket)
and keep-alive win back. nginx serves a small JSON response from one worker pinned to a core; the load
clients are pinned to another. Server CPU per request is the primary measure; ab never resumes, so the
resumed arms use `openssl s_time -reuse`, and nginx's own log proves whether sessions were resumed.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from .. import registry
from ..calibration import CryptoBound
from ..claimcheck import RatioClaim, verdict_of
from ..design import ClaimPlan
from ..params import param
from ..verdicts import ClaimVerdict, Verdict
from .base import Part, PartPlan, StudyParams, StudyResult, aa_copy, published, run_parts, study_verdicts

if TYPE_CHECKING:
    import pandas as pd

STUDY = "https"
PRIMARY_METRICS = ("server_cpu_us_per_op", "rps")
BASELINE = "HTTP"
FULL = "TLS 1.2 full, RSA"
# What the claims need: a full handshake costs ~15x the CPU of plain HTTP here, resumption and keep-alive win back
# 80-97 % of it, so +-25 % decides both. Noise prior: per-round sd of log server CPU per request, 0.1.
PLANS = (
    ClaimPlan.from_aa("full handshake several times the CPU (+-25 %)", 0.10, 0.25),
    ClaimPlan.from_aa("resumption and keep-alive win back most (+-25 %)", 0.10, 0.25, comparisons=3),
)


@dataclass(frozen=True)
class Arm:
    name: str
    server: str  # key of the nginx instance
    tool: str  # ab | wrk | s_time
    tls: str | None  # None (HTTP), "TLSv1.2", "TLSv1.3"
    keepalive: bool = False
    resume: bool = False
    signature: str | None = None  # the calibration key of the certificate's signature (full handshakes)


ARMS = (
    Arm(BASELINE, "rsa", "ab", None),
    Arm("HTTP keep-alive", "rsa", "wrk", None, keepalive=True),
    Arm(FULL, "rsa", "ab", "TLSv1.2", signature="rsa2048_sign_us"),
    Arm("TLS 1.2 full, ECDSA", "ecdsa", "ab", "TLSv1.2", signature="ecdsa_p256_sign_us"),
    Arm("TLS 1.3 full, RSA", "rsa", "ab", "TLSv1.3", signature="rsa2048_sign_us"),
    Arm("TLS 1.3 full, ECDSA", "ecdsa", "ab", "TLSv1.3", signature="ecdsa_p256_sign_us"),
    Arm("TLS 1.2 full, RSA (s_time)", "rsa", "s_time", "TLSv1.2", signature="rsa2048_sign_us"),
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
_FULL_RSA = (("rsa2048_sign_us", 1), ("x25519_derive_us", 2))  # a signature, an X25519 key made and derived
_FULL_ECDSA = (("ecdsa_p256_sign_us", 1), ("x25519_derive_us", 2))
CRYPTO = tuple(
    CryptoBound(arm, BASELINE, "server_cpu_us_per_op", prims, "per request")
    for arm, prims in (
        (FULL, _FULL_RSA),
        ("TLS 1.2 full, ECDSA", _FULL_ECDSA),
        ("TLS 1.3 full, RSA", _FULL_RSA),
        ("TLS 1.3 full, ECDSA", _FULL_ECDSA),
        ("TLS 1.3 resumed, session cache", (("x25519_derive_us", 2),)),  # TLS 1.3 resumes with a fresh ECDHE
        ("TLS 1.3 resumed, ticket", (("x25519_derive_us", 2),)),
        ("TLS 1.2 resumed, session cache", ()),
    )
)
# arms claimed to win back most of a full handshake's CPU (registered as recovery:<arm>; the cache and the
# ticket are remedies the original names, ECDSA and keep-alive the suite's own)
RECOVERY_CLAIMS = (
    "TLS 1.2 full, ECDSA",
    "TLS 1.2 resumed, session cache",
    "TLS 1.2 resumed, ticket",
    "HTTPS keep-alive",
)


@dataclass
class Params(StudyParams):
    repetitions: int = param(2, "measured rounds at most (each runs every arm once per cell)", min=1, max=1000)
    min_rounds: int = param(2, "rounds before the first look at the claims (sequential design)", min=2, max=1000)
    warmup: int = param(0, "warm-up rounds, kept and marked, never analysed", min=0, max=10)
    experiment_id: str = param(
        "https", "name of the experiment directories", pattern=r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}"
    )
    arms: list[str] = param(
        [a.name for a in ARMS], "arms to run", choices=tuple(a.name for a in ARMS), min_items=1, max_items=len(ARMS)
    )
    run_seconds: int = param(1, "seconds per load run (ab -t, wrk -d, s_time -time)", min=1, max=3600)
    concurrency: int = param(4, "ab -c / wrk connections / s_time processes (the original: ab -c 100)", min=1, max=1000)
    max_requests: int = param(1_000_000, "ab -n: each run is bounded in count as well as time", min=1, max=100_000_000)
    client_cpus: str = param(
        "auto",
        "CPUs for the load clients: auto (the core nginx is not on), empty (no pinning), or a list like 1",
        pattern=r"auto|[0-9,\-]*",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.client_cpus == "auto":
            self.client_cpus = "1" if (os.cpu_count() or 1) > 1 else ""

    def planned_runs(self) -> int:
        return len(self.arms) * (self.repetitions + self.warmup + 1)


# -- running ------------------------------------------------------------------------------------------
def _load(arm: Arm, server: Any, p: Params):
    from ..workloads import http

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


NOTES = [
    "ab is single-threaded and pays a full handshake's client crypto per request: full-handshake arms are usually "
    "client-bound, so their requests/s is the client's limit; server CPU per request is not",
    "resumed arms use openssl s_time -reuse (ab never resumes); every arm's resumption is checked in nginx's log",
]


def run(p: Params) -> StudyResult:
    from ..servers import NginxServer
    from ..workloads import http

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
            judge=part_claims,
            ops_metric="requests",
        )

    return run_parts(p, STUDY, [STUDY], plan)


# -- claims ---------------------------------------------------------------------------------------------
def recovery(
    runs: pd.DataFrame, candidate: str, alpha: float = 0.05, family: int = 1
) -> tuple[float, float, float, int]:
    """Share of a full handshake's extra server CPU (over plain HTTP) that candidate wins back, per round
    1 - (candidate - HTTP) / (full - HTTP); the mean over rounds with its t interval, and the rounds."""
    from ..compare import per_round
    from ..stats import mean_interval

    t = per_round(runs, "server_cpu_us_per_op", [BASELINE, FULL, candidate])
    if not len(t):
        return float("nan"), float("nan"), float("nan"), 0
    rec = 1 - (t[candidate] - t[BASELINE]) / (t[FULL] - t[BASELINE])
    mean, lo, hi, _, n = mean_interval(rec.to_numpy(dtype=float), 1 - alpha / family)
    return mean, lo, hi, n


FULL_CLAIM = RatioClaim(  # words, metric and reading: data/claims/registry.yaml, as for the recovery claims
    STUDY,
    "full-handshake",
    BASELINE,
    FULL,
    measure="server CPU us per request (TLS 1.2, RSA-2048, ab), per run",
    engine_note="nginx + OpenSSL 3.0, not a Go service",
    unit="us",
)


def part_claims(runs: pd.DataFrame, alpha: float = 0.05) -> list[ClaimVerdict]:
    out = []
    arms = set(runs["arm"]) if len(runs) else set()
    full = FULL_CLAIM.check(runs, alpha)
    if full is not None:
        out.append(full)
    for cand in RECOVERY_CLAIMS:
        if {BASELINE, FULL, cand} <= arms:
            point, lo, hi, n = recovery(runs, cand, alpha)
            claim = registry.get(STUDY, f"recovery:{cand}")
            sets = (([(lo, hi)], None),)
            v = claim.decide(*sets) if n >= 2 else Verdict.INCONCLUSIVE
            out.append(
                verdict_of(
                    STUDY,
                    claim.id,
                    v,
                    f"recovers {point * 100:.0f} % of the extra CPU "
                    f"[{(1 - alpha) * 100:.4g} % CI {lo * 100:.0f}, {hi * 100:.0f}]; "
                    f"n={n} rounds, t interval of the per-round share",
                    engine_note="nginx + OpenSSL 3.0",
                    ratio=point,
                    ci_low=lo,
                    ci_high=hi,
                    needs=[{"arm": a} for a in (BASELINE, FULL, cand)],
                    intervals=sets if n >= 2 else (),
                    rounds=n,
                )
            )
    return out


def claims(result: StudyResult) -> list[ClaimVerdict]:
    return study_verdicts(result, lambda part: part_claims)


# -- tables and figures ------------------------------------------------------------------------------------
def summary(part: Part) -> pd.DataFrame:
    from ..tables import summarize_runs

    runs = part.runs()
    cols = ["server_cpu_us_per_op", "rps", "client_cpu_cores", "server_resumed_fraction"]
    return summarize_runs(runs, cols, ["arm"])


def commands(part: Part) -> pd.DataFrame:
    import pandas as pd

    seen: dict[str, str] = {}
    for r in part.store.records():
        seen.setdefault(r.arm, r.info.get("command", ""))
    return pd.DataFrame({"arm": list(seen), "command (one run)": list(seen.values())})


def resumption_check(part: Part) -> pd.DataFrame:
    """Per arm: what nginx logged. Resumed arms must show resumption, full-handshake arms must not."""
    import pandas as pd

    runs = part.runs()
    rows = []
    for a in ARMS:
        if a.name not in part.arms or a.tls is None or a.keepalive or "server_resumed_fraction" not in runs:
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
    return pd.DataFrame(rows, columns=["arm", "expected", "server-logged resumed fraction (min-max)", "as expected"])


def crypto_share(part: Part) -> pd.DataFrame:
    """How much of a full handshake's extra server CPU the certificate's signature explains, in us and in
    signatures of this machine (the calibration)."""
    import numpy as np
    import pandas as pd

    cal = part.extras.get("calibration", {})
    s = summary(part).set_index("arm")["server_cpu_us_per_op"] if len(part.runs()) else pd.Series(dtype=float)
    if BASELINE not in s:
        return pd.DataFrame()
    rows = []
    for arm in ARMS:
        if arm.signature and arm.name in s and arm.tool == "ab":
            extra = s[arm.name] - s[BASELINE]
            sign = cal.get(arm.signature, np.nan)
            rows.append(
                {
                    "arm": arm.name,
                    "server CPU per request (us)": s[arm.name],
                    "over plain HTTP (us)": extra,
                    "= signatures of this machine": extra / sign if sign else np.nan,
                    "signature, openssl speed (us)": sign,
                    "X25519 key exchange (us)": cal.get("x25519_derive_us"),
                    "signature share of the extra %": 100 * sign / extra if extra > 0 else np.nan,
                }
            )
    return pd.DataFrame(rows)


def figures(part: Part) -> list[tuple[Any, str]]:
    from .. import plots

    table = summary(part)
    if not len(table):
        return []
    return [
        (
            plots.bar_with_ci(
                table.sort_values("server_cpu_us_per_op"),
                x="arm",
                y="server_cpu_us_per_op",
                lo="server_cpu_us_per_op_ci_low",
                hi="server_cpu_us_per_op_ci_high",
                title="Server CPU per request",
                ylabel="us of nginx CPU per request",
            ),
            "What each request costs the server: full handshakes dwarf plain HTTP; resumption, "
            "ECDSA and keep-alive each cut it. Error bars are 95 % CIs of the median over runs.",
        ),
        (
            plots.bar_with_ci(
                table.sort_values("rps"),
                x="arm",
                y="rps",
                lo="rps_ci_low",
                hi="rps_ci_high",
                title="Requests per second (client-bound arms show the client's limit)",
                ylabel="requests / s",
            ),
            "Throughput as the load clients saw it; see the client-bound "
            "column before reading a bar as the server's capacity.",
        ),
    ]


def published_table() -> pd.DataFrame:
    return published(STUDY)
