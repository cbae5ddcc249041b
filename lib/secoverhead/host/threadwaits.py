"""Where a server's threads spend a run when they are not on a CPU: waiting for a CPU (run queue) or blocked
(a lock, a file write, the client's next statement), from the scheduler's own counters.

Read from /proc/PID/task/TID/schedstat (time on CPU and time runnable but waiting, in ns) and the task's
`voluntary_ctxt_switches` (each one a block: a futex, an fsync, a socket read) at the start and the end of a
run: two readings per thread, nothing sampled in between, so measuring costs the run nothing. Threads that
did not run in the window (idle background threads) are left out of the off-CPU time, which would otherwise
count their whole window; threads born or ended inside the window are lost: a connection's thread lives only as
long as its client's connection, so with a client that connects per run (sysbench) these counters see the
server's background threads, not the connections' (the audit study reads the log's waits from the server). A
server's CPU falling while its blocked time per transaction rises is a serialising bottleneck; a rising run-queue
time is CPU shortage.
"""

from __future__ import annotations

import contextlib
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


def summarise(a: Reading, b: Reading, window_s: float, operations: int, unit: str = "txn") -> dict[str, float]:
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
    """with WaitMeter(pids) as w: ...; w.metrics(operations) -> summarise() over the block."""

    def __init__(self, pids: Iterable[int]) -> None:
        self.pids = list(pids)

    def __enter__(self) -> WaitMeter:
        self.a, self.t0 = read(self.pids), time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.b, self.window_s = read(self.pids), time.monotonic() - self.t0

    def metrics(self, operations: int, unit: str = "txn") -> dict[str, float]:
        return summarise(self.a, self.b, self.window_s, operations, unit) if self.a else {}
