"""Server CPU read from the server's own counters, for servers the project did not start (no /proc, no cgroup of
ours): mongod's serverStatus, whose extra_info on Linux carries the process's getrusage user and system time (the
whole process, every thread, as /proc does: checked against /proc on mongod 4.2.6 and 6.0.5 in the tests).

MySQL's performance_schema statement CPU time (8.0.28 and later, `SUM_CPU_TIME`) is not used as server CPU: on
MySQL 8.0.31 here it held 65-66 % of mysqld's /proc CPU for reused-connection point selects, 39-40 % for plain
short connections and 14 % for TLS ones (benchmarks/statement_cpu.py: a connection's set-up, its handshake and
the protocol's reads and writes happen outside statements). Every claim about connection or TLS CPU would read a
fraction of it.

Both counters are the server's, not one client's: the CPU of everything else the server does in the interval is
in them, so `background_cores` reads the server's rate before any load and the run records it."""

from __future__ import annotations

from typing import Any

from secoverhead.core.errors import ConfigError
from secoverhead.servers.endpoints import MongoEndpoint

SERVER_STATUS = "mongod serverStatus (extra_info user and system time)"


class MongoServerStatusCpu:
    """A CpuSource (host.metrics) reading a mongod's process CPU through serverStatus, over one connection of
    its own opened at the first reading (its own commands are a few per run: noise well under a millisecond)."""

    method = SERVER_STATUS
    resolution_s = 1e-6

    def __init__(self, endpoint: MongoEndpoint, mechanism: str | None) -> None:
        self._args = endpoint.client_args(mechanism=mechanism, maxPoolSize=1)
        self._client: Any = None

    def take(self) -> tuple[int, int]:
        """(user, system) microseconds of the mongod process so far."""
        if self._client is None:
            import pymongo  # deferred: the CLI checks parameters before heavy modules load

            self._client = pymongo.MongoClient(**self._args)
        info = self._client.admin.command("serverStatus", repl=0, metrics=0, locks=0).get("extra_info", {})
        if "user_time_us" not in info or "system_time_us" not in info:
            raise ConfigError(
                "this MongoDB's serverStatus has no process CPU times (extra_info user_time_us, system_time_us: "
                "mongod on Linux has them; FerretDB and other platforms do not)"
            )
        return int(info["user_time_us"]), int(info["system_time_us"])

    def seconds(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[float, float]:
        return (b[0] - a[0]) / 1e6, (b[1] - a[1]) / 1e6

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def mongo_server_cpu(endpoint: MongoEndpoint, mechanism: str | None) -> tuple[MongoServerStatusCpu | None, str]:
    """The source, or None and why not (a right the account lacks, a server without the counters)."""
    from pymongo import errors  # deferred, as above

    source = MongoServerStatusCpu(endpoint, mechanism)
    try:
        source.take()
    except errors.OperationFailure as exc:
        source.close()
        return None, f"serverStatus refused ({exc.code}): the account needs the clusterMonitor role"
    except ConfigError as exc:
        source.close()
        return None, str(exc)
    return source, ""


MYSQL_NOTE = (
    "MySQL's own statement CPU counter holds 14-66 % of mysqld's CPU (connections, TLS and the protocol's work fall "
    "outside statements: benchmarks/statement_cpu.py), so it is not read as server CPU: name /proc over ssh:// or "
    "an exporter's http:// page as mysql_server_cpu"
)

WHOLE_HOST_HERE = (
    "node_exporter at {url} adds up every process on its host, and the server is on this machine, whose load (the "
    "client) would be counted as the server's: name the server's process as ssh://HOST/PID or a process-exporter group"
)


def cpu_note(server: Any) -> str:
    """What a report says of how a named server's CPU was read."""
    source = server.cpu
    if source is None:
        return f"server CPU is not measured: {server.counters_note or 'a server the project did not start'}"
    background = server.background_cores
    whole_host = getattr(source, "whole_host", False)
    what = "" if whole_host else ": the whole server's, so everything else it did meanwhile is in it"
    return f"server CPU read from {source.method}{what}" + (
        f" (it burned {background:.3f} cores over a second before the load)" if background is not None else ""
    )
