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
