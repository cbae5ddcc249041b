"""A DBA's host as a CPU source: the spec each parameter takes, the remote shell line it becomes, and what an
exporter's page is read as (parsed by prometheus_client, as the source reads it)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from secoverhead.core.errors import ConfigError
from secoverhead.host.metrics import CpuUsage
from secoverhead.servers.remote_cpu import CpuSpec, _remote_script, check_key, exported_cpu


def test_an_ssh_spec_names_user_host_port_and_process():
    assert CpuSpec.parse("p", "ssh://dba@db1.example:2222/mysqld") == CpuSpec(
        "ssh", "db1.example", 2222, "dba", "mysqld"
    )
    assert CpuSpec.parse("p", "ssh://db1") == CpuSpec("ssh", "db1", 22)
    assert CpuSpec.parse("p", "ssh://db1/4711").process == "4711"


def test_an_exporter_spec_keeps_its_url_and_group():
    spec = CpuSpec.parse("p", "http://db1:9256/metrics#mysqld")
    assert (spec.kind, spec.url, spec.process, spec.port) == ("prometheus", "http://db1:9256/metrics", "mysqld", 9256)
    assert CpuSpec.parse("p", "https://db1/metrics").port == 443


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("ssh://db1/mysqld;reboot", "is not a process name"),
        ("ssh://db1/$(id)", "is not a process name"),
        ("ssh://a b@db1/", "is not a user name"),
        ("ssh://dba:secret@db1/", "must not hold a password"),
        ("ssh:///mysqld", "names no host"),
        ("ftp://db1/", "give ssh://"),
        ("http://db1:99999/", "is not a URI"),
        ('http://db1/metrics#a"b', "group name"),
    ],
)
def test_a_spec_that_could_not_be_read_is_one_line(text, why):
    with pytest.raises(ConfigError, match=why) as err:
        CpuSpec.parse("mysql_server_cpu", text)
    assert "\n" not in str(err.value) and str(err.value).startswith("mysql_server_cpu")


def test_the_key_must_be_a_file(tmp_path):
    with pytest.raises(ConfigError, match="needs server_cpu_ssh_key"):
        check_key("server_cpu_ssh_key", "")
    with pytest.raises(ConfigError, match="server_cpu_ssh_key"):
        check_key("server_cpu_ssh_key", str(tmp_path / "missing"))
    (tmp_path / "key").write_text("k")
    check_key("server_cpu_ssh_key", str(tmp_path / "key"))


def test_the_remote_line_looks_for_the_engines_names_or_the_pid_given():
    assert "for w in mysqld mariadbd;" in _remote_script("", ("mysqld", "mariadbd"))
    assert "for w in mongod;" in _remote_script("mongod", ("mysqld",))
    by_pid = _remote_script("4711", ("mysqld",))
    assert "/proc/4711/stat" in by_pid and "for d in" not in by_pid


PAGE = """# TYPE namedprocess_namegroup_cpu_seconds_total counter
namedprocess_namegroup_cpu_seconds_total{groupname="mysqld",mode="system"} 2.5
namedprocess_namegroup_cpu_seconds_total{groupname="mysqld",mode="user"} 10.25
namedprocess_namegroup_cpu_seconds_total{groupname="nginx",mode="user"} 99
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 1000
node_cpu_seconds_total{cpu="0",mode="user"} 5
node_cpu_seconds_total{cpu="0",mode="nice"} 1
node_cpu_seconds_total{cpu="0",mode="system"} 2
node_cpu_seconds_total{cpu="0",mode="iowait"} 7
node_cpu_seconds_total{cpu="1",mode="softirq"} 0.5
node_cpu_seconds_total{cpu="1",mode="irq"} 0.25
node_cpu_seconds_total{cpu="1",mode="steal"} 3
"""


def _samples():
    return [s for f in text_string_to_metric_families(PAGE) for s in f.samples]


def test_a_process_group_is_read_alone():
    assert exported_cpu(_samples(), "mysqld") == (10.25, 2.5)


def test_the_whole_host_counts_what_its_cpus_did_and_not_idle_iowait_or_steal():
    assert exported_cpu(_samples(), "") == (6.0, 2.75)


@pytest.mark.parametrize(
    ("resolution", "total", "low"),
    [(0.01, 1.99, True), (0.01, 2.0, False), (1e-6, 0.001, False), (0.0, 0.001, False)],
)
def test_only_a_counter_in_coarse_steps_is_low_resolution(resolution, total, low):
    assert CpuUsage(1.0, total, 0.0, "m", resolution).low_resolution is low


def test_only_an_ssh_source_needs_a_key():
    from secoverhead.servers.remote_cpu import check_source

    check_source("mongo_server_cpu", "serverStatus", "MongoDB", "")
    check_source("mysql_server_cpu", "http://db1:9256/metrics#mysqld", "MySQL", "")
    with pytest.raises(ConfigError, match="needs server_cpu_ssh_key"):
        check_source("mysql_server_cpu", "ssh://db1/mysqld", "MySQL", "")
    with pytest.raises(ConfigError, match="mysql_server_cpu 'serverStatus' names no host"):
        check_source("mysql_server_cpu", "serverStatus", "MySQL", "")  # mongod's word, not MySQL's


@pytest.mark.parametrize(
    ("uri", "hosts"),
    [
        ("mongodb://127.0.0.1:27017/", ["127.0.0.1"]),
        ("mongodb://db1:1,db2:2/?replicaSet=rs", ["db1", "db2"]),
        ("mongodb://[::1]:27017/admin", ["[::1]"]),
        ("mongodb://localhost", ["localhost"]),
        ("mongodb+srv://cluster.example.com/", ["cluster.example.com"]),
    ],
)
def test_a_uri_names_its_hosts(uri, hosts):
    from secoverhead.servers.external import uri_hosts

    assert uri_hosts(uri) == hosts


@pytest.mark.parametrize(
    ("whole_host", "hosts", "measured"),
    [
        (True, ["127.0.0.1"], False),  # node_exporter on this machine: the client's CPU would be the server's
        (True, ["db1", "[::1]"], False),
        (True, ["localhost"], False),
        (True, ["db1.example"], True),  # a dedicated host, as the DBA names it
        (False, ["127.0.0.1"], True),  # one process's CPU (process-exporter, ssh) wherever it is
    ],
)
def test_a_whole_hosts_cpu_is_the_servers_only_on_a_host_the_load_is_not_on(monkeypatch, whole_host, hosts, measured):
    from types import SimpleNamespace

    from secoverhead.servers import external

    closed = []
    source = SimpleNamespace(whole_host=whole_host, spec=SimpleNamespace(url="http://h/metrics"), close=closed.append)
    monkeypatch.setattr(external, "remote_cpu", lambda *a: source)
    monkeypatch.setattr(external, "background_cores", lambda s: 0.25)
    server = SimpleNamespace(
        server_cpu="http://h:9100/metrics", ssh_key="", known_hosts="", _cleanups=[], counters=None, counters_note=""
    )
    external._open_remote_cpu(server, "MySQL", hosts)
    assert (server.counters is source) is measured and server._cleanups  # opened, so closed with the server
    assert ("would be counted as the server's" in server.counters_note) is not measured, server.counters_note
    if not measured:
        assert server.counters_note.startswith("node_exporter at http://h/metrics adds up every process")
