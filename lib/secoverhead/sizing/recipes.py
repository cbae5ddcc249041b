"""What prices each line of a calculation: which measured comparison (arm minus baseline, on which metric, in
which cell of which study's runs), what cryptography that extra holds, and how many round trips it adds.

Declared from the inputs and what the runs hold (arms, factor levels), before any number is read: the numbers
never choose the recipe. Where the exact configuration was not measured, a neighbour is used and the line says
so (an ECDSA handshake priced from an RSA one with the signature swapped; TLS 1.2 from TLS 1.3's CPU)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from secoverhead.core.errors import ConfigError
from secoverhead.sizing.scaling import Primitives
from secoverhead.sizing.sources import Experiment, Source

if TYPE_CHECKING:
    from secoverhead.sizing.declarations import Params

SIGN = {"rsa": "rsa2048_sign_us", "ecdsa": "ecdsa_p256_sign_us"}
KEY_NAME = {"rsa": "RSA-2048", "ecdsa": "ECDSA P-256"}
ECDHE = ("x25519_derive_us", 2)  # an X25519 key made and derived
# Round trips a full handshake adds before the first byte of a request: TLS 1.3 one, TLS 1.2 two; resuming,
# one either way (no 0-RTT here).
FULL_RTT = {"1.3": 1, "1.2": 2}
RESUMED_RTT = 1
# FerretDB answers SCRAM in three round trips (saslStart, two saslContinue; no speculative authentication). A
# MongoDB 4.4+ server with speculative authentication saves one.
SCRAM_RTT = 3
PAGE = "aes_256_ctr_page_as_server_us"
LOG_BYTE = "aes_256_ctr_ns_per_byte"


@dataclass(frozen=True)
class Measure:
    """One paired comparison a line is priced by: arm minus baseline on metric, in one cell of one part."""

    study: str
    part: str
    arm: str
    baseline: str
    metric: str
    cell: tuple[tuple[str, str], ...] = ()
    primitives: Primitives = ()  # the cryptography in the arm's extra, per operation (calibration keys)
    to_primitives: Primitives | None = None  # the configuration priced, where a neighbour was measured
    pages: bool = False  # TDE: the extra's cryptography is the arm's pages and log bytes per transaction


@dataclass(frozen=True)
class Line:
    """One line of the calculation: a rate times a measured extra cost per operation."""

    key: str
    feature: str
    label: str
    driver: str  # the input(s) the rate is made of, in words
    rate: float  # operations per second
    per: str  # what one operation is
    measures: tuple[Measure, ...]  # summed: a read-write transaction priced as a read-only plus a write-only one
    round_trips: float = 0.0
    side: str = "server"  # server | client (the application's hosts: not in the server's cores)
    notes: tuple[str, ...] = ()


def _cell(exp: Experiment, **wanted: str) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in wanted.items() if k in exp.levels)


def _nearest(levels: set[str], target: float) -> str:
    """The measured level nearest to target on a log scale (thread counts, cores)."""
    return min(levels, key=lambda v: (abs(math.log(float(v)) - math.log(max(target, 1e-9))), float(v)))


def _need(src: Mapping[str, Source], study: str, part: str) -> Experiment:
    exp = src[study].experiment(part)
    if exp is None:
        have = ", ".join(sorted(src[study].experiments)) or "none"
        raise ConfigError(f"{src[study].run_dir}: no {part!r} experiment (it has: {have}); name another {study} run")
    return exp


def _arm(src: Mapping[str, Source], study: str, part: str, *arms: str) -> str:
    exp = _need(src, study, part)
    for arm in arms:
        if arm in exp.arms:
            return arm
    raise ConfigError(
        f"{src[study].run_dir}: {part} did not measure {' or '.join(repr(a) for a in arms)} (it has: "
        f"{', '.join(sorted(exp.arms))}); run {study} with that arm, or name a run that has it"
    )


def _db_tls(p: Params, src: Mapping[str, Source], new_conn: float) -> list[Line]:
    part = "MySQL" if p.engine == "mysql" else "MongoDB"
    out: list[Line] = []
    if new_conn > 0:
        arm, measured_sign, notes = _tls_arm(p, src, part)
        sign = SIGN[p.tls_key]
        what = f"TLS {p.tls_version} ({KEY_NAME[p.tls_key]})"
        setup = Measure(
            "tls",
            part,
            arm,
            "no TLS",
            "connection_server_cpu_us_per_op",
            primitives=((measured_sign, 1), ECDHE),
            to_primitives=((sign, 1), ECDHE),
        )
        client = Measure("tls", part, arm, "no TLS", "connection_client_cpu_us_per_op")
        driver = "new_connections_per_s x (1 - pooled_share)"
        out += [
            Line(
                "tls_setup",
                "tls",
                f"{what} handshakes on new connections",
                driver,
                new_conn,
                "connection",
                (setup,),
                FULL_RTT[p.tls_version],
                notes=notes,
            ),
            Line(
                "tls_client",
                "tls",
                f"{what} handshakes, on your clients",
                driver,
                new_conn,
                "connection",
                (client,),
                side="client",
                notes=notes,
            ),
        ]
    if p.reused_queries_per_s > 0:
        reused = Measure("tls", part, _arm(src, "tls", part, "TLS"), "no TLS", "reused_server_cpu_us_per_op")
        out.insert(
            1,
            Line(
                "tls_reused",
                "tls",
                "TLS on queries over open connections",
                "reused_queries_per_s",
                p.reused_queries_per_s,
                "query",
                (reused,),
            ),
        )
    return out


def _tls_arm(p: Params, src: Mapping[str, Source], part: str) -> tuple[str, str, tuple[str, ...]]:
    """The arm a database handshake is priced from, the signature it measured, and what was substituted."""
    exp = _need(src, "tls", part)
    names = {("1.3", "rsa"): "TLS", ("1.3", "ecdsa"): "TLS ECDSA", ("1.2", "rsa"): "TLS 1.2"}
    want = names.get((p.tls_version, p.tls_key))
    if want in exp.arms:
        return want, SIGN[p.tls_key], ()
    # a neighbour: the same version with the other key (signature swapped), else the other version's CPU
    same_version = [(a, k) for (v, k), a in names.items() if v == p.tls_version and a in exp.arms]
    same_key = [(a, k) for (v, k), a in names.items() if k == p.tls_key and a in exp.arms]
    arm, key = (same_version or same_key or [(_arm(src, "tls", part, *names.values()), "rsa")])[0]
    how = (
        f", its {KEY_NAME[key]} signature swapped for {KEY_NAME[p.tls_key]}"
        if key != p.tls_key
        else "'s CPU (the same cryptography; the round trips are TLS " + p.tls_version + "'s)"
    )
    return (
        arm,
        SIGN[key],
        (
            f"TLS {p.tls_version} with {KEY_NAME[p.tls_key]} was not measured on {part}: priced "
            f"from the '{arm}' arm{how}",
        ),
    )


def _scram(p: Params, src: Mapping[str, Source], new_conn: float) -> list[Line]:
    if new_conn <= 0:
        return []
    exp = _need(src, "auth", "MongoDB")
    arm = _arm(src, "auth", "MongoDB", p.scram_mechanism)
    cell = _cell(exp, concurrency=_nearest(exp.levels.get("concurrency", {"1"}), p.concurrency))
    pbkdf2 = {"SCRAM-SHA-256": "pbkdf2_sha256_15000_ms", "SCRAM-SHA-1": "pbkdf2_sha1_10000_ms"}[p.scram_mechanism]
    driver = "new_connections_per_s x (1 - pooled_share)"
    return [
        Line(
            "scram",
            "scram",
            f"{p.scram_mechanism} on new connections",
            driver,
            new_conn,
            "connection",
            (Measure("auth", "MongoDB", arm, "auth off", "server_cpu_us_per_op", cell),),
            SCRAM_RTT,
        ),
        Line(
            "scram_client",
            "scram",
            f"{p.scram_mechanism} key derivation (PBKDF2), on your clients",
            driver,
            new_conn,
            "connection",
            (Measure("auth", "MongoDB", arm, "auth off", "client_cpu_us_per_op", cell, ((pbkdf2, 1),)),),
            side="client",
        ),
    ]


def tde_profile(p: Params, src: Mapping[str, Source]) -> str:
    if p.tde_profile != "auto":
        return p.tde_profile
    measured = [k for k in ("4c16g", "8c32g") if src["tde"].experiment(k)]
    if not measured:
        raise ConfigError(f"{src['tde'].run_dir}: no emulated instance (4c16g, 8c32g) was measured")
    return min(measured, key=lambda k: (abs(math.log(int(k[0]) / p.cores)), k))


def _tde(p: Params, src: Mapping[str, Source]) -> list[Line]:
    if p.read_only_tps + p.read_write_tps + p.write_only_tps <= 0:
        return []
    prof = tde_profile(p, src)
    exp = _need(src, "tde", prof)
    threads = _nearest(exp.levels.get("threads", {"1"}), p.concurrency)
    arm = _arm(src, "tde", prof, "encryption on")

    def m(workload: str) -> Measure:
        return Measure(
            "tde",
            prof,
            arm,
            "encryption off",
            "server_cpu_us_per_op",
            _cell(exp, workload=workload, threads=threads),
            pages=True,
        )

    workloads = exp.levels.get("workload", set())
    lines = []
    need_ro = p.read_only_tps > 0 or (p.read_write_tps > 0 and "oltp_read_write" not in workloads)
    need_wo = p.write_only_tps > 0 or (p.read_write_tps > 0 and "oltp_read_write" not in workloads)
    for key, kind, rate, need in (
        ("read_only", "read-only", p.read_only_tps, need_ro),
        ("write_only", "write-only", p.write_only_tps, need_wo),
    ):
        if not need:
            continue
        if f"oltp_{key}" not in workloads:
            raise ConfigError(f"{src['tde'].run_dir}: {prof} did not measure oltp_{key}; name a tde run that did")
        if rate > 0:
            lines.append(
                Line(
                    f"tde_{key}",
                    "encryption_at_rest",
                    f"encryption at rest, {kind} transactions",
                    f"{key}_tps",
                    rate,
                    "transaction",
                    (m(f"oltp_{key}"),),
                )
            )
    notes: tuple[str, ...] = ()
    rw: tuple[Measure, ...]
    if "oltp_read_write" in workloads:
        rw = (m("oltp_read_write"),)
    else:  # sysbench's read-write transaction is the read-only one's queries and the write-only one's, in one
        rw = (m("oltp_read_only"), m("oltp_write_only"))
        notes = (
            "read-write not measured: priced as a read-only transaction plus a write-only one (sysbench's "
            "oltp_read_write runs both sets of queries in one transaction)",
        )
    if p.read_write_tps > 0:
        lines.append(
            Line(
                "tde_read_write",
                "encryption_at_rest",
                "encryption at rest, read-write transactions",
                "read_write_tps",
                p.read_write_tps,
                "transaction",
                rw,
                notes=notes,
            )
        )
    common = f"the {prof} profile at {threads} thread(s), the measured level nearest your concurrency {p.concurrency}"
    return [Line(**{**ln.__dict__, "notes": (*ln.notes, common)}) for ln in lines]


def _audit(p: Params, src: Mapping[str, Source]) -> list[Line]:
    if p.audited_statements_per_s <= 0:
        return []
    arm = _arm(src, "audit", "audit", p.audit_approach)
    return [
        Line(
            "audit",
            "audit",
            f"auditing with {p.audit_approach}",
            "audited_statements_per_s",
            p.audited_statements_per_s,
            "statement",
            (Measure("audit", "audit", arm, "A: no audit", "server_cpu_us_per_query"),),
        )
    ]


def _https(p: Params, src: Mapping[str, Source]) -> list[Line]:
    v, key, rate = p.tls_version, p.tls_key, p.https_requests_per_s
    new, res = p.https_new_share, p.https_resumed_share
    out = []
    if rate * new > 0:
        full = _arm(src, "https", "https", f"TLS {v} full, {key.upper()}")
        out.append(
            Line(
                "https_full",
                "https",
                f"HTTPS full handshakes (TLS {v}, {KEY_NAME[key]})",
                "https_requests_per_s x https_new_share",
                rate * new,
                "request",
                (Measure("https", "https", full, "HTTP", "server_cpu_us_per_op", primitives=((SIGN[key], 1), ECDHE)),),
                FULL_RTT[v],
            )
        )
    if rate * res > 0:
        resumed = _arm(src, "https", "https", f"TLS {v} resumed, {p.resumption}")
        prims = (ECDHE,) if v == "1.3" else ()  # TLS 1.3 resumes with a fresh ECDHE
        out.append(
            Line(
                "https_resumed",
                "https",
                f"HTTPS resumed sessions (TLS {v}, {p.resumption})",
                "https_requests_per_s x https_resumed_share",
                rate * res,
                "request",
                (Measure("https", "https", resumed, "HTTP", "server_cpu_us_per_op", primitives=prims),),
                RESUMED_RTT,
            )
        )
    kept = rate * max(0.0, 1 - new - res)
    if kept > 0:
        keep = _arm(src, "https", "https", "HTTPS keep-alive")
        notes = (
            ("TLS 1.3 keep-alive measured: the cost of encrypting a kept connection's requests",) if v == "1.2" else ()
        )
        out.append(
            Line(
                "https_keepalive",
                "https",
                "HTTPS requests on kept-alive connections",
                "https_requests_per_s x (1 - new - resumed shares)",
                kept,
                "request",
                (Measure("https", "https", keep, "HTTP keep-alive", "server_cpu_us_per_op"),),
                notes=notes,
            )
        )
    return out


def lines(p: Params, src: Mapping[str, Source]) -> list[Line]:
    """Every line the inputs call for, each naming the comparison that prices it (ConfigError where the runs
    lack one)."""
    new_conn = p.new_connections_per_s * (1.0 - p.pooled_share)
    out: list[Line] = []
    if "tls" in p.features:
        out += _db_tls(p, src, new_conn)
    if "scram" in p.features:
        out += _scram(p, src, new_conn)
    if "encryption_at_rest" in p.features:
        out += _tde(p, src)
    if "audit" in p.features:
        out += _audit(p, src)
    if "https" in p.features:
        out += _https(p, src)
    for m in {m for ln in out for m in ln.measures}:  # the baseline too: every comparison has both arms
        _arm(src, m.study, m.part, m.baseline)
    return out
