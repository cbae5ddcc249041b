"""Standing verdicts, from report directories as the pipeline writes them: a claim's reports of one series judged
together however many there are, a report that could not test it left out of the pool (not blanking it), reports
without estimates counted and left out, scales and revisions apart, the headline leading with it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from secoverhead.analysis.pooling import ALPHA, RunEstimate, sequence
from secoverhead.reporting import summary
from secoverhead.series import reports as series
from secoverhead.series import standing
from secoverhead.suite import standing as index_standing
from tests.records import run_json

BUILD = "10.11.19-MariaDB"


def _run(
    root: Path,
    k: int,
    ratio: float | None,
    scale: str = "quick",
    verdict: str = "inconclusive",
    status: str = "ok",
    revision: int | None = None,
    se: float = 0.03,
) -> str:
    name = f"20261101T{k:02d}0000Z-vm-{scale}" if k < 24 else f"20261102T{k - 24:02d}0000Z-vm-{scale}"
    d = root / "audit" / name
    (d / "results").mkdir(parents=True)
    started = f"2026-11-0{1 + k // 24}T{k % 24:02d}:00:00Z"
    env = {"tools": {"mariadbd": BUILD}} if status == "ok" else None  # recorded as a report ends
    (d / "run.json").write_text(run_json({"study": "audit", "started": started, "status": status,
                                            "params_name": scale, "environment": env}))  # fmt: skip
    (d / "calibration.json").write_text(json.dumps({"rsa2048_sign_us": 800}))
    judged = {"intervals": [[0.9, 1.03]], "cells": [], "quantity": "ratio"}
    if ratio is not None:
        judged["estimates"] = [[math.log(ratio), se]]
    v = {"id": "MariaDB:server_audit-small", "claim": "server_audit costs little", "verdict": verdict,
         "ratio": 0.96, "ci_low": 0.9, "ci_high": 1.03,
         "registered": {"study": "audit", "id": "server_audit-small", "metric": "tps"}, "judged": [judged]}  # fmt: skip
    if verdict == "not testable here":
        v["preconditions"] = [{"condition": "load_threads", "holds": True}, {"condition": "cpu", "holds": False}]
    if revision is not None:  # recorded since 2026-11-29; a report from before has none (revision 1)
        v["registered"]["revision"] = revision
    (d / "results" / "verdicts.json").write_text(json.dumps({"verdicts": [v]}))
    return name


SIX = (0.955, 0.965, 0.96, 0.958, 0.962, 0.96)


def _shown(ratios: tuple[float, ...]) -> str:
    """The confidence sequence of these reports at alpha, as the reading shows a ratio."""
    p = sequence([RunEstimate(math.log(r), 0.03) for r in ratios], 1 - ALPHA)
    return f"{math.exp(p.estimate):.3g}× [{math.exp(p.low):.3g}×, {math.exp(p.high):.3g}×]"


def _table(root: Path):
    return standing.table(root, "audit", series.collect(root, "audit")).set_index("scale")


def test_six_reports_no_one_of_which_decides_stand_as_one_verdict_beside_the_newest_reports_own(tmp_path):
    for k, r in enumerate(SIX):
        _run(tmp_path, k, r)
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == 6 and row["series"] == "open" and row["since"] == "2026-11-01"
    assert row["standing verdict"] == "reproduced" and row["newest report's verdict"] == "inconclusive"
    assert row["standing"] == _shown(SIX) and row["tested"] == "6 of 6"  # shown as the reading shows its numbers
    assert "Standing verdicts" in index_standing.section(tmp_path, "audit", series.collect(tmp_path, "audit"))


def test_a_series_never_closes_its_verdict_judged_on_every_report_it_holds(tmp_path):
    """No block of ten: the twelfth report is judged with the eleven before it, the interval narrower than at six."""
    for k in range(12):
        _run(tmp_path, k, SIX[k % 6])
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == 12 and row["standing verdict"] == "reproduced"
    assert row["standing"] != _shown(SIX)


def test_a_report_that_could_not_test_the_claim_leaves_the_pool_not_the_series(tmp_path):
    for k, r in enumerate(SIX):
        _run(tmp_path, k, r)
    _run(tmp_path, 6, 0.96, verdict="not testable here")  # one busy night
    row = _table(tmp_path).loc["quick"]
    assert row["standing verdict"] == "reproduced" and row["reports pooled"] == 6 and row["tested"] == "6 of 7"
    assert row["newest report's verdict"] == "not testable here"


def test_an_undecided_standing_verdict_says_how_many_more_reports_the_rule_would_need(tmp_path):
    for k, r in enumerate((0.90, 0.95, 0.98)):
        _run(tmp_path, k, r)
    row = _table(tmp_path).loc["quick"]
    assert row["standing verdict"] == "inconclusive" and row["reports to decide"].startswith("about ")
    for k, r in enumerate((0.90, 0.95), start=3):  # on the band's lower edge: no number of reports decides it
        _run(tmp_path, k, r)
    assert _table(tmp_path).loc["quick", "standing verdict"] == "inconclusive"


def test_reports_without_estimates_are_counted_and_left_out_and_scales_stand_apart(tmp_path):
    _run(tmp_path, 0, None)
    for k in (1, 2, 3):
        _run(tmp_path, k, 0.96)
    for k in (4, 5):
        _run(tmp_path, k, 0.80, scale="smoke")
    t = _table(tmp_path)
    assert t.loc["quick", "reports pooled"] == 3 and t.loc["quick", "reports without estimates"] == 1
    assert t.loc["smoke", "reports pooled"] == 2


def test_one_report_or_one_that_tested_the_claim_has_no_standing_verdict_yet(tmp_path):
    _run(tmp_path, 0, 0.96)
    assert _table(tmp_path).loc["quick", "standing verdict"] == "not yet"
    assert _table(tmp_path).loc["quick", "why not pooled"].startswith("1 report of its series tested it")
    assert index_standing.section(tmp_path, "audit", series.collect(tmp_path, "audit")) == ""
    _run(tmp_path, 1, 0.96, verdict="not testable here")
    row = _table(tmp_path).loc["quick"]
    assert row["standing verdict"] == "not yet" and row["tested"] == "1 of 2"  # one could test it, one could not


def test_a_series_no_report_of_which_could_test_the_claim_says_so_as_its_verdict_in_the_index(tmp_path):
    _run(tmp_path, 0, 0.96, verdict="not testable here")
    assert _table(tmp_path).loc["quick", "standing verdict"] == "not yet"  # one report is not a series yet
    _run(tmp_path, 1, 0.97, verdict="not testable here")
    row = _table(tmp_path).loc["quick"]
    assert row["standing verdict"] == "not testable here" and row["tested"] == "0 of 2", row
    assert row["standing"] == "in every report, precondition cpu not met", row
    section = index_standing.section(tmp_path, "audit", series.collect(tmp_path, "audit"))
    assert "in every report, precondition cpu not met" in section


def test_load_gives_the_standing_verdicts_and_each_reports_standing_at_it(tmp_path):
    from secoverhead.suite.load import load

    for k, r in enumerate(SIX):
        _run(tmp_path, k, r)
    r = load("audit", reports=tmp_path)
    got = r.standing()
    assert list(got["study"]) == ["audit"] and int(got["reports pooled"].iloc[0]) == 6
    assert pd.isna(r.verdicts["standing"].iloc[0])  # the first report: its series stood on nothing yet
    assert r.verdicts["standing"].iloc[-1] == "reproduced" and r.verdicts["standing_reports"].iloc[-1] == 6
    assert r.verdicts["verdict"].iloc[-1] == "inconclusive"  # the night's own beside it


def _lines(root: Path, name: str, monkeypatch) -> dict[str, str]:
    monkeypatch.setattr(series.environment, "tool_version", lambda tool: BUILD)  # this machine's build, now
    return {k: line.text for k, line in standing.lines(root / "audit" / name, "audit").items()}


def test_a_report_being_written_leads_with_its_standing_verdict_and_shows_its_own_as_one_look(tmp_path, monkeypatch):
    for k, r in enumerate((0.955, 0.965, 0.96, 0.958, 0.962)):
        _run(tmp_path, k, r)
    me = _run(tmp_path, 5, 0.96, status="running")  # its run.json says running until it ends
    line = _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"]
    assert line == f"standing over 6 reports since 2026-11-01: reproduced, {_shown(SIX)}"
    monkeypatch.chdir(tmp_path / "audit" / me)  # as the kernel runs: in the report, its results dir relative
    mine = standing.lines(Path("results").parent, "audit")["MariaDB:server_audit-small"]
    assert mine.text == line and mine.stands and mine.verdict == "reproduced"
    verdict = json.loads((tmp_path / "audit" / me / "results" / "verdicts.json").read_text())["verdicts"][0]
    (shown,) = standing.attach([verdict], {"MariaDB:server_audit-small": mine})
    assert summary.headline(shown) == "reproduced" and summary.tally([shown]).endswith("1 reproduced")
    html = summary.claims_html([shown])
    assert "this report alone (one look): inconclusive" in html and line in html
    assert summary.counted_as([shown]).startswith("1 of 1 counted by their standing verdict")
    _run(tmp_path, 6, 0.96, scale="smoke", status="running")  # another scale is another series
    assert (
        "first report of its series"
        in _lines(tmp_path, "20261101T060000Z-vm-smoke", monkeypatch)["MariaDB:server_audit-small"]
    )


def test_a_report_read_back_shows_the_series_as_it_stood_at_it_and_an_interactive_run_has_no_line(
    tmp_path, monkeypatch
):
    names = [_run(tmp_path, k, r) for k, r in enumerate(SIX)]
    assert _lines(tmp_path, names[2], monkeypatch)["MariaDB:server_audit-small"].startswith(
        "standing over 3 reports since 2026-11-01"
    )
    assert standing.lines(tmp_path / "interactive", "audit") == {}
    me = _run(tmp_path, 6, 0.96, verdict="not testable here", status="running")
    line = _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"]
    assert line.startswith("standing over 6 reports since 2026-11-01 (6 of 7 tested it): reproduced"), line


def test_a_series_without_estimates_or_whose_readings_do_not_pool_says_why(tmp_path, monkeypatch):
    _run(tmp_path, 0, None)
    me = _run(tmp_path, 1, 0.96, status="running")
    assert _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"].startswith("no standing verdict yet")
    for k in range(2, 5):
        name = _run(tmp_path, k, 0.96, status="ok" if k < 4 else "running")
        path = tmp_path / "audit" / name / "results" / "verdicts.json"
        doc = json.loads(path.read_text())
        doc["verdicts"][0]["judged"][0]["estimates"] = [None]  # as a share won back recorded none before 11-28
        path.write_text(json.dumps(doc))
    line = _lines(tmp_path, name, monkeypatch)["MariaDB:server_audit-small"]
    assert line.startswith("no standing verdict yet: its reports recorded no estimate to pool"), line


def test_a_claim_measured_otherwise_since_a_fix_starts_a_series_and_the_old_one_shows_superseded(tmp_path, monkeypatch):
    """Reports of an older measurement revision are never pooled with the new one's: the claim's series starts
    again, its old one shown as superseded, and a report being written stands with its own revision only."""
    before = [_run(tmp_path, k, r) for k, r in enumerate(SIX)]  # before the fix: no revision recorded
    monkeypatch.setattr(series.claim_registry, "revision", lambda study, claim_id: 2)  # the fix raised it
    for k, r in enumerate((0.80, 0.81), start=6):
        _run(tmp_path, k, r, revision=2)
    rows = standing.table(tmp_path, "audit", series.collect(tmp_path, "audit")).set_index("revision")
    assert rows.loc[1, "reports pooled"] == 6 and rows.loc[1, "series"].startswith("superseded: revision 1")
    assert rows.loc[2, "reports pooled"] == 2 and rows.loc[2, "series"] == "open"
    me = _run(tmp_path, 8, 0.80, status="running", revision=2)
    assert _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"].startswith(
        "standing over 3 reports since 2026-11-01: "
    )
    old, new = (tmp_path / "audit" / name for name in (before[0], me))
    assert series.stale_metrics(old) == {"tps"} and series.stale_metrics(new) == set()  # what compare leaves out


def test_two_reports_stand_unbounded_and_the_first_bounded_count_is_the_sequences_own(tmp_path):
    """Two reports give their spread one difference: the sequence is unbounded and says so, in words, from how
    many it is bounded (the constant the page prints is the statistic's, not a number typed twice)."""
    from secoverhead.analysis.stats import sequence_half

    assert math.isinf(sequence_half(1.0, standing.FIRST_BOUNDED - 1, 1 - ALPHA))
    assert math.isfinite(sequence_half(1.0, standing.FIRST_BOUNDED, 1 - ALPHA))
    for k, r in enumerate((0.95, 0.97)):
        _run(tmp_path, k, r)
    row = _table(tmp_path).loc["quick"]
    assert row["standing verdict"] == "inconclusive" and row["standing"].endswith("[not bounded before 3 reports]")
