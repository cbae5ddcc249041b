"""How much of mysqld's CPU MySQL's own statement CPU counter holds (performance_schema SUM_CPU_TIME, 8.0.28 and
later, with the events_statements_cpu consumer on), against /proc of the same process, on the fetched MySQL 8.0:
reused-connection point selects, then short connections plain and over TLS. Why the project does not read a named
MySQL's CPU from it (servers/counters.py).

    .venv/bin/python benchmarks/statement_cpu.py [QUERIES] [CONNECTIONS]
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from secoverhead.host.metrics import ProcCpu
from secoverhead.servers.mysql import MySQLServer
from secoverhead.workloads import paced
from secoverhead.workloads.short_connections import ConnectSpec

SUM_CPU = "SELECT SUM(SUM_CPU_TIME) FROM performance_schema.events_statements_summary_global_by_event_name"


def shares(queries: int = 20000, connections: int = 300) -> dict[str, tuple[float, float]]:
    """Workload -> (statement CPU s, /proc CPU s) of one MySQL 8.0 of our own."""
    out = {}
    with MySQLServer() as server:
        admin = server.admin()
        cur = admin.cursor()
        cur.execute("UPDATE performance_schema.setup_consumers SET ENABLED='YES' WHERE NAME='events_statements_cpu'")
        proc = ProcCpu(server.pids)

        def statement_s() -> float:
            cur.execute(SUM_CPU)
            return int(cur.fetchone()[0] or 0) / 1e12  # picoseconds

        def measured(work: Callable[[], None]) -> tuple[float, float]:
            s0, p0 = statement_s(), proc.take()
            work()
            s1, p1 = statement_s(), proc.take()
            return s1 - s0, sum(proc.seconds(p0, p1))

        def times(kind: str, n: int, tls: bool) -> Callable[[], None]:  # the studies' own operations, n of them
            def work() -> None:
                spec = ConnectSpec("mysql", server.endpoint.connect_args(tls=tls), query="SELECT 1")
                with paced.sql_operations(spec, kinds=(kind,)) as ops:
                    for _ in range(n):
                        ops[kind]()

            return work

        reused, short = times("query", queries, False), lambda tls: times("new", connections, tls)
        out["reused connection, point selects"] = measured(reused)
        out["short connections, plain"] = measured(short(False))
        out["short connections, TLS"] = measured(short(True))
        admin.close()
    return out


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    for name, (statement, whole) in shares(*args).items():
        print(f"{name}: statement CPU {statement:.3f} s, mysqld /proc {whole:.3f} s, {statement / whole:.0%}")
