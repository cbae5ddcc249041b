"""Everything a report shows is data: markup put into a parameter's value (here TLS's query, which returns it)
shows as text in report.html and index.html, no script of it runs in Chromium, and neither a screenshot nor the
PDF can load a local file, even from a page that holds such markup raw (a run copied in from elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from secoverhead.reporting import browser

pytestmark = [pytest.mark.integration]
EXE = str(Path(sys.executable).with_name("secoverhead"))
MARK = "SECRET-LINE-of-a-local-file-4711"


def _hostile(tmp_path: Path) -> tuple[str, str]:
    local = tmp_path / "shadow"
    local.write_text(MARK)
    iframe = f"<iframe src={local}></iframe>"
    img = '<img src=x onerror=document.body.setAttribute("data-pwned",1)>'
    return iframe, img


def test_markup_in_a_parameter_shows_as_text_and_runs_nothing(tmp_path):
    iframe, img = _hostile(tmp_path)
    env = os.environ.copy()
    env.pop("PYTEST_CURRENT_TEST", None)
    query = f"SELECT '{iframe}' AS a, '{img}' AS b"
    res = subprocess.run([EXE, "run", "tls", "-p", "mongo_enabled", "false", "-p", "mysql_query", query],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    (run,) = (tmp_path / "reports" / "tls").glob("2*")
    for page in (run / "report.html", tmp_path / "reports" / "index.html"):
        text = page.read_text()
        assert iframe not in text and img not in text, page
        assert "&lt;iframe src=" in text, page
    with browser.page() as pg:
        browser.open_page(pg, run / "report.html")
        assert pg.evaluate("() => document.body.dataset.pwned") is None
        assert pg.evaluate("() => document.querySelectorAll('main iframe, main img[src=x]').length") == 0
    out = browser.pdf(run / "report.html", tmp_path / "report.pdf")
    assert MARK.encode() not in out.read_bytes()


def test_a_page_holding_markup_raw_cannot_load_a_local_file(tmp_path):
    iframe, _ = _hostile(tmp_path)
    page = tmp_path / "copied-in.html"
    page.write_text(f"<!doctype html><html><body><main><h1>t</h1>{iframe}<img src='file://{tmp_path}/shadow'>"
                    "<p>text</p></main></body></html>")  # fmt: skip
    out = browser.pdf(page, tmp_path / "copied-in.pdf")
    assert MARK.encode() not in out.read_bytes()
    with browser.page() as pg:  # the frame is there, and empty: the page has no origin on this machine
        browser.open_page(pg, page)
        frames = [f for f in pg.frames if f != pg.main_frame]
        assert all(MARK not in (f.content() if not f.is_detached() else "") for f in frames)


def test_the_browser_runs_sandboxed_and_never_as_root(tmp_path):
    """As root, Chromium runs as nobody with its sandbox on (no --no-sandbox): a page that escaped the escaping
    would still meet a browser that can read nothing of root's."""
    with browser.page() as pg:
        pg.set_content("<p>hello</p>")
        mine = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                cmd = (p / "cmdline").read_bytes().split(b"\0")
                status = (p / "status").read_text().splitlines()
                uid = int(next(ln for ln in status if ln.startswith("Uid:")).split()[1])
            except (OSError, StopIteration, ValueError):
                continue
            if cmd and cmd[0].endswith(b"chromium"):
                mine.append((uid, b"--no-sandbox" in cmd))
        assert mine, "no Chromium process seen"
        if os.geteuid() == 0:
            assert all(uid == browser.NOBODY for uid, _ in mine), mine
        assert not any(unsandboxed for _, unsandboxed in mine), mine


@pytest.mark.parametrize("kind", ["missing", "dies at once"])
def test_pdf_without_a_working_browser_is_one_line(tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.html").write_text("<p>a report</p>")
    dead = tmp_path / "chromium"
    dead.write_text("#!/bin/sh\nexit 3\n")
    dead.chmod(0o755)
    env = os.environ.copy() | {"SECOVERHEAD_CHROMIUM": str(dead) if kind != "missing" else str(tmp_path / "none")}
    env.pop("PYTEST_CURRENT_TEST", None)
    res = subprocess.run([EXE, "pdf", str(run)], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-1500:]
    assert [ln for ln in res.stderr.splitlines() if ln.strip()] == [res.stderr.strip()]  # one line
    assert res.stderr.startswith("error: no PDF made")
    assert not (run / "report.pdf").exists()
