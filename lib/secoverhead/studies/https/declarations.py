"""HTTPS study (seed 003): parameters, arms (handshake kinds) and the claims' plans."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from secoverhead.analysis.design import ClaimPlan
from secoverhead.core.params import override, param
from secoverhead.host.calibration import RESUMED_TLS13, SIGNATURE, CryptoBound, full_handshake
from secoverhead.studies.protocol.loads import Curve, LoadCurveParams
from secoverhead.studies.protocol.params import StudyParams
from secoverhead.studies.protocol.spec import Vocabulary

if TYPE_CHECKING:
    pass


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
    Arm(FULL, "rsa", "ab", "TLSv1.2", signature=SIGNATURE["rsa"]),
    Arm("TLS 1.2 full, ECDSA", "ecdsa", "ab", "TLSv1.2", signature=SIGNATURE["ecdsa"]),
    Arm("TLS 1.3 full, RSA", "rsa", "ab", "TLSv1.3", signature=SIGNATURE["rsa"]),
    Arm("TLS 1.3 full, ECDSA", "ecdsa", "ab", "TLSv1.3", signature=SIGNATURE["ecdsa"]),
    Arm("TLS 1.2 full, RSA (s_time)", "rsa", "s_time", "TLSv1.2", signature=SIGNATURE["rsa"]),
    Arm("TLS 1.2 resumed, session cache", "cache", "s_time", "TLSv1.2", resume=True),
    Arm("TLS 1.2 resumed, ticket", "tickets", "s_time", "TLSv1.2", resume=True),
    Arm("TLS 1.3 resumed, session cache", "cache", "s_time", "TLSv1.3", resume=True),
    Arm("TLS 1.3 resumed, ticket", "tickets", "s_time", "TLSv1.3", resume=True),
    Arm("HTTPS keep-alive", "rsa", "wrk", "TLSv1.3", keepalive=True),
)


# The load curves' arms (load_rates): a kept-alive request over TLS 1.3 against one over plain HTTP, a new
# connection's full TLS 1.3 handshake (RSA) against a plain one, as the calculator prices HTTPS
LOAD_ARMS = {"query": ("HTTPS keep-alive", "HTTP keep-alive"), "new": ("TLS 1.3 full, RSA", BASELINE)}


def load_curves(p: Params) -> list[Curve]:
    return [
        Curve(kind, "request", *LOAD_ARMS[kind], tuple(float(r) for r in rates), p.load_seconds, p.load_pairs)
        for kind, rates in p.load_rates.items()
    ]


SERVERS = {
    "rsa": {"cert_type": "rsa"},
    "ecdsa": {"cert_type": "ecdsa"},
    "cache": {"cert_type": "rsa", "session_tickets": False},
    "tickets": {"cert_type": "rsa", "session_cache": False},
}


CRYPTO = tuple(
    CryptoBound(arm, BASELINE, "server_cpu_us_per_op", prims, "per request")
    for arm, prims in (
        (FULL, full_handshake("rsa")),
        ("TLS 1.2 full, ECDSA", full_handshake("ecdsa")),
        ("TLS 1.3 full, RSA", full_handshake("rsa")),
        ("TLS 1.3 full, ECDSA", full_handshake("ecdsa")),
        ("TLS 1.3 resumed, session cache", RESUMED_TLS13),
        ("TLS 1.3 resumed, ticket", RESUMED_TLS13),
        ("TLS 1.2 resumed, session cache", ()),
    )
)


# The names other code asks for by role: "full 1.3 rsa", "resumed 1.2 ticket", ... (the calculator prices HTTPS
# from them, the rule of thumb reads the full ECDHE-RSA handshake).
VOCABULARY = Vocabulary(
    parts={STUDY: tuple(a.name for a in ARMS)},
    roles={"http": BASELINE, "http keep-alive": "HTTP keep-alive", "https keep-alive": "HTTPS keep-alive"}
    | {
        f"full {a.tls[-3:]} {'rsa' if a.signature == SIGNATURE['rsa'] else 'ecdsa'}": a.name
        for a in ARMS
        if a.signature and a.tool == "ab"
    }
    | {
        f"resumed {a.tls[-3:]} {'ticket' if a.server == 'tickets' else 'session cache'}": a.name
        for a in ARMS
        if a.resume
    },
    metrics={"server cpu per request": "server_cpu_us_per_op"},
    crypto=CRYPTO,
)


@dataclass
class Params(StudyParams, LoadCurveParams):
    STUDY, PLANS, PRIMARY_METRICS = STUDY, PLANS, PRIMARY_METRICS  # the study's facts, declared above
    repetitions: int = override(StudyParams, "repetitions", 2)
    min_rounds: int = override(StudyParams, "min_rounds", 2)
    warmup: int = override(StudyParams, "warmup", 0)
    arms: list[str] = param(
        [a.name for a in ARMS], "arms to run", choices=tuple(a.name for a in ARMS), items=(1, len(ARMS))
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
        self.check_loads()
        if self.client_cpus == "auto":
            self.client_cpus = "1" if (os.cpu_count() or 1) > 1 else ""

    def planned_runs(self) -> int:
        return len(self.arms) * (self.repetitions + self.warmup + 1)
