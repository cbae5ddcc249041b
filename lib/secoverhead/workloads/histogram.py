"""A latency histogram that merges: counts in log-spaced buckets (16 per doubling, so a bucket is 4.4 % wide, after
HdrHistogram's idea), which add across hosts. Percentiles of a load spread over several hosts come from the merged
counts, never from averaging each host's percentiles (the mean of two p99s is no one's p99)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

PER_DOUBLING = 16
UNIT_MS = 1e-3  # the smallest latency kept apart: 1 us


@dataclass
class Histogram:
    counts: dict[int, int] = field(default_factory=dict)  # bucket index -> count

    @staticmethod
    def bucket(ms: float) -> int:
        return math.floor(math.log2(max(ms, UNIT_MS) / UNIT_MS) * PER_DOUBLING)

    @staticmethod
    def upper(bucket: int) -> float:
        """A bucket's upper edge, ms."""
        return UNIT_MS * 2 ** ((bucket + 1) / PER_DOUBLING)

    @classmethod
    def of(cls, latencies_ms: Iterable[float]) -> Histogram:
        x = np.asarray(list(latencies_ms), dtype=float)
        x = x[np.isfinite(x)]
        idx = np.floor(np.log2(np.maximum(x, UNIT_MS) / UNIT_MS) * PER_DOUBLING).astype(int)
        values, counts = np.unique(idx, return_counts=True)
        return cls({int(v): int(c) for v, c in zip(values, counts, strict=True)})

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def merge(self, *others: Histogram) -> Histogram:
        out = dict(self.counts)
        for h in others:
            for b, c in h.counts.items():
                out[b] = out.get(b, 0) + c
        return Histogram(out)

    def percentile(self, q: float) -> float:
        """The q-th percentile (0-100), as the upper edge of the bucket it falls in (at most 4.4 % high)."""
        n = self.count
        if n == 0:
            return float("nan")
        rank = max(1, math.ceil(q / 100.0 * n))
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return self.upper(b)
        return self.upper(max(self.counts))

    def to_dict(self) -> dict[str, int]:
        return {str(b): c for b, c in sorted(self.counts.items())}

    @classmethod
    def from_dict(cls, d: Mapping[str, int]) -> Histogram:
        return cls({int(b): int(c) for b, c in d.items()})
