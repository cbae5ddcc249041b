"""The answer the CLI prints under a finished run's status line, from what the run recorded."""

from __future__ import annotations

import json

from secoverhead.app import answer


def test_a_study_prints_its_verdicts_counted_and_the_calculator_its_sentences(tmp_path):
    study = tmp_path / "study" / "results"
    study.mkdir(parents=True)
    verdicts = [
        {"verdict": "reproduced", "source": "published"},
        {"verdict": "inconclusive", "source": "published"},
        {"verdict": "reproduced", "source": "suite"},
    ]
    (study / "verdicts.json").write_text(json.dumps({"verdicts": verdicts}))
    assert answer.lines(study.parent) == [
        "  published claims: 1 reproduced, 1 inconclusive; the suite's own: 1 reproduced"
    ]
    cost = tmp_path / "cost" / "results"
    cost.mkdir(parents=True)
    sentence = "Turning on TLS costs 1.1–1.4 cores " + "and more words " * 10 + "."
    (cost / "cost.json").write_text(json.dumps({"headline": [sentence, "In all, 1.1–1.4 cores."]}))
    out = answer.lines(cost.parent)
    assert all(len(line) <= answer.WIDTH for line in out) and out[0].startswith("  Turning on TLS")
    assert out[-1] == "  In all, 1.1–1.4 cores." and " ".join(x.strip() for x in out[:-1]) == sentence


def test_a_run_that_recorded_nothing_prints_nothing(tmp_path):
    assert answer.lines(tmp_path) == []
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "verdicts.json").write_text("{not json")
    assert answer.lines(tmp_path) == []


def test_a_report_of_a_series_is_counted_by_its_standing_verdict_and_says_so(tmp_path, monkeypatch):
    """The terminal counts as the report's first screen does: six reports of one series stand reproduced where the
    newest alone is inconclusive, and the line says what it counted by."""
    from secoverhead.series import reports
    from tests.unit.test_standing import BUILD, SIX, _run

    monkeypatch.setattr(reports.environment, "tool_version", lambda tool: BUILD)
    names = [_run(tmp_path, k, r) for k, r in enumerate(SIX)]
    out = answer.lines(tmp_path / "audit" / names[-1])
    assert out[0] == "  published claims: 1 reproduced", out
    assert out[1].startswith("  (1 of 1 counted by their standing verdict"), out
    first = answer.lines(tmp_path / "audit" / names[0])  # its series had nothing to stand on yet
    assert first == ["  published claims: 1 inconclusive"], first
