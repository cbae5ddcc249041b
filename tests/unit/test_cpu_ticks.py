"""The user/system split is a sample of kernel ticks: the tick's length from the kernel's config, the ticks each
source counts, the sampling interval of a split, and the untraced login batch that goes on until its split rests
on enough ticks (workloads/logins.py). No timings: the counters here are written by the test."""

from __future__ import annotations

import gzip
import types

import pytest

from secoverhead.analysis.stats import wilson
from secoverhead.host import metrics
from secoverhead.host.metrics import CgroupCpu, CpuMeter, ProcCpu, hz_of, kernel_tick_s, ticks_in
from secoverhead.studies.auth.tables import random_source_table, system_share
from secoverhead.workloads.logins import CHECK_EVERY, untraced_cpu

TICK_NS = 4_000_000  # a 250 Hz kernel's tick, as on this project's VMs


@pytest.fixture
def hz_250(monkeypatch):
    monkeypatch.setattr(metrics, "kernel_tick_s", lambda: TICK_NS / 1e9)


def test_the_kernel_tick_is_read_from_its_config_else_the_coarsest_tick(tmp_path):
    assert hz_of("CONFIG_HZ_250=y\nCONFIG_HZ=250\n") == 250
    assert hz_of("# CONFIG_HZ is not set\nCONFIG_HZ_PERIODIC=y\n") is None
    packed, plain, broken = tmp_path / "config.gz", tmp_path / "config-6.1", tmp_path / "bad.gz"
    packed.write_bytes(gzip.compress(b"CONFIG_NO_HZ=y\nCONFIG_HZ=250\n"))
    plain.write_text("CONFIG_HZ=1000\n")
    broken.write_bytes(b"not gzip")
    assert kernel_tick_s((packed, plain)) == pytest.approx(0.004)
    assert kernel_tick_s((broken, tmp_path / "absent", plain)) == pytest.approx(0.001)
    assert kernel_tick_s((tmp_path / "absent",)) == metrics.TICK_S  # counts fall short, never over


def test_only_whole_ticks_count(hz_250):
    assert ticks_in(0.4) == 100  # 100 ticks of 4 ms, whatever the float arithmetic
    assert ticks_in(0.0039) == 0  # part of a tick (the rest lost to steal) is no sample
    assert ticks_in(-0.004) == 0  # a counter read backwards is no sample


class Account:
    """A cpuacct group's three counters, as the test sets them (exact total, sampled user, sampled system)."""

    method = "cgroup-v1-cpuacct"

    def __init__(self) -> None:
        self.now = (0, 0, 0)

    def counters(self) -> tuple[int, int, int]:
        return self.now

    def add(self, exact: int, user_ticks: int, system_ticks: int) -> None:
        t, u, s = self.now
        self.now = (t + exact, u + user_ticks * TICK_NS, s + system_ticks * TICK_NS)


def test_each_source_counts_the_ticks_behind_its_split(hz_250):
    account = Account()
    source = CgroupCpu(account)
    a = source.take()
    account.add(exact=410_000_000, user_ticks=40, system_ticks=60)
    assert source.ticks(a, source.take()) == (40, 60)
    proc = ProcCpu([])  # utime/stime in USER_HZ steps: 10 ms each is 2.5 ticks of 4 ms
    assert proc.ticks({1: (0, 0)}, {1: (10, 4), 2: (99, 99)}) == (25, 10)  # a process not read at first counts nothing


def test_a_meter_records_the_ticks_where_its_source_counts_them(hz_250):
    account = Account()
    with CpuMeter(CgroupCpu(account)) as meter:
        account.add(exact=100_000_000, user_ticks=10, system_ticks=15)
    m = meter.metrics(10)
    assert (m["server_cpu_user_ticks"], m["server_cpu_system_ticks"]) == (10, 15)
    assert m["server_system_us_per_op"] == pytest.approx(6_000)  # 60 % of 10 ms per operation
    assert "server_cpu_ticks" not in meter.server.as_dict("server_cpu_")  # the counts are not CPU figures

    class Remote:  # a host's counters over HTTP: a split, but no tick count
        method, resolution_s = "remote", 0.01

        def take(self) -> tuple[float, float]:
            return (0.0, 0.0)

        def seconds(self, a, b) -> tuple[float, float]:
            return (0.0, 0.0)

    with CpuMeter(Remote()) as meter:
        pass
    assert "server_cpu_user_ticks" not in meter.metrics(1)


def logins(account: Account, user_ticks: int, system_ticks: int):
    """A login that costs the server the given ticks; returns it and the count of logins made."""
    made = []

    def once() -> None:
        account.add(exact=(user_ticks + system_ticks) * TICK_NS, user_ticks=user_ticks, system_ticks=system_ticks)
        made.append(1)

    return once, made


def test_the_untraced_batch_makes_its_connections_when_no_ticks_are_asked(hz_250):
    account = Account()
    once, made = logins(account, 0, 1)
    out = untraced_cpu(once, CgroupCpu(account), at_least=7, split_ticks=0)
    assert len(made) == out["cpu_connections"] == 7 and out["server_cpu_system_ticks"] == 7


def test_the_untraced_batch_goes_on_until_its_split_rests_on_the_ticks_asked(hz_250):
    account = Account()
    once, made = logins(account, 1, 1)  # two ticks a login
    out = untraced_cpu(once, CgroupCpu(account), at_least=7, split_ticks=50)
    assert out["server_cpu_user_ticks"] + out["server_cpu_system_ticks"] >= 50
    assert out["cpu_connections"] == len(made) and len(made) % CHECK_EVERY == 0  # read every CHECK_EVERY logins
    assert len(made) < 25 + CHECK_EVERY  # and stopped once there
    assert out["server_cpu_us_per_op"] == pytest.approx(2 * TICK_NS / 1e3)


def test_the_untraced_batch_stops_at_its_cap_or_where_ticks_cannot_be_counted(hz_250):
    account = Account()
    once, made = logins(account, 0, 0)  # a login the ticks never see
    out = untraced_cpu(once, CgroupCpu(account), at_least=5, split_ticks=50, cap_s=0.0)
    assert out["cpu_connections"] == len(made) == 5
    assert untraced_cpu(once, [], at_least=3, split_ticks=50) == {"cpu_connections": 3}  # nothing to measure


def test_wilsons_interval():
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)  # Wilson (1927), as tabled
    assert wilson(30, 100) == pytest.approx((0.2189, 0.3958), abs=1e-4)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0 and wilson(0, 10)[1] < 0.3
    assert wilson(0, 0) == (0.0, 1.0)  # no draw says nothing
    lo90, hi90 = wilson(30, 100, 0.90)
    assert wilson(30, 100)[0] < lo90 < 0.3 < hi90 < wilson(30, 100)[1]
    with pytest.raises(ValueError):
        wilson(11, 10)


def test_the_random_source_table_shows_the_system_share_with_its_sampling_interval():
    assert system_share({"server_cpu_user_ticks": 40, "server_cpu_system_ticks": 60}) == "60 % [50, 69], 100"
    assert system_share({"server_cpu_user_ticks": 0, "server_cpu_system_ticks": 0}) == "no tick"
    assert system_share({"server_system_us_per_op": 1.0}) == ""  # a record from before ticks were counted

    row = {"mechanism": "auth off", "server_cpu_user_ticks": 1, "server_cpu_system_ticks": 3}
    part = types.SimpleNamespace(extras={"random_source": {"mongod 4.2": [row]}})
    frame = random_source_table([part])
    assert frame["system share [95 %], ticks"].tolist() == ["75 % [30, 95], 4"]


def test_a_share_pooled_over_runs_is_wilsons_over_their_ticks_shrunk_by_their_overdispersion():
    from secoverhead.analysis.stats import combined_share

    agree = combined_share([15, 15, 15, 15], [50, 50, 50, 50])  # runs that differ by less than their ticks say
    assert agree == pytest.approx((0.3, *wilson(60, 200), 200.0))
    share, lo, hi, draws = combined_share([5, 25, 5, 25], [50, 50, 50, 50])  # same pooled share, runs far apart
    assert share == pytest.approx(0.3) and draws < 50 and lo < agree[1] and hi > agree[2]
    assert combined_share([7], [20])[1:3] == pytest.approx(wilson(7, 20))  # one run: its own ticks
    assert combined_share([0, 0], [0, 0])[1:] == (0.0, 1.0, 0.0)  # no tick: says nothing
    assert combined_share([0, 0], [40, 40])[:2] == (0.0, 0.0)  # all user: a share of 0 with an upper end


def _runs(ticks: bool):
    import pandas as pd

    rows = [
        {"arm": arm, "server_cpu_us_per_op": cpu, "server_system_us_per_op": cpu * s / 40}
        | ({"server_cpu_user_ticks": 40 - s, "server_cpu_system_ticks": s} if ticks else {})
        for arm, cpu, shares in (("auth off", 500.0, (20, 22, 18)), ("SCRAM", 900.0, (10, 14, 12)))
        for s in shares
    ]
    return pd.DataFrame(rows)


def test_the_cpu_split_figure_splits_the_median_at_the_combined_share_and_draws_its_interval():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.container import ErrorbarContainer

    from secoverhead.reporting.tables import cpu_split
    from secoverhead.studies.auth.tables import _cpu_split_figure

    split = cpu_split(_runs(True), ["arm"]).set_index("arm")
    assert split.loc["auth off", "system_share"] == pytest.approx(0.5)
    assert split.loc["auth off", "system_us"] == pytest.approx(250.0) and split.loc[
        "SCRAM", "user_us"
    ] == pytest.approx(900.0 * 0.7)
    assert split.loc["SCRAM", "system_share_low"] < 0.3 < split.loc["SCRAM", "system_share_high"]
    old = cpu_split(_runs(False), ["arm"]).set_index("arm")  # records from before ticks were counted
    assert old.loc["SCRAM", "system_share"] == pytest.approx(0.3) and old["system_share_low"].isna().all()
    part = types.SimpleNamespace(label="MongoDB")
    fig, caption = _cpu_split_figure(part, _runs(True), 2)
    assert any(isinstance(c, ErrorbarContainer) for c in fig.axes[0].containers) and "whisker" in caption
    fig, caption = _cpu_split_figure(part, _runs(False), 2)
    assert not any(isinstance(c, ErrorbarContainer) for c in fig.axes[0].containers) and "no interval" in caption


def test_the_random_source_finding_names_each_builds_logins_against_one_without_auth():
    from secoverhead.studies.auth.tables import random_source_finding

    off = {"mechanism": "auth off", "random_calls_per_op": 0.0, "opens_per_op": 0.0, "bytes_per_op": 0.0}
    rows = [off, {"mechanism": "SCRAM-SHA-1", "random_calls_per_op": 2.0, "opens_per_op": 1.0, "bytes_per_op": 8191.0}]
    found = random_source_finding([types.SimpleNamespace(extras={"random_source": {"mongod 4.2": rows}})])
    assert found.startswith("Seed 001's mechanism") and "mongod 4.2: a SCRAM login makes 2 calls" in found
    assert "1 opens of /dev/urandom, 8,191 bytes" in found and "a login without auth 0" in found
    assert random_source_finding([types.SimpleNamespace(extras={})]) == ""
    only_off = {"random_source": {"mongod 6.0": rows[:1]}}
    assert random_source_finding([types.SimpleNamespace(extras=only_off)]) == ""
