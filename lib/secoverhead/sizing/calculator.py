"""The calculation as a DBA asks for it: the workload and features in, extra cores, latency and audit storage out,
each with its interval, what dominates, the rules of thumb beside it, and one plain sentence per feature.

    from secoverhead import sizing
    calc = sizing.calculate(new_connections_per_s=2000, tls_key="ecdsa", features=["tls"])
    calc.headline()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from secoverhead.core.params import build
from secoverhead.core.units import figure
from secoverhead.sizing import origins, recipes, sources
from secoverhead.sizing.costs import Book, interval_level
from secoverhead.sizing.declarations import STUDY, Params
from secoverhead.sizing.estimate import LineResult, Storage, Totals, compute_line, planned, totals
from secoverhead.sizing.interval import Interval
from secoverhead.sizing.origins import Origin
from secoverhead.sizing.thumbs import Thumb, mariadb_encryption, nginx_handshakes


@dataclass
class Calculation:
    params: Params
    book: Book
    target: dict[str, Any]  # the user's machine as described (empty: the measuring machine)
    lines: list[LineResult]
    totals: Totals
    storage: Storage | None
    thumbs: list[Thumb]
    cores: float | None = None  # the user's machine's cores: given, or found by `calibrate`; None when neither
    cores_from: str = ""
    origins: dict[str, list[Origin]] = field(default_factory=dict)  # line key -> the reports it was priced from

    def share(self, iv: Interval) -> Interval | None:
        """iv as a percentage of the user's cores (None when their cores are not known)."""
        return iv.times(100.0 / self.cores) if self.cores else None

    def line(self, key: str) -> LineResult | None:
        return next((r for r in self.lines if r.line.key == key), None)

    def feature_cores(self, feature: str, side: str = "server") -> Interval:
        """A feature's extra cores as planned with (estimate.planned)."""
        return planned([r for r in self.lines if r.line.feature == feature and r.line.side == side])

    def parts(self, feature: str | None, side: str = "server") -> tuple[list[LineResult], list[LineResult]]:
        """A feature's (or every feature's) lines apart: those whose interval is above zero, and those it reaches
        (not told apart from zero here)."""
        mine = [r for r in self.lines if r.line.side == side and feature in (None, r.line.feature)]
        return [r for r in mine if r.cores.lo > 0], [r for r in mine if r.cores.lo <= 0]

    @property
    def where(self) -> str:
        return "on a machine like yours" if self.target else "on the machine that measured it"

    def headline(self) -> list[str]:
        """One plain sentence per feature (and what its reports could not test), then the total."""
        return [_sentence(self, f) + _caveat(self, f) for f in self.params.features] + [_total_sentence(self)]

    def priced_from(self) -> list[str]:
        """Each line's reports, with their scale, server builds and vCPU speed: what every number came from."""
        return origins.grouped(self.lines, self.origins)


def number(x: float) -> str:
    """Cores and rates as a reader takes them: 0.031, 0.42, 3.1, 12, 2,000."""
    a = abs(x)
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}".removesuffix(".0")
    if a >= 0.1:
        return f"{x:.2f}"
    return f"{x:.3f}" if a >= 0.001 or a == 0 else figure(float(f"{x:.2g}"))


def span(lo: float, hi: float) -> str:
    """A range as it prints, one number where both ends print alike ("311", not "311–311")."""
    a, b = number(lo), number(hi)
    return a if a == b else f"{a}–{b}"


def cores_text(iv: Interval) -> str:
    """The estimate first, then its interval: what a DBA plans with and how far it may be off."""
    if iv.lo <= 0 < iv.hi:
        return f"at most {number(iv.hi)} cores (its interval reaches zero: more rounds would say how much)"
    return f"{number(iv.point)} cores [{number(iv.lo)}, {number(iv.hi)}]"


def parts_text(resolved: list[LineResult], unresolved: list[LineResult]) -> str:
    """Cores to plan with (estimate.planned): the lines measured above zero as an interval, the others by their
    upper ends. A feature adds work, so a line not told apart from zero adds nothing to the least it costs."""
    measured = planned(resolved)
    if not unresolved:
        return cores_text(measured)
    plan = planned(resolved + unresolved)
    upper = plan.hi - measured.hi
    names = ", ".join(r.line.label for r in unresolved)
    if not resolved:
        return f"at most {number(upper)} cores ({names}: not told apart from zero here)"
    return (
        f"{number(plan.point)} cores [{number(plan.lo)}, {number(plan.hi)}] ({number(measured.point)} "
        f"[{number(measured.lo)}, {number(measured.hi)}] measured above zero; up to {number(upper)} more for "
        f"{names}, not told apart from zero here)"
    )


def _rate(x: float, what: str) -> str:
    return f"{number(x)} {what}"


def _sentence(c: Calculation, feature: str) -> str:
    p = c.params
    cores = parts_text(*c.parts(feature))
    key = recipes.KEY_NAME[p.tls_key]
    if feature == "tls":
        new = p.new_connections_per_s * (1 - p.pooled_share)
        return (
            f"Turning on TLS {p.tls_version} with {key} at {_rate(new, 'new connections/s')} and "
            f"{_rate(p.reused_queries_per_s, 'queries/s')} on open connections costs {cores} {c.where}"
            f"{_busy(c, feature)}."
        )
    if feature == "scram":
        client = c.feature_cores("scram", "client")
        new = p.new_connections_per_s * (1 - p.pooled_share)
        return (
            f"Turning on {p.scram_mechanism} at {_rate(new, 'new connections/s')} costs {cores} {c.where}"
            f"{_busy(c, feature)}, and "
            f"{cores_text(client)} of key derivation on your clients."
        )
    if feature == "encryption_at_rest":
        return (
            f"Turning on encryption at rest at {number(p.read_only_tps)} read-only, {number(p.read_write_tps)} "
            f"read-write and {number(p.write_only_tps)} write-only transactions/s costs {cores} {c.where}."
        )
    if feature == "audit":
        s = c.storage
        log = ""
        if s is not None:
            day = s.gb_per_day
            kept = s.gb_rotated_daily or s.gb_retained_raw
            how = f", {s.compressor}-compressed after each day" if s.gb_rotated_daily else " uncompressed"
            log = (
                f", and writes {span(day.lo, day.hi)} GB of log a day: {span(kept.lo, kept.hi)} GB kept for "
                f"{p.retention_months:g} months{how}"
            )
        rate = _rate(p.audited_statements_per_s, "statements/s")
        return f"Auditing with {p.audit_approach} at {rate} costs {cores} {c.where}{_busy(c, feature)}{log}."
    if feature == "https":
        return (
            f"Serving HTTPS (TLS {p.tls_version}, {key}) at {_rate(p.https_requests_per_s, 'requests/s')} "
            f"({p.https_new_share:.0%} full handshakes, {p.https_resumed_share:.0%} resumed, the rest kept alive) "
            f"costs {cores} {c.where}."
        )
    raise ValueError(feature)


def _caveat(c: Calculation, feature: str) -> str:
    """The reports a feature's price was read from that could not test their claims on its part, in words."""
    mine = (o for r in c.lines if r.line.feature == feature for o in c.origins.get(r.line.key, ()))
    failing = list(dict.fromkeys(o for o in mine if o.not_testable))
    return "".join(f" Read from {o.study}/{o.run}, where {o.warning()}." for o in failing)


def _busy(c: Calculation, feature: str) -> str:
    """What a feature's busy-priced lines mean on a quieter server, in its sentence (recipes.BUSY_PRICE), and
    which of its lines were priced at the user's load instead."""
    out = []
    for kind in recipes.BUSY_PRICE:
        mine = (r for r in c.lines if r.line.feature == feature and r.line.busy_price == kind and not r.at_load)
        per = sorted({r.line.per for r in mine})
        if per:
            out.append(f" (per {' and per '.join(per)} as on a busy server: on a quieter one, a {kind})")
    at_load = sorted({r.line.per for r in c.lines if r.line.feature == feature and r.at_load})
    if at_load:
        out.append(f" (per {' and per '.join(at_load)} at your load, on the curve its study measured)")
    return "".join(out)


def _total_sentence(c: Calculation) -> str:
    p = c.params
    t = c.totals.server
    pct = c.share(t)
    need = t.times(1.0 / p.target_utilisation)
    mine = (
        f": {number(pct.point)} % [{number(pct.lo)}, {number(pct.hi)}] of your {c.cores:g} cores ({c.cores_from})"
        if pct is not None
        else ""
    )
    text = (
        f"In all, {parts_text(*c.parts(None))}{mine}; planned at {p.target_utilisation:.0%} utilisation, "
        f"{number(need.point)} cores [{number(need.lo)}, {number(need.hi)}]."
    )
    if pct is None:
        text += " Give -p cores (or a calibration_file from `secoverhead calibrate`) for the share of your machine."
    if c.totals.dominant:
        dom = c.line(c.totals.dominant)
        share = c.totals.shares[c.totals.dominant]
        text += f" The largest part is {dom.line.label} ({share:.0%} of the estimate), driven by {dom.line.driver}."
    return text


def _storage(p: Params, book: Book, confidence: float) -> Storage | None:
    if "audit" not in p.features:
        return None
    part = recipes.audit_part(p.audit_approach)
    per, _ = book.level("audit", part, p.audit_approach, "audit_bytes_per_query", confidence)
    compressor, ratio = book.compression("audit", part, p.audit_approach)
    return Storage(p.audit_approach, per, p.audited_statements_per_s, p.retention_months, compressor, ratio)


def run(p: Params) -> Calculation:
    """The calculation for checked inputs (ConfigError, one line, where the reports cannot price them)."""
    root = p.reports_root()
    src = sources.sources(root, p.studies(), p.runs)
    target = sources.target_calibration(p.calibration_file, p.speed)
    book = Book(src, target)
    lines = recipes.lines(p, src, target)
    level = interval_level(lines, p.confidence, p.joint)
    priced = book.price_all(lines, level)
    results = [compute_line(ln, priced, target, p.rtt_ms) for ln in lines]
    thumbs = [t for t in [nginx_handshakes(book, target, level)] if t] + mariadb_encryption(results)
    cores, cores_from = sources.your_cores(p.cores, target)
    storage = _storage(p, book, level)
    found = origins.of(results, src)
    return Calculation(p, book, target, results, totals(results), storage, thumbs, cores, cores_from, found)


def calculate(**inputs: Any) -> Calculation:
    """The calculation from keyword inputs, checked as `secoverhead run cost -p ...` checks them."""
    return run(build(Params, inputs, study=STUDY))
