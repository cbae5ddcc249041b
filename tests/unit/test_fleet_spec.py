"""The fleet file is checked as strictly as `-p`: every branch of fleet.spec's checks, and the scheduler address."""

from __future__ import annotations

import pytest

from secoverhead.core.errors import ConfigError
from secoverhead.fleet import spec
from secoverhead.fleet.runner import check_address

TARGET = {"params": {"mysql_host": "10.0.0.5", "mysql_user": "bench", "mysql_password_env": "PW"}, "clients": ["a"]}


def _fleet(**change):
    data = {"targets": {"prod": dict(TARGET)}, "studies": [{"study": "tls"}]}
    data.update(change)
    return data


def test_a_good_fleet_makes_its_jobs():
    fleet = spec.parse(_fleet())
    (job,) = fleet.jobs()
    assert job.key == "tls@prod" and job.params()["mysql_host"] == "10.0.0.5"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "must be a mapping"),
        (_fleet(extra=1), "unknown key"),
        (_fleet(targets={}), "name at least one target"),
        (_fleet(targets={"bad name": TARGET}), "a name of letters"),
        (_fleet(targets={"prod": TARGET | {"host": "x"}}), "give params:, clients:"),
        (_fleet(targets={"prod": TARGET | {"clients": ["a b"]}}), "list of worker names"),
        (_fleet(targets={"prod": {"params": {"mysql_hots": "x"}, "clients": ["a"]}}), "no study of this fleet takes"),
        (_fleet(targets={"prod": {"params": {"mysql_passwd": "x"}, "clients": ["a"]}}), "would put a secret"),
        (_fleet(targets={"prod": {"params": {"api_token": "x"}, "clients": ["a"]}}), "would put a secret"),
        (_fleet(studies=[{"study": "tls", "params": {"mysql_password": "x"}}]), "would put a secret"),
        (_fleet(studies=[{"study": "tls"}, {"study": "https"}]), "https takes none of its params"),
        (_fleet(studies=[]), "list at least one study"),
        (_fleet(studies=[{"study": "nosuch"}]), "unknown study"),
        (_fleet(studies=[{"study": "tls", "files": "x.yaml"}]), "files must be a list"),
        (_fleet(studies=[{"study": "tls", "extra": 1}]), "give study:"),
        (_fleet(retries=11), "retries must be"),
        (_fleet(retries=True), "retries must be"),
    ],
)
def test_a_fleet_file_mistake_is_one_refusal(data, message):
    with pytest.raises(ConfigError, match=message):
        spec.parse(data)


def test_a_target_without_params_runs_each_studys_own_servers():
    fleet = spec.parse(_fleet(targets={"local": {"clients": ["a"]}}, studies=[{"study": "https"}]))
    assert fleet.jobs()[0].target.embedded


def test_two_fleets_started_in_the_same_second_get_different_names():
    stamps = {spec.parse(_fleet()).stamp for _ in range(20)}
    assert len(stamps) == 20
    assert all(s[:8].isdigit() and "T" in s for s in stamps)  # still sorted by time first


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ("tcp://10.0.0.1:8786", "tcp://10.0.0.1:8786"),
        ("sched.example:8786", "tcp://sched.example:8786"),
        ("tls://[::1]:8786", "tls://[::1]:8786"),
    ],
)
def test_a_scheduler_address_is_taken_as_dask_takes_it(given, taken):
    assert check_address(given) == taken


@pytest.mark.parametrize("bad", ["", "garbage addr", "tcp://host", "http://h:1", "tcp://h:0", "tcp://h:70000", "h:1/x"])
def test_a_malformed_scheduler_address_is_refused(bad):
    with pytest.raises(ConfigError, match="give tcp://HOST:PORT"):
        check_address(bad)


def test_two_fleets_on_one_host_never_load_one_server_at_once(tmp_path):
    """Each fleet's Dask lock orders its own jobs only: the host-wide lock on the server's address holds a second
    fleet's job on the same server (named differently) until the first is done; another server's is not held."""
    import fcntl
    import multiprocessing
    import os

    from secoverhead.fleet.job import HERE_LOCKS, held_here, target_key
    from secoverhead.fleet.spec import Target

    staging = Target("staging", {"mysql_host": "10.1.2.3", "mysql_port": 3306, "mysql_user": "a"}, ("h1",))
    same = Target("db-a", {"mysql_host": "10.1.2.3", "mysql_port": 3306, "mysql_user": "b"}, ("h2",))
    other = Target("db-b", {"mysql_host": "10.1.2.4", "mysql_port": 3306}, ("h2",))
    assert target_key(staging) == target_key(same) != target_key(other)
    ctx = multiprocessing.get_context("fork")
    holding, go = ctx.Event(), ctx.Event()

    def hold() -> None:
        with held_here(staging):
            holding.set()
            go.wait(30)

    def free(target: Target) -> bool:
        fd = os.open(HERE_LOCKS / f"{target_key(target)}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    holder = ctx.Process(target=hold)
    holder.start()
    assert holding.wait(30)
    assert not free(same) and free(other)  # the same server held, another not
    go.set()
    with held_here(same):  # waits for the first fleet's job, then holds it
        assert not free(staging)
    holder.join(30)
