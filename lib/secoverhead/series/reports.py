"""A study's reports as series: every report under reports/<study>/ that finished ok (and the one being written,
when asked), each claim's effect (a ratio with its interval, machine-independent: both arms ran on the same
machine) and verdict, per series: the claim at one scale (smoke runs are a series of their own), on one target,
one server version and one machine speed class (reports of different classes are not one series), measured as one
revision of the claim's registry entry says (a report from before a fix to the measurement is not a point of the
series after it). The history's change points and the verdicts over reports both read these series."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from secoverhead.analysis import claim_registry
from secoverhead.analysis.pooling import recorded
from secoverhead.analysis.readings import reading_quantity
from secoverhead.analysis.verdicts import read_verdicts
from secoverhead.core.files import read_json, within
from secoverhead.core.report import Report, build_name, readable
from secoverhead.core.runs import EMBEDDED, leaving, status_of
from secoverhead.host import environment
from secoverhead.host.calibration import slowdown

RUN_SERIES = ["scale", "target", "server", "speed class"]  # what a report's series is, whatever its claims
SERIES = ["claim id", *RUN_SERIES, "revision"]  # a claim's: its reports measured the same way (registry revision)


SPEED_TOLERANCE = 1.5


def speed_classes(rsa_sign_us: list[Any], tolerance: float = SPEED_TOLERANCE) -> list[str]:
    """One speed class per run, runs in date order: a run joins the class whose first run's signature time is
    nearest, if within a factor of `tolerance` of it; otherwise it opens a new class. A fixed grid would split one
    machine's series at a boundary: a shared VM's signature time moved 724-1,017 us (x1.40) in two hours, while a
    machine of another class differs by 2x or more (a new class is a new series: a slower machine is not a
    regression)."""
    anchors: list[float] = []
    out = []
    for value in rsa_sign_us:
        x = _positive(value)
        if x is None:
            out.append("unknown")
            continue
        near = min(anchors, key=lambda a: abs(math.log(x / a)), default=None)
        if near is None or abs(math.log(x / near)) > math.log(tolerance):
            near = x
            anchors.append(x)
        out.append(f"RSA sign ~{near:.0f} us")
    return out


def _positive(x: Any) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if x > 0 and math.isfinite(x) else None


def series_of(v: dict[str, Any]) -> list[tuple[str, str, float | None, float | None, float | None]]:
    """A verdict's series: (claim id, claim, effect ratio, its interval). A claim decided by one comparison is one
    series, its ratio; a claim over several cells (every workload, every approach) is one series per cell, from
    the first reading's intervals: ratios as they are, a TPS loss in % as the TPS ratio it came from (1 - loss),
    each point the geometric centre of its interval (the estimate: these intervals are symmetric in log). A reading
    in percentage points has no ratio and stays one row without a series."""
    claim_id = str(v.get("id") or str(v.get("claim", ""))[:40])
    claim = str(v.get("claim", ""))
    if v.get("ratio") is not None:
        return [(claim_id, claim, v.get("ratio"), v.get("ci_low"), v.get("ci_high"))]
    judged = v.get("judged") or []
    reading = judged[0] if judged and isinstance(judged[0], dict) else {}
    each = [i for i in reading.get("intervals") or [] if len(i) == 2]
    quantity, _ = reading_quantity(reading)
    loss = quantity == "loss"
    if not each or quantity not in ("ratio", "loss"):
        return [(claim_id, claim, None, None, None)]
    names = [str(n) for n in reading.get("cells") or []]
    names = names if len(names) == len(each) else [f"cell {k + 1}" for k in range(len(each))]
    out = []
    for name, (lo, hi) in zip(names, each, strict=True):
        lo, hi = (1 - hi / 100, 1 - lo / 100) if loss else (lo, hi)
        mid = math.sqrt(lo * hi) if lo > 0 and hi > 0 else None
        out.append((f"{claim_id} [{name}]", f"{claim} [{name}]", mid, lo, hi))
    return out


def server_of(verdict: dict) -> str:
    """The server build a verdict's part ran on, as it recorded it (mongod 4.2 4.2.6, MariaDB 10.11.19-MariaDB...);
    "" for a part without a server (auth's nonce generator). A verdict from before parts named their build has
    no "server": its series keep the machine's mariadbd, as they were written then."""
    return build_name(verdict["server"]) if isinstance(verdict.get("server"), dict) else ""


def revision_of(verdict: dict) -> int:
    """The registry revision a verdict's claim was measured at (1: before claims recorded one)."""
    revision = (verdict.get("registered") or {}).get("revision", 1)
    return revision if isinstance(revision, int) and not isinstance(revision, bool) else 1


def measured_now(verdict: dict) -> bool:
    """Whether a verdict's claim was measured as its registry entry says it is now (a report from before a fix to
    the measurement is not)."""
    reg = verdict.get("registered") or {}
    return revision_of(verdict) == claim_registry.revision(str(reg.get("study")), str(reg.get("id")))


def stale_metrics(report: Path) -> set[str]:
    """The metrics a report's verdicts measured otherwise than their claims are measured now."""
    verdicts = (read_verdicts(report) or {}).get("verdicts", [])
    return {
        str((v.get("registered") or {}).get("metric")) for v in verdicts if isinstance(v, dict) and not measured_now(v)
    }


def collect(root: Path, study: str, this: Path | None = None) -> pd.DataFrame:
    """One row per (run, claim, cell), oldest first. `this`: the report being written, counted before it ends
    (its environment, recorded at its end, read from this machine now)."""
    rows = []
    for run in sorted(p for p in (root / study).glob("*") if p.is_dir() and not p.is_symlink()):
        if leaving(run):
            continue  # a report is read only inside itself: the index names it
        report = readable(run)
        verdicts = read_verdicts(run)
        if not verdicts or report is None or not _counts(run, report, this):
            continue  # a failed or interrupted run's verdicts are not a point
        cal = read_json(run / "calibration.json") or {}
        slow = vcpu_slowdown(run)
        env = report.environment or _environment_now(run == this)
        tools = env.get("tools") or {}
        for v in verdicts.get("verdicts", []):
            if not isinstance(v, dict):
                continue
            metric = str((v.get("registered") or {}).get("metric") or "")
            cells = series_of(v)
            for (claim_id, claim, ratio, lo, hi), (estimate, se) in zip(cells, _estimates(v, len(cells)), strict=True):
                rows.append(
                    {
                        "study": study,
                        "run": run.name,
                        "started": report.started,
                        "commit": str(env.get("git_commit") or "")[:10],
                        "target": report.target or EMBEDDED,
                        "client hosts": ", ".join(report.client_hosts) or report.host,
                        "server": server_of(v)
                        if "server" in v
                        else report.recorded.get("server_version") or tools.get("mariadbd", ""),
                        "rsa2048 sign (us)": cal.get("rsa2048_sign_us"),
                        "vcpu slowdown (x)": slow,
                        "params": report.params_name,
                        "scale": report.scale,
                        "claim id": claim_id,
                        "claim": claim,
                        "metric": metric,
                        "revision": revision_of(v),
                        "verdict": v.get("verdict", ""),
                        "ratio": ratio,
                        "ci low": lo,
                        "ci high": hi,
                        "log estimate": estimate,  # over the report's own rounds (the ratio's log), and its se
                        "se": se,
                    }
                )
    df = pd.DataFrame(rows)
    if not len(df):
        return df
    df["date"] = pd.to_datetime(df["started"], utc=True, errors="coerce")
    df = df.sort_values(["date", "run"], kind="stable")
    runs = df.drop_duplicates("run")
    classes = dict(zip(runs["run"], speed_classes(list(runs["rsa2048 sign (us)"])), strict=True))
    df.insert(df.columns.get_loc("rsa2048 sign (us)") + 1, "speed class", df["run"].map(classes))
    return df.sort_values([*SERIES, "date", "run"], kind="stable").reset_index(drop=True)


def vcpu_slowdown(run: Path) -> float | None:
    """How much slower than its fastest the vCPU ran before a report's rounds (host/calibration.py), over every
    part's speed checks; None for a report from before they were taken."""
    checks, cal = [], {}
    for meta_file in sorted((run / "results").glob("*/metadata.json")):
        meta = read_json(meta_file) if within(meta_file, run) else None
        if isinstance(meta, dict):
            checks += list(meta.get("speed_checks") or [])
            cal = cal or meta.get("calibration") or {}
    return slowdown(checks, cal)


def _counts(run: Path, report: Report, this: Path | None) -> bool:
    return status_of(report) == "ok" or (this is not None and run.resolve() == this.resolve())


def _environment_now(current: bool) -> dict[str, Any]:
    """The one fact of a report's environment its series reads (the server build on this machine), for the report
    still being written."""
    return {"tools": {"mariadbd": environment.tool_version("mariadbd")}} if current else {}


def _estimates(v: dict[str, Any], n: int) -> list[tuple[float | None, float | None]]:
    """Each series cell's estimate over the report's own rounds and its standard error (the first reading's, as
    verdicts.json records them on the log ratio; None where it has none)."""
    judged = v.get("judged") or []
    reading = judged[0] if judged and isinstance(judged[0], dict) else {}
    each = reading.get("estimates") or [] if reading_quantity(reading)[0] in ("ratio", "loss") else []
    out: list[tuple[float | None, float | None]] = []
    for j in range(n):
        e = recorded(each[j]) if j < len(each) else None
        out.append((e.value, e.se) if e is not None else (None, None))
    return out


def reports_like(df: pd.DataFrame, run: str) -> list[str]:
    """The reports of the series `run` belongs to (collect's frame; any of its claims), oldest first. A claim's
    own revision narrows this further (learned.cells)."""
    mine = df[df["run"] == run] if len(df) else df
    if not len(mine):
        return []
    key = mine.iloc[0][RUN_SERIES]
    same = (df[RUN_SERIES] == key).all(axis=1)
    return list(dict.fromkeys(df[same].sort_values(["date", "run"])["run"]))
