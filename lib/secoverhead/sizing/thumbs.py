"""Public rules of thumb, computed for the same machine and set beside the calculator's own figure: shown, never
forced. Each rule's words and source are in data/published/cost.csv.

- NGINX (NGINX SSL Performance, 2014): the full ECDHE-RSA handshakes one core sustains are 45-60 % of the RSA-2048
  signatures per second `openssl speed` reports.
- MariaDB (Knowledge Base, Data-at-Rest Encryption Overview): encryption has an overhead of roughly 3-5 %.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from secoverhead.core import paths
from secoverhead.core.units import significant
from secoverhead.host.calibration import SIGNATURE, full_handshake
from secoverhead.sizing.costs import Book
from secoverhead.sizing.estimate import LineResult
from secoverhead.sizing.interval import Interval
from secoverhead.sizing.recipes import HTTPS
from secoverhead.sizing.scaling import reference_us, rescale

FULL_RSA = HTTPS["full 1.2 rsa"]  # the ECDHE-RSA full handshake the NGINX rule is about


def published() -> pd.DataFrame:
    return pd.read_csv(paths.ROOT / "data" / "published" / "cost.csv")


def _range(measure: str) -> tuple[float, float, str]:
    rows = published()
    rows = rows[rows["measure"] == measure]
    lo = float(rows[rows["arm"] == "low"]["value"].iloc[0])
    hi = float(rows[rows["arm"] == "high"]["value"].iloc[0])
    return lo, hi, str(rows["source"].iloc[0])


@dataclass(frozen=True)
class Thumb:
    """A rule of thumb beside the calculator's figure for the same thing on the same machine."""

    rule: str
    source: str
    what: str
    rule_says: Interval
    calculator: Interval
    unit: str
    basis: str  # where the calculator's figure comes from

    @property
    def agreement(self) -> str:
        if self.calculator.hi < self.rule_says.lo:
            return f"below the rule ({significant(self.calculator.point / self.rule_says.point, 2)}x its middle)"
        if self.calculator.lo > self.rule_says.hi:
            return f"above the rule ({significant(self.calculator.point / self.rule_says.point, 2)}x its middle)"
        return "overlaps the rule"


def nginx_handshakes(book: Book, target: Mapping[str, Any], confidence: float) -> Thumb | None:
    """Full ECDHE-RSA handshakes per core: the rule from `openssl speed` beside the HTTPS study's full-handshake
    arm (its whole server CPU per request, moved to the user's machine)."""
    if "https" not in book.sources:
        return None
    (part,) = HTTPS.parts
    exp = book.sources["https"].experiment(part)
    if exp is None or FULL_RSA not in exp.arms:
        return None
    measured, n = book.level("https", part, FULL_RSA, HTTPS.metric("server cpu per request"), confidence)
    cal = book.sources["https"].calibration_of(exp.run_dir)
    to = dict(cal) | dict(target)
    prims = full_handshake("rsa")
    us = [rescale(x, cal, to, prims) for x in (measured.point, measured.hi, measured.lo)]
    per_core = Interval(*(1e6 / x if x > 0 else float("inf") for x in us))
    lo, hi, source = _range("full ECDHE-RSA handshakes one core sustains per openssl speed RSA-2048 sign per second")
    signs = 1e6 / (reference_us(to, SIGNATURE["rsa"]) or float("nan"))
    return Thumb(
        "NGINX: full ECDHE-RSA handshakes per core are 45-60 % of `openssl speed` RSA-2048 signs per second",
        source,
        "full handshakes per core (TLS 1.2, ECDHE-RSA)",
        Interval(signs * (lo + hi) / 2, signs * lo, signs * hi),
        per_core,
        "handshakes/s per core",
        f"the HTTPS study's '{FULL_RSA}' arm: {measured.point:.0f} us of nginx CPU per request over {n} runs, "
        f"moved to your machine ({signs:,.0f} RSA-2048 signs/s)",
    )


def mariadb_encryption(results: Sequence[LineResult]) -> list[Thumb]:
    """Encryption at rest: the extra CPU per transaction over the unencrypted server's, per transaction kind,
    beside MariaDB's "roughly 3-5 %"."""
    lo, hi, source = _range("overhead of data-at-rest encryption")
    out = []
    for r in results:
        if r.line.feature != "encryption_at_rest":
            continue
        base = sum(p.baseline_us for p in r.priced)
        if base <= 0:
            continue
        pct = r.measured_us.times(100.0 / base)
        cells = "; ".join(", ".join(f"{k} {v}" for k, v in p.measure.cell) for p in r.priced)
        out.append(
            Thumb(
                "MariaDB: encryption at rest has an overhead of roughly 3-5 %",
                source,
                f"extra server CPU per transaction, {r.line.label.removeprefix('encryption at rest, ')}",
                Interval((lo + hi) / 2, lo, hi),
                pct,
                "%",
                f"the TDE study ({r.priced[0].measure.part}; {cells}): extra over the unencrypted server's "
                f"{base:.0f} us per transaction",
            )
        )
    return out
