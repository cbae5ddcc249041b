"""Links with a set round-trip time between a client and a server the project starts (namespaces, a delay line)."""

from secoverhead.network.link import Link, available, connect_rtts, sweep_stale

__all__ = ["Link", "available", "connect_rtts", "sweep_stale"]
