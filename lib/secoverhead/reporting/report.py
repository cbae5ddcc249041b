"""The sections every study's report has, so a notebook stays a narrative of a few calls: conclusions (and
verdicts.json for the index), parameters and links to the data, the environment with the engine differences,
the design (looks, alpha, why it stopped, noise), and the machine's speed."""

from __future__ import annotations

import base64
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from IPython.display import HTML, Markdown, display

from secoverhead.analysis.verdicts import ClaimVerdict, write_verdicts
from secoverhead.host import calibration, profiling
from secoverhead.measurement.parts import StudyResult
from secoverhead.reporting import plots, tables


def say(text: str) -> None:
    display(Markdown(text))


def show(df: pd.DataFrame, precision: int = 3, caption: str = "") -> None:
    if df is None or not len(df):
        return
    display(tables.show(df, precision=precision))
    if caption:
        say(f"*{caption}*")


def figures(items: Sequence[tuple[Any, str]]) -> None:
    for fig, caption in items:
        plots.show(fig, caption)


def conclusions(result: StudyResult, verdicts: Sequence[ClaimVerdict], notes: Sequence[str] = ()) -> pd.DataFrame:
    """The verdict table, written beside the results for the index and for history."""
    write_verdicts(result.params.results_dir(), result.study, verdicts, notes)
    table = tables.verdict_table(verdicts)
    counts = tables.verdict_counts(verdicts)
    if counts:
        say(f"**Claims** — {counts}. The originals' claims and the suite's own hypotheses are counted apart.")
    show(table)
    alphas = {round(part.alpha, 5) for part in result}
    say(
        "*Reproduced*: the intervals lie where the claim's reading (fixed before the data, in "
        "`data/claims/registry.yaml` with the original's words) says; *not reproduced*: wholly on the wrong side; "
        "*inconclusive*: the data cannot decide. Every n counts runs (or rounds of interleaved runs), never the "
        "queries or connections inside them. Each claim's intervals spend its own "
        + ", ".join(f"alpha = {a:g}" for a in sorted(alphas))
        + " (the sequential design's last look; see *Design*), widened further where a claim rests on several "
        "comparisons: the error rate holds per claim, not across a study's claims."
    )
    for n in notes:
        say(n)
    return table


def _rel(path: Path) -> str:
    try:
        return os.path.relpath(path, Path.cwd())
    except ValueError:
        return str(path)


def parameters(result: StudyResult) -> None:
    """What the run was run with, and where its data is."""
    show(
        tables.parameter_table(result.params),
        caption="Parameters of this run (defaults in the last column where changed).",
    )
    links = []
    for part in result:
        d = part.store.path
        links += [
            f"[{part.name}: {name}]({_rel(d / name)})"
            for name in ("results.csv", "results.parquet", "metadata.json")
            if (d / name).exists()
        ]
    cwd = Path.cwd()
    links += [f"[{name}]({name})" for name in ("run.json", "report.ipynb", "run.log") if (cwd / name).exists()]
    if links:
        say("Data of this report: " + " · ".join(links))


def environment(result: StudyResult, notes: Mapping[str, str] | None = None) -> None:
    env = result.first.metadata().get("environment", {})
    show(tables.environment_table(result.servers(), env, {**result.notes(), **(notes or {})}))


def design(result: StudyResult) -> None:
    """The sequential design as it ran, the noise the machine showed during the runs, and (A/A runs) the
    noise floor of the design."""
    if result.params.aa:
        metrics = [*result.primary_metrics, "system_ns_per_nonce"]
        show(
            tables.aa_table(result.parts, metrics, result.params.look_schedule(), by=("workload", "threads")),
            caption="A/A: the baseline against an identical copy of itself. The noise floor is the 95th percentile "
            "of |ratio - 1| an experiment of this plan would report with no real difference; the false-positive "
            "rate is that of the sequential looks; the minimum detectable effect has 80 % power.",
        )
    plan = result.params.feasibility()
    if plan:
        show(
            pd.DataFrame(
                {
                    "claim": f.claim,
                    "precision needed": f"+-{f.precision:.1%}",
                    f"expected at {result.params.repetitions} rounds": f"+-{f.half_width_at_end:.1%}",
                    "rounds it needs": f.rounds_needed,
                    "decidable in plan": f.feasible,
                }
                for f in plan
            ),
            caption="Checked before the run, from A/A noise priors: can the planned rounds decide each claim? "
            "(plan_check: size-up raises repetitions to what they need; the time budget still bounds the run.)",
        )
    show(
        tables.design_table(result.parts),
        caption="Rounds ran until every claim was decided or the budget ended; "
        "intervals spend the alpha of the look the data ended at.",
    )
    rows = []
    for part in result:
        runs = part.runs()
        summary = tables.noise_summary(runs)
        if summary:
            rows.append({"experiment": part.name, **{k.replace("noise_", ""): v for k, v in summary.items()}})
        flagged = tables.noise_table(runs)
        if len(flagged):
            say(
                f"**{part.name}**: {len(flagged)} run(s) flagged as "
                "noisy (kept; a single run is taken again where the budget allows, a duet is not: its ratio "
                "cancels what hit both of its runs):"
            )
            show(flagged)
        strays = tables.outlier_table(part.metadata())
        if len(strays):
            fell = strays["arm whose metric fell"].value_counts()
            say(
                f"**{part.name}**: {len(strays)} duet(s) strayed far from their cell's other duets (a one-off such "
                "as a two-second stall). They stay in the statistics that decide; the conclusions show beside each "
                "verdict what it would be without them (a sensitivity check, not the verdict). The arm whose "
                "metric fell: "
                + ", ".join(f"{arm} {n}x" for arm, n in fell.items())
                + " (falling mostly on one arm would be that arm's cost, not noise)."
            )
            show(strays)
    if rows:
        show(
            pd.DataFrame(rows),
            caption="Median noise per run: host steal (share of CPU time), CPU pressure "
            "(PSI, share of time a task waited), cores busy outside the experiment.",
        )


def machine_speed(result: StudyResult) -> None:
    cal = result.first.extras.get("calibration") or result.first.metadata().get("calibration", {})
    if not cal:
        return
    rows = [
        {"operation": label, "this machine": cal.get(key), "unit": "ms" if key.endswith("_ms") else "us"}
        for key, label in calibration.UNITS.items()
        if key in cal
    ]
    rows += [{"operation": "AES-128-GCM per byte", "this machine": cal.get("aes_128_gcm_ns_per_byte"), "unit": "ns"}]
    rows += [
        {"operation": "fixed Python loop (1e6 iterations)", "this machine": cal.get("python_loop_ms"), "unit": "ms"}
    ]
    show(
        pd.DataFrame(rows),
        caption="Speed reference taken with this run (system OpenSSL): "
        "absolute costs from two machines compare only through it.",
    )


def _svg_object(svg: str, height: int = 420) -> str:
    """An interactive SVG embedded as its own document (its script then works), with no network."""

    data = base64.b64encode(svg.encode()).decode()
    style = f"width:100%;height:{height}px"
    return f'<object type="image/svg+xml" data="data:image/svg+xml;base64,{data}" style="{style}"></object>'


def profiles(result: StudyResult, bounds: Sequence[Any] = (), *, diff_against: str | None = None) -> None:
    """Where the cost goes: per experiment, the profiling round's status, the CPU breakdown by library, the
    crypto lower bound, the hottest functions, and per arm a flame graph and one against the baseline."""

    if not result.params.profile:
        say("*Profiles were not taken in this run (`profile` is off).*")
        return
    for part in result:
        st = profiling.status(part.store.path)
        if len(result.parts) > 1:
            say(f"### {part.name}")
        if not st.get("available"):
            say(f"*Profiles skipped: {st.get('why')}.*")
            continue
        baseline = diff_against or part.arms[0]
        show(
            tables.breakdown_table(part, baseline),
            precision=1,
            caption="Server CPU by library in the profiling round (perf cpu-clock samples, leaf frames), in "
            "microseconds per operation, and the extra over the baseline; the profile's total stands beside the "
            "CPU the server's cgroup measured in the same run. The profiling round is not among the runs the "
            "statistics use.",
        )
        cal = part.extras.get("calibration", {})
        crypto = tables.crypto_table(part, [b for b in bounds if b.arm in part.arms], cal)
        if len(crypto):
            show(
                crypto,
                precision=1,
                caption="The cryptographic primitives alone, priced by this "
                "machine's calibration: a lower bound of the extra cost.",
            )
            for row in crypto.to_dict("records"):
                share, cost = row.get("share of the extra %"), row.get("their cost on this machine (us)")
                if cost is not None and share is not None and math.isfinite(share):
                    say(tables.crypto_sentence(row))
        profs = profiling.profiles(part.store.path)
        base = profs.get(baseline)
        for arm, prof in profs.items():
            say(f"**{arm}**: {prof.samples} samples")
            show(tables.top_functions(part, arm), precision=1)
            svg_path = part.store.path / "profiles" / prof.svg
            if svg_path.exists():
                display(HTML(_svg_object(svg_path.read_text())))
            if base is not None and arm != baseline:
                diff = profiling.diff_svg(part.store.path, base, prof)
                if diff:
                    display(HTML(_svg_object(diff)))
                    say(
                        f"*{arm} against {baseline}: red frames grew, blue "
                        "ones shrank (click to zoom, Ctrl-F to search).*"
                    )
