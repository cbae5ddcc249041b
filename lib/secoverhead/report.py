"""The sections every study's report has, so a notebook stays a narrative of a few calls: conclusions (and
verdicts.json for the index), parameters and links to the data, the environment with the engine differences,
the design (looks, alpha, why it stopped, noise), and the machine's speed."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from IPython.display import Markdown, display

from . import calibration, tables
from .studies.base import StudyResult
from .verdicts import ClaimVerdict, write_verdicts


def say(text: str) -> None:
    display(Markdown(text))


def show(df: pd.DataFrame, precision: int = 3, caption: str = "") -> None:
    if df is None or not len(df):
        return
    display(tables.show(df, precision=precision))
    if caption:
        say(f"*{caption}*")


def figures(items: Sequence[tuple[Any, str]]) -> None:
    from . import plots

    for fig, caption in items:
        plots.show(fig, caption)


def conclusions(result: StudyResult, verdicts: Sequence[ClaimVerdict], notes: Sequence[str] = ()) -> pd.DataFrame:
    """The verdict table, written beside the results for the index and for history."""
    write_verdicts(result.params.results_dir(), result.study, verdicts, notes)
    table = tables.verdict_table(verdicts)
    show(table)
    alphas = {round(part.alpha, 5) for part in result}
    say(
        "*Reproduced*: the whole confidence interval lies where the claim says; *not reproduced*: it lies wholly on "
        "the wrong side; *inconclusive*: the data cannot decide. Every n counts runs (or rounds of interleaved "
        "runs), never the queries or connections inside them. Intervals spend "
        + ", ".join(f"alpha = {a:g}" for a in sorted(alphas))
        + " (the sequential design's last look; see *Design*), "
        "widened further where a claim rests on several comparisons."
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
    """The sequential design as it ran, and the noise the machine showed during the runs."""
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
                "noisy (kept, and taken again where the budget allowed):"
            )
            show(flagged)
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
