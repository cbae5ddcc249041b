"""Links with a set round-trip time between a client and a server the project starts (namespaces, a delay line),
and hosts on this machine in namespaces of their own (a fleet's client hosts)."""

from secoverhead.network.hosts import Host
from secoverhead.network.link import Link, available, connect_rtts, sweep_stale

__all__ = ["Host", "Link", "available", "connect_rtts", "sweep_stale"]
