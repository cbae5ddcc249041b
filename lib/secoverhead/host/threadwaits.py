"""Where a server's threads spend a run when they are not on a CPU: waiting for a CPU (run queue) or blocked
(a lock, a file write, the client's next statement), from the scheduler's own counters.

Read from /proc/PID/task/TID/schedstat (time on CPU and time runnable but waiting, in ns) and the task's
`voluntary_ctxt_switches` (each one a block: a futex, an fsync, a socket read) twice per run: nothing sampled in
between, so measuring costs the run nothing. Threads that did not run in the window (idle background threads) are
left out of the off-CPU time, which would otherwise count their whole window; threads born or ended inside the
window are lost. A connection's thread lives only as long as its client's connection, so with a client that
connects per run (sysbench) the two readings are taken inside the load, once its connections are open and again
before they close (`within`), and the operations are prorated to that window. A server's CPU falling while its
blocked time per transaction rises is a serialising bottleneck; a rising run-queue time is CPU shortage.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable
from pathlib import Path

# tid -> (ns on CPU, ns runnable waiting for a CPU, voluntary switches)
Reading = dict[int, tuple[int, int, int]]


def read(pids: Iterable[int]) -> Reading:
    """Every thread of the given processes now (threads that vanish while read are skipped)."""
    out: Reading = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    on_cpu, runq, _ = (int(x) for x in (task / "schedstat").read_text().split())
                    status = (task / "status").read_text()
                    vol = int(status.split("voluntary_ctxt_switches:", 1)[1].split()[0])
                    out[int(task.name)] = (on_cpu, runq, vol)
    return out


def summarise(a: Reading, b: Reading, window_s: float, operations: float, unit: str = "txn") -> dict[str, float]:
    """Per operation: blocked (off-CPU, not waiting for a CPU) and run-queue time in us, blocking waits, and
    the number of threads that ran. Only threads present in both readings count."""
    window_ns, ops = window_s * 1e9, max(operations, 1)
    blocked = runq = waits = 0.0
    active = 0
    for tid, (cpu1, rq1, vol1) in b.items():
        if tid not in a:
            continue
        cpu0, rq0, vol0 = a[tid]
        d_cpu, d_rq = cpu1 - cpu0, rq1 - rq0
        runq += d_rq
        waits += vol1 - vol0
        if d_cpu > 0:
            active += 1
            blocked += max(window_ns - d_cpu - d_rq, 0.0)
    return {
        f"server_offcpu_us_per_{unit}": blocked / ops / 1e3,
        f"server_runqueue_us_per_{unit}": runq / ops / 1e3,
        f"server_blocking_waits_per_{unit}": waits / ops,
        "server_active_threads": float(active),
    }


class WaitMeter:
    """with WaitMeter(pids) as w: ...; w.metrics(operations) -> summarise() over the block.

    within=(lead_s, length_s): the readings are taken `lead_s` into the block and `length_s` after that, from a
    timer, so that threads living only as long as the load (its connections') are in both; metrics() then
    prorates the load's operations to that window. A reading the block ended before leaves nothing measured."""

    def __init__(self, pids: Iterable[int], *, within: tuple[float, float] | None = None) -> None:
        self.pids, self.within = list(pids), within
        self.a = self.b = None
        self.window_s = 0.0
        self._timers: list[threading.Timer] = []

    def __enter__(self) -> WaitMeter:
        if self.within is None:
            self._take("a")
            return self
        lead, length = self.within
        self._timers = [threading.Timer(lead, self._take, ("a",)), threading.Timer(lead + length, self._take, ("b",))]
        for t in self._timers:
            t.daemon = True
            t.start()
        return self

    def _take(self, which: str) -> None:
        setattr(self, which, read(self.pids))
        setattr(self, f"t_{which}", time.monotonic())

    def __exit__(self, *exc: object) -> None:
        if self.within is None:
            self._take("b")
        for t in self._timers:
            t.cancel()
            t.join()
        if self.a is not None and self.b is not None:
            self.window_s = self.t_b - self.t_a

    def metrics(self, operations: float, unit: str = "txn", load_s: float | None = None) -> dict[str, float]:
        """load_s: the load's own duration, over which `operations` ran; with `within` they are prorated to the
        window the readings spanned (the load's rate taken as steady)."""
        if not self.a or not self.b or self.window_s <= 0:  # no process read, or a reading the block ended before
            return {}
        ops = operations * self.window_s / load_s if self.within is not None and load_s else operations
        return summarise(self.a, self.b, self.window_s, ops, unit)
