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

        def reused() -> None:
            conn = server.endpoint.connect(tls=False)
            c = conn.cursor()
            for _ in range(queries):
                c.execute("SELECT 1")
                c.fetchall()
            conn.close()

        def short(tls: bool) -> Callable[[], None]:
            def work() -> None:
                for _ in range(connections):
                    conn = server.endpoint.connect(tls=tls)
                    c = conn.cursor()
                    c.execute("SELECT 1")
                    c.fetchall()
                    conn.close()

            return work

        out["reused connection, point selects"] = measured(reused)
        out["short connections, plain"] = measured(short(False))
        out["short connections, TLS"] = measured(short(True))
        admin.close()
    return out


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    for name, (statement, whole) in shares(*args).items():
        print(f"{name}: statement CPU {statement:.3f} s, mysqld /proc {whole:.3f} s, {statement / whole:.0%}")
