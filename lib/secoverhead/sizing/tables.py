"""What the calculator's notebook shows: the inputs, cores per line, latency, audit storage, the rules of thumb, where
every cost came from and how it was moved to the user's machine, and one picture of the cores."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import NullFormatter, ScalarFormatter

from secoverhead.core.files import atomic_write_json
from secoverhead.core.report import Report, readable
from secoverhead.core.units import figure as four_digits
from secoverhead.sizing.calculator import Calculation, number
from secoverhead.sizing.curves import plural
from secoverhead.sizing.estimate import LineResult
from secoverhead.sizing.interval import Interval
from secoverhead.sizing.scaling import GENERAL, REFERENCES, speed_factor


def ci(iv: Interval, fmt=number) -> str:
    return f"{fmt(iv.point)} [{fmt(iv.lo)}, {fmt(iv.hi)}]"


_UNITS = {
    "new_connections_per_s": "/s",
    "reused_queries_per_s": "/s",
    "read_only_tps": "/s",
    "read_write_tps": "/s",
    "write_only_tps": "/s",
    "https_requests_per_s": "/s",
    "audited_statements_per_s": "/s",
    "rtt_ms": "ms",
    "retention_months": "months",
    "cores": "cores",
    "pooled_share": "share",
    "https_new_share": "share",
    "https_resumed_share": "share",
    "target_utilisation": "share",
}
_GROUPS = {
    "workload": (
        "new_connections_per_s",
        "pooled_share",
        "reused_queries_per_s",
        "read_only_tps",
        "read_write_tps",
        "write_only_tps",
        "concurrency",
        "https_requests_per_s",
        "https_new_share",
        "https_resumed_share",
        "audited_statements_per_s",
        "retention_months",
    ),
    "features": (
        "features",
        "engine",
        "tls_version",
        "tls_key",
        "resumption",
        "scram_mechanism",
        "audit_approach",
        "tde_instance",
        "rtt_ms",
    ),
    "hardware": ("cores", "target_utilisation", "calibration_file", "speed"),
}


def inputs(calc: Calculation) -> pd.DataFrame:
    p = calc.params
    rows = []
    for group, names in _GROUPS.items():
        for name in names:
            value = getattr(p, name)
            if isinstance(value, list):
                value = ", ".join(value)
            elif isinstance(value, dict):
                value = ", ".join(f"{k} {v}" for k, v in value.items()) or "-"
            rows.append(
                {"": group, "input": name, "value": value if value != "" else "-", "unit": _UNITS.get(name, "")}
            )
    return pd.DataFrame(rows)


def cores(calc: Calculation) -> pd.DataFrame:
    """Per line: the rate, the extra CPU per operation as measured and on the user's machine, the extra cores."""
    rows = []
    for r in calc.lines:
        rows.append(
            {
                "line": r.line.label,
                "where": "server" if r.line.side == "server" else "your clients",
                "driven by": r.line.driver,
                "rate (/s)": number(r.line.rate),
                "per": r.line.per,
                "extra CPU measured (µs/op)": ci(r.measured_us),
                "on your machine (µs/op)": ci(r.us),
                "extra cores": ci(r.cores),
                "% of your cores": _share(calc, r.cores) if r.line.side == "server" else "-",
                "share of the total": f"{calc.totals.shares.get(r.line.key, 0):.0%}"
                if r.line.side == "server"
                else "-",
            }
        )
    t = calc.totals
    rows.append(
        {
            "line": "total, server",
            "where": "server",
            "extra cores": ci(t.server),
            "% of your cores": _share(calc, t.server),
            "share of the total": "100%",
        }
    )
    if any(r.line.side == "client" for r in calc.lines):
        rows.append({"line": "total, your clients", "where": "your clients", "extra cores": ci(t.client)})
    return pd.DataFrame(rows).fillna("")


def _share(calc: Calculation, iv: Interval) -> str:
    pct = calc.share(iv)
    return ci(pct) if pct is not None else "- (your cores not given)"


def latency(calc: Calculation) -> pd.DataFrame:
    """What each line adds to one operation: its CPU time (serial on the operation's path) and round trips."""
    rtt = calc.params.rtt_ms
    return pd.DataFrame(
        [
            {
                "operation": f"{r.line.per}: {r.line.label}",
                "CPU time added (µs)": ci(r.us),
                "round trips added": f"{r.line.round_trips:g}",
                f"at {rtt:g} ms each (ms)": number(r.line.round_trips * rtt),
                "latency added (ms)": ci(r.latency_ms),
            }
            for r in calc.lines
        ]
    )


def storage(calc: Calculation) -> pd.DataFrame:
    s = calc.storage
    if s is None:
        return pd.DataFrame()
    rows = [
        ("bytes of log per statement (measured)", ci(s.bytes_per_statement, lambda x: f"{x:,.0f}")),
        ("GB per day", ci(s.gb_per_day)),
        (f"GB over {s.retention_months:g} months, raw", ci(s.gb_retained_raw)),
    ]
    if s.ratio:
        rows += [
            (f"compression ratio ({s.compressor}, measured on the approach's own log)", f"{s.ratio:.1f}"),
            (f"GB over {s.retention_months:g} months, all compressed", ci(s.gb_retained_compressed)),
            ("GB with daily rotation (today raw, earlier days compressed)", ci(s.gb_rotated_daily)),
        ]
    return pd.DataFrame(rows, columns=["audit log", s.approach])


def thumbs(calc: Calculation) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "rule of thumb": t.rule,
                "what": t.what,
                "the rule, on this machine": f"{ci(t.rule_says)} {t.unit}",
                "the calculator": f"{ci(t.calculator)} {t.unit}",
                "agreement": t.agreement,
                "calculator's basis": t.basis,
                "source": t.source,
            }
            for t in calc.thumbs
        ]
    )


def sources(calc: Calculation) -> pd.DataFrame:
    """The reports the costs were read from: each study's run that counts, and the newest before it that ran a
    part it did not."""
    rows = []
    used = [(study, src, run) for study, src in calc.book.sources.items() for run in src.runs_used()]
    for study, src, run in used:
        report = src.report if run == src.run_dir else readable(run) or Report(run, study, "")
        cal = src.calibration_of(run)
        rows.append(
            {
                "study": study,
                "run": run.name,
                "parts": ", ".join(sorted(p for p, e in src.experiments.items() if e.run_dir == run)),
                "scale": report.scale,
                "server builds": ", ".join(report.builds),
                "finished": report.finished,
                "parameters": report.params_name,
                "commit": report.commit,
                "measuring machine: RSA-2048 sign (µs)": f"{cal.get('rsa2048_sign_us', float('nan')):.0f}",
                "fixed loop (ms)": f"{cal.get(GENERAL, float('nan')):.1f}",
            }
        )
    return pd.DataFrame(rows)


def comparisons(calc: Calculation) -> pd.DataFrame:
    """Every comparison priced: arm minus baseline, cell, n, design, confidence; and the notes of its line."""
    rows = []
    for r in calc.lines:
        for p in r.priced:
            m = p.measure
            rows.append(
                {
                    "line": r.line.label,
                    "study / part": f"{m.study} / {m.part}",
                    "report": _report_of(p.reports),
                    "arm - baseline": f"{m.arm} - {m.baseline}",
                    "cell": ", ".join(f"{k} {v}" for k, v in m.cell) or "-",
                    "metric": m.metric,
                    "extra (µs/op)": ci(Interval(p.point, p.lo, p.hi)),
                    "n": f"{p.n} ({p.design})",
                    "confidence": f"{p.confidence:.4f}",
                    "cryptography in it": ", ".join(f"{four_digits(float(f'{n:.3g}'))} x {k}" for k, n in p.primitives)
                    or "-",
                    "notes": "; ".join([*r.notes, *([p.between] if p.between else [])]),
                }
            )
    return pd.DataFrame(rows)


def _report_of(reports: tuple[Path, ...]) -> str:
    """The report a comparison was read from, or the span of those pooled."""
    if len(reports) == 1:
        return reports[0].name
    return f"{reports[0].name} to {reports[-1].name} ({len(reports)} pooled)"


def _unit(key: str) -> str:
    return "ms" if key.endswith("_ms") else "ns per byte" if key.endswith("_ns_per_byte") else "µs"


def scaling(calc: Calculation) -> pd.DataFrame:
    """Each reference: what it scales, the measuring machine's value, the user's (in the reference's own unit),
    the factor."""
    measuring = next(iter(calc.book.sources.values())).calibration if calc.book.sources else {}
    used = {k for r in calc.lines for p in r.priced for k, _ in (*p.primitives, *(p.measure.to_primitives or ()))}
    to = dict(measuring) | dict(calc.target)
    rows = []
    for key, what in REFERENCES.items():
        if key not in used and key != GENERAL:
            continue
        rows.append(
            {
                "reference": key,
                "scales": what,
                "measuring machine": measuring.get(key),
                "yours": to.get(key),
                "unit": _unit(key),
                "factor (yours / measuring)": speed_factor(measuring, to, key),
                "yours from": "typed in"
                if key in calc.params.speed
                else ("your calibration" if key in calc.target else "the measuring machine (not given)"),
            }
        )
    return pd.DataFrame(rows)


def figure(calc: Calculation):
    """Extra server cores per line with their intervals, and the total."""
    server = [r for r in calc.lines if r.line.side == "server"]
    labels = [r.line.label for r in server] + ["total"]
    ivs = [r.cores for r in server] + [calc.totals.server]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(labels) + 1.2))
    y = list(range(len(labels)))[::-1]
    ax.barh(
        y,
        [i.point for i in ivs],
        color=["#4c72b0"] * len(server) + ["#222"],
        xerr=[[i.point - i.lo for i in ivs], [i.hi - i.point for i in ivs]],
        capsize=3,
    )
    ax.set_yticks(y, labels)
    ax.axvline(0, color="#888", lw=0.8)
    joint = "joint " if calc.params.joint else ""
    ax.set_xlabel(f"extra cores (bars: estimate; whiskers: {joint}{calc.params.confidence:.0%} interval)")
    ax.set_title("Where the extra cores go")
    fig.tight_layout()
    return fig


def _at_load(r: LineResult) -> Mapping[str, Any] | None:
    """Where a line priced at the user's load sits on its curve, for cost.json (None: priced back to back)."""
    at = next((p.load for p in r.priced if p.load is not None), None)
    if at is None:
        return None
    return {
        "per_core_on_the_measuring_machine": at.per_core,
        "where": at.where,
        "levels": [
            {"rate": v.rate, "per_core": v.per_core, "pairs": v.pairs} | dataclasses.asdict(v.extra) for v in at.levels
        ],
    }


def loads(calc: Calculation) -> pd.DataFrame:
    """Each line priced at your load: its measured curve's levels and the price at your load among them."""
    rows = []
    for r in calc.lines:
        for p in r.priced:
            if p.load is None:
                continue
            per = r.line.per
            for v in p.load.levels:
                rows.append({"line": r.line.label, "per": per, "a second a core": number(v.per_core),
                             "extra (µs/op)": ci(v.extra), "pairs": v.pairs, "": ""})  # fmt: skip
            rows.append({"line": r.line.label, "per": per, "a second a core": number(p.load.per_core),
                         "extra (µs/op)": ci(p.load.extra), "pairs": "-",
                         "": f"your load ({p.load.where} what was measured)"})  # fmt: skip
    return pd.DataFrame(rows)


def load_figure(calc: Calculation):
    """Each curve: the extra µs per operation against the load per core, its band, and your load on it (None
    where no line was priced at load)."""
    at = [(r, p) for r in calc.lines for p in r.priced if p.load is not None]
    if not at:
        return None
    fig, axes = plt.subplots(1, len(at), figsize=(5 * len(at), 3.4), squeeze=False)
    for ax, (r, p) in zip(axes[0], at, strict=True):
        lv = p.load.levels
        x = [v.per_core for v in lv]
        ax.fill_between(x, [v.extra.lo for v in lv], [v.extra.hi for v in lv], color="#4c72b0", alpha=0.25, lw=0)
        ax.plot(x, [v.extra.point for v in lv], "o-", color="#4c72b0", label="measured, paced")
        e = p.load.extra
        ax.errorbar([p.load.per_core], [e.point], yerr=[[e.point - e.lo], [e.hi - e.point]], fmt="D", color="#c44e52",
                    capsize=4, label=f"your load ({p.load.where})")  # fmt: skip
        ax.set_xscale("log")
        ax.axhline(0, color="#888", lw=0.8)
        ax.set_xlabel(f"{plural(r.line.per)} a second a core (the measuring machine)")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())  # log-scale minor labels overlap at three rates
        ax.set_ylabel(f"extra server CPU (µs per {r.line.per})")
        ax.set_title(r.line.label, fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def save(calc: Calculation, results_dir: str | Path) -> Path:
    """The calculation's figures as JSON beside the report (the index reads the headline from it); a finished
    report's notebook run again writes nothing into it."""
    path = Path(results_dir) / "cost.json"
    if calc.params.replays():
        return path

    def iv(i: Interval | None) -> Mapping[str, Any] | None:
        return None if i is None else {"point": i.point, "lo": i.lo, "hi": i.hi}

    s = calc.storage
    atomic_write_json(
        path,
        {
            "headline": calc.headline(),
            "priced_from": calc.priced_from(),
            "inputs": json.loads(json.dumps(calc.params.__dict__, default=str)),
            "lines": [
                {
                    "key": r.line.key,
                    "label": r.line.label,
                    "side": r.line.side,
                    "rate_per_s": r.line.rate,
                    "per": r.line.per,
                    "extra_us_measured": iv(r.measured_us),
                    "extra_us": iv(r.us),
                    "cores": iv(r.cores),
                    "latency_ms": iv(r.latency_ms),
                    "round_trips": r.line.round_trips,
                    "sources": sorted({str(d) for p in r.priced for d in p.reports}),
                    "priced_from": [o.as_dict() for o in calc.origins.get(r.line.key, [])],
                    "notes": list(r.notes),
                    "priced_at_load": _at_load(r),
                }
                for r in calc.lines
            ],
            "total_server_cores": iv(calc.totals.server),
            "total_client_cores": iv(calc.totals.client),
            "your_cores": calc.cores,
            "your_cores_from": calc.cores_from,
            "dominant": calc.totals.dominant,
            "audit_log": None
            if s is None
            else {
                "gb_per_day": iv(s.gb_per_day),
                "gb_retained_raw": iv(s.gb_retained_raw),
                "gb_rotated_daily": iv(s.gb_rotated_daily),
                "compressor": s.compressor,
                "ratio": s.ratio,
            },
            "target_calibration": calc.target,
            "confidence": calc.params.confidence,
        },
    )
    return path


MEASURED = (
    "Costs are server CPU measured by this suite's studies on the server builds named under each line's report "
    "(below), over loopback: the round trips are added from your rtt_ms. CPU is what is priced: a feature that "
    "makes threads wait (general_log serialises writers) costs throughput beyond its CPU, which the audit study "
    "measures."
)


def headline_html(calc: Calculation) -> str:
    """The answer first: one sentence per feature and the total, then what the numbers are of."""
    import html

    sentences = "".join(f"<p>{html.escape(s)}</p>" for s in calc.headline())
    origins = "".join(f"<li><small>{html.escape(s)}</small></li>" for s in calc.priced_from())
    conf = (
        f"Intervals: joint {calc.params.confidence:.0%} over every measured cost used (Bonferroni)."
        if calc.params.joint
        else f"Intervals: {calc.params.confidence:.0%} each; a total's is the sum of its lines' ends, each at least "
        "zero (a feature adds work), which holds at least as often (-p joint true: all of them together)."
    )
    if not calc.target:
        conf += (
            " No speed reference of your machine was given: run `secoverhead calibrate -o my-host.json` on it and "
            "pass `-p calibration_file my-host.json` to move these costs to it."
        )
    return (
        f'<div class="headline" style="font-size:1.05em;line-height:1.45">{sentences}</div>'
        f"<p><small>{html.escape(conf)} {html.escape(MEASURED)}</small></p>"
        f"<p><small>Priced from:</small></p><ul>{origins}</ul>"
    )
