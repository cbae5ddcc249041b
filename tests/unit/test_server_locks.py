"""One run at a time on a user's server: each server a run names is held by its process from before the pre-flight
check to the run's end; a second run (another process) is refused in one line naming the holder; a process that
names one server twice (`run --all`) holds it once."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from secoverhead.core.errors import ConfigError
from secoverhead.core.runlock import hold_servers, server_addresses


@pytest.mark.parametrize(
    ("values", "addresses"),
    [
        ({}, []),  # the servers a study starts itself: nobody else's
        ({"mysql_host": "DB1.example", "mysql_port": 3307}, ["mysql db1.example:3307"]),
        ({"mysql_host": "db1", "mysql_port": None}, ["mysql db1:3306"]),
        ({"mongo_uri": "mongodb://a:1,b:2/?replicaSet=rs"}, ["mongodb a:1,b:2"]),
        ({"https_url": "https://web:8443/x"}, ["https web:8443"]),
        ({"mysql_host": "", "mongo_uri": "", "mysql_port": 3306}, []),
    ],
)
def test_the_servers_a_run_names_are_its_addresses(values, addresses):
    assert server_addresses(values) == addresses


HOLDER = """
import sys, time
from secoverhead.core.runlock import hold_servers
hold_servers([sys.argv[1]], "audit run")
print("held", flush=True)
time.sleep(60)
"""


def test_a_second_process_is_refused_naming_the_holder_and_takes_it_once_it_is_free():
    address = f"mysql lock-test-{time.monotonic_ns()}:3306"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, address], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError) as err:
            hold_servers([address], "tls run")
        text = str(err.value)
        assert text.startswith(address.split(" ", 1)[1]) and f"pid {holder.pid}, audit run" in text and "\n" not in text
    finally:
        holder.kill()
        holder.wait()
    hold_servers([address], "tls run")()  # free again once its holder is gone


def test_one_process_holds_a_server_once_however_many_of_its_runs_name_it():
    address = f"mysql lock-test-{time.monotonic_ns()}:3306"
    first = hold_servers([address], "tls run")
    second = hold_servers([address], "audit run")  # run --all: every study prepared before the first runs
    first()
    first()  # idempotent: a finaliser after the explicit release lets nothing else go
    code = f"from secoverhead.core.runlock import hold_servers; hold_servers([{address!r}], 'x')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode != 0  # still held
    second()
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
