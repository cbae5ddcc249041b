"""CPU profiles of the servers (perf), in a profiling round outside the statistics."""

from __future__ import annotations

from typing import Any


def profiler_for(p: Any, servers_by_arm: dict[str, Any], *, ops_metric: str) -> Any:
    """A profiler for the arms' servers when p.profile is on (None otherwise)."""
    if not getattr(p, "profile", False):
        return None
    raise NotImplementedError("profiling is being written")
