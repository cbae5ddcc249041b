"""HTTPS study: tables and figures. The notebook's view of the study: what it shows from
the study's other files is re-exported here (`name as name`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from secoverhead.measurement.parts import Part
from secoverhead.reporting import plots
from secoverhead.reporting.tables import summarize_runs
from secoverhead.studies.https.declarations import ARMS, BASELINE, STUDY
from secoverhead.studies.https.declarations import CRYPTO as CRYPTO
from secoverhead.studies.protocol.judging import published


def summary(part: Part) -> pd.DataFrame:
    runs = part.runs()
    cols = ["server_cpu_us_per_op", "rps", "client_cpu_cores", "server_resumed_fraction"]
    return summarize_runs(runs, cols, ["arm"])


def commands(part: Part) -> pd.DataFrame:
    seen: dict[str, str] = {}
    for r in part.store.records():
        seen.setdefault(r.arm, r.info.get("command", ""))
    return pd.DataFrame({"arm": list(seen), "command (one run)": list(seen.values())})


def resumption_check(part: Part) -> pd.DataFrame:
    """Per arm: what nginx logged. Resumed arms must show resumption, full-handshake arms must not."""

    runs = part.runs()
    rows = []
    for a in ARMS:
        if a.name not in part.arms or a.tls is None or a.keepalive or "server_resumed_fraction" not in runs:
            continue
        frac = runs.loc[runs["arm"] == a.name, "server_resumed_fraction"]
        ok = (frac > 0.9).all() if a.resume else (frac < 0.05).all()
        rows.append(
            {
                "arm": a.name,
                "expected": "resumed" if a.resume else "full handshakes",
                "server-logged resumed fraction (min-max)": f"{frac.min():.3f} - {frac.max():.3f}",
                "as expected": bool(ok),
            }
        )
    return pd.DataFrame(rows, columns=["arm", "expected", "server-logged resumed fraction (min-max)", "as expected"])


def crypto_share(part: Part) -> pd.DataFrame:
    """How much of a full handshake's extra server CPU the certificate's signature explains, in us and in
    signatures of this machine (the calibration)."""

    cal = part.extras.get("calibration", {})
    s = summary(part).set_index("arm")["server_cpu_us_per_op"] if len(part.runs()) else pd.Series(dtype=float)
    if BASELINE not in s:
        return pd.DataFrame()
    rows = []
    for arm in ARMS:
        if arm.signature and arm.name in s and arm.tool == "ab":
            extra = s[arm.name] - s[BASELINE]
            sign = cal.get(arm.signature, np.nan)
            rows.append(
                {
                    "arm": arm.name,
                    "server CPU per request (us)": s[arm.name],
                    "over plain HTTP (us)": extra,
                    "= signatures of this machine": extra / sign if sign else np.nan,
                    "signature, openssl speed (us)": sign,
                    "X25519 key exchange (us)": cal.get("x25519_derive_us"),
                    "signature share of the extra %": 100 * sign / extra if extra > 0 else np.nan,
                }
            )
    return pd.DataFrame(rows)


def figures(part: Part) -> list[tuple[Any, str]]:
    table = summary(part)
    if not len(table):
        return []
    return [
        (
            plots.bar_with_ci(
                table.sort_values("server_cpu_us_per_op"),
                x="arm",
                y="server_cpu_us_per_op",
                lo="server_cpu_us_per_op_ci_low",
                hi="server_cpu_us_per_op_ci_high",
                title="Server CPU per request",
                ylabel="us of nginx CPU per request",
            ),
            "What each request costs the server: full handshakes dwarf plain HTTP; resumption, "
            "ECDSA and keep-alive each cut it. Error bars are 95 % CIs of the median over runs.",
        ),
        (
            plots.bar_with_ci(
                table.sort_values("rps"),
                x="arm",
                y="rps",
                lo="rps_ci_low",
                hi="rps_ci_high",
                title="Requests per second (client-bound arms show the client's limit)",
                ylabel="requests / s",
            ),
            "Throughput as the load clients saw it; see the client-bound "
            "column before reading a bar as the server's capacity.",
        ),
    ]


def published_table() -> pd.DataFrame:
    return published(STUDY)
