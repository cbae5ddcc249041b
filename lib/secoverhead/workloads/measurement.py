"""The unit of data a workload hands to the results layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from secoverhead.core.errors import Stalled


@dataclass
class Measurement:
    """What one run returns: scalar metrics, and optionally raw samples, per-interval rows, and facts
    (commands, versions, negotiated TLS) worth keeping with the run."""

    metrics: dict[str, Any]
    samples: pd.DataFrame | None = None
    intervals: pd.DataFrame | None = None
    info: dict[str, Any] = field(default_factory=dict)


# A timed run ends at its planned length, waiting only for the operations in flight; one that overruns by more than
# OVERRUN (the larger of the two) waited that long on a single operation: a stall, which fails the run. One still
# running STOP past its plan is stopped there, so no wait on a server is unbounded. Floors in seconds: a transaction
# of a few seconds is a stall on any server a DBA runs, and a busy 2-core machine delays one by well under a second.
OVERRUN = (10.0, 0.5)  # seconds, share of the plan
STOP = (60.0, 1.0)


def _past(planned_s: float, margin: tuple[float, float]) -> float:
    return planned_s + max(margin[0], margin[1] * planned_s)


def stop_after(planned_s: float) -> float:
    """When a run planned to last planned_s is stopped as stalled."""
    return _past(planned_s, STOP)


def check_against_plan(took_s: float, planned_s: float, what: str) -> None:
    """Raise Stalled when a run took longer than its plan allows (OVERRUN)."""
    if took_s > _past(planned_s, OVERRUN):
        raise Stalled(
            f"{what} ran {took_s:.1f} s of a planned {planned_s:g} s (allowed {_past(planned_s, OVERRUN):.0f} s): the "
            "server, or the path to it, stalled; the run is stopped as failed, its results so far kept"
        )


def stalled_at(planned_s: float, what: str) -> Exception:
    """The error for a run stopped at stop_after(planned_s) without finishing."""
    return Stalled(
        f"{what} did not finish {stop_after(planned_s) - planned_s:.0f} s after its planned {planned_s:g} s: the "
        "server, or the path to it, stalled; it was stopped and the run failed, its results so far kept"
    )
