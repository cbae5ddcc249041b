"""Auth study: tables and figures. The notebook's view of the study: what it shows from
the study's other files is re-exported here (`name as name`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from secoverhead.analysis.compare import compare_arms, table
from secoverhead.analysis.stats import combined_share
from secoverhead.measurement.parts import Part
from secoverhead.reporting import plots
from secoverhead.reporting.tables import cpu_split, summarize_runs
from secoverhead.studies.auth.declarations import CRYPTO as CRYPTO
from secoverhead.studies.auth.declarations import STUDY
from secoverhead.studies.protocol.judging import published
from secoverhead.studies.protocol.predictions import Prediction, published_value
from secoverhead.studies.protocol.predictions import table as predictions_table

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
    share, lo, hi, _ = combined_share([int(system)], [n])  # one batch: Wilson on its own ticks
    return f"{100 * share:.0f} % [{100 * lo:.0f}, {100 * hi:.0f}], {n}"


WHY = {
    "urandom": "not predicted: the load's rate is not stated; it is the bar the model scales the other from",
    "seeded": (
        "the contention on the read: with nothing but the nonce's source changed, the original's CPU fell to a "
        "tenth, so each /dev/urandom read cost about {needed:,.0f} us of a login's {cpu:,.0f} us, {times:,.0f}x this "
        "machine's {read_us:.1f} us for the {bytes:,.0f} bytes a {build} login reads. The original's kernel (< 5.18) "
        "served those reads under one lock, contended by 16 cores; this kernel ({kernel}) and 2 cores cannot show "
        "that contention (system-cpu's claim is not testable here for that reason)"
    ),
    "iterations": "a protocol default the server stores with each user, not a measured figure: nothing to predict",
}


def predictions(result: Any) -> list[Prediction]:
    """Seed 001's figures predicted for its 16-core server from the record build's logins: the seeded bar = the
    urandom bar x (a login's server CPU less its /dev/urandom reads, at this kernel's uncontended cost) / a login's
    server CPU. One figure per build asked, no interval (one block of connections each)."""
    part = result.parts.get("MongoDB") if hasattr(result, "parts") else None
    if part is None:
        return []
    pub, cal = published(STUDY), part.extras.get("calibration", {})
    machine = (part.metadata().get("environment") or {}).get("machine", {})
    own = next(iter(part.extras.get("random_source", {}).items()), None)
    urandom = ("server CPU utilisation under short-connection load", "auth on (nonce from /dev/urandom per request)")
    seeded = (urandom[0], "auth on (seeded user-space generator)")
    label = own[0] if own else part.name
    rows = [Prediction(*urandom, "%", published_value(pub, *urandom), why=WHY["urandom"], part=label)]
    scram = next((r for r in (own[1] if own else []) if str(r.get("mechanism")).startswith("SCRAM-SHA-1")), None)
    read_us = float(cal.get("urandom_8191_us") or "nan")
    if scram is not None:
        cpu, opens = float(scram["server_cpu_us_per_op"]), float(scram.get("opens_per_op") or 0)
        top = published_value(pub, *urandom)
        tenth = published_value(pub, *seeded) / top
        facts = {"needed": cpu * (1 - tenth) / opens if opens else float("nan"), "cpu": cpu, "read_us": read_us,
                 "bytes": float(scram.get("bytes_per_op") or 0), "build": own[0],
                 "kernel": machine.get("kernel", "?")}  # fmt: skip
        facts["times"] = facts["needed"] / read_us if read_us > 0 else float("nan")
        predicted = top * (cpu - opens * read_us) / cpu if cpu > 0 else float("nan")
        rows.append(Prediction(*seeded, "%", published_value(pub, *seeded), predicted=predicted,
                               components=f"{own[0]}'s SCRAM-SHA-1 login: {cpu:,.0f} us of server CPU, {opens:.3g} "
                               f"reads of /dev/urandom at {read_us:.1f} us each (calibration)",
                               why=WHY["seeded"].format(**facts), part=label))  # fmt: skip
    for arm in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
        figure = "PBKDF2 iterations per new client"
        rows.append(Prediction(figure, arm, "iterations", published_value(pub, figure, arm), why=WHY["iterations"],
                               part=label))  # fmt: skip
    return rows


def prediction_table(result: Any) -> pd.DataFrame:
    return predictions_table(predictions(result))


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
    at_top = runs[runs["concurrency"] == top] if "concurrency" in runs else runs.iloc[0:0]
    if "server_system_us_per_op" in runs and len(at_top):  # none where the run never reached `top`
        out.append(_cpu_split_figure(part, at_top, top))
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
