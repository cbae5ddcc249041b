"""CPU accounting from /proc on real processes (the fallback where no cgroup can be made), and the
client-bound rule. tests/integration/test_cpu_accounting.py checks the cgroup counters against these."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from secoverhead.host.metrics import CpuMeter, CpuUsage, ProcCpu, bytes_in, client_bound

# CPU shares of wall time (a busy loop is >= 0.8 core): run where no other test loads the machine
pytestmark = pytest.mark.quiet

# user-bound: the clock (a real syscall for CPU time) is read only every 200,000 iterations
BURN = "import time\nt=time.process_time()\nwhile time.process_time()-t < {s}:\n    for _ in range(200000): pass\n"
# system-bound: the kernel fills 1 MiB per iteration
SYSCALLS = (
    "import time\nf=open('/dev/zero','rb',buffering=0)\nb=bytearray(1<<20)\nt=time.process_time()\n"
    "while time.process_time()-t < {s}: f.readinto(b)\n"
)


def test_server_cpu_of_a_busy_process_is_measured_in_user_time():
    # The child says when it has burnt 1 s of CPU: on a shared VM that can take much longer in wall time.
    script = "import time\ntime.sleep(0.3)\n" + BURN.format(s=1.0) + "print('done', flush=True)\ntime.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        with CpuMeter([proc.pid]) as meter:
            assert proc.stdout.readline().strip() == "done"
        assert 0.9 <= meter.server.total_s <= 1.25
        assert meter.server.user_s > 4 * meter.server.system_s
    finally:
        proc.kill()
        proc.wait()


def test_system_time_is_separated_from_user_time():
    script = "import time\ntime.sleep(0.3)\n" + SYSCALLS.format(s=1.0) + "print('done', flush=True)\ntime.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        with CpuMeter([proc.pid]) as meter:
            assert proc.stdout.readline().strip() == "done"
        assert meter.server.system_s > meter.server.user_s
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_is_gone_contributes_nothing():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    source = ProcCpu([proc.pid])
    before = source.take()
    proc.wait()
    assert source.seconds(before, source.take()) == (0, 0)


def test_client_cpu_includes_reaped_children_and_own_work():
    with CpuMeter(None) as meter:
        subprocess.run([sys.executable, "-c", BURN.format(s=0.5)], check=True)
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
    assert meter.client.total_s >= 0.75
    m = meter.metrics(operations=100)
    assert m["client_cpu_us_per_op"] >= 7500
    # a core's share of the wall time depends on what else runs: the flag follows the rule, whatever the load
    assert m["client_bound"] is client_bound(meter.client, None)
    assert meter.server is None and "server_cpu_total_s" not in m  # nothing to measure: nothing claimed


def test_client_bound_rule():
    server = CpuUsage(10.0, 8.0, 2.0)
    assert not client_bound(CpuUsage(10.0, 3.0, 1.0), server)
    assert client_bound(CpuUsage(10.0, 6.0, 2.5), server)  # 0.85 of a core
    assert client_bound(CpuUsage(10.0, 1.0, 0.5), CpuUsage(10.0, 0.5, 0.5))  # more than the server used


def test_bytes_in_files_and_directories(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 10)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b").write_bytes(b"y" * 5)
    assert bytes_in([tmp_path / "a", tmp_path / "d", tmp_path / "missing"]) == 15


def test_cgroup_user_and_system_split_the_interval_not_the_totals():
    """cpuacct's user/sys are tick-sampled; splitting each cumulative reading let an idle interval show
    -0.08 ms/s of system time. The interval's exact total is split by the interval's own sampled shares."""
    from secoverhead.host.cgroups import split

    a = (10_000_000_000, 5_500_000_000, 4_000_000_000)  # the samples need not add up to the exact total
    b = (10_100_000_000, 5_600_000_000, 4_000_000_000)  # the last 100 ms: all user
    assert split(a, b) == (100_000_000, 0)
    old = [round(t * u / (u + s)) for t, u, s in (a, b)]  # each cumulative reading split on its own
    assert (b[0] - a[0]) - (old[1] - old[0]) < 0  # negative system time
    assert split(a, a) == (0, 0)
    c = (10_200_000_000, 5_620_000_000, 4_020_000_000)  # 100 ms, half and half
    assert split(b, c) == (50_000_000, 50_000_000)


def test_a_duet_sysbench_without_a_cpuacct_group_measures_no_client_cpu_rather_than_its_partners(monkeypatch):
    """Alone, sysbench's CPU is this process's reaped child's; beside another load (a duet) with no cpuacct group
    to hold it apart, rusage would hold the partner's sysbench too, so the client's CPU is not measured."""
    import math
    import types

    from secoverhead.core.secrets import Secret
    from secoverhead.servers.endpoints import MySQLEndpoint
    from secoverhead.workloads import sysbench as sb

    monkeypatch.setattr(sb.shutil, "which", lambda name: "/usr/bin/sysbench")
    monkeypatch.setattr(sb.CpuAccount, "create", classmethod(lambda cls, label: None))
    done = types.SimpleNamespace(
        final={"events": 100}, intervals=None, command="sysbench", metrics=lambda p: {"transactions": 100}
    )
    monkeypatch.setattr(sb.Sysbench, "run", lambda self, opts: done)
    endpoint = MySQLEndpoint("127.0.0.1", 3306, "u", Secret("p"))
    opts = sb.SysbenchOptions(script="oltp_read_only")

    alone = sb.Sysbench(endpoint).measure(opts, None).metrics
    assert math.isfinite(alone["client_cpu_total_s"]) and alone["client_cpu_total_s"] >= 0

    beside = sb.Sysbench(endpoint)
    assert beside.own_client_group() is None
    m = beside.measure(opts, None).metrics
    assert math.isnan(m["client_cpu_total_s"]) and math.isnan(m["client_cpu_us_per_op"])
    assert m["client_bound"] is False
