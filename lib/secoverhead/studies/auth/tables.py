"""Auth study: tables and figures. The notebook's view of the study: what it shows from
the study's other files is re-exported here (`name as name`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from secoverhead.analysis.compare import compare_arms, table
from secoverhead.analysis.stats import pooled_share
from secoverhead.measurement.parts import Part
from secoverhead.reporting import plots
from secoverhead.reporting.tables import cpu_split, summarize_runs
from secoverhead.studies.auth.declarations import CRYPTO as CRYPTO
from secoverhead.studies.auth.declarations import STUDY
from secoverhead.studies.protocol.judging import published

if TYPE_CHECKING:
    import pandas as pd

SUMMARY = [
    "ops_per_s",
    "server_cpu_us_per_op",
    "server_user_us_per_op",
    "server_system_us_per_op",
    "client_cpu_us_per_op",
    "latency_median_ms",
]


def summary(part: Part) -> pd.DataFrame:
    if part.name == "nonce":
        return summarize_runs(
            part.runs(), ["nonces_per_s", "user_ns_per_nonce", "system_ns_per_nonce"], ["arm", "workers"]
        )
    return summarize_runs(part.runs(), SUMMARY, ["arm", "concurrency"])


def nonce_table(part: Part) -> pd.DataFrame:
    return table(
        compare_arms(
            part.runs(),
            "system_ns_per_nonce",
            baseline="userspace",
            candidates=["syscall"],
            by=["workers"],
            confidence=1 - part.alpha,
        ),
        unit="ns",
    )


RANDOM_SOURCE_COLUMNS = {
    "mechanism": "mechanism",
    "connections": "connections",
    "cpu_connections": "connections (CPU)",
    "server_cpu_us_per_op": "server CPU, us",
    "server_user_us_per_op": "user, us",
    "server_system_us_per_op": "system, us",
    "system_share": "system share [95 %], ticks",
    "random_calls_per_op": "random-source calls",
    "opens_per_op": "opens of /dev/urandom",
    "bytes_per_op": "bytes read",
}


def random_source_table(result: Any) -> pd.DataFrame:
    """Per mongod build and mechanism, per short connection: the server's CPU (untraced) and its calls into the
    kernel's random source (strace), from the MongoDB parts' records; empty where it was not asked."""
    import pandas as pd  # deferred, as above

    asked = {b: rows for part in result for b, rows in part.extras.get("random_source", {}).items()}
    rows = [{"server build": build} | row for build, each in asked.items() for row in each]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame([row | {"system_share": system_share(row)} for row in rows])
    keep = ["server build", *(c for c in RANDOM_SOURCE_COLUMNS if c in frame)]
    return frame[keep].rename(columns=RANDOM_SOURCE_COLUMNS).round(2)


def random_source_finding(result: Any) -> str:
    """Seed 001's mechanism as found here, in one sentence per mongod build: what each SCRAM login asks of the
    kernel's random source beside a login without auth ("" where it was not asked)."""
    asked = {b: rows for part in result for b, rows in part.extras.get("random_source", {}).items()}
    out = []
    for build, rows in asked.items():
        by = {str(r.get("mechanism")): r for r in rows}
        scram = next((r for m, r in by.items() if m.startswith("SCRAM")), None)
        off = next((r for m, r in by.items() if not m.startswith("SCRAM")), None)
        if scram is None or off is None:
            continue
        out.append(
            f"{build}: a SCRAM login makes {scram.get('random_calls_per_op', 0):.3g} calls into the random source "
            f"({scram.get('opens_per_op', 0):.3g} opens of /dev/urandom, {scram.get('bytes_per_op', 0):,.0f} bytes), "
            f"a login without auth {off.get('random_calls_per_op', 0):.3g}"
        )
    if not out:
        return ""
    return (
        "Seed 001's mechanism, looked for in mongod itself (strace, per short connection): "
        + "; ".join(out)
        + ". The original's contention on that read (a kernel lock, many cores) is system-cpu's question."
    )


def system_share(row: dict[str, Any]) -> str:
    """The server CPU's system share and its Wilson interval, each kernel tick behind the split one draw of user
    or system (host/metrics.py); "" for a record that did not count its ticks."""
    user, system = row.get("server_cpu_user_ticks"), row.get("server_cpu_system_ticks")
    if user is None or system is None:
        return ""
    n = int(user) + int(system)
    if not n:
        return "no tick"
    share, lo, hi, _ = pooled_share([int(system)], [n])  # one batch: Wilson on its own ticks
    return f"{100 * share:.0f} % [{100 * lo:.0f}, {100 * hi:.0f}], {n}"


def published_table() -> pd.DataFrame:
    return published(STUDY)


def figures(part: Part, top: int) -> list[tuple[Any, str]]:
    table = summary(part)
    if not len(table):
        return []
    if part.name == "nonce":
        return [
            (
                plots.lines(
                    table,
                    x="workers",
                    y="system_ns_per_nonce",
                    hue="arm",
                    band=True,
                    title="System CPU per nonce",
                    ylabel="ns of system CPU per nonce",
                    logx=True,
                ),
                "A rising syscall line with more workers is the original's collapse; "
                "a flat one means this kernel does not serialise the reads.",
            )
        ]
    out = [
        (
            plots.lines(
                table,
                x="concurrency",
                y="ops_per_s",
                hue="arm",
                band=True,
                title=f"{part.label}: short connections per second",
                ylabel="operations / s",
                logx=True,
            ),
            "Short connections per second by client concurrency: the fewer an arm serves, the more each costs it.",
        )
    ]
    runs = part.runs()
    if "server_system_us_per_op" in runs:
        out.append(_cpu_split_figure(part, runs[runs["concurrency"] == top], top))
    return out


def _cpu_split_figure(part: Part, runs: pd.DataFrame, top: int) -> tuple[Any, str]:
    """The arms' server CPU per operation, user and system apart, the split's interval across the edge where the
    runs counted their ticks."""
    split = cpu_split(runs, ["arm"])
    split["user_low"] = (1 - split["system_share_high"]) * split["server_cpu_us_per_op"]
    split["user_high"] = (1 - split["system_share_low"]) * split["server_cpu_us_per_op"]
    ticks = bool(split["system_share_low"].notna().all())
    figure = plots.stacked_bar(
        split,
        x="arm",
        parts=["user_us", "system_us"],
        labels=["user", "system"],
        title=f"{part.label}: server CPU per operation at concurrency {top}",
        ylabel="CPU us per operation",
        boundary=("user_low", "user_high") if ticks else None,
    )
    how = (
        "split at the system share of the kernel ticks pooled over the arm's runs; the whisker is that share's 95 % "
        "interval (wider where runs differ more than their ticks explain)"
        if ticks
        else "split by the runs' summed user and system time (these runs did not count their ticks: no interval)"
    )
    return figure, (
        f"Where the server's time goes per request (the original's symptom was the system share): the runs' median "
        f"CPU per operation, {how}."
    )
