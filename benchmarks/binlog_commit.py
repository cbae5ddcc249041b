"""Why the audit study's "binlog only" arm is faster than its no-audit baseline on MySQL 8.0.31 (3-12 % more TPS and
less server CPU per query, in each of six quick reports): the commit path, not the log's writes.

    .venv/bin/python benchmarks/binlog_commit.py [ROUNDS] [SECONDS]

With the binary log off, InnoDB 8.0's committing threads hand their redo to dedicated log writer and flusher
threads and wait for them (spinning while the server's CPU use is under innodb_log_spin_cpu_pct_hwm); with it on,
commits queue in the binary log's group commit, whose leader writes and syncs the redo for the group. Four servers
of the fetched MySQL 8.0, loaded one at a time, interleaved round by round (ABCD, DCBA), with the audit study's quick
load (oltp_read_write, 4 tables of 20,000 rows) at its 200 threads and at 16: the baseline, the baseline with the
user threads' redo spin off (innodb_log_spin_cpu_pct_hwm=0), the baseline without dedicated log writer threads
(innodb_log_writer_threads=OFF), and the binary log on (sync_binlog=1, as "binlog only"). Prints each arm's median
TPS and server CPU per query, and each round's.
"""

from __future__ import annotations

import statistics
import sys

from secoverhead.servers.mysql import MySQLServer
from secoverhead.workloads.sysbench import Sysbench, SysbenchOptions

ARMS = {
    "binlog off (the baseline)": {"binlog": False},
    "binlog off, redo spin off": {"binlog": False, "extra_options": {"innodb_log_spin_cpu_pct_hwm": 0}},
    "binlog off, no log writer threads": {"binlog": False, "extra_options": {"innodb_log_writer_threads": "OFF"}},
    "binlog on, sync_binlog=1": {"binlog": True},
}


def main(rounds: int = 4, seconds: int = 8) -> None:
    servers = {name: MySQLServer(tls=False, buffer_pool="128M", max_connections=600, log_waits=True, **kw)
               for name, kw in ARMS.items()}  # fmt: skip  # the audit study's servers (studies/audit/runner.py)
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    try:
        for s in servers.values():
            s.start()
            Sysbench(s.endpoint, via="socket").prepare(SysbenchOptions(tables=4, table_size=20_000, threads=4))
        for r in range(rounds):
            for threads in (200, 16):
                order = list(servers) if r % 2 == 0 else list(reversed(servers))  # ABCD, DCBA: drift cancels
                for name in order:
                    s = servers[name]
                    opts = SysbenchOptions(tables=4, table_size=20_000, threads=threads, time=seconds)
                    m = Sysbench(s.endpoint, via="socket").measure(opts, s.pids).metrics
                    results.setdefault((name, threads), []).append((m["tps"], m["server_cpu_us_per_query"]))
                    print(f"round {r + 1} {threads:3} threads  {name:28} {m['tps']:8.1f} tps "
                          f"{m['server_cpu_us_per_query']:6.1f} us/query", flush=True)  # fmt: skip
    finally:
        for s in servers.values():
            s.stop()
    print("\nmedians over rounds")
    for (name, threads), xs in sorted(results.items(), key=lambda kv: (-kv[0][1], list(ARMS).index(kv[0][0]))):
        tps, cpu = statistics.median(x for x, _ in xs), statistics.median(y for _, y in xs)
        print(f"{threads:3} threads  {name:28} {tps:8.1f} tps {cpu:6.1f} us/query  ({len(xs)} rounds)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
