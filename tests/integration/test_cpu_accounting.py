"""Server CPU in nanoseconds from the server's own cpuacct group: it agrees with /proc over a run of seconds,
and it keeps the CPU of threads that exited (MariaDB ends a connection's thread when it closes, with no
thread cache), which a sum over the live threads loses."""

from __future__ import annotations

from pathlib import Path

import pytest

from secoverhead.host import cgroups
from secoverhead.host.metrics import CgroupCpu, CpuMeter, ProcCpu
from secoverhead.servers import MariaDBServer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.quiet,
    pytest.mark.skipif(not cgroups.available("cpuacct"), reason="no writable cpuacct"),
]

QUERY = "SELECT BENCHMARK(40000, SHA2('secoverhead', 256))"  # some ms of server CPU, in the connection's thread


def _live_threads_ns(pid: int) -> int:
    total = 0
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((t / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
    return total


def test_cgroup_cpu_agrees_with_proc_and_keeps_exited_threads():
    with MariaDBServer(extra_options={"thread_cache_size": 0}) as db:
        assert isinstance(db.cpu, CgroupCpu) and db.describe()["cpu_accounting"] == "cgroup-v1-cpuacct"
        pid = db.pids[0]
        assert f":cpuacct:/{cgroups.PREFIX}/" in Path(f"/proc/{pid}/cgroup").read_text()
        proc, cg = ProcCpu([pid]), db.cpu
        p0, c0, live0 = proc.take(), cg.take(), _live_threads_ns(pid)
        conns = 0
        with CpuMeter(cg) as meter:
            while sum(proc.seconds(p0, proc.take())) < 2.5:  # >= 2 s of server CPU, in threads that then exit
                conn = db.endpoint.connect(tls=False)
                cur = conn.cursor()
                cur.execute(QUERY)
                cur.fetchall()
                conn.close()
                conns += 1
        from_proc = sum(proc.seconds(p0, proc.take()))
        from_cgroup = sum(cg.seconds(c0, cg.take()))
        live = (_live_threads_ns(pid) - live0) / 1e9
        assert from_cgroup == pytest.approx(from_proc, rel=0.02), (from_cgroup, from_proc)
        assert live < 0.5 * from_cgroup, "the work ran in connection threads that are gone"
        assert meter.server.total_s >= 2.0 and meter.server.method == "cgroup-v1-cpuacct"
        m = meter.metrics(conns)
        assert m["server_cpu_ns_resolution"] is True and m["server_cpu_low_resolution"] is False
        assert m["server_user_us_per_op"] > m["server_system_us_per_op"]  # SHA-256 in user space
    assert not db.account.group.path.exists()  # the group goes with the server
