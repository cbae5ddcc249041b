"""Resource limits that emulate an instance: CPU quota (cgroup or affinity) and IOPS (blkio)."""

import pytest

from secoverhead.core import owners
from secoverhead.core.errors import ConfigError
from secoverhead.host import cgroups
from secoverhead.servers.limits import check_cpu_limit, cpu_limit, iops_limit


def test_no_limit_is_none():
    assert cpu_limit(None) is None


@pytest.mark.parametrize("cores", [0, -1, 1000, "many"])
def test_bad_core_counts_are_rejected(cores):
    with pytest.raises(ConfigError):
        check_cpu_limit(cores)


def test_affinity_rounds_up_to_whole_cores():
    lim = cpu_limit(0.5, prefer="affinity")
    assert lim.method == "affinity" and lim.cores == 1.0 and len(lim.cpus) == 1 and lim.group is None


@pytest.mark.skipif(not cgroups.available("cpu"), reason="cgroup v1 cpu controller not writable here")
def test_cgroup_quota_is_written_and_removed():
    lim = cpu_limit(0.6, label="unit")
    try:
        assert lim.method == "cgroup-v1-quota"
        assert lim.describe()["cpu_cfs_quota_us"] == 60_000 and lim.describe()["cpu_cfs_period_us"] == 100_000
        assert lim.group.path.name.startswith(f"{owners.me()}-unit-")  # swept when this process is gone
    finally:
        lim.remove()
    assert not lim.group.path.exists()


@pytest.mark.skipif(not cgroups.available("blkio"), reason="cgroup v1 blkio controller not writable here")
def test_iops_limit_names_the_whole_disk(tmp_path):
    lim = iops_limit(1050, 900, tmp_path, label="unit")
    try:
        major, minor = lim.device.split(":")
        assert int(major) >= 0 and int(minor) >= 0
        assert f"{lim.device} 1050" in lim.group.read("blkio.throttle.read_iops_device")
        assert f"{lim.device} 900" in lim.group.read("blkio.throttle.write_iops_device")
        assert lim.serviced() == (0, 0)
    finally:
        lim.remove()
    with pytest.raises(ConfigError):
        iops_limit(0, 10, tmp_path)


def test_lru_scan_depth_scales_with_the_pool_within_innodbs_range():
    from secoverhead.servers.mysql_family import lru_scan_depth

    assert lru_scan_depth(6 << 20) == 100  # 384 pages: InnoDB's minimum
    assert lru_scan_depth(64 << 20) == 163  # 4,096 pages: about 4 %
    assert lru_scan_depth(12 << 30) == 1536  # the original's pool: InnoDB's default
