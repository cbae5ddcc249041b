"""Where the cost goes: the profiling round's CPU by library and by function per operation, what the
original's question names (an RSA signature, a key derivation) costs in the profile, and icicle graphs."""

from __future__ import annotations

import base64
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from IPython.display import HTML, display

from secoverhead.host import profiling, stacks
from secoverhead.host.calibration import PROFILE_FUNCTIONS
from secoverhead.reporting.display import say, show

# Embedded graphs stop here (base64 bytes per report) and the rest are linked: a report stays under 2 MB.
GRAPH_BUDGET = 1_300_000
_SIZE = re.compile(r"<svg[^>]*?\bwidth=\"(\d+)\"[^>]*?\bheight=\"(\d+)\"", re.DOTALL)
_ROOT = re.compile(r"<title>all \([^<]*</title><rect[^>]*?\by=\"([\d.]+)\"[^>]*?\bheight=\"([\d.]+)\"")


def _ops(part: Any) -> dict[str, float]:
    """arm -> operations its profiling run made."""
    ops_metric = profiling.status(part.store.path).get("ops_metric", "operations")
    return {
        r.arm: float(r.metrics.get(ops_metric) or 0) for r in part.store.records() if r.profiling and r.status == "ok"
    }


def _us_per_op(samples: float, prof: profiling.Profile, ops: float) -> float:
    return samples / prof.frequency / ops * 1e6 if ops > 0 else float("nan")


def breakdown_table(part: Any, baseline: str) -> pd.DataFrame:
    """Per arm and library: the share of the server's sampled CPU, microseconds per operation, and the extra
    over the baseline; with each arm's profile total beside the CPU the cgroup measured in the same run."""

    profs = profiling.profiles(part.store.path)
    ops_metric = profiling.status(part.store.path).get("ops_metric", "operations")
    runs = {r.arm: r for r in part.store.records() if r.profiling and r.status == "ok"}
    per_op: dict[str, dict[str, float]] = {}
    rows = []
    for arm, prof in profs.items():
        rec = runs.get(arm)
        ops = float(rec.metrics.get(ops_metric) or 0) if rec else 0.0
        if ops <= 0 or prof.samples == 0:
            continue
        per_op[arm] = {cat: _us_per_op(n, prof, ops) for cat, n in prof.by_category.items()}
        measured = rec.metrics.get("server_cpu_total_s", float("nan")) / ops * 1e6
        rows.append(
            {
                "arm": arm,
                "library": "all (profile)",
                "share %": 100.0,
                "us per op": prof.cpu_s / ops * 1e6,
                "measured us per op (same run)": measured,
            }
        )
    out = []
    for row in rows:
        arm = row["arm"]
        out.append(row)
        base = per_op.get(baseline, {})
        for cat, us in sorted(per_op[arm].items(), key=lambda kv: -kv[1]):
            out.append(
                {
                    "arm": arm,
                    "library": cat,
                    "share %": 100 * us / row["us per op"],
                    "us per op": us,
                    f"extra over {baseline} (us per op)": us - base.get(cat, 0.0)
                    if arm != baseline and base
                    else np.nan,
                }
            )
    return pd.DataFrame(out)


def extra_functions(part: Any, arm: str, baseline: str, n: int = 8) -> pd.DataFrame:
    """The functions whose own CPU (with the unnamed code they call, `*`) grew most per operation over the
    baseline: where the arm's extra cost goes, readable without opening a graph."""
    profs, ops = profiling.profiles(part.store.path), _ops(part)
    prof, base = profs.get(arm), profs.get(baseline)
    if prof is None or base is None or not prof.samples or ops.get(arm, 0) <= 0 or ops.get(baseline, 0) <= 0:
        return pd.DataFrame()

    def per_op(p: profiling.Profile, n_ops: float) -> dict[tuple[str, str], float]:
        return {(c, f): _us_per_op(k, p, n_ops) for c, f, k in p.top}

    mine, theirs = per_op(prof, ops[arm]), per_op(base, ops[baseline])
    rows = [
        {
            "function": f,
            "library": c,
            f"{arm} (us/op)": us,
            f"{baseline} (us/op)": theirs.get((c, f), 0.0),
            "extra (us/op)": us - theirs.get((c, f), 0.0),
        }
        for (c, f), us in mine.items()
    ]
    table = pd.DataFrame(rows)
    return table.sort_values("extra (us/op)", ascending=False).head(n) if len(table) else table


def question_rows(part: Any, bounds: Sequence[Any]) -> list[dict[str, Any]]:
    """Per arm with a crypto bound measured on the server: what the named primitives cost in the profile
    (samples with one of their functions in the stack) beside the arm's whole extra over its baseline."""
    profs, ops = profiling.profiles(part.store.path), _ops(part)
    d = part.store.path / "profiles"
    rows = []
    for b in bounds:
        prof, base = profs.get(b.arm), profs.get(b.baseline)
        if not b.metric.startswith("server") or prof is None or base is None:
            continue
        if ops.get(b.arm, 0) <= 0 or ops.get(b.baseline, 0) <= 0 or not (d / prof.folded).exists():
            continue
        folded = (d / prof.folded).read_text()
        extra = prof.cpu_s / ops[b.arm] * 1e6 - base.cpu_s / ops[b.baseline] * 1e6
        for key, _count in b.primitives:
            label, functions = PROFILE_FUNCTIONS.get(key, (key, ()))
            if functions:
                samples = stacks.folded_matching(folded, functions)
                cost = _us_per_op(samples, prof, ops[b.arm]) if samples else None  # absent is not 0 µs
                rows.append(
                    {"arm": b.arm, "what": label, "functions": functions, "us": cost, "extra": extra, "per": b.what}
                )
    return rows


def question_sentence(row: Mapping[str, Any]) -> str:
    names = " / ".join(f"`{f}`" for f in row["functions"][:2])
    if row["us"] is None:  # the server does this work in code of other names (FerretDB: Go's crypto)
        return (
            f"**{row['arm']}**: {row['what']} ({names}) is not in the profile: this server does it in code of "
            "other names (FerretDB in Go's crypto packages), so the profile does not price it here."
        )
    share = 100 * row["us"] / row["extra"] if row["extra"] > 0 else float("nan")
    tail = f" ({share:.0f} %)" if math.isfinite(share) else ""
    return (
        f"**{row['arm']}**: {row['what']} ({names}) is **{row['us']:,.0f} µs** of the arm's extra "
        f"{row['extra']:,.0f} µs of server CPU {row['per']}{tail}, in the profile."
    )


def crypto_table(part: Any, bounds: Sequence[Any], cal: Mapping[str, Any]) -> pd.DataFrame:
    """Per arm: the extra cost over its baseline (medians over runs) and how much of it the cryptographic
    primitives alone explain, priced by this machine's calibration: a lower bound, not the whole cost."""
    runs = part.runs()
    rows = []
    for b in bounds:
        if b.metric not in runs or b.arm not in set(runs["arm"]) or b.baseline not in set(runs["arm"]):
            continue
        extra = float(
            runs.loc[runs["arm"] == b.arm, b.metric].median() - runs.loc[runs["arm"] == b.baseline, b.metric].median()
        )
        if not math.isfinite(extra):  # the metric was not measured for one of the two arms: nothing to split
            continue
        cost = b.cost_us(cal)
        rows.append(
            {
                "arm": b.arm,
                "baseline": b.baseline,
                "per": b.what,
                "extra (us)": extra,
                "cryptographic primitives": b.describe(),
                "their cost on this machine (us)": cost,
                "share of the extra %": 100 * cost / extra if cost is not None and extra > 0 else np.nan,
            }
        )
    return pd.DataFrame(rows)


def crypto_sentence(row: Mapping[str, Any]) -> str:
    extra, what = row["extra (us)"], row["per"]
    return (
        f"{row['arm']}: of the extra {extra:,.0f} µs {what} over {row['baseline']}, the cryptography "
        f"({row['cryptographic primitives']}) "
        f"is {row['their cost on this machine (us)']:,.0f} µs ({row['share of the extra %']:.0f} %) at this "
        "machine's calibrated speed."
    )


def embed_svg(svg: str, alt: str) -> str:
    """An interactive SVG as its own document (its script then works, no network), at its own proportions so
    that nothing is cut: the page scales it to its width and keeps its height in step."""
    m = _SIZE.search(svg[:4000])
    width, height = (int(m.group(1)), int(m.group(2))) if m else (1200, 420)
    root = _ROOT.search(svg)
    root_bottom = float(root.group(1)) + float(root.group(2)) if root else height  # where the root frame ends
    if m and "viewBox=" in svg[: m.end() + 200]:  # drawn to the box it is given (a printed A4 page: 703 px)
        svg = svg[: m.start()] + _SIZE.sub(_fluid, svg[: m.end()][m.start() :], count=1) + svg[m.end() :]
    data = base64.b64encode(svg.encode()).decode()
    style = f"display:block;width:100%;max-width:{width}px;aspect-ratio:{width}/{height};height:auto"
    return (
        f'<object class="flamegraph" type="image/svg+xml" data="data:image/svg+xml;base64,{data}" '
        f'data-svg-width="{width}" data-root-bottom="{root_bottom:g}" style="{style}" aria-label="{alt}">'
        f"<p>{alt}</p></object>"
    )


def _fluid(m: re.Match) -> str:
    """The root <svg>'s fixed size made the box's: its viewBox keeps the proportions, its frames scale."""
    tag = m.group(0).replace(f'width="{m.group(1)}"', 'width="100%"')
    return tag.replace(f'height="{m.group(2)}"', 'height="100%"')


def _unresolved_note(profs: Mapping[str, profiling.Profile]) -> str:
    parts = [
        f"{arm} {100 * p.unnamed_in_library / p.samples:.0f} % / {100 * p.unresolved / p.samples:.1f} %"
        for arm, p in profs.items()
        if p.samples
    ]
    kinds = {p.call_graph for p in profs.values()}
    how = "DWARF call graphs" if all(k.startswith("dwarf") for k in kinds) else "frame-pointer call graphs"
    return (
        f"Stacks unwound with {how}. Samples with no named function in their leaf's library / left unresolved "
        "(no named function above them at all): " + ", ".join(parts) + ". A name marked `*` is that function with "
        "the unnamed internal code it calls; `f -> [library]` is unnamed code of that library entered from f "
        "(Debian strips OpenSSL's internal symbols, and its debug symbols are not reachable here)."
    )


def section(result: Any, bounds: Sequence[Any] = (), *, diff_against: str | None = None) -> None:
    """Per experiment: the CPU by library, the functions the extra goes to, what the original's question names
    costs, and the icicle graphs (the baseline's, then each arm against it)."""
    if not result.params.profile:
        say("*Profiles were not taken in this run (`profile` is off).*")
        return
    budget = [GRAPH_BUDGET]
    for part in result:
        st = profiling.status(part.store.path)
        if len(result.parts) > 1:
            say(f"### {part.label}")
        if not st.get("available"):
            say(f"*Profiles skipped: {st.get('why')}.*")
            continue
        profs = profiling.profiles(part.store.path)
        if not profs:
            say("*No profile was recorded in this run.*")
            continue
        baseline = diff_against or part.arms[0]
        mine = [b for b in bounds if b.arm in part.arms]
        for row in question_rows(part, mine):
            say(question_sentence(row))
        cal = part.extras.get("calibration", {})
        crypto = crypto_table(part, mine, cal)
        for row in crypto.to_dict("records"):
            share, cost = row.get("share of the extra %"), row.get("their cost on this machine (us)")
            if cost is not None and share is not None and math.isfinite(share):
                say(crypto_sentence(row))
        say(_unresolved_note(profs))
        show(
            breakdown_table(part, baseline),
            precision=1,
            caption="Server CPU by library in the profiling round (leaf frames), in µs per operation, and the "
            "extra over the baseline; the profile's total stands beside the CPU the server's cgroup measured in "
            "the same run. The profiling round is not among the runs the statistics use.",
        )
        for arm, prof in profs.items():
            if arm == baseline:
                continue
            table = extra_functions(part, arm, baseline)
            if len(table):
                say(f"**{arm}** ({prof.samples:,} samples): where its extra CPU over {baseline} goes")
                show(table, precision=1)
        _graphs(part, profs, baseline, {b.arm for b in mine if b.metric.startswith("server")}, budget)


def _graphs(part: Any, profs: Mapping[str, profiling.Profile], baseline: str, asked: set[str], budget: list[int]):
    """The baseline's icicle, then each arm's against it (only the arms the question is about, where it names
    some), embedded while the report's graph budget lasts and linked after that."""
    d = part.store.path / "profiles"
    base = profs.get(baseline)
    items = []
    if base is not None and (d / base.svg).exists():
        items.append((baseline, (d / base.svg).read_text(), d / base.svg, "the baseline: where its CPU goes"))
    for arm, prof in profs.items():
        if base is None or arm == baseline or (asked and arm not in asked):
            continue
        diff = profiling.diff_svg(part.store.path, base, prof)
        if diff:
            path = d / f"diff-{Path(prof.folded).stem}.svg"
            items.append((arm, diff, path, f"against {baseline}: red frames grew, blue ones shrank"))
    linked = []
    for arm, svg, path, what in items:
        size = len(svg) * 4 // 3
        if size > budget[0]:
            linked.append(f"[{arm}]({_rel(path)})")
            continue
        budget[0] -= size
        p = profs[arm]
        unnamed = (
            f"; {100 * p.unnamed_in_library / p.samples:.0f} % of its samples end in unnamed code" if p.samples else ""
        )
        say(f"**{arm}** {what} (root on top; click a frame to zoom; [open it alone as SVG]({_rel(path)}){unnamed}).")
        display(HTML(embed_svg(svg, f"Icicle graph of {arm}'s server CPU ({what})")))
    if linked:
        say("More graphs, kept beside the results to keep this page light: " + " · ".join(linked))


def _rel(path: Path) -> str:
    try:
        return os.path.relpath(path, Path.cwd())
    except ValueError:
        return str(path)
