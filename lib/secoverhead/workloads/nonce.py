"""The mechanism behind the 2016 short-connection collapse, measured directly: a SCRAM server nonce read
from /dev/urandom per request (a syscall each time) versus a user-space generator seeded once from it.
Worker processes generate nonces concurrently; user and system CPU per nonce are what differ."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import time
from typing import Any

from secoverhead.host.metrics import CpuMeter
from secoverhead.workloads.measurement import Measurement

SOURCES = ("syscall", "userspace")


def _worker(source: str, count: int, nbytes: int, start: Any, out: Any) -> None:
    if source == "syscall":
        fd = os.open("/dev/urandom", os.O_RDONLY)
        read = os.read
        start.wait()
        for _ in range(count):
            read(fd, nbytes)
        os.close(fd)
    else:
        rng = random.Random(int.from_bytes(os.urandom(32), "big"))  # seeded once from the kernel
        randbytes = rng.randbytes
        start.wait()
        for _ in range(count):
            randbytes(nbytes)
    out.put(count)


def nonce_benchmark(source: str, *, workers: int, nonces_per_worker: int, nonce_bytes: int = 24) -> Measurement:
    """Generate nonces in `workers` processes at once; CPU (user, system) per nonce and nonces per second."""
    if source not in SOURCES:
        raise ValueError(f"source {source!r} is not one of {SOURCES}")
    if workers < 1 or nonces_per_worker < 1:
        raise ValueError("workers and nonces_per_worker must be >= 1")
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(source, nonces_per_worker, nonce_bytes, start, out), daemon=True)
        for _ in range(workers)
    ]
    for p in procs:
        p.start()
    time.sleep(0.1)
    with CpuMeter([]) as meter:  # the workers are our children: their CPU is counted once reaped
        t0 = time.perf_counter()
        start.set()
        total = sum(out.get(timeout=300) for _ in procs)
        wall = time.perf_counter() - t0
        for p in procs:
            p.join(30)
    c = meter.client
    return Measurement(
        {
            "nonces": total,
            "wall_s": wall,
            "nonces_per_s": total / wall,
            "user_ns_per_nonce": c.user_s / total * 1e9,
            "system_ns_per_nonce": c.system_s / total * 1e9,
            "cpu_ns_per_nonce": c.total_s / total * 1e9,
            "cores_busy": c.total_s / wall,
        },
        info={"source": source, "workers": workers, "nonce_bytes": nonce_bytes},
    )
