"""Verdicts over runs in the index, from report directories as the pipeline writes them: a claim's runs of one
series pooled, a series closing at LOOKS runs, runs without estimates counted and left out, scales apart."""

from __future__ import annotations

import json
import math
from pathlib import Path

from secoverhead.analysis.pooling import ALPHA, LOOKS, RunEstimate, look_confidence, pool
from secoverhead.reporting import over_reports, series
from secoverhead.suite import pooled
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
    """The pooled interval of these reports (own se 0.03 each) at a look's level, as the reading shows a ratio."""
    p = pool([RunEstimate(math.log(r), 0.03) for r in ratios], look_confidence(ALPHA))
    return f"{math.exp(p.estimate):.3g}× [{math.exp(p.low):.3g}×, {math.exp(p.high):.3g}×]"


def _table(root: Path):
    return over_reports.pooled(root, "audit", series.collect(root, "audit")).set_index("scale")


def test_six_runs_no_one_of_which_decides_pool_into_a_verdict_beside_the_newest_runs_own(tmp_path):
    for k, r in enumerate(SIX):
        _run(tmp_path, k, r)
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == 6 and row["series"] == "open" and row["since"] == "2026-11-01"
    assert row["pooled verdict"] == "reproduced" and row["newest report's verdict"] == "inconclusive"
    assert row["pooled"] == _shown(SIX)  # shown as the reading shows its numbers
    assert "Verdicts over reports" in pooled.section(tmp_path, "audit", series.collect(tmp_path, "audit"))


def test_a_series_closes_at_its_looks_and_its_decided_verdict_stands_until_the_next_decides(tmp_path):
    """Two reports pool on Hartung-Knapp's t(1): an interval a hundred times wider than ten reports' would replace a
    decided verdict with 'inconclusive' the day after a series closes."""
    for k in range(LOOKS + 1):
        _run(tmp_path, k, 0.96)
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == LOOKS and row["series"] == "closed (the next: 1 report, not pooled)"
    _run(tmp_path, LOOKS + 1, 0.96)
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == LOOKS and row["pooled verdict"] == "reproduced", row
    assert row["series"] == "closed (the next: 2 reports, inconclusive)", row
    _run(tmp_path, LOOKS + 2, 0.96)
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == LOOKS and row["series"] == "closed (the next: 3 reports, inconclusive)", row
    for k in range(LOOKS + 3, LOOKS + 6):
        _run(tmp_path, k, 0.96)
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == 6 and row["series"] == "open" and row["pooled verdict"] == "reproduced", row


def test_an_undecided_closed_series_gives_way_to_the_next_from_two_runs(tmp_path):
    for k in range(LOOKS):
        _run(tmp_path, k, 0.96, se=0.3)  # too noisy for ten reports to decide
    _run(tmp_path, LOOKS, 0.96)
    assert _table(tmp_path).loc["quick", "reports pooled"] == LOOKS  # one report is no series yet
    _run(tmp_path, LOOKS + 1, 0.96)
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == 2 and row["series"] == "open", row


def test_a_new_series_that_decides_from_two_runs_is_shown_at_once(tmp_path):
    for k in range(LOOKS):
        _run(tmp_path, k, 0.96)
    for k in (LOOKS, LOOKS + 1):
        _run(tmp_path, k, 0.5, se=0.001)  # a change no t(1) hides: the new series says so at two
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == 2 and row["series"] == "open" and row["pooled verdict"] == "not reproduced"


def test_a_new_series_that_could_not_test_its_claim_in_two_runs_is_shown_at_once(tmp_path):
    for k in range(LOOKS):
        _run(tmp_path, k, 0.96)
    for k in (LOOKS, LOOKS + 1):
        _run(tmp_path, k, 0.96, verdict="not testable here")  # the machine can no longer test it
    row = _table(tmp_path).loc["quick"]
    assert row["reports pooled"] == 2 and row["pooled verdict"] == "not testable here", row


def test_runs_without_estimates_are_counted_and_left_out_and_scales_pool_apart(tmp_path):
    _run(tmp_path, 0, None)
    for k in (1, 2, 3):
        _run(tmp_path, k, 0.96)
    for k in (4, 5):
        _run(tmp_path, k, 0.80, scale="smoke")
    t = _table(tmp_path)
    assert t.loc["quick", "reports pooled"] == 3 and t.loc["quick", "reports without estimates"] == 1
    assert t.loc["smoke", "reports pooled"] == 2


def test_one_run_or_a_claim_not_testable_pools_nothing(tmp_path):
    _run(tmp_path, 0, 0.96)
    assert _table(tmp_path).loc["quick", "pooled verdict"] == "not pooled"
    assert _table(tmp_path).loc["quick", "why not pooled"].startswith("1 report of its series")  # a reader is told
    assert pooled.section(tmp_path, "audit", series.collect(tmp_path, "audit")) == ""
    _run(tmp_path, 1, 0.96, verdict="not testable here")
    assert _table(tmp_path).loc["quick", "pooled verdict"] == "not pooled"  # one could test it, one could not


def test_a_series_no_report_of_which_could_test_the_claim_says_so_as_its_verdict_in_the_index(tmp_path):
    _run(tmp_path, 0, 0.96, verdict="not testable here")
    assert _table(tmp_path).loc["quick", "pooled verdict"] == "not pooled"  # one report is not a series yet
    _run(tmp_path, 1, 0.97, verdict="not testable here")
    row = _table(tmp_path).loc["quick"]
    assert row["pooled verdict"] == "not testable here" and row["reports pooled"] == 2, row
    assert row["pooled"] == "in every report, precondition cpu not met" and row["since"] == "2026-11-01", row
    section = pooled.section(tmp_path, "audit", series.collect(tmp_path, "audit"))
    assert "in every report, precondition cpu not met" in section


def test_load_gives_the_pooled_verdicts_of_the_studies_it_read(tmp_path):
    from secoverhead.suite.load import load

    for k, r in enumerate((0.955, 0.965, 0.96, 0.958, 0.962, 0.96)):
        _run(tmp_path, k, r)
    got = load("audit", reports=tmp_path).pooled()
    assert list(got["study"]) == ["audit"] and int(got["reports pooled"].iloc[0]) == 6
    one = sorted((tmp_path / "audit").glob("2*"))[0]
    assert load(one).pooled()["pooled verdict"].iloc[0] == "reproduced"  # one report: its series beside it


def _lines(root: Path, name: str, monkeypatch) -> dict[str, str]:
    monkeypatch.setattr(series.environment, "tool_version", lambda tool: BUILD)  # this machine's build, now
    return {k: line.text for k, line in over_reports.lines(root / "audit" / name, "audit").items()}


def test_a_report_being_written_reads_its_claims_pooled_with_the_reports_before_it(tmp_path, monkeypatch):
    for k, r in enumerate((0.955, 0.965, 0.96, 0.958, 0.962)):
        _run(tmp_path, k, r)
    me = _run(tmp_path, 5, 0.96, status="running")  # its run.json says running until it ends
    line = _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"]
    assert line == f"over 6 reports of its series since 2026-11-01: reproduced, {_shown(SIX)}"
    monkeypatch.chdir(tmp_path / "audit" / me)  # as the kernel runs: in the report, its results dir relative
    beside = over_reports.lines(Path("results").parent, "audit")["MariaDB:server_audit-small"]
    assert beside.text == line and beside.beside  # decided: it stands beside the claim
    _run(tmp_path, 6, 0.96, scale="smoke", status="running")  # another scale is another series
    assert (
        "first report of its series"
        in _lines(tmp_path, "20261101T060000Z-vm-smoke", monkeypatch)["MariaDB:server_audit-small"]
    )


def test_a_report_after_a_closed_series_opens_the_next_and_an_interactive_run_has_no_line(tmp_path, monkeypatch):
    for k in range(LOOKS):
        _run(tmp_path, k, 0.96)
    me = _run(tmp_path, LOOKS, 0.96, status="running")
    assert _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"].startswith(
        f"the first report of a new series; the last ({LOOKS} reports since 2026-11-01) closed reproduced"
    )
    assert over_reports.lines(tmp_path / "interactive", "audit") == {}
    (tmp_path / "audit" / me / "run.json").write_text(
        (tmp_path / "audit" / me / "run.json").read_text().replace('"running"', '"ok"')
        .replace("null", json.dumps({"tools": {"mariadbd": BUILD}}))
    )  # fmt: skip
    second = _run(tmp_path, LOOKS + 1, 0.96, status="running")
    assert _lines(tmp_path, second, monkeypatch)["MariaDB:server_audit-small"].startswith(
        f"a new series (2 reports, inconclusive so far); the last ({LOOKS} reports since 2026-11-01) closed reproduced"
    )
    (tmp_path / "audit" / second).rename(tmp_path / "second")  # as if it had not run
    _run(tmp_path, LOOKS + 1, 0.96, verdict="not testable here", status="running")
    later = _lines(tmp_path, "20261101T110000Z-vm-quick", monkeypatch)
    assert later["MariaDB:server_audit-small"].startswith("not pooled: this report could not test it")


def test_a_series_with_a_report_that_could_not_test_the_claim_or_without_estimates_says_why_it_is_not_pooled(
    tmp_path, monkeypatch
):
    _run(tmp_path, 0, None)
    me = _run(tmp_path, 1, 0.96, status="running")
    assert _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"].endswith("recorded no estimates")
    (tmp_path / "audit" / me / "run.json").write_text(
        (tmp_path / "audit" / me / "run.json").read_text().replace('"running"', '"ok"')
        .replace("null", json.dumps({"tools": {"mariadbd": BUILD}}))
    )  # fmt: skip
    _run(tmp_path, 2, 0.96, verdict="not testable here")
    me = _run(tmp_path, 3, 0.96, status="running")
    assert "could not test it" in _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"]


def test_a_reading_the_engine_does_not_pool_says_so_not_that_a_precondition_failed(tmp_path, monkeypatch):
    for k in range(3):
        name = _run(tmp_path, k, 0.96, status="ok" if k < 2 else "running")
        path = tmp_path / "audit" / name / "results" / "verdicts.json"
        doc = json.loads(path.read_text())
        doc["verdicts"][0]["judged"][0]["estimates"] = [None]  # as a share won back recorded none before 11-28
        path.write_text(json.dumps(doc))
    line = _lines(tmp_path, name, monkeypatch)["MariaDB:server_audit-small"]
    assert line.startswith("not pooled: its reports recorded no estimate to pool")


def test_a_claim_measured_otherwise_since_a_fix_starts_a_series_and_the_old_one_shows_superseded(tmp_path, monkeypatch):
    """Reports of an older measurement revision are never pooled with the new one's: the claim's series starts
    again, its old one shown as superseded, and a report being written pools with its own revision only."""
    before = [_run(tmp_path, k, r) for k, r in enumerate(SIX)]  # before the fix: no revision recorded
    monkeypatch.setattr(series.claim_registry, "revision", lambda study, claim_id: 2)  # the fix raised it
    for k, r in enumerate((0.80, 0.81), start=6):
        _run(tmp_path, k, r, revision=2)
    rows = over_reports.pooled(tmp_path, "audit", series.collect(tmp_path, "audit")).set_index("revision")
    assert rows.loc[1, "reports pooled"] == 6 and rows.loc[1, "series"].startswith("superseded: revision 1")
    assert rows.loc[2, "reports pooled"] == 2 and rows.loc[2, "series"] == "open"
    me = _run(tmp_path, 8, 0.80, status="running", revision=2)
    assert _lines(tmp_path, me, monkeypatch)["MariaDB:server_audit-small"].startswith(
        "over 3 reports of its series since 2026-11-01: "
    )
    old, new = (tmp_path / "audit" / name for name in (before[0], me))
    assert series.stale_metrics(old) == {"tps"} and series.stale_metrics(new) == set()  # what compare leaves out
