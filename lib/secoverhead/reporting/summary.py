"""The summary a reviewer reads first: per claim one sentence in plain units (the measured interval on the
claim's own quantity, the reading that decides it), the verdict as a coloured chip, how the claim is read in a
collapsible detail, and one picture of every claim's intervals against its thresholds. Works from verdicts
as dicts (ClaimVerdict.as_dict() or verdicts.json), so a report and the index say the same."""

from __future__ import annotations

import html
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import jinja2
from markupsafe import Markup

from secoverhead.analysis.readings import reading_quantity
from secoverhead.analysis.verdicts import Verdict
from secoverhead.core.units import shown, shown_interval
from secoverhead.servers.builds import BESIDE_MARK

COLOURS = {
    "reproduced": "#1a7f37",
    "not reproduced": "#cf222e",
    "inconclusive": "#7d6608",
    "not testable here": "#57606a",
}
# Where a claim comes from, in the order they are counted and listed (analysis/claim_registry.SOURCES)
SOURCES = {
    "published": "published claims",
    "extension": "extensions of published claims",
    "suite": "the suite's own",
}
# The mark a claim of each source carries beside its words (a published one none)
SOURCE_MARKS = {"extension": "(an extension: the original did not measure this)", "suite": "(the suite's own)"}


SUMMED_UP = 3  # a reading over more cells than this is shown by its two ends, each named


def source_rank(v: Mapping[str, Any]) -> int:
    """Published claims first, extensions next, the suite's own last (a run from before the registry has no
    source: counted as published, which every claim then was taken to be)."""
    keys = list(SOURCES)
    source = v.get("source") or "published"
    return keys.index(source) if source in keys else 0


REGION_COLOURS = {"reproduce": "#b7e4c0", "refute": "#f5b7b1", "gap": "#e5e5e5"}
UNJUDGED = Verdict.NOT_TESTABLE.value  # its interval is drawn without the regions that would read it as a verdict

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("secoverhead.reporting", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


# An identifier or a path may wrap after these (printed on A4, a run's name or a file's path is wider than its
# column), never inside a word or a number: a <wbr> is no character, so the text copies as it reads.
_WRAP_AFTER = re.compile(r"([/_=+,:;])")


def breakable(text: Any) -> Markup:
    """Text escaped, with a line-break opportunity after each separator of an identifier or path."""
    pieces = _WRAP_AFTER.split(str(text))
    return Markup("".join(escape(p) + ("<wbr>" if _WRAP_AFTER.fullmatch(p) else "") for p in pieces))


_ENV.filters["breakable"] = breakable


def template(name: str) -> jinja2.Template:
    return _ENV.get_template(name)


def chip(verdict: str) -> str:
    """The verdict as a coloured label (inline style: it shows the same in JupyterLab and in the HTML)."""
    colour = COLOURS.get(verdict, "#555")
    return (
        f'<span class="chip" style="background:{colour};color:#fff;border-radius:0.8em;padding:0.05em 0.6em;'
        "print-color-adjust:exact;-webkit-print-color-adjust:exact;"  # printed, a chip keeps its colour
        f'font-size:0.85em;white-space:nowrap">{html.escape(verdict)}</span>'
    )


def _intervals(reading: Mapping[str, Any]) -> list[tuple[float, float]]:
    return [tuple(i) for i in reading.get("intervals") or [] if len(i) == 2]


def _ends(each: Sequence[tuple[float, float]]) -> tuple[int, int]:
    """The cells whose interval reaches lowest and highest: what a line of many cells shows."""
    return min(range(len(each)), key=lambda i: each[i][0]), max(range(len(each)), key=lambda i: each[i][1])


def measured(judged: Sequence[Mapping[str, Any]]) -> str:
    """What was measured, on the claim's quantity, each interval with its cell's name where the study gave it:
    'TPS loss at the most threads, %: oltp_write_only x16 -1.1 % to 0.9 %, oltp_read_only x16 ...'. More than
    three cells are summed up by their two ends, each named."""
    out = []
    for r in judged:
        quantity, unit = reading_quantity(r)
        each = _intervals(r)
        if not each:
            continue
        names = [str(n) for n in r.get("cells") or []]
        names = names if len(names) == len(each) else [""] * len(each)
        if len(each) <= SUMMED_UP:
            text = ", ".join(
                f"{n} {shown_interval(lo, hi, quantity, unit)}".strip() for n, (lo, hi) in zip(names, each, strict=True)
            )
        else:
            low, high = _ends(each)
            text = (
                f"{len(each)} cells, from {shown(each[low][0], quantity, unit)}{_of(names[low])} to "
                f"{shown(each[high][1], quantity, unit)}{_of(names[high])}"
            )
        out.append(f"{r.get('effect')}: {text}")
    return "; ".join(out)


def deciding(verdict: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reading that decided a claim, with the intervals judged: the first that refuted it (its refuting
    intervals, where the claim judges refutation on its own), the first still undecided, else the first.
    A verdict from before readings recorded their own verdicts: its first."""
    judged = [j for j in verdict.get("judged") or [] if isinstance(j, Mapping)]
    if not judged:
        return None
    said = str(verdict.get("verdict", ""))
    k = next((i for i, j in enumerate(judged) if j.get("verdict") == said), 0)
    refuting = judged[k].get("refuting")
    return dict(judged[k]) | ({"intervals": refuting} if said == "not reproduced" and refuting else {})


def numbers_shown(verdict: Mapping[str, Any]) -> list[str]:
    """The numbers a verdict's line must show, from verdicts.json: its deciding reading's recorded interval ends
    (of more than three cells, the lowest and highest), each as core.units.shown writes it."""
    reading = deciding(verdict)
    if reading is None or any(c.get("holds") is False for c in verdict.get("preconditions") or []):
        return []  # no interval, or a failed precondition's line says what it needs instead
    quantity, unit = reading_quantity(reading)
    each = _intervals(reading)
    if len(each) > SUMMED_UP:
        low, high = _ends(each)
        each = [(each[low][0], each[high][1])]
    return [shown(x, quantity, unit) for i in each for x in i]


def misread(lines: Sequence[str], verdicts: Sequence[Mapping[str, Any]]) -> list[str]:
    """Verdicts whose line, read back from the page, lacks a number verdicts.json recorded (each line is the
    one of the verdict's claim words)."""
    out = []
    for v in verdicts:
        claim = str(v.get("claim", ""))
        line = next((ln for ln in lines if claim and claim in ln), None)
        if line is None:
            out.append(f"{v.get('id')}: no line on the page")
            continue
        missing = [n for n in numbers_shown(v) if n not in line]
        if missing:
            out.append(f"{v.get('id')}: shows {line[-120:]!r}, recorded {', '.join(missing)}")
    return out


def _on(verdict: Mapping[str, Any]) -> str:
    """The build a claim's line names, short, where its words do not already ("on mongod 4.2"): the version and
    TLS library are in the detail, so the first screen keeps one line a claim."""
    build = str((verdict.get("server") or {}).get("build") or "")
    return build if build and build not in str(verdict.get("claim", "")) else ""


def server_name(server: Mapping[str, Any]) -> str:
    """A verdict's server as a page prints it: 'mongod 4.2 (4.2.6, OpenSSL 1.1.1q)'; a stand-in says so."""
    inner = ", ".join(str(server[k]) for k in ("version", "tls_library") if server.get(k))
    name = f"{server.get('build', '')} ({inner})" if inner else str(server.get("build", ""))
    return name + (f", standing in for {server['stands_in_for']}" if server.get("stands_in_for") else "")


def _of(name: str) -> str:
    return f" ({name})" if name else ""


def headline(d: Mapping[str, Any]) -> str:
    """The verdict a claim's line leads with: its series' standing verdict where two reports or more judged it
    (series/standing.py, attached as "standing"), else the report's own."""
    stands = d.get("standing") or {}
    return str(stands.get("verdict") or d.get("verdict", ""))


def _plain(d: Mapping[str, Any]) -> dict[str, Any]:
    reg = d.get("registered") or {}
    checks = [c for c in d.get("preconditions") or [] if isinstance(c, Mapping)]
    stands = d.get("standing") or {}
    return {
        "claim": str(d.get("claim", "")),
        "verdict": headline(d),
        "chip": chip(headline(d)),
        "standing": str(stands.get("text") or "") if stands.get("verdict") else "",
        "tonight": str(d.get("verdict", "")),
        "series_text": str(stands.get("text") or ""),
        "measured": measured([r] if (r := deciding(d)) else []),  # the reading that decided; the detail has all
        "reading": reg.get("reading_text", ""),
        "why": reg.get("why", ""),
        "metric": d.get("measure") or reg.get("metric_text", ""),
        "evidence": str(d.get("evidence", "")),
        "quote": reg.get("quote", ""),
        "translation": reg.get("translation", ""),
        "original": reg.get("original", ""),
        "mark": SOURCE_MARKS.get(str(d.get("source")), ""),
        "rank": source_rank(d),
        "rounds_needed": d.get("rounds_needed"),
        "mechanism": reg.get("mechanism", ""),
        "preconditions": [
            {
                "text": f"{c.get('text')}: {c.get('shown')} (needs {c.get('required')})",
                "holds": "holds" if c.get("holds") else "fails" if c.get("holds") is False else "not known here",
                "why": c.get("why", ""),
            }
            for c in checks
        ],
        "testable_where": d.get("testable_where", ""),
        "failed": "; ".join(  # a verdict recorded before a check had `said` has `required`
            f"needs {c.get('said') or c.get('required')}, here {c.get('shown')}"
            for c in checks
            if c.get("holds") is False
        ),
        "episodes": d.get("episodes", ""),
        "sensitivity": d.get("sensitivity", ""),
        "engine_note": d.get("engine_note", ""),
        "server": server_name(d.get("server") or {}),
        "on": _on(d),
        "before": before_text(d),
        "before_detail": [b for b in d.get("before") or [] if isinstance(b, Mapping)],
    }


def before_text(verdict: Mapping[str, Any]) -> str:
    """The verdict under each earlier definition of the claim, beside the one of record ('' when none changed)."""
    return "; ".join(
        f"{b.get('verdict')} under its definition before {b.get('until')} ({b.get('change')})"
        for b in verdict.get("before") or []
        if isinstance(b, Mapping)
    )


def on_the_first_screen(verdict: Mapping[str, Any]) -> bool:
    """A verdict whose line the summary shows at once: not one of the same claims on a build run beside the
    verdicts of record (a part named "<engine> on <build>"), which fold under one line below them."""
    return BESIDE_MARK not in str(verdict.get("part") or "")


def claims_html(verdicts: Sequence[Mapping[str, Any]], *, details: bool = True) -> str:
    """One line per claim (the originals' first, extensions and the suite's own after), each with its detail; the
    same claims on the builds beside the verdicts of record folded under one line, with their tally."""
    rows = sorted((_plain(v) for v in verdicts if on_the_first_screen(v)), key=lambda r: r["rank"])
    beside = [v for v in verdicts if not on_the_first_screen(v)]
    html = template("claims.html.j2").render(rows=rows, details=details)
    if not beside:
        return html
    # a box of their own: the first screen's count (browser._PROBE, '.claims .chip') is the verdicts of record
    folded = template("claims.html.j2").render(rows=[_plain(v) for v in beside], details=details, box="beside-claims")
    head = f"The same claims on {len({v.get('part') for v in beside})} other server build(s) here: {tally(beside)}"
    return f'{html}<details class="beside"><summary>{escape(head)}</summary>{folded}</details>'


def tally(verdicts: Sequence[Mapping[str, Any]]) -> str:
    """'published claims: 3 reproduced, 1 not testable here; the suite's own: 2 reproduced': each source apart,
    each verdict counted apart (not testable here is neither decided nor inconclusive), each claim by the verdict
    its line leads with (headline: the standing one where its series has one)."""
    out = []
    for rank, name in enumerate(SOURCES.values()):
        mine = [headline(v) for v in verdicts if source_rank(v) == rank]
        if mine:
            counts = ", ".join(f"{mine.count(k)} {k}" for k in COLOURS if k in mine)
            out.append(f"{name}: {counts}")
    return "; ".join(out)


def counted_as(verdicts: Sequence[Mapping[str, Any]]) -> str:
    """What a tally counted, when some of its claims lead with a standing verdict ('' when none does)."""
    n = sum(1 for v in verdicts if (v.get("standing") or {}).get("verdict"))
    if not n:
        return ""
    rest = "" if n == len(verdicts) else "; the rest by this report's own"
    return f"{n} of {len(verdicts)} counted by their standing verdict, valid however often it is read{rest}"


def figure(verdicts: Sequence[Mapping[str, Any]]):
    """Every claim's intervals against its regions, one strip per reading, each on its own quantity (a ratio on a
    log axis): green reproduces, red refutes, grey decides nothing. None when no claim recorded its intervals."""
    import matplotlib.pyplot as plt  # deferred: only a report draws

    strips = [
        (str(v.get("claim", "")), str(v.get("verdict", "")), r)
        for v in verdicts
        for r in v.get("judged") or []
        if r.get("intervals")
    ]
    if not strips:
        return None
    # each strip tall enough for its intervals and their names in the margin (6 pt apart at least)
    heights = [0.2 + 0.13 * len(r["intervals"]) for _, _, r in strips]
    titles = [textwrap.wrap(_title(claim, verdict, r), 120) for claim, verdict, r in strips]  # whole, never cut
    fig, axes = plt.subplots(
        len(strips),
        1,
        figsize=(9, sum(heights) + 0.45 * len(strips) + 0.14 * sum(len(t) - 1 for t in titles) + 0.3),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for ax, (_, verdict, r), title in zip(axes[:, 0], strips, titles, strict=True):
        _strip(ax, verdict, r, title)
    fig.tight_layout()
    return fig


def _title(claim: str, verdict: str, r: Mapping[str, Any]) -> str:
    """What a strip shows; a claim not testable here shows a measurement, which no region of the reading judges."""
    aside = " (not testable here: measured instead, a fact, not a verdict)" if verdict == UNJUDGED else ""
    return f"{claim} — {r.get('effect')}{aside}"


def _strip(ax: Any, verdict: str, r: Mapping[str, Any], title: list[str]) -> None:
    """One reading: its regions (none for a claim not testable here), its intervals, the lines and interval ends
    as ticks on the reading's quantity."""
    quantity, unit = reading_quantity(r)
    cuts = [float(c) for c in r.get("cuts", [])]
    each = [(float(lo), float(hi)) for lo, hi in r["intervals"] if math.isfinite(lo) and math.isfinite(hi)]
    values = cuts + [x for i in each for x in i]
    log = quantity == "ratio" and all(x > 0 for x in values)
    left, right = _span(min(values), max(values), log)
    if log:
        ax.set_xscale("log")
    edges = [left, *[c for c in cuts if left < c < right], right]
    labels = r.get("labels", [])
    first = sum(c <= left for c in cuts)
    for i in range(len(edges) - 1):
        label = labels[min(first + i, len(labels) - 1)] if labels and verdict != UNJUDGED else "gap"
        ax.axvspan(edges[i], edges[i + 1], color=REGION_COLOURS.get(label, "#eee"), lw=0)
    names = [str(n) for n in r.get("cells") or []] if len(r.get("cells") or []) == len(each) <= 3 else []
    ys = [(k + 1) / (len(each) + 1) for k in range(len(each))]
    for y, (lo, hi) in zip(ys, each, strict=True):
        ax.plot([lo, hi], [y, y], color=COLOURS.get(verdict, "#333"), lw=3, solid_capstyle="butt")
    ax.set_xlim(left, right)
    ax.set_ylim(0, 1)
    # which interval is which, where few enough to read: named in the margin, where names cannot collide
    ax.set_yticks(ys if names else [], names, fontsize=6)
    ax.tick_params(axis="y", length=0)
    ax.set_title("\n".join(title), fontsize=8, loc="left")
    ticks = _ticks(cuts, each, left, right, log)
    ax.minorticks_off()
    ax.set_xticks(ticks)
    ax.set_xticklabels([shown(t, quantity, unit, exact=t in cuts) for t in ticks], fontsize=7)
    for label, t in zip(ax.get_xticklabels(), ticks, strict=True):
        label.set_fontweight("bold" if t in cuts else "normal")  # the reading's lines in bold


def _span(lo: float, hi: float, log: bool) -> tuple[float, float]:
    """The axis's ends: the values with 15 % room either side (of the axis's own kind)."""
    if log:
        pad = (hi / lo) ** 0.15 if hi > lo else 1.5
        return lo / pad, hi * pad
    pad = (hi - lo) * 0.15 or 1.0
    return lo - pad, hi + pad


def _ticks(cuts: list[float], each: list[tuple[float, float]], left: float, right: float, log: bool) -> list[float]:
    """The reading's lines first, then the first intervals' ends; a tick whose label would overlap is left out."""

    def frac(x: float) -> float:
        return math.log(x / left) / math.log(right / left) if log else (x - left) / (right - left)

    ticks: list[float] = []
    for t in [c for c in cuts if left < c < right] + [v for i in each[:3] for v in i]:
        if all(abs(frac(t) - frac(k)) > 0.08 for k in ticks):
            ticks.append(t)
    return sorted(ticks)
