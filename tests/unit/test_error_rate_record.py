"""The error rates `make error-rates` records (data/claims/error_rates.json), read and checked like the registry,
and the warning a report gives beside a verdict whose rule errs credibly above alpha."""

from __future__ import annotations

import json

import pytest

from secoverhead.analysis import claim_registry
from secoverhead.analysis.claim_registry import ErrorRate
from secoverhead.analysis.verdicts import ClaimVerdict, Verdict
from secoverhead.core import paths
from secoverhead.core.errors import ConfigError
from secoverhead.reporting import report

RECORD = {
    "study": "tde",
    "claim": "high-concurrency-loss",
    "scenario": "many threads, stalls",
    "verdict": "reproduced",
    "wrong": 33,
    "experiments": 200,
    "commit": "0123456789abcdef",
    "recorded": "2026-12-01T00:00:00+00:00",
}


def _file(tmp_path, monkeypatch, rates) -> None:
    path = tmp_path / "error_rates.json"
    path.write_text(json.dumps({"rates": rates}))
    monkeypatch.setattr(paths, "ERROR_RATES", path)


def test_recorded_rates_are_read_and_a_broken_entry_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "ERROR_RATES", tmp_path / "none.json")
    assert claim_registry.error_rates() == []  # none recorded
    _file(tmp_path, monkeypatch, [RECORD])
    (rate,) = claim_registry.error_rates()
    assert rate.rate == pytest.approx(0.165) and "33 times (16.5%" in rate.warning() and "0123456789" in rate.warning()
    for broken, says in (
        ({"study": "tde"}, "not an error-rate record"),
        (RECORD | {"wrong": 201}, "201 wrong of 200"),
        (RECORD | {"experiments": True}, "33 wrong of True"),
    ):
        _file(tmp_path, monkeypatch, [RECORD, broken])
        with pytest.raises(ConfigError, match=f"error_rates.json entry 2: {says}"):
            claim_registry.error_rates()


@pytest.mark.parametrize(
    "verdict, wrong, warned",
    [(Verdict.REPRODUCED, 33, True), (Verdict.NOT_REPRODUCED, 33, False), (Verdict.REPRODUCED, 10, False)],
)
def test_a_verdict_its_rule_gives_wrongly_often_is_warned_of_and_no_other(monkeypatch, verdict, wrong, warned):
    """33 of 200 wrong 'reproduced' is credibly above 5 %: that verdict is warned of; the other verdict, or 10 of
    200 (at alpha), is not."""
    monkeypatch.setattr(claim_registry, "error_rates", lambda: [ErrorRate(**RECORD | {"wrong": wrong})])
    v = ClaimVerdict(
        "c", verdict, "e", id="4c16g:high-concurrency-loss", registered={"study": "tde", "id": "high-concurrency-loss"}
    )
    said = report.error_rate_warnings([v])
    assert bool(said) == warned and all(s.startswith("4c16g:high-concurrency-loss: Read this") for s in said)
