"""The sections every study's report has, so a notebook stays a narrative of a few calls: conclusions (and
verdicts.json for the index), parameters and links to the data, the environment with the engine differences,
the design (looks, alpha, why it stopped, noise), and the machine's speed."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from IPython.display import HTML, display

from secoverhead.analysis import claim_registry
from secoverhead.analysis.pooling import ALPHA
from secoverhead.analysis.stats import credibly_above
from secoverhead.analysis.verdicts import ClaimVerdict, write_verdicts
from secoverhead.host import calibration
from secoverhead.measurement.parts import StudyResult
from secoverhead.reporting import summary, tables
from secoverhead.reporting.display import say, show, show_folded
from secoverhead.reporting.profiles import section as profile_section
from secoverhead.series import standing


def figures(items: Sequence[tuple[Any, str]]) -> None:
    for fig, caption in items:
        show(fig, caption)


def error_rate_warnings(verdicts: Sequence[ClaimVerdict], alpha: float = 0.05) -> list[str]:
    """A verdict of this report that its rule gives wrongly credibly more often than alpha, as `make error-rates`
    recorded it (data/claims/error_rates.json): said on the first screen, where a DBA reads the verdict."""
    rates = claim_registry.error_rates()
    out = []
    for v in verdicts:
        key = (v.registered.get("study"), v.registered.get("id"), str(v.verdict))
        for r in rates:
            if (r.study, r.claim, r.verdict) == key and credibly_above(r.wrong, r.experiments, alpha):
                out.append(f"{v.id}: {r.warning()}")
    return out


def conclusions(
    result: StudyResult, verdicts: Sequence[ClaimVerdict], notes: Sequence[str] = (), scope: Sequence[str] = ()
) -> pd.DataFrame:
    """The summary first: per claim one sentence with its verdict chip (how it is read in a collapsible
    detail) and its verdict over the reports of its series, this one included; one picture of every claim against
    its thresholds; written to verdicts.json for the index. `scope`: what the run's scale left out, said under
    the tally, where a reader takes the verdicts in; `notes`, what they rest on, after the picture."""
    if not result.recorded:  # a finished report read back is never written into
        write_verdicts(result.params.results_dir(), result.study, verdicts, [*scope, *notes])
    series = standing.lines(result.params.results_dir().parent, result.study)
    dicts = standing.attach([v.as_dict() for v in verdicts], series)
    counts = summary.tally(dicts)
    if counts:
        note = summary.counted_as(dicts)
        say(f"**{counts}.**" + (f" ({note}.)" if note else ""))
    for warning in error_rate_warnings(verdicts):
        say(f"**{warning}**")
    for line in scope:
        say(line)
    display(HTML(summary.claims_html(dicts)))
    fig = summary.figure(dicts)
    if fig is not None:
        show(
            fig,
            "This report's own intervals (the ones its own verdict, one look, reads) against the regions each "
            "claim's reading drew before the data: green reproduces, red refutes, grey decides nothing. An interval "
            "decides only when it lies wholly in one colour; a claim's standing verdict reads its series' interval "
            "(the line above).",
            alt="Every claim's measured intervals against its thresholds",
        )
    alphas = {round(part.alpha, 5) for part in result}
    display(
        HTML(
            "<details><summary>How the verdicts are reached</summary><p>"
            "<i>Reproduced</i>: the intervals lie where the claim's reading (fixed before the data, in "
            "<code>data/claims/registry.yaml</code> with the original's words) says; <i>not reproduced</i>: wholly "
            "on the wrong side; <i>inconclusive</i>: the data cannot decide (the detail says how many rounds would); "
            "<i>not testable here</i>: a precondition of the claim's mechanism (registered beside the reading, read "
            "from the environment and the baseline arm alone) fails where it was measured, so the data can neither "
            "reproduce nor refute it: the detail says which, with its value, what was measured instead, and where "
            "the claim can be tested. "
            "Every n counts runs (or rounds of interleaved runs), never the queries or connections inside them. "
            "Each claim's intervals spend its own "
            + ", ".join(f"alpha = {a:g}" for a in sorted(alphas))
            + " (the sequential design's last look; see <i>Design</i>), widened further where a claim rests on "
            "several comparisons: the error rate holds per claim, not across a study's claims. "
            "<i>Standing verdict</i>: where two reports or more of its series (one scale, target, server build, "
            "machine speed class and measurement revision) tested a claim, its line leads with their verdict "
            "together: a confidence sequence over the reports' estimates, whose chance of ever showing a wrong "
            f"verdict stays within alpha = {ALPHA:g} however many reports the series holds and however often it "
            "is read; this report's own verdict beside it is one look, which on a claim near its line shows a "
            "decided verdict on some night far more often. A report whose precondition failed leaves the pool, "
            "not the series.</p></details>"
        )
    )
    for n in notes:
        say(n)
    return tables.verdict_table(verdicts)


def across_builds(verdicts: Sequence[ClaimVerdict]) -> None:
    """The same claim on every server build it ran on: the verdicts of record beside the builds run with them."""
    table = tables.across_builds(verdicts)
    if len(table) > 1:  # more than one part
        show(
            table,
            caption="Each part as it ran, its server build named, and the study's claims on it: the parts named after "
            "an engine alone hold the verdicts of record (the original's build, or the nearest here, said so); "
            "'<engine> on <build>' runs the same claims beside them, counted apart. Each cell is the verdict and "
            "the interval it read.",
        )


def _rel(path: Path) -> str:
    try:
        return os.path.relpath(path, Path.cwd())
    except ValueError:
        return str(path)


def runs(result: StudyResult) -> None:
    """Every part's runs in a table: the median of each primary metric with its 95 % interval, per arm and cell
    (the factors its plan varied), and how many runs it rests on; for a study without tables of its own."""
    for part in result:
        factors = list((part.metadata().get("plan") or {}).get("factors") or {})
        table = tables.summarize_runs(part.runs(), result.primary_metrics, by=["arm", *factors])
        show(table, caption=f"{part.label}: medians per run and their 95 % intervals, per arm and cell.")


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
        metrics = [*result.primary_metrics, *result.params.AA_METRICS]
        show(
            tables.aa_table(result.parts, metrics, result.params.look_schedule(), by=result.params.AA_CELLS),
            caption="A/A: the baseline against an identical copy of itself. The noise floor is the 95th percentile "
            "of |ratio - 1| an experiment of this plan would report with no real difference; the false-positive "
            "rate is that of the sequential looks; the minimum detectable effect has 80 % power.",
        )
    _feasibility(result)
    show(
        tables.design_table(result.parts),
        caption="Rounds ran until every claim was decided or the budget ended; "
        "intervals spend the alpha of the look the data ended at.",
    )
    rows = [row for part in result for row in _noise_of(part)]
    if rows:
        show(
            pd.DataFrame(rows),
            caption="Median noise per run: host steal (share of CPU time), CPU pressure "
            "(PSI, share of time a task waited), cores busy outside the experiment; the vCPU's slowdown: a fixed "
            "loop's median before each round, over its fastest since the machine booted (speed reference), where "
            f"nothing else of this machine ran meanwhile (at {calibration.SLOW_STATE}x or more the host ran the vCPU "
            "in its slow state).",
        )


def _feasibility(result: StudyResult) -> None:
    plan = result.params.feasibility()
    if not plan:
        return
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


def _noise_of(part: Any) -> list[dict[str, Any]]:
    """A part's runs flagged as noisy and duets that strayed, said and shown folded; its median noise as a row."""
    runs = part.runs()
    flagged = tables.noise_table(runs)
    if len(flagged):
        say(
            f"**{part.label}**: {len(flagged)} run(s) flagged as "
            "noisy (kept; a single run is taken again where the budget allows, a duet is not: its ratio "
            "cancels what hit both of its runs):"
        )
        show_folded(flagged, f"{part.label}: the flagged runs")
    strays = tables.outlier_table(part.metadata())
    if len(strays):
        fell = strays["arm that went the bad way"].value_counts()
        say(
            f"**{part.label}**: {len(strays)} duet(s) strayed far from their cell's other duets (a one-off such "
            "as a two-second stall). They stay in the statistics that decide; the conclusions show beside each "
            "verdict what it would be without them (a sensitivity check, not the verdict). The arm that went "
            "the bad way (its TPS fell, its CPU per operation rose): "
            + ", ".join(f"{arm} {n}x" for arm, n in fell.items())
            + " (mostly one arm would be that arm's cost, not noise: each claim's detail tests the split)."
        )
        show_folded(strays, f"{part.label}: the duets that strayed")
    summary = tables.noise_summary(runs, part.metadata())
    slow = summary.get(tables.SLOWDOWN, 0)
    if slow >= calibration.SLOW_STATE:
        say(
            f"**{part.label}**: the host ran this machine's vCPU in its slow state: a fixed loop took {slow:.2f}x "
            "its fastest before its rounds, with nothing else of this machine running "
            f"({summary[tables.SLOW_CHECKS]} such checks in the slow state; steal time does not show it). CPU per "
            "operation reads high by up to that much in every arm; a ratio between arms of one round less, since "
            "both ran slow."
        )
    return [{"experiment": part.name, **{k.replace("noise_", ""): v for k, v in summary.items()}}] if summary else []


def machine_speed(result: StudyResult) -> None:
    cal = result.first.extras.get("calibration") or result.first.metadata().get("calibration", {})
    if not cal:
        return
    rows = [
        {"operation": label, "this machine": cal.get(key), "unit": calibration.unit_of(key)}
        for key, label in calibration.UNITS.items()
        if key in cal
    ]
    rows += [
        {"operation": "fixed Python loop (1e6 iterations)", "this machine": cal.get("python_loop_ms"), "unit": "ms"}
    ]
    if cal.get("python_loop_median_ms"):  # the fastest is the machine's speed; the median, how often it ran slower
        rows += [
            {
                "operation": "fixed Python loop, median over the calibration's bursts",
                "this machine": cal["python_loop_median_ms"],
                "unit": "ms",
            }
        ]
    boot = cal.get("python_loop_boot_fastest_ms")
    if isinstance(boot, int | float) and boot < cal.get("python_loop_ms", 0):  # what the speed checks read against
        rows += [{"operation": "fixed Python loop, fastest since boot", "this machine": boot, "unit": "ms"}]
    show(
        pd.DataFrame(rows),
        caption="Speed reference taken with this run (system OpenSSL): "
        "absolute costs from two machines compare only through it. The loop's median at "
        f"{calibration.SLOW_STATE}x its fastest or more: the host ran the vCPU in its slow state as it was taken.",
    )


def profiles(result: StudyResult, bounds: Sequence[Any] = (), *, diff_against: str | None = None) -> None:
    """Where the cost goes (reporting/profiles.py)."""
    profile_section(result, bounds, diff_against=diff_against)
