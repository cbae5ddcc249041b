"""HTTPS study: tables and figures. The notebook's view of the study: what it shows from
the study's other files is re-exported here (`name as name`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from secoverhead.host.calibration import SIGNATURE
from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.reporting import plots
from secoverhead.reporting.tables import summarize_runs
from secoverhead.studies.https.declarations import ARMS, BASELINE, FULL, STUDY
from secoverhead.studies.https.declarations import CRYPTO as CRYPTO
from secoverhead.studies.protocol.judging import published
from secoverhead.studies.protocol.predictions import Prediction, published_value
from secoverhead.studies.protocol.predictions import table as predictions_table


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


# Seed 003's service: 4 CPUs (its pod's limit), a Go server, ab -c 100 without keep-alive, so every HTTPS request is
# a full TLS 1.2 ECDHE-RSA handshake (its ssldump)
ORIGINAL_CORES = 4
WHY = {
    "HTTP": (
        "a plain request's CPU: the Go service's own handler (its work per request is not stated) against nginx's "
        "static reply, {plain:.0f} us here; and whether ab shared the service's 4 CPUs (not stated)"
    ),
    "HTTPS (full handshake)": (
        "the signature: the original's flame graph puts 2.4 ms in each ServerKeyExchange, where {signer} signs in "
        "{sign_ms:.2f} ms here; with the original's 2.4 ms in its place the model predicts {with_theirs:,.0f} "
        "requests/s"
    ),
    "signature": "the CPU's speed and Go's version: neither is stated; here {signer} signs in {sign_ms:.2f} ms",
}


def predictions(part: Part) -> list[Prediction]:
    """Seed 003's figures predicted for its 4-CPU Go service: requests/s = the cores over the server's CPU per
    request (plain HTTP; a full TLS 1.2 RSA handshake, its OpenSSL signature replaced by Go's where gosign measured
    it), one prediction per run, beside what ab measured here (client and server on this machine's cores), and the
    signature's time beside nginx's OpenSSL here."""
    runs, cal = part.runs(), part.extras.get("calibration", {})
    if not len(runs) or "server_cpu_us_per_op" not in runs:
        return []
    pub = published(STUDY)
    cpu = {arm: runs.loc[runs["arm"] == arm, "server_cpu_us_per_op"] for arm in (BASELINE, FULL)}
    rps = {arm: runs.loc[runs["arm"] == arm, "rps"].median() for arm in (BASELINE, FULL)}
    openssl_us, go_us = cal.get(SIGNATURE["rsa"], np.nan), cal.get("go_rsa2048_sign_us", np.nan)
    theirs_us, signer = (go_us, "Go's crypto/rsa") if go_us == go_us else (openssl_us, "OpenSSL (Go not measured)")
    per_request = {BASELINE: cpu[BASELINE], FULL: cpu[FULL] - openssl_us + theirs_us}
    facts = {"plain": cpu[BASELINE].median(), "sign_ms": theirs_us / 1000, "signer": signer,
             "with_theirs": ORIGINAL_CORES * 1e6 / (cpu[FULL].median() - openssl_us + 2400)}  # fmt: skip
    made = {BASELINE: "server CPU per plain request here",
            FULL: f"server CPU per full TLS 1.2 RSA handshake here, its signature timed as {signer} signs"}  # fmt: skip
    rows = []
    for label, arm in (("HTTP", BASELINE), ("HTTPS (full handshake)", FULL)):
        figure = "throughput under ab -n 100000 -c 100"
        rows.append(Prediction(figure, label, "requests/s", published_value(pub, figure, label),
                               components=f"{ORIGINAL_CORES} cores / ({made[arm]})", measured=rps[arm],
                               why=WHY[label].format(**facts), part=part.name,
                               ).over(ORIGINAL_CORES * 1e6 / per_request[arm]))  # fmt: skip
    figure = "ServerKeyExchange (RSA signature) per handshake"
    rows.append(Prediction(
        figure, "HTTPS (full handshake)", "ms", published_value(pub, figure, "HTTPS (full handshake)"),
        predicted=theirs_us / 1000, components=f"{signer}, RSA-2048 PKCS #1 v1.5, this machine",
        measured=openssl_us / 1000, why=WHY["signature"].format(**facts), part=part.name,
    ))  # fmt: skip
    return rows


def prediction_table(result: StudyResult) -> pd.DataFrame:
    return predictions_table([p for part in result for p in predictions(part)])


def published_table() -> pd.DataFrame:
    return published(STUDY)
