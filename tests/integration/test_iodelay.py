"""An emulated TDE instance's device, measured against its declaration: each read of a data file waits the
instance's latency (tools/iodelay, preloaded), no read of another device does, the latency follows its control
file and is lifted on demand; the blkio cap bounds direct reads at the instance's declared IOPS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from secoverhead.core.environ import server_env
from secoverhead.host import iodelay
from secoverhead.host.iodelay import ReadLatency
from secoverhead.studies.tde.instances import EMULATED

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LATENCY_US = EMULATED["4c16g"].read_latency_us
CAP = EMULATED["4c16g"].iops

READER = r"""
import json, mmap, os, statistics, sys, threading, time
path, seconds, threads, direct = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "direct"
sys.stdin.readline()  # wait until the parent has put this process where it should be
size = os.path.getsize(path)
lat, reads = [], [0]
def work(k):
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    buf = mmap.mmap(-1, 4096)
    off, end = k * 4096 * 97, time.monotonic() + seconds
    while time.monotonic() < end:
        off = (off + 4096 * 131) % (size - 4096)
        t = time.perf_counter_ns()
        os.preadv(fd, [buf], off) if direct else os.pread(fd, 4096, off)
        lat.append((time.perf_counter_ns() - t) / 1e6)
        reads[0] += 1
    os.close(fd)
t0 = time.monotonic()
ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps({"reads": reads[0], "seconds": time.monotonic() - t0, "median_ms": statistics.median(lat),
                  "min_ms": min(lat)}))
"""


def _read(path, seconds: float, threads: int, *, direct: bool = False, env=None, group=None) -> dict:
    proc = subprocess.Popen(
        [sys.executable, "-c", READER, str(path), str(seconds), str(threads), "direct" if direct else "cached"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=server_env(env),
    )
    if group is not None:
        group.join(proc.pid)
    out, _ = proc.communicate("go\n", timeout=seconds + 60)
    return json.loads(out)


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data" / "ibdata"
    path.parent.mkdir()
    path.write_bytes(os.urandom(8 << 20))
    return path


def test_each_read_of_the_data_device_waits_the_instances_latency(data_file, tmp_path):
    if iodelay.missing():
        pytest.skip(iodelay.missing())
    latency = ReadLatency.create(data_file.parent, tmp_path, LATENCY_US)
    got = _read(data_file, 1.0, 1, env=latency.env())
    assert got["min_ms"] >= LATENCY_US / 1000  # never sooner than declared
    assert got["median_ms"] < LATENCY_US / 1000 * 2.5  # a busy machine's timer is late, not this late
    latency.set(LATENCY_US / 4)
    quarter = _read(data_file, 0.5, 1, env=latency.env())
    assert quarter["min_ms"] >= LATENCY_US / 4000 and quarter["median_ms"] < got["median_ms"]
    with latency.lifted():
        lifted = _read(data_file, 0.5, 1, env=latency.env())
    assert lifted["median_ms"] < LATENCY_US / 4000  # lifted: the page cache's speed
    assert latency.latency_us == LATENCY_US / 4  # and set back after


def test_reads_of_another_device_do_not_wait(data_file, tmp_path):
    if iodelay.missing():
        pytest.skip(iodelay.missing())
    other = ReadLatency("0:1", tmp_path / "ctl", tmp_path / "log")  # a device no file here is on
    other.set(LATENCY_US)
    got = _read(data_file, 0.5, 1, env=other.env())
    assert got["median_ms"] < LATENCY_US / 4000


def test_threads_wait_at_once_and_the_totals_are_written_at_exit(data_file, tmp_path):
    if iodelay.missing():
        pytest.skip(iodelay.missing())
    latency = ReadLatency.create(data_file.parent, tmp_path, LATENCY_US)
    got = _read(data_file, 1.0, 8, env=latency.env())
    # eight threads each waiting one latency per read: well over one thread's rate of 1 / latency
    assert got["reads"] / got["seconds"] > 3 * 1e6 / LATENCY_US
    totals = latency.totals()
    assert totals["reads"] == got["reads"] and totals["mean_ms"] >= LATENCY_US / 1000


def test_the_blkio_cap_bounds_direct_reads_at_the_declared_iops():
    """Eight threads of direct reads on a RAM-backed disk throttled to the instance's read IOPS complete at that
    rate (within 10 % above; at least 70 % of it on a busy machine)."""
    from secoverhead.host.ramdisk import RamDisk
    from secoverhead.servers.limits import iops_limit

    disk = RamDisk.make(size_mb=256)
    if disk is None:
        pytest.skip("a RAM-backed disk needs root, losetup and mkfs.ext4")
    try:
        path = disk.path / "data.bin"
        path.write_bytes(os.urandom(64 << 20))
        os.sync()
        limit = iops_limit(CAP, None, disk.path, label="test")
        if limit is None:
            pytest.skip("blkio is not writable here")
        try:
            time.sleep(0.2)
            got = _read(path, 3.0, 8, direct=True, group=limit.group)
        finally:
            limit.remove()
        rate = got["reads"] / got["seconds"]
        assert 0.7 * CAP <= rate <= 1.1 * CAP, rate
    finally:
        disk.close()


FLUSHER = r"""
import json, os, statistics, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_WRONLY)
lat = []
for i in range(40):
    os.pwrite(fd, b"x", i)
    t = time.perf_counter_ns()
    os.fsync(fd) if i % 2 else os.fdatasync(fd)
    lat.append((time.perf_counter_ns() - t) / 1e6)
print(json.dumps({"median_ms": statistics.median(lat), "min_ms": min(lat)}))
"""


def test_each_flush_of_a_file_on_the_device_waits_the_flush_latency(data_file, tmp_path):
    """A commit waits for its flush: fsync and fdatasync of a file on the data device take at least the flush latency
    set (the original's SSD flush, where the RAM-backed disk's takes microseconds); reads keep theirs. The latency
    set is ten times a busy machine's own fsync (0.53 ms seen in CI), so lifting it shows whatever the load."""
    if iodelay.missing():
        pytest.skip(iodelay.missing())
    flush_us = 5000.0
    latency = ReadLatency.create(data_file.parent, tmp_path, LATENCY_US, flush_us)

    def flush() -> dict:
        argv = [sys.executable, "-c", FLUSHER, str(data_file)]
        res = subprocess.run(argv, capture_output=True, text=True, env=server_env(latency.env()), timeout=120)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    got = flush()
    assert got["min_ms"] >= flush_us / 1000 and got["median_ms"] < flush_us / 1000 * 4
    totals = latency.totals()
    assert totals["flushes"] == 40 and totals["flush_mean_ms"] >= flush_us / 1000
    latency.set(LATENCY_US, 0)
    assert flush()["median_ms"] < flush_us / 1000  # 0: the device's own flush
