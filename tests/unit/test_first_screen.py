"""The first screen is a view of a finished run: a browser that fails once is asked again, and a failure that stays
is recorded as one line naming what failed (Playwright's message, not its call log), never failing the run."""

from __future__ import annotations

from secoverhead.app import review
from secoverhead.reporting import browser


def _facts() -> browser.FirstScreen:
    return browser.FirstScreen(
        verdicts=1,
        verdicts_visible=1,
        scroll_width=1280,
        client_width=1280,
        summary_overflow=0,
        flamegraphs=0,
        flamegraphs_root_visible=0,
    )


def test_a_browser_that_fails_once_is_asked_again(monkeypatch, tmp_path):
    calls = []

    def flaky(html, shot):
        calls.append(html)
        if len(calls) == 1:
            raise RuntimeError("Page.goto: net::ERR_ABORTED\nCall log:\n  - navigating to file:///x")
        return _facts()

    monkeypatch.setattr(browser, "first_screen", flaky)
    assert review.first_screen(tmp_path)["verdicts"] == 1 and len(calls) == 2


def test_a_failure_that_stays_is_one_line_with_its_message_not_the_call_log(monkeypatch, tmp_path):
    def broken(html, shot):
        raise TimeoutError("Page.goto: Timeout 30000ms exceeded.\nCall log:\n  - navigating to file:///x")

    monkeypatch.setattr(browser, "first_screen", broken)
    assert review.first_screen(tmp_path) == {"error": "TimeoutError: Page.goto: Timeout 30000ms exceeded."}


def test_a_verdict_line_shows_the_reading_that_decided_it():
    """Two readings: the line shows the one that refuted the claim (its refuting intervals, which are what was
    judged), the one still undecided, or the first when every reading reproduced; a verdict from before readings
    recorded their own verdicts shows its first."""
    from secoverhead.reporting.summary import deciding, numbers_shown

    ratio = {"effect": "TPS ratio", "quantity": "ratio", "intervals": [[0.918, 1.03]], "verdict": "inconclusive"}
    loss = {
        "effect": "TPS loss, %",
        "quantity": "loss",
        "intervals": [[-0.5, 4.0]],
        "refuting": [[-0.7, 4.4]],
        "verdict": "not reproduced",
    }
    refuted = {"verdict": "not reproduced", "judged": [ratio, loss]}
    assert deciding(refuted)["effect"] == "TPS loss, %" and deciding(refuted)["intervals"] == [[-0.7, 4.4]]
    assert numbers_shown(refuted) == ["-0.7 %", "+4.4 %"]
    undecided = {"verdict": "inconclusive", "judged": [loss | {"verdict": "reproduced"}, ratio]}
    assert deciding(undecided)["effect"] == "TPS ratio" and numbers_shown(undecided) == ["0.918×", "1.03×"]
    both = {"verdict": "reproduced", "judged": [ratio | {"verdict": "reproduced"}, loss | {"verdict": "reproduced"}]}
    assert deciding(both)["effect"] == "TPS ratio"
    old = {
        "verdict": "not reproduced",
        "judged": [{k: v for k, v in r.items() if k != "verdict"} for r in (ratio, loss)],
    }
    assert deciding(old)["effect"] == "TPS ratio" and deciding({"verdict": "reproduced"}) is None


def test_each_judged_reading_records_its_own_verdict_and_the_claims_is_decided_by_them():
    from secoverhead.analysis import claim_registry, claimcheck

    claim = claim_registry.get("tde", "low-concurrency-loss")  # a TPS ratio below 0.98x, and a loss in [5, 25] %
    intervals = (([(0.90, 0.95)], None), ([(-0.7, 4.4)], None))
    judged = claimcheck.judged(claim, intervals)
    assert [j["verdict"] for j in judged] == ["reproduced", "not reproduced"]
    assert str(claim.decide(*intervals)) == "not reproduced"
