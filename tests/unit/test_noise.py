"""The noise monitor counts the experiment's own processes as its own, and only others' CPU as outside."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

import pytest

from secoverhead.host import noise

BUSY = [sys.executable, "-c", "while True: pass"]


@contextlib.contextmanager
def _orphan_loop():
    """A busy loop whose parent is gone (nobody's descendant here): someone else's CPU. Yields its PID."""
    sh = subprocess.Popen(["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                          stdout=subprocess.PIPE, text=True)  # fmt: skip
    orphan = int(sh.communicate()[0].strip())
    try:
        time.sleep(0.2)
        yield orphan
    finally:
        subprocess.run(["kill", "-9", str(orphan)], check=False)


def _window(seconds: float = 0.8) -> noise.Noise:
    with noise.NoiseMonitor() as nm:
        time.sleep(seconds)
    return nm.stop()


def test_a_live_child_that_burns_cpu_is_the_experiments_own_not_outside():
    """A server or client still running when the window closes (never reaped inside it) counts as own."""
    child = subprocess.Popen(BUSY)
    try:
        time.sleep(0.2)
        assert child.pid in noise.descendants(__import__("os").getpid())
        n = _window()
    finally:
        child.kill()
        child.wait()
    # it ran on one of two cores, however busy the machine: a tenth of a core at the very least
    assert n.own_cores > 0.1, n


def test_a_process_the_experiment_did_not_start_is_outside():
    """An orphaned loop (its parent gone, so it is nobody's descendant here) is someone else's CPU."""
    with _orphan_loop() as orphan:
        assert orphan not in noise.descendants(__import__("os").getpid())
        n = _window()
    assert n.outside_cores > 0.1, n


def test_a_process_that_ends_between_two_readings_is_counted_once():
    """A child live at one reading and reaped by the next moves from its live figure to the reaped total: the
    experiment's CPU between the readings is what the child used in between (plus this process's little)."""
    import os

    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 0.6: pass"])
    time.sleep(0.2)
    before, a = noise._process_cpu_s(child.pid), noise.own_cpu_s()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = status  # reaped here, so Popen does not wait for it again
    b = noise.own_cpu_s()
    used_between = usage.ru_utime + usage.ru_stime - before
    assert used_between > 0.05  # it burned CPU after the first reading
    assert abs((b - a) - used_between) < 0.1 + 0.1 * used_between, (b - a, used_between)  # once: not twice, not never


def test_a_child_in_a_cgroup_this_process_owns_is_counted_there_once():
    """A server under a CPU account of the project's (a cpuacct group named by its owner token) is counted through
    the group, not twice (the group and its live figure)."""
    from secoverhead.host.cgroups import CpuAccount

    account = CpuAccount.create("noise-test")
    if account is None:
        pytest.skip("no cpuacct controller here")
    child = subprocess.Popen(BUSY)
    try:
        account.join(child.pid)
        time.sleep(0.2)
        a = noise.own_cpu_s()
        time.sleep(0.6)
        b = noise.own_cpu_s()
        child_cpu = noise._process_cpu_s(child.pid)
    finally:
        child.kill()
        child.wait()
        account.remove()
    assert 0.05 < b - a < 0.6 * 1.5 + 0.1, (b - a, child_cpu)  # at most one core's worth over 0.6 s: counted once


def test_a_duets_window_closes_when_its_last_run_ends_and_holds_the_partners_clients():
    """One run of a duet ends at once; its partner's client burns CPU and is reaped before the partner ends. The
    window (closed by the last run, whoever calls stop first) holds the client's CPU as the experiment's own."""
    import os
    import threading

    used: list[float] = []
    with noise.NoiseMonitor(2) as nm:

        def partner() -> None:
            child = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 0.5: pass"])
            _, child.returncode, usage = os.wait4(child.pid, 0)
            used.append(usage.ru_utime + usage.ru_stime)
            nm.stop()

        t = threading.Thread(target=partner)
        t.start()
        first = nm.stop()  # the first run's end waits for its partner's
        t.join()
    assert first is nm.noise
    assert used and first.own_cores * first.wall_s > 0.8 * used[0], (first, used)


def test_a_duet_partner_that_fails_does_not_hold_the_other_run():
    with noise.NoiseMonitor(2) as nm:
        nm.abandon()
        assert nm.stop().wall_s >= 0


@pytest.mark.quiet
def test_a_busy_core_beside_the_experiment_flags_its_run():
    """A loop the experiment did not start, on one of the two cores, is noise the run is flagged for."""
    with _orphan_loop():
        metrics = _window(1.0).metrics()
    assert metrics["noise_flagged"] and metrics["noise_outside_cores"] > noise.OUTSIDE_LIMIT, metrics
