"""The metric vocabulary: each metric's unit and whether higher is better, from its name. Result tables carry
both columns so tables from two runs (or two tools) can be concatenated and read without guessing."""

from __future__ import annotations

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
