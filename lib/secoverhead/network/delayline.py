"""A delay line: every IP packet between two TUN devices waits a set time before it goes on.

Why hand-written: this kernel has no `netem`, `fq` or `etf` qdisc (so neither a netem delay nor a BPF
departure time), and Toxiproxy delays whole streams in whole milliseconds, after the TCP handshake it does not
delay. Holding packets here delays every packet of every connection, the handshake's SYN and SYN-ACK included,
to the tens of microseconds a round trip needs.

Run as a child process (stdlib only, so it starts in a few milliseconds):

    python -m secoverhead.network.delayline HOST_TUN PEER_TUN HOLD_US

It creates the two TUN devices (they vanish when it exits), prints ``ready``, then forwards packets from each
to the other, each held HOLD_US microseconds after it was read. Commands on stdin: ``hold N`` sets the hold in
microseconds, ``stats`` prints ``packets A B`` and ``late_us P50 P99`` (how far after its due time a packet
went out); end of input stops it.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import fcntl
import os
import struct
import sys
import threading
import time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
PR_SET_TIMERSLACK = 29
MTU = 65536


def open_tun(name: str) -> int:
    """A TUN device of this name, owned by the returned descriptor (gone when it closes)."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


class Direction:
    """Packets read from one device, written to the other once their hold has passed (FIFO: one hold for
    all, so due times never go down)."""

    def __init__(self, src: int, dst: int, line: DelayLine) -> None:
        self.src, self.dst, self.line = src, dst, line
        self.queue: collections.deque[tuple[int, bytes]] = collections.deque()
        self.ready = threading.Condition()
        self.packets = 0
        self.late: collections.deque[int] = collections.deque(maxlen=4096)

    def read_loop(self) -> None:
        while True:
            try:
                pkt = os.read(self.src, MTU)
            except OSError:
                return
            due = time.monotonic_ns() + self.line.hold_ns
            with self.ready:
                self.queue.append((due, pkt))
                self.ready.notify()

    def write_loop(self) -> None:
        while True:
            with self.ready:
                while not self.queue:
                    self.ready.wait()
                due, pkt = self.queue[0]
            wait = due - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait / 1e9)  # clock_nanosleep; timer slack set to 1 ns below
            with self.ready:
                self.queue.popleft()
            with contextlib.suppress(OSError):  # a packet the other side refuses (going down): dropped, as on a wire
                os.write(self.dst, pkt)
            self.packets += 1
            self.late.append(time.monotonic_ns() - due)


class DelayLine:
    def __init__(self, host_tun: str, peer_tun: str, hold_us: float) -> None:
        self.hold_ns = int(hold_us * 1000)
        a, b = open_tun(host_tun), open_tun(peer_tun)
        self.directions = (Direction(a, b, self), Direction(b, a, self))

    def start(self) -> None:
        for d in self.directions:
            for loop in (d.read_loop, d.write_loop):
                threading.Thread(target=loop, daemon=True).start()

    def stats(self) -> str:
        late = sorted(x for d in self.directions for x in d.late)

        def p(q: float) -> float:
            return late[min(len(late) - 1, int(q * len(late)))] / 1000 if late else float("nan")

        a, b = (d.packets for d in self.directions)
        return f"packets {a} {b}\nlate_us {p(0.5):.1f} {p(0.99):.1f}"


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    # Threads inherit the creator's timer slack: 1 ns instead of 50 us, so a sleep ends when it is due.
    ctypes.CDLL("libc.so.6").prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    line = DelayLine(argv[0], argv[1], float(argv[2]))
    line.start()
    print("ready", flush=True)
    for raw in sys.stdin:
        cmd = raw.split()
        if cmd[:1] == ["hold"] and len(cmd) == 2:
            line.hold_ns = max(0, int(float(cmd[1]) * 1000))
            print("ok", flush=True)
        elif cmd[:1] == ["stats"]:
            print(line.stats(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
