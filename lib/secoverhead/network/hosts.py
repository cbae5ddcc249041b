"""Hosts on this machine: a network namespace of the project's joined to this one by a veth pair, with an address
of its own and a default route back, so a process started in it (a Dask worker: a client host of a fleet) reaches
this host's addresses as another machine would, and its traffic stays on this machine. No delay: a veth pair is
the path a fleet's test needs, not a round trip (network/link.py has those).

Named like links (`so-OWNER-N`, core.owners' token), so stopping removes it and the next start sweeps those whose
owner is gone; a name another process of the project wrote (its own token) is read, never parsed as ours.
"""

from __future__ import annotations

import hashlib
import ipaddress
import subprocess
from dataclasses import dataclass
from typing import Self

from secoverhead.core import owners
from secoverhead.core.environ import server_env
from secoverhead.core.errors import ConfigError, ServerStartError
from secoverhead.core.lifecycle import Started
from secoverhead.host.process import run_command
from secoverhead.network.link import _namespaces, available, next_name, sweep_stale

_SUBNET = ipaddress.ip_network("10.212.0.0/16")


def _free_subnet() -> ipaddress.IPv4Network:
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, env=server_env()).stdout
    for net in _SUBNET.subnets(new_prefix=30):
        if f" {net[1]}/" not in used and f" {net[2]}/" not in used:
            return net
    raise ServerStartError("no free /30 left in 10.212.0.0/16 for a host")


@dataclass
class Host(Started):
    """A namespace with address `addr`; this machine is `gateway` from inside it. Use as a context manager."""

    namespace: str = ""
    addr: str = ""
    gateway: str = ""

    def wrap(self, argv: list[str]) -> list[str]:
        """argv run inside the host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]

    def start(self) -> Self:
        reason = available()
        if reason:
            raise ConfigError(reason.replace("round trips", "hosts in namespaces"))
        sweep_stale()
        self.namespace = next_name(_namespaces(), owners.me())
        net = _free_subnet()
        self.gateway, self.addr = str(net[1]), str(net[2])
        tag = hashlib.sha1(self.namespace.encode()).hexdigest()[:12]  # an interface name holds 15 characters
        outside, inside = f"v{tag}", f"w{tag}"
        what = "setting up a host in a namespace"
        run_command(["ip", "netns", "add", self.namespace], what=what)
        run_command(["ip", "link", "add", outside, "type", "veth", "peer", "name", inside], what=what)
        run_command(["ip", "link", "set", inside, "netns", self.namespace], what=what)
        run_command(["ip", "addr", "add", f"{self.gateway}/30", "dev", outside], what=what)
        run_command(["ip", "link", "set", outside, "up"], what=what)
        for cmd in (
            ["addr", "add", f"{self.addr}/30", "dev", inside],
            ["link", "set", inside, "up"],
            ["link", "set", "lo", "up"],
            ["route", "add", "default", "via", self.gateway],
        ):
            run_command(["ip", "-n", self.namespace, *cmd], what=what)
        return self

    def stop(self) -> None:
        """Remove the namespace (its end of the veth pair goes with it, and so does ours). Idempotent."""
        if self.namespace and self.namespace in _namespaces():
            subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True, env=server_env())
