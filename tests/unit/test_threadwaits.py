"""Scheduler counters of a server's threads: blocked vs run-queue time per operation."""

from __future__ import annotations

import os
import threading
import time

from secoverhead.host import threadwaits


def test_summarise_counts_only_threads_that_ran_and_are_in_both_readings():
    a = {1: (0, 0, 10), 2: (0, 0, 5), 3: (0, 0, 0)}
    b = {1: (400_000_000, 100_000_000, 30), 2: (0, 0, 5), 4: (9, 9, 9)}  # 2 idle, 3 gone, 4 new
    m = threadwaits.summarise(a, b, window_s=1.0, operations=100)
    assert m["server_active_threads"] == 1
    assert m["server_offcpu_us_per_txn"] == (1e9 - 4e8 - 1e8) / 100 / 1e3
    assert m["server_runqueue_us_per_txn"] == 1e8 / 100 / 1e3
    assert m["server_blocking_waits_per_txn"] == 20 / 100


def test_a_thread_that_sleeps_shows_blocked_time_and_waits():
    stop = threading.Event()

    def sleeper() -> None:
        while not stop.is_set():
            sum(range(2000))  # on CPU a little, so it counts as a thread that ran
            time.sleep(0.005)

    t = threading.Thread(target=sleeper)
    t.start()
    try:
        with threadwaits.WaitMeter([os.getpid()]) as w:
            time.sleep(0.3)
    finally:
        stop.set()
        t.join()
    m = w.metrics(1)
    assert m["server_blocking_waits_per_txn"] >= 10  # ~60 sleeps; at least some seen whatever the load
    assert m["server_offcpu_us_per_txn"] > 0.1 * 0.3e6  # mostly asleep: well over a tenth of the window
