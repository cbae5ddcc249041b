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


def _sleeper_between(start_s: float, stop_s: float, tids: list[int]) -> threading.Thread:
    """A thread born start_s into the block and gone at stop_s, mostly asleep (a connection's, in miniature)."""

    def run() -> None:
        tids.append(threading.get_native_id())
        end = time.monotonic() + stop_s - start_s
        while time.monotonic() < end:
            sum(range(2000))
            time.sleep(0.005)

    t = threading.Timer(start_s, run)
    t.start()
    return t


def test_readings_at_the_edges_miss_a_thread_that_lives_only_inside_the_block_and_within_sees_it():
    for within, seen in ((None, False), ((0.3, 0.6), True)):  # the sleeper outlives B by 0.6 s of timer lag
        tids: list[int] = []
        t = _sleeper_between(0.05, 1.5, tids)
        with threadwaits.WaitMeter([os.getpid()], within=within) as w:
            time.sleep(1.8)
        t.join()
        assert (tids[0] in w.a and tids[0] in w.b) is seen
        if seen:
            assert w.metrics(100, load_s=1.8)["server_active_threads"] >= 1
            assert 0.5 < w.window_s < 1.3  # the timer's window, not the block's edges


def test_within_prorates_the_loads_operations_to_its_window():
    with threadwaits.WaitMeter([os.getpid()], within=(0.05, 0.2)) as w:
        time.sleep(0.4)
    window = w.window_s
    whole = threadwaits.summarise(w.a, w.b, window, 100 * window / 0.4)
    assert w.metrics(100, load_s=0.4) == whole


def test_a_block_that_ends_before_its_second_reading_measures_nothing():
    with threadwaits.WaitMeter([os.getpid()], within=(0.05, 5.0)) as w:
        time.sleep(0.1)
    assert w.metrics(100, load_s=0.1) == {}


def test_no_process_to_read_measures_nothing_in_either_mode():
    for within in (None, (0.01, 0.05)):
        with threadwaits.WaitMeter([], within=within) as w:
            time.sleep(0.1)
        assert w.metrics(100, load_s=0.1) == {}
