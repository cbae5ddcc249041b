"""TLS study: tables and figures of a StudyResult or a Part. The notebook's view of the study: what it shows from
the study's other files is re-exported here (`name as name`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from secoverhead.analysis.compare import compare_arms, per_round, table
from secoverhead.analysis.stats import median_ci
from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.reporting import plots
from secoverhead.studies.protocol.judging import published
from secoverhead.studies.protocol.predictions import NAN, Prediction, published_value
from secoverhead.studies.protocol.predictions import table as predictions_table
from secoverhead.studies.tls.claims import engine_notes as engine_notes
from secoverhead.studies.tls.declarations import (
    BASELINE,
    MEASURES,
    RESIDUAL_WHY,
    ROUND_TRIPS,
    RTT_PART,
    STUDY,
    _engine,
)
from secoverhead.studies.tls.declarations import CRYPTO as CRYPTO


def _medians(part: Part, metric: str) -> dict[str, float]:
    """arm -> median over the part's runs of one per-run summary."""
    runs = part.runs()
    if metric not in runs:
        return {}
    return {arm: float(g.median()) for arm, g in runs.groupby("arm")[metric] if g.notna().any()}


def _link_rtt(result: StudyResult) -> float:
    return float(result.parts[RTT_PART].extras.get("link", {}).get("rtt_measured_ms", float("nan")))


def round_trip_summary(result: StudyResult) -> str:
    """One sentence: at what round trip seed 000's table was measured, or why it was not."""
    if RTT_PART not in result.parts or "MongoDB" not in result.parts:
        return f"Not measured in this run: {result.params.rtt_skipped() or 'no MongoDB part ran on loopback'}."
    link = result.parts[RTT_PART].extras.get("link", {})
    return (
        f"The servers behind a link set to the original's round trip of {link.get('rtt_set_ms')} ms (measured "
        f"{link.get('rtt_measured_ms')} ms; the path alone {link.get('rtt_floor_ms')} ms). In the second table "
        "*predicted* is this machine's loopback median (one mongod) plus the round trips the protocols count times "
        "the measured round trip; TLS 1.2 is predicted only (pymongo cannot choose the version)."
    )


def round_trip_table(result: StudyResult) -> pd.DataFrame:
    """Seed 000's four rows at its round trip: published, measured behind the link, and predicted from the
    loopback runs (this machine's CPU) plus the counted round trips times the link's measured round trip."""

    if RTT_PART not in result.parts or "MongoDB" not in result.parts:
        return pd.DataFrame()
    loop, far = result.parts["MongoDB"], result.parts[RTT_PART]
    rtt = _link_rtt(result)
    pub = published(STUDY)
    rows = []
    for metric, label in MEASURES["MongoDB"].items():
        base, there = _medians(loop, metric), _medians(far, metric)
        row: dict[str, Any] = {"measure (ms)": label}
        for arm, version in ((BASELINE, BASELINE), ("TLS", "TLS 1.3")):
            value = pub.loc[(pub["measure"] == label) & (pub["arm"] == arm), "value"]
            k = ROUND_TRIPS[metric][version]
            row[f"published {arm}"] = float(value.iloc[0]) if len(value) else None
            row[f"measured {arm}"] = there.get(arm)
            row[f"predicted {arm}"] = base[arm] + k * rtt if arm in base else None
            row[f"round trips {arm}"] = k
        k12 = ROUND_TRIPS[metric]["TLS 1.2"]
        row["predicted TLS 1.2"] = base["TLS"] + k12 * rtt if "TLS" in base else None
        row["round trips TLS 1.2"] = k12
        rows.append(row)
    return pd.DataFrame(rows).round(3)


def predictions(result: StudyResult) -> list[Prediction]:
    """Seed 000's four published means and both ratios, each predicted for the original's topology from this
    machine's loopback runs (one mongod 4.2: its CPU) plus the round trips the protocols count times the link's
    measured round trip (the original's), one prediction per run; beside each, this machine's own figure behind
    the link (the median over runs of each run's mean, as the original published means)."""
    if RTT_PART not in result.parts or "MongoDB" not in result.parts:
        return []
    loop, far = result.parts["MongoDB"].runs(), result.parts[RTT_PART]
    rtt, pub, facts = _link_rtt(result), published(STUDY), _residual_facts(result)
    rows, each = [], {}
    for metric, label in MEASURES["MongoDB"].items():
        mean = metric.replace("_median", "_mean")
        here = _medians(far, mean)
        for arm, version in ((BASELINE, BASELINE), ("TLS", "TLS 1.3")):
            trips = ROUND_TRIPS[metric][version]
            each[(label, arm)] = _loopback(loop, arm, mean) + trips * rtt
            made = f"loopback {label} + {trips} round trip(s) x {rtt:.3g} ms"
            rows.append(Prediction(label, arm, "ms", published_value(pub, label, arm), components=made,
                                   measured=here.get(arm, NAN),
                                   why=RESIDUAL_WHY[label].format(**facts), part=RTT_PART,
                                   ).over(each[(label, arm)]))  # fmt: skip
    for label, measure in (("TLS / no TLS, build + first query", "build + first query"),
                           ("TLS / no TLS, reused", "query on a reused client")):  # fmt: skip
        ratio = (each[(measure, "TLS")] / each[(measure, BASELINE)]).dropna()
        here = _medians(far, "total_ms_mean" if "build" in measure else "query_ms_mean")
        published_ratio = published_value(pub, measure, "TLS") / published_value(pub, measure, BASELINE)
        rows.append(Prediction(label, "TLS / no TLS", "x", published_ratio,
                               components="the two rows' predictions above, round by round",
                               measured=here.get("TLS", NAN) / here.get(BASELINE, NAN) if here else NAN,
                               why=RESIDUAL_WHY[label].format(**facts), part=RTT_PART).over(ratio))  # fmt: skip
    return rows


def prediction_table(result: StudyResult) -> pd.DataFrame:
    return predictions_table(predictions(result))


def _loopback(runs: pd.DataFrame, arm: str, metric: str) -> pd.Series:
    """One arm's per-run figure on loopback, by round (empty where it was not measured)."""
    if metric not in runs or "arm" not in runs:
        return pd.Series(dtype=float)
    own = runs[runs["arm"] == arm]
    return own.groupby("round")[metric].median() if "round" in own else own[metric].reset_index(drop=True)


def _residual_facts(result: StudyResult) -> dict[str, Any]:
    """The run's figures a reason quotes: the link's round trip, this CPU's PBKDF2 time, the pool's set-up."""
    far = result.parts[RTT_PART]
    checkout = _medians(far, "checkout_ms_mean")
    trips = ROUND_TRIPS["first_query_ms_median"]
    cal = far.extras.get("calibration", {})
    return {
        "ca_ms": float(cal.get("ca_bundle_load_ms", float("nan"))),
        "ca_certs": cal.get("ca_bundle_certificates", "?"),
        "rtt_ms": _link_rtt(result),
        "pbkdf2_ms": float(far.extras.get("calibration", {}).get("pbkdf2_sha256_15000_ms", float("nan"))),
        "checkout": " / ".join(f"{checkout.get(a, float('nan')):.1f}" for a in (BASELINE, "TLS")) + " ms, plain / TLS",
        "trips": f"{trips[BASELINE]} / {trips['TLS 1.3']}",
    }


def comparisons(part: Part) -> dict:
    """Every TLS arm against no TLS on every timing and CPU summary (one family per metric)."""

    out = {}
    runs = part.runs()
    metrics = [
        *MEASURES[_engine(part.name)],
        "connection_server_cpu_us_per_op",
        "reused_server_cpu_us_per_op",
        "connection_client_cpu_us_per_op",
    ]
    for metric in metrics:
        for arm, c in compare_arms(runs, metric, baseline=BASELINE, confidence=1 - part.alpha).items():
            out[(MEASURES[_engine(part.name)].get(metric, metric), arm)] = c
    return out


def comparison_table(part: Part) -> pd.DataFrame:
    return table(comparisons(part))


def reproduction_table(part: Part) -> pd.DataFrame:
    """The original's four rows x (no TLS, TLS): published means beside our medians over runs, with CIs."""

    pub = published(STUDY)
    runs = part.runs()
    rows = []
    for metric, label in MEASURES[_engine(part.name)].items():
        row: dict[str, Any] = {"measure (ms)": label}
        for arm in (BASELINE, "TLS"):
            x = runs.loc[runs["arm"] == arm, metric].dropna() if metric in runs else pd.Series(dtype=float)
            value = pub.loc[(pub["measure"] == label) & (pub["arm"] == arm), "value"]
            med, lo, hi = median_ci(x.to_numpy())
            row[f"published {arm} (mean)"] = float(value.iloc[0]) if len(value) else None
            row[f"ours {arm}: median of run medians [95 % CI]"] = f"{med:.3f} [{lo:.3f}, {hi:.3f}]" if len(x) else ""
            row[f"_{arm}"] = med
        pm, pt = row["published no TLS (mean)"], row["published TLS (mean)"]
        row["published TLS / no TLS"] = round(pt / pm, 2) if pm else None
        row["ours TLS / no TLS"] = round(row["_TLS"] / row[f"_{BASELINE}"], 2) if row[f"_{BASELINE}"] else None
        rows.append({k: v for k, v in row.items() if not k.startswith("_")})
    return pd.DataFrame(rows)


def figures(part: Part) -> list[tuple[Any, str]]:
    """Per-connection and per-query distributions (pictures of every sample; the tests use run summaries)."""

    s = part.samples()
    if not len(s):
        return []
    conn, reused = s[s["probe"] == "connection"], s[s["probe"] == "reused"]
    runs = part.runs()
    others = [a for a in part.arms if a != BASELINE]
    rounds = per_round(runs, "total_ms_median", [BASELINE, *others])
    paired = rounds[others].div(rounds[BASELINE], axis=0) if len(rounds) else rounds
    return [
        (
            plots.paired_rounds(
                paired,
                title=f"{part.label}: connection set-up, each arm over {BASELINE}, round by round",
                ylabel=f"set-up time / {BASELINE}",
            ),
            f"Each round's median set-up time of an arm over {BASELINE}'s in the same round (the arms ran in "
            "turn within a round): what the set-up claim reads, round by round.",
        ),
        (
            plots.ecdf(
                conn,
                "total_ms",
                "arm",
                title=f"{part.label}: connection set-up (build + first query)",
                xlabel="ms per connection",
                log=True,
            ),
            "Set-up time of every fresh client, per arm, pooled over the rounds (the arms ran in turn, not at the "
            "same moment: the round-by-round picture above is the paired one): a curve further right costs more.",
        ),
        (
            plots.ecdf(
                reused,
                "query_ms",
                "arm",
                title=f"{part.label}: query on a reused client",
                xlabel="ms per query",
                log=True,
            ),
            "Once connected, curves on top of each other mean TLS costs little per query.",
        ),
    ]
