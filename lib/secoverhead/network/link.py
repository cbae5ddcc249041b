"""A link with a set round-trip time: a network namespace of the project's own for the server, joined to this
host's namespace through the delay line (two TUN devices, every packet held half the round trip each way).

Loopback stays the default for the CPU claims; a link is for the originals that name round trips (seed 000's
handshake, seed 003's). The set round trip is checked, not assumed: the link measures it with TCP connects
(a SYN out, a RST back: one round trip, no listener needed) first with no hold (the path's own floor), then
with the hold that brings the median to the set value, and keeps all three figures.

Needs root (namespaces, TUN devices). The namespace is named for its owner (`so-TOKEN-N`, core.owners): stopping the
link removes it, and the next link removes those whose owner is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from secoverhead.core import owners
from secoverhead.core.environ import server_env
from secoverhead.core.errors import ConfigError, ServerStartError
from secoverhead.core.lifecycle import Started
from secoverhead.core.owners import alive
from secoverhead.host.process import ServerProcess, run_command
from secoverhead.host.rundirs import make_run_dir

_NAME = re.compile(rf"^so-({owners.TOKEN_PART})-(\d+)$")
_SUBNET = ipaddress.ip_network("10.211.0.0/16")
_PROBE_PORT = 9  # discard: nothing listens in the namespace, so a connect is answered by a RST
FLOOR_TRIES = 4  # medians of the floor taken, a second apart, before a set round trip below it is refused
TOLERANCE = 0.10  # a quiet packet's round trip (the lower quartile) must be within 10 % of the set one


def available() -> str | None:
    """None when links can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "round trips need root (network namespaces and TUN devices)"
    if not shutil.which("ip"):
        return "round trips need the `ip` command (Debian package iproute2)"
    if not Path("/dev/net/tun").exists():
        return "round trips need /dev/net/tun"
    return None


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, env=server_env()).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def next_name(existing: list[str], me: str) -> str:
    """This owner's next namespace name: `so-TOKEN-N`, N one past the highest of its own. Names of other owners
    (another run's token, a bare PID of an older release) and names that are not the project's are passed over."""
    taken = {int(m.group(2)) for ns in existing if (m := _NAME.match(ns)) and m.group(1) == me}
    return f"so-{me}-{max(taken, default=0) + 1}"


def sweep_stale() -> list[str]:
    """Remove the namespaces of links whose owner process is gone."""
    gone = []
    for ns in _namespaces():
        m = _NAME.match(ns)
        if m and not alive(m.group(1)):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, env=server_env())
            gone.append(ns)
    return gone


def _free_subnet() -> ipaddress.IPv4Network:
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, env=server_env()).stdout
    for net in _SUBNET.subnets(new_prefix=30):
        if str(net[1]) not in used and str(net[2]) not in used:
            return net
    raise ServerStartError("no free /30 left in 10.211.0.0/16 for a link")


def connect_rtts(host: str, n: int, port: int = _PROBE_PORT) -> list[float]:
    """n round trips (ms), each a TCP connect to a closed port: SYN out, RST back."""
    out = []
    for _ in range(n):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            t = time.perf_counter_ns()
            with contextlib.suppress(ConnectionRefusedError):
                s.connect((host, port))
                raise ServerStartError(f"something listens on {host}:{port} in the link's namespace")
            out.append((time.perf_counter_ns() - t) / 1e6)
    return out


def connect_ms(host: str, port: int, n: int = 50) -> float:
    """The median of n TCP connects to a listening server (SYN out, SYN-ACK back: one round trip each), ms."""
    out = []
    for _ in range(n):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            t = time.perf_counter_ns()
            s.connect((host, port))
            out.append((time.perf_counter_ns() - t) / 1e6)
    return statistics.median(out)


@dataclass
class Link(Started):
    """rtt_ms: the round trip to set (0: no hold, the path's floor). Use as a context manager."""

    rtt_ms: float
    probes: int = 200
    namespace: str = ""
    host_addr: str = ""
    peer_addr: str = ""
    floor_ms: float = float("nan")
    measured_ms: float = float("nan")
    spread_ms: tuple[float, float] = (float("nan"), float("nan"))  # p10, p90 of the measured round trips
    hold_us: float = 0.0
    _line: ServerProcess | None = field(default=None, repr=False)
    _run_dir: Path | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.rtt_ms, int | float) and 0 <= self.rtt_ms <= 1000):
            raise ConfigError(f"a round trip of {self.rtt_ms!r} ms is outside 0..1000")

    def wrap(self, argv: list[str]) -> list[str]:
        """argv run inside the link's namespace (the server side)."""
        return ["ip", "netns", "exec", self.namespace, *argv]

    def start(self) -> Self:
        reason = available()
        if reason:
            raise ConfigError(reason)
        sweep_stale()
        self.namespace = next_name(_namespaces(), owners.me())
        net = _free_subnet()
        self.host_addr, self.peer_addr = str(net[1]), str(net[2])
        tag = hashlib.sha1(self.namespace.encode()).hexdigest()[:12]  # an interface name holds 15 characters
        host_tun, peer_tun = f"h{tag}", f"p{tag}"
        self._run_dir = make_run_dir("link")
        self._line = ServerProcess(
            "delay line",
            [sys.executable, "-m", "secoverhead.network.delayline", host_tun, peer_tun, "0"],
            log_path=self._run_dir / "delayline.log",
            cwd=self._run_dir,
            env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            pipes=True,
        )
        if self._reply() != "ready":
            raise ServerStartError(f"the delay line did not start: {self._run_dir / 'delayline.log'}")
        ns, what = self.namespace, "setting up the link"
        run_command(["ip", "netns", "add", ns], what=what)
        run_command(["ip", "link", "set", peer_tun, "netns", ns], what=what)
        run_command(["ip", "addr", "add", self.host_addr, "peer", self.peer_addr, "dev", host_tun], what=what)
        run_command(["ip", "link", "set", host_tun, "up"], what=what)
        for cmd in (
            ["addr", "add", self.peer_addr, "peer", self.host_addr, "dev", peer_tun],
            ["link", "set", peer_tun, "up"],
            ["link", "set", "lo", "up"],
        ):
            run_command(["ip", "-n", ns, *cmd], what=what)
        self._calibrate()
        return self

    def _reply(self) -> str:
        assert self._line is not None
        return (self._line.popen.stdout.readline() if self._line.alive() else "").strip()

    def _command(self, line: str) -> str:
        assert self._line is not None and self._line.popen.stdin is not None
        self._line.popen.stdin.write(line + "\n")
        self._line.popen.stdin.flush()
        return self._reply()

    def set_hold(self, hold_us: float) -> None:
        self.hold_us = max(0.0, hold_us)
        if self._command(f"hold {self.hold_us:.1f}") != "ok":
            raise ServerStartError("the delay line stopped")

    def measure(self, n: int | None = None) -> list[float]:
        """Round trips (ms) over the link now, n of them (default: the link's probes)."""
        return connect_rtts(self.peer_addr, n or self.probes)

    def _calibrate(self) -> None:
        connect_rtts(self.peer_addr, 20)  # warm the path (ARP-free, but caches and the line's threads)
        self.floor_ms = statistics.median(self.measure())
        for _ in range(FLOOR_TRIES - 1):  # a busy moment (another process's burst) lifts the user-space line's floor
            if not self.rtt_ms or self.rtt_ms >= self.floor_ms:
                break
            time.sleep(1.0)
            self.floor_ms = min(self.floor_ms, statistics.median(self.measure()))
        if self.rtt_ms and self.rtt_ms < self.floor_ms:
            raise ConfigError(
                f"a round trip of {self.rtt_ms} ms is below this link's floor of {self.floor_ms:.3f} ms (the least of "
                f"{FLOOR_TRIES} medians; the machine is too busy for a user-space delay line)"
            )
        if not self.rtt_ms:
            self.measured_ms = self.floor_ms
            return
        hold = (self.rtt_ms - self.floor_ms) / 2 * 1000
        for _ in range(3):  # the line's own lateness grows a little with the hold: correct, then check
            self.set_hold(hold)
            rtts = sorted(self.measure())
            self.measured_ms = statistics.median(rtts)
            self.spread_ms = (rtts[len(rtts) // 10], rtts[len(rtts) * 9 // 10])
            # a quiet packet (the lower quartile) is set to the round trip: this machine's noise only ever adds delay,
            # and a busy moment's late median once left a 1-ms link at 0.90 ms when the machine was quiet again
            quiet = rtts[len(rtts) // 4]
            if abs(quiet - self.rtt_ms) <= TOLERANCE / 2 * self.rtt_ms:
                break
            # from the hold in force, never below 0: a busy moment's late figure once drove the hold negative, where
            # it stayed, and the link ran with none (0.26 ms for a 1-ms round trip)
            hold = self.hold_us + (self.rtt_ms - quiet) / 2 * 1000

    def stats(self) -> dict[str, Any]:
        """Packets each way and how late the line released them (us), from the line itself."""
        out: dict[str, Any] = {}
        if self._line is None or not self._line.alive():
            return out
        self._line.popen.stdin.write("stats\n")
        self._line.popen.stdin.flush()
        for _ in range(2):
            key, *vals = self._reply().split()
            out[key] = [float(v) for v in vals]
        return out

    def describe(self) -> dict[str, Any]:
        """What the link really was: set, floor and measured round trips, and how."""
        return {
            "rtt_set_ms": self.rtt_ms,
            "rtt_floor_ms": round(self.floor_ms, 4),
            "rtt_measured_ms": round(self.measured_ms, 4),
            "rtt_p10_p90_ms": [round(x, 4) for x in self.spread_ms],
            "hold_us_each_way": round(self.hold_us, 1),
            "how": "server in network namespace "
            f"{self.namespace}, joined to the client's through a user-space delay line (TUN devices; this kernel "
            "has no netem); round trips measured as TCP connects answered by RST",
        }

    def stop(self) -> None:
        """Stop the line (its TUN devices go with it) and remove the namespace. Idempotent."""
        if self._line is not None:
            with contextlib.suppress(Exception):
                self._line.popen.stdin.close()
            self._line.stop(timeout=5)
            self._line = None
        if self.namespace and self.namespace in _namespaces():
            subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True, env=server_env())
        if self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)
            self._run_dir = None
