"""What prices each line of a calculation: which measured comparison (arm minus baseline, on which metric, in
which cell of which study's runs), what cryptography that extra holds, and how many round trips it adds.

Declared from the inputs and what the runs hold (arms, factor levels), before any number is read: the numbers
never choose the recipe. Where the exact configuration was not measured, a neighbour is used and the line says
so (an ECDSA handshake priced from an RSA one with the signature swapped; TLS 1.2 from TLS 1.3's CPU). Every arm,
part and metric comes from the studies' vocabularies (the registry): a study renaming an arm renames it here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from secoverhead.core.errors import ConfigError
from secoverhead.host.calibration import KEY_NAME, RESUMED_TLS13, full_handshake
from secoverhead.sizing.scaling import Primitives
from secoverhead.sizing.sources import Measured, Source, your_cores
from secoverhead.studies import STUDIES

if TYPE_CHECKING:
    from secoverhead.sizing.declarations import Params

TLS, AUTH, TDE, AUDIT, HTTPS = (STUDIES[s].vocabulary for s in ("tls", "auth", "tde", "audit", "https"))
# Round trips a full handshake adds before the first byte of a request: TLS 1.3 one, TLS 1.2 two; resuming,
# one either way (no 0-RTT here).
FULL_RTT = {"1.3": 1, "1.2": 2}
RESUMED_RTT = 1
# mongod 4.2 (the auth study's build) answers SCRAM in three round trips (saslStart, two saslContinue; no
# speculative authentication), as FerretDB does. A MongoDB 4.4+ server with speculative authentication saves one.
SCRAM_RTT = 3
PAGE = "aes_256_ctr_page_as_server_us"
LOG_BYTE = "aes_256_ctr_ns_per_byte"
NEW_CONNECTIONS = "new_connections_per_s x (1 - pooled_share)"
# The end-to-end check (benchmarks/calculator_check.py, README): a statement or a query priced as its study measures
# it, back to back, holds where the server is that busy (server_audit at 8,000/s: 1.04 of the price) and costs more
# on a quieter one (2,000/s: 3.3 times; TLS's queries paced, 4.4 times): a floor. Handshakes held paced (1.07).
# A SCRAM login, priced from clients logging in back to back with PBKDF2 on a machine they saturate, cost mongod
# half of it paced (0.46-0.51 at 120 and 170 logins/s; auth off cost the same paced and back to back): a ceiling.
BUSY_PRICE = {
    "floor": "priced as measured back to back: holds on a busy server, a floor on a quieter one",
    "ceiling": "priced as measured with clients logging in back to back on a machine they saturate: a ceiling on "
    "a quieter server",
}


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
    # the user's rate of the operation and their server's cores (None: unknown), where the part measured a load
    # curve for the arm: priced at that load (sizing/curves.py), else as measured back to back
    load_rate: float | None = None
    load_cores: float | None = None
    load_kind: str = "query"  # the operation the curve paces (studies/protocol/loads.py): "query" or "new"


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
    busy_price: str = ""  # what its back-to-back price is on a quieter server (BUSY_PRICE), as checked end to end

    def __post_init__(self) -> None:
        if self.busy_price and BUSY_PRICE[self.busy_price] not in self.notes:
            object.__setattr__(self, "notes", (*self.notes, BUSY_PRICE[self.busy_price]))


def _cell(exp: Measured, **wanted: str) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in wanted.items() if k in exp.levels)


def _nearest(levels: set[str], target: float) -> str:
    """The measured level nearest to target on a log scale (thread counts, cores)."""
    return min(levels, key=lambda v: (abs(math.log(float(v)) - math.log(max(target, 1e-9))), float(v)))


def _need(src: Mapping[str, Source], study: str, part: str) -> Measured:
    exp = src[study].experiment(part)
    if exp is None:
        have = ", ".join(sorted(src[study].experiments)) or "none"
        raise ConfigError(
            f"{src[study].run_dir}: no {part!r} experiment in it or the {study} runs of its scale before it (they "
            f"have: {have}); run {study} with that part, or name a run that has it"
        )
    return exp


def _arm(src: Mapping[str, Source], study: str, part: str, *arms: str) -> str:
    exp = _need(src, study, part)
    for arm in arms:
        if arm in exp.arms:
            return arm
    raise ConfigError(
        f"{src[study].run_of(part)}: {part} did not measure {' or '.join(repr(a) for a in arms)} (it has: "
        f"{', '.join(sorted(exp.arms))}); run {study} with that arm, or name a run that has it"
    )


def _db_tls(
    p: Params, src: Mapping[str, Source], new_conn: float, calibration: Mapping[str, Any] | None = None
) -> list[Line]:
    """Handshakes on new connections (the server's and your clients'), and TLS on queries over open ones."""
    cores, _ = your_cores(p.cores, calibration or {})
    out = _tls_handshakes(p, src, new_conn, cores) if new_conn > 0 else []
    if p.reused_queries_per_s > 0:
        part = TLS[p.engine]
        arm = _arm(src, "tls", part, TLS["tls 1.3 rsa"])
        reused = Measure("tls", part, arm, TLS["no tls"], TLS.metric("server cpu per reused query"),
                         load_rate=p.reused_queries_per_s, load_cores=cores)  # fmt: skip
        line = Line("tls_reused", "tls", "TLS on queries over open connections", "reused_queries_per_s",
                    p.reused_queries_per_s, "query", (reused,), busy_price="floor")  # fmt: skip
        out.insert(1, line)
    return out


def _tls_handshakes(p: Params, src: Mapping[str, Source], new_conn: float, cores: float | None) -> list[Line]:
    part, base = TLS[p.engine], TLS["no tls"]
    arm, measured_key, notes = _tls_arm(p, src, part)
    what = f"TLS {p.tls_version} ({KEY_NAME[p.tls_key]})"
    setup = Measure("tls", part, arm, base, TLS.metric("server cpu per connection"),
                    primitives=full_handshake(measured_key), to_primitives=full_handshake(p.tls_key),
                    load_rate=new_conn, load_cores=cores, load_kind="new")  # fmt: skip
    client = Measure("tls", part, arm, base, TLS.metric("client cpu per connection"))
    return [
        Line(
            "tls_setup",
            "tls",
            f"{what} handshakes on new connections",
            NEW_CONNECTIONS,
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
            NEW_CONNECTIONS,
            new_conn,
            "connection",
            (client,),
            side="client",
            notes=notes,
        ),
    ]


def _tls_arm(p: Params, src: Mapping[str, Source], part: str) -> tuple[str, str, tuple[str, ...]]:
    """The arm a database handshake is priced from, the key its certificate had, and what was substituted."""
    exp = _need(src, "tls", part)
    names = {(v, k): TLS[f"tls {v} {k}"] for v, k in (("1.3", "rsa"), ("1.3", "ecdsa"), ("1.2", "rsa"))}
    want = names.get((p.tls_version, p.tls_key))
    if want in exp.arms:
        return want, p.tls_key, ()
    # a neighbour: the same version with the other key (signature swapped), else the other version's CPU
    same_version = [(a, k) for (v, k), a in names.items() if v == p.tls_version and a in exp.arms]
    same_key = [(a, k) for (v, k), a in names.items() if k == p.tls_key and a in exp.arms]
    arm, key = (same_version or same_key or [(_arm(src, "tls", part, *names.values()), "rsa")])[0]
    how = (
        f", its {KEY_NAME[key]} signature swapped for {KEY_NAME[p.tls_key]}"
        if key != p.tls_key
        else "'s CPU (the same cryptography; the round trips are TLS " + p.tls_version + "'s)"
    )
    why = f"TLS {p.tls_version} with {KEY_NAME[p.tls_key]} was not measured on {part}: priced from the '{arm}' arm{how}"
    return arm, key, (why,)


def _scram(
    p: Params, src: Mapping[str, Source], new_conn: float, calibration: Mapping[str, Any] | None = None
) -> list[Line]:
    if new_conn <= 0:
        return []
    part = AUTH["mongodb"]
    exp = _need(src, "auth", part)
    arm = _arm(src, "auth", part, AUTH[f"mechanism {p.scram_mechanism}"])
    cell = _cell(exp, concurrency=_nearest(exp.levels.get("concurrency", {"1"}), p.concurrency))
    base, client = AUTH["no authentication"], AUTH.metric("client cpu per connection")
    derive = AUTH.primitives(arm, client)  # the client's key derivation (PBKDF2), as the study declares it
    return [
        Line(
            "scram",
            "scram",
            f"{p.scram_mechanism} on new connections",
            NEW_CONNECTIONS,
            new_conn,
            "connection",
            (
                Measure(
                    "auth",
                    part,
                    arm,
                    base,
                    AUTH.metric("server cpu per connection"),
                    cell,
                    load_rate=new_conn,
                    load_cores=your_cores(p.cores, calibration or {})[0],
                    load_kind="new",
                ),
            ),
            SCRAM_RTT,
            busy_price="ceiling",
        ),
        Line(
            "scram_client",
            "scram",
            f"{p.scram_mechanism} key derivation (PBKDF2), on your clients",
            NEW_CONNECTIONS,
            new_conn,
            "connection",
            (Measure("auth", part, arm, base, client, cell, derive),),
            side="client",
        ),
    ]


def tde_instance(p: Params, src: Mapping[str, Source], calibration: Mapping[str, Any]) -> str:
    """The emulated instance whose TDE costs price the line: the one asked for, or the measured one nearest the
    user's cores (the smallest measured when their cores are not known)."""
    if p.tde_instance != "auto":
        return p.tde_instance
    original = TDE.group("original instances")
    measured = [k for k in original if src["tde"].experiment(k)]
    if not measured:
        raise ConfigError(f"{src['tde'].run_dir}: no emulated instance ({', '.join(original)}) was measured")
    cores, _ = your_cores(p.cores, calibration)
    return min(measured, key=lambda k: (abs(math.log(int(k[0]) / cores)) if cores else int(k[0]), k))


def _tde(p: Params, src: Mapping[str, Source], calibration: Mapping[str, Any]) -> list[Line]:
    if p.read_only_tps + p.read_write_tps + p.write_only_tps <= 0:
        return []
    instance = tde_instance(p, src, calibration)
    exp = _need(src, "tde", instance)
    threads = _nearest(exp.levels.get("threads", {"1"}), p.concurrency)
    arm = _arm(src, "tde", instance, TDE["encrypted"])

    def m(workload: str) -> Measure:
        cell = _cell(exp, workload=workload, threads=threads)
        return Measure(
            "tde", instance, arm, TDE["not encrypted"], TDE.metric("server cpu per transaction"), cell, pages=True
        )

    workloads = exp.levels.get("workload", set())
    lines = [
        Line(
            f"tde_{key}",
            "encryption_at_rest",
            f"encryption at rest, {kind} transactions",
            f"{key}_tps",
            rate,
            "transaction",
            (m(f"oltp_{key}"),),
        )
        for key, kind, rate in _tde_needs(p, src, instance, workloads)
        if rate > 0
    ]
    if p.read_write_tps > 0:
        lines.append(_tde_read_write(p, m, workloads))
    common = (
        f"the {instance} instance at {threads} thread(s), the measured level nearest your concurrency {p.concurrency}"
    )
    return [replace(ln, notes=(*ln.notes, common)) for ln in lines]


def _tde_needs(
    p: Params, src: Mapping[str, Source], instance: str, workloads: set[str]
) -> list[tuple[str, str, float]]:
    """The read-only and write-only lines the inputs need (a read-write one not measured needs both), each
    workload checked to have been measured."""
    split_rw = p.read_write_tps > 0 and "oltp_read_write" not in workloads
    needs = []
    for key, kind, rate in (
        ("read_only", "read-only", p.read_only_tps),
        ("write_only", "write-only", p.write_only_tps),
    ):
        if rate > 0 or split_rw:
            if f"oltp_{key}" not in workloads:
                raise ConfigError(
                    f"{src['tde'].run_of(instance)}: {instance} did not measure oltp_{key}; name a tde run that did"
                )
            needs.append((key, kind, rate))
    return needs


def _tde_read_write(p: Params, m: Callable[[str], Measure], workloads: set[str]) -> Line:
    """Read-write transactions: measured, or priced as a read-only one plus a write-only one (sysbench's
    oltp_read_write runs both sets of queries in one transaction)."""
    if "oltp_read_write" in workloads:
        rw, notes = (m("oltp_read_write"),), ()
    else:
        rw = (m("oltp_read_only"), m("oltp_write_only"))
        notes = (
            "read-write not measured: priced as a read-only transaction plus a write-only one (sysbench's "
            "oltp_read_write runs both sets of queries in one transaction)",
        )
    return Line(
        "tde_read_write",
        "encryption_at_rest",
        "encryption at rest, read-write transactions",
        "read_write_tps",
        p.read_write_tps,
        "transaction",
        rw,
        notes=notes,
    )


# A log written under one lock can cost TPS by making threads wait (the original's general_log: ~30 % of TPS while
# CPU use fell): that is not CPU, so no price in cores holds it. The audit report says whether it could be tested.
WAITING_NOT_PRICED = (
    "the CPU the log adds; a loss of throughput by threads waiting on the log is not CPU and not in it (the audit "
    "report's verdicts say whether the machine that measured it could show one)"
)


def audit_part(approach: str) -> str:
    """The audit study's part (server build) an approach ran on (MySQL's approaches, MariaDB's server_audit)."""
    return next((x for x, arms in AUDIT.parts.items() if approach in arms), next(iter(AUDIT.parts)))


def _audit(p: Params, src: Mapping[str, Source], calibration: Mapping[str, Any] | None = None) -> list[Line]:
    if p.audited_statements_per_s <= 0:
        return []
    part = audit_part(p.audit_approach)
    arm = _arm(src, "audit", part, p.audit_approach)  # each approach against its own engine's baseline
    cores, _ = your_cores(p.cores, calibration or {})
    measure = Measure("audit", part, arm, AUDIT["no audit"], AUDIT.metric("server cpu per query"),
                      load_rate=p.audited_statements_per_s, load_cores=cores)  # fmt: skip
    return [
        Line(
            "audit",
            "audit",
            f"auditing with {p.audit_approach}",
            "audited_statements_per_s",
            p.audited_statements_per_s,
            "statement",
            (measure,),
            busy_price="floor",
            notes=(WAITING_NOT_PRICED,),
        )
    ]


def _https(p: Params, src: Mapping[str, Source], calibration: Mapping[str, Any] | None = None) -> list[Line]:
    """Full handshakes, resumptions and kept-alive requests, each priced against plain HTTP's own kind."""
    v, key, rate = p.tls_version, p.tls_key, p.https_requests_per_s
    new, res = rate * p.https_new_share, rate * p.https_resumed_share
    kept = rate * max(0.0, 1 - p.https_new_share - p.https_resumed_share)
    measured = functools.partial(_https_measure, src, your_cores(p.cores, calibration or {})[0])
    out = []
    if new > 0:
        full = measured(f"full {v} {key}", "http", full_handshake(key), (new, "new"))
        label = f"HTTPS full handshakes (TLS {v}, {KEY_NAME[key]})"
        out.append(Line("https_full", "https", label, "https_requests_per_s x https_new_share", new, "request",
                        (full,), FULL_RTT[v]))  # fmt: skip
    if res > 0:
        resumed = measured(f"resumed {v} {p.resumption}", "http", RESUMED_TLS13 if v == "1.3" else ())
        label = f"HTTPS resumed sessions (TLS {v}, {p.resumption})"
        out.append(Line("https_resumed", "https", label, "https_requests_per_s x https_resumed_share", res,
                        "request", (resumed,), RESUMED_RTT))  # fmt: skip
    if kept > 0:
        keep = measured("https keep-alive", "http keep-alive", load=(kept, "query"))
        notes = ("TLS 1.3 keep-alive measured: the cost of encrypting a kept connection's requests",)
        out.append(Line("https_keepalive", "https", "HTTPS requests on kept-alive connections",
                        "https_requests_per_s x (1 - new - resumed shares)", kept, "request", (keep,),
                        notes=notes if v == "1.2" else ()))  # fmt: skip
    return out


def _https_measure(
    src: Mapping[str, Source],
    cores: float | None,
    role: str,
    baseline: str,
    primitives: Primitives = (),
    load: tuple[float, str] = (0.0, ""),
) -> Measure:
    """An HTTPS arm against its plain baseline; `load`: the user's rate of it and the curve's kind of operation."""
    (part,) = HTTPS.parts
    arm, (rate, kind) = _arm(src, "https", part, HTTPS[role]), load
    metric = HTTPS.metric("server cpu per request")
    return Measure("https", part, arm, HTTPS[baseline], metric, primitives=primitives, load_rate=rate or None,
                   load_cores=cores, load_kind=kind or "query")  # fmt: skip


def lines(p: Params, src: Mapping[str, Source], calibration: Mapping[str, Any] | None = None) -> list[Line]:
    """Every line the inputs call for, each naming the comparison that prices it (ConfigError where the runs
    lack one). `calibration`: the user's, as sources.target_calibration loaded it (its machine's cores)."""
    new_conn = p.new_connections_per_s * (1.0 - p.pooled_share)
    out: list[Line] = []
    if "tls" in p.features:
        out += _db_tls(p, src, new_conn, calibration)
    if "scram" in p.features:
        out += _scram(p, src, new_conn, calibration)
    if "encryption_at_rest" in p.features:
        out += _tde(p, src, calibration or {})
    if "audit" in p.features:
        out += _audit(p, src, calibration)
    if "https" in p.features:
        out += _https(p, src, calibration)
    for m in {m for ln in out for m in ln.measures}:  # the baseline too: every comparison has both arms
        _arm(src, m.study, m.part, m.baseline)
    return out
