"""The unit of data a workload hands to the results layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class Measurement:
    """What one run returns: scalar metrics, and optionally raw samples, per-interval rows, and facts
    (commands, versions, negotiated TLS) worth keeping with the run."""

    metrics: dict[str, Any]
    samples: pd.DataFrame | None = None
    intervals: pd.DataFrame | None = None
    info: dict[str, Any] = field(default_factory=dict)
