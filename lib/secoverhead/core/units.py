"""The metric vocabulary: each metric's unit and whether higher is better, from its name. Result tables carry
both columns so tables from two runs (or two tools) can be concatenated and read without guessing."""

from __future__ import annotations

import math
import re

_RULES: list[tuple[str, str, bool | None]] = [
    (r"_per_server_core$", "1/CPU-s", True),  # throughput per second of server CPU: capacity
    (r"(^|_)(tps|qps|rps)$|_qps$", "1/s", True),
    (r"_per_s$", "1/s", True),
    (r"_ns_per_", "ns", False),
    (r"_us_per_|_us$", "us", False),
    (r"_ms($|_)", "ms", False),
    (r"bytes", "bytes", False),
    (r"_cores$", "cores", False),
    (r"_pct($|_)|_pp$", "%", None),
    (r"_fraction$|^resumed", "fraction", None),
    (r"(^|_)(low_resolution|bound|flagged)$", "flag", False),
    (r"(^|_)(steal|pressure|outside)", "fraction", False),
    (r"(^|_)(errors?|reconnects|failed|non_2xx)$", "count", False),
    (r"_s$", "s", None),
    (r"^(transactions|queries|requests|operations|connections|nonces|events|pages_.*|.*_count)$", "count", None),
]


def unit(metric: str) -> tuple[str, bool | None]:
    """(unit, higher_is_better) of a metric; higher_is_better is None where neither is (a duration, a count)."""
    for pattern, u, better in _RULES:
        if re.search(pattern, metric):
            return u, better
    return "", None


# How a reading's numbers are shown, wherever they are shown (a verdict's headline, its evidence, its plot's
# ticks, the index): one function, so a number on a page is the number measured, in one unit. The quantity is the
# reading's: a ratio (x), a loss of the baseline's metric (%), a difference (in `unit`: pp, us, ns), or a share
# won back (a fraction, shown in %).
QUANTITIES = ("ratio", "loss", "difference", "share")


def shown(x: float, quantity: str, unit: str = "", *, exact: bool = False) -> str:
    """One number of a reading on its quantity: 1.62x, +3.4 %, +1.2 pp, 86.1 %; `exact` (a reading's own lines,
    1.0526x) with every digit it was declared with."""
    if quantity not in QUANTITIES:
        raise ValueError(f"quantity {quantity!r}: one of {QUANTITIES}")
    if math.isnan(x):  # an end one run per arm cannot give: no end, not minus infinity
        return "n/a"
    if not math.isfinite(x):
        return "∞" if x > 0 else "-∞"
    if exact:
        value = x * 100 if quantity == "share" else x
        suffix = {"ratio": "×", "loss": " %", "share": " %"}.get(quantity, f" {unit}".rstrip())
        return f"{significant(value, 6)}{suffix}"
    if quantity == "ratio":  # a smoke run's interval of two rounds can reach 0.0000112x
        return f"{significant(x, 3)}×" if abs(x) < 100 else f"{x:,.0f}×"
    if quantity == "loss":
        return f"{x:+.1f} %"
    if quantity == "share":
        return f"{x * 100:.1f} %"
    return f"{signed(x)} {unit}".rstrip()


def shown_interval(lo: float, hi: float, quantity: str, unit: str = "") -> str:
    """An interval on its quantity, both ends through `shown`: 1.62x to 1.94x, -1.1 % to +0.9 %."""
    return f"{shown(lo, quantity, unit)} to {shown(hi, quantity, unit)}"


def significant(x: float, digits: int) -> str:
    """x to `digits` significant digits as a reader takes it, never in e notation: 33,760 where `.4g` prints
    3.376e+04, 0.00002347 where it prints 2.347e-05."""
    short = f"{x:.{digits}g}"
    if not math.isfinite(x) or "e" not in short:
        return short
    if "e+" in short:
        return f"{float(short):,.0f}"
    return f"{x:.{digits - 1 - math.floor(math.log10(abs(x)))}f}".rstrip("0").rstrip(".")


def signed(x: float, digits: int = 3) -> str:
    """A difference with its sign, never in e notation: +1,230, -0.0000025."""
    return f"{'+' if x >= 0 else ''}{significant(x, digits)}"


def figure(x: float) -> str:
    """A measured value in four significant digits (never in e notation)."""
    return significant(x, 4)


def p_text(p: float) -> str:
    """A p-value as papers print it: p=0.012, p=0.0012, p<0.001 (a p of 7.4e-38 says no more than that)."""
    if not math.isfinite(p):
        return "p=n/a"
    return "p<0.001" if p < 0.001 else f"p={p:.2g}"
