"""A real browser on a report: Debian's Chromium driven by Playwright (no browser download), with every
request that would leave the machine blocked and counted. It prints a report to PDF (`secoverhead pdf`) and
says what a reviewer sees on the first screen (the browser test)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secoverhead.core.environ import scrubbed_environ, server_env

CHROMIUM = "/usr/bin/chromium"
SCREEN = {"width": 1280, "height": 800}
# Without these Chromium reaches for Google's hosts at start and the closed network refuses it (ENVIRONMENT.md).
ARGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def executable() -> str | None:
    """SECOVERHEAD_CHROMIUM when set (a browser elsewhere), else Debian's Chromium."""
    named = os.environ.get("SECOVERHEAD_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) and Path(named).is_file() else None
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


@dataclass
class FirstScreen:
    """What the first 1280x800 of a page shows."""

    verdicts: int  # verdict chips on the page
    verdicts_visible: int  # of them, inside the first screen
    scroll_width: int  # the page's
    client_width: int
    summary_overflow: int  # pixels the claims' summary would need to scroll sideways (0: none)
    flamegraphs: int
    flamegraphs_root_visible: int  # graphs whose root frame (the top row of an icicle) is drawn
    external_requests: list[str] = field(default_factory=list)
    print_cut_tables: list[str] = field(default_factory=list)  # tables wider than A4's printable width, printed
    print_split_words: list[str] = field(default_factory=list)  # a word or number in a table cut across lines
    headlines: int = 0  # the cost calculator's sentences (it has no verdicts)
    headlines_visible: int = 0
    claim_lines: list[str] = field(default_factory=list)  # each verdict's line as the browser renders its text


def open_page(pg: Any, html: Path) -> None:
    """A report opened as its text, not as a file: URL. The page then has no origin on this machine, so nothing
    in it (a value that slipped through as an iframe of /etc/shadow) can load a local file; its own figures and
    graphs are data: URLs and show as they are."""
    pg.set_content(Path(html).read_text(errors="replace"), wait_until="load")


@contextlib.contextmanager
def page(allow: tuple[str, ...] = ()) -> Iterator[Any]:
    """A headless page that may load data: URLs only (and the loopback addresses in `allow`): every other
    request is blocked and counted."""
    from playwright.sync_api import sync_playwright  # deferred: only the pdf command and the browser test

    exe = executable()
    if exe is None and os.environ.get("SECOVERHEAD_CHROMIUM"):
        raise RuntimeError(f"SECOVERHEAD_CHROMIUM={os.environ['SECOVERHEAD_CHROMIUM'][:120]} is no executable file")
    if exe is None:
        raise RuntimeError("Chromium is not installed (Debian package chromium; `make setup` installs it)")
    with _driver(sync_playwright()) as pw, _sandboxed(exe) as launcher:
        browser = _launch(pw, launcher, exe)
        try:
            ctx = browser.new_context(viewport=SCREEN)
            pg = ctx.new_page()
            pg.blocked = []

            def route(r):
                url = r.request.url
                if url.startswith(("data:", "about:", "blob:", *allow)):
                    return r.continue_()
                pg.blocked.append(url)
                return r.abort()

            ctx.route("**/*", route)
            yield pg
        finally:
            browser.close()


@contextlib.contextmanager
def _driver(manager: Any) -> Iterator[Any]:
    """Playwright's driver (node), started from a scrubbed environment: it copies ours into its process, and none
    of the user's exported passwords is its business."""
    with scrubbed_environ():
        pw = manager.__enter__()
    try:
        yield pw
    finally:
        manager.__exit__(None, None, None)


NOBODY = 65534
LAUNCH_TIMEOUT_MS = 30_000  # Chromium starts in 1-3 s; a browser that hangs is said to, not waited on


@contextlib.contextmanager
def _sandboxed(exe: str) -> Iterator[str]:
    """What Playwright starts as the browser. As root Chromium's sandbox refuses to run, and a browser of root
    could read any file a page asked for: so it runs as nobody, sandboxed, with a profile folder of its own
    and an environment holding no secret of ours, through a launcher that changes user and execs it (the
    pipes Playwright talks over survive the exec). Else Chromium itself, sandboxed."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        yield exe
        return
    from secoverhead.host.rundirs import make_run_dir  # deferred: only as root

    scratch = make_run_dir("chromium", base=_passable(Path(tempfile.gettempdir())))
    try:
        profile = scratch / "profile"
        profile.mkdir()
        os.chown(profile, NOBODY, NOBODY)
        os.chmod(scratch, 0o711)  # nobody may pass through to its profile, and list nothing
        launcher = scratch / "chromium-as-nobody"
        keep = " ".join(f"{k}={shlex.quote(v)}" for k, v in os.environ.items() if k in ("PATH", "LANG", "TZ"))
        launcher.write_text(
            "#!/bin/sh\n"
            f"exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups --inh-caps=-all -- "
            f'env -i {keep} HOME={shlex.quote(str(profile))} {shlex.quote(exe)} "$@" '
            f"--user-data-dir={shlex.quote(str(profile / 'data'))}\n"  # the last one counts: Playwright's is root's
        )
        launcher.chmod(0o700)
        yield str(launcher)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _passable(base: Path) -> Path:
    """base when nobody may pass through each folder above it (a run base under a 0700 folder is not), else /tmp."""
    for d in (base, *base.parents):
        if not d.stat().st_mode & 0o001:
            return Path("/tmp")
    return base


def _launch(pw: Any, launcher: str, exe: str) -> Any:
    """Chromium sandboxed; where this machine cannot give it a sandbox (no user namespaces), without one, said."""
    try:
        return pw.chromium.launch(executable_path=launcher, args=ARGS, chromium_sandbox=True, timeout=LAUNCH_TIMEOUT_MS)
    except Exception as exc:  # Playwright raises its own Error for a browser that did not start
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        if os.geteuid() == 0:  # never unsandboxed as root
            raise RuntimeError(f"Chromium did not start as nobody, sandboxed: {why}") from None
        import logging

        logging.getLogger("secoverhead").warning("Chromium runs without its sandbox here: %s", why)
        return pw.chromium.launch(executable_path=exe, args=ARGS, timeout=LAUNCH_TIMEOUT_MS)


_PROBE = """() => {
  const inView = (el) => { const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= innerHeight
      && r.left >= 0 && r.right <= innerWidth; };
  const chips = [...document.querySelectorAll('.claims .chip')];
  const sentences = [...document.querySelectorAll('.headline p')];
  const summary = document.querySelector('.claims') || document.querySelector('.headline');
  const graphs = [...document.querySelectorAll('object.flamegraph')];
  // A graph is embedded as its own document (data: URL, opaque to the page): its root frame shows when the
  // box the page gives it is tall enough, at the width it is drawn, to hold the frame's lower edge.
  let roots = 0;
  for (const g of graphs) {
    const box = g.getBoundingClientRect();
    const w = parseFloat(g.dataset.svgWidth), bottom = parseFloat(g.dataset.rootBottom);
    if (box.height > 0 && w > 0 && bottom > 0 && box.height + 0.5 >= bottom * box.width / w) roots += 1;
  }
  return {verdicts: chips.length, verdicts_visible: chips.filter(inView).length,
          scroll_width: document.documentElement.scrollWidth, client_width: document.documentElement.clientWidth,
          summary_overflow: summary ? Math.max(0, summary.scrollWidth - summary.clientWidth,
                                               summary.getBoundingClientRect().right - innerWidth) : 0,
          flamegraphs: graphs.length, flamegraphs_root_visible: roots,
          headlines: sentences.length, headlines_visible: sentences.filter(inView).length,
          claim_lines: [...document.querySelectorAll('.claims .claim')]
            .map(el => el.innerText.split(String.fromCharCode(10))[0])};
}"""


A4_PRINTABLE_PX = 703  # 210 mm less the print stylesheet's 2 x 12 mm margins, at 96 px per inch

# Each table that runs off the printed page, named by its header and its widest cell, so a failure says which.
_CUT = """() => [...document.querySelectorAll('table')].filter(t => {
  const r = t.getBoundingClientRect(); return r.width > 0 && (r.right > innerWidth + 1 || t.scrollWidth > r.width + 1);
}).map(t => {
  const cells = [...t.querySelectorAll('td, th')], wide = cells.reduce((a, c) => c.scrollWidth > a.scrollWidth ? c : a);
  const head = [...t.querySelectorAll('th')].slice(0, 4).map(h => h.innerText.trim()).join(' | ');
  const text = wide.innerText.trim().slice(0, 80);
  return `${Math.round(t.scrollWidth)} px (${head}): widest cell ${Math.round(wide.scrollWidth)} px "${text}"`;
})"""


# A word (letters) or a number (digits with their point, sign, unit prefix or %) drawn on two lines of a table
# cell: "concurre / ncy", "11211.88 / 7". Identifiers and paths may wrap (after an underscore or a slash).
_SPLIT = """() => {
  const whole = /^(?:[A-Za-z]+|[-+]?[0-9][0-9.,]*[kMGµ%x]?)$/, out = [];
  for (const cell of document.querySelectorAll('td, th')) {
    if (!cell.getClientRects().length) continue;
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const m of n.data.matchAll(/[^\\s\\-\\/_()\\[\\],;:]+/g)) {
        if (!whole.test(m[0])) continue;
        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top))).size > 1)
          out.push(m[0]);
      }
    }
  }
  return out;
}"""


def first_screen(html: Path, screenshot: Path | None = None) -> FirstScreen:
    """Open a report as a reviewer would and measure its first screen (a screenshot of it where asked)."""
    with page() as pg:
        open_page(pg, html)
        pg.wait_for_timeout(300)  # the graphs' own documents load after the page
        facts = pg.evaluate(_PROBE)
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(screenshot))
        pg.set_viewport_size({"width": A4_PRINTABLE_PX, "height": SCREEN["height"]})
        print_layout(pg)
        cut, split = pg.evaluate(_CUT), pg.evaluate(_SPLIT)
        return FirstScreen(**facts, external_requests=list(pg.blocked), print_cut_tables=cut, print_split_words=split)


def print_layout(pg: Any) -> None:
    """The page as it prints: every folded section open (Chromium prints a closed <details> as its summary alone,
    whatever the stylesheet says: a 19-page TLS report held none of its evidence), under the print stylesheet."""
    pg.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    pg.emulate_media(media="print")


def pdf(html: Path, out: Path) -> Path:
    """The report printed as a reviewer would print it (A4, its print stylesheet, backgrounds kept)."""
    with page() as pg:
        # laid out at the printed width first: an embedded graph's own document keeps the size it was first
        # drawn at, and a 1,200 px graph printed on A4 was cut at its right
        pg.set_viewport_size({"width": A4_PRINTABLE_PX, "height": SCREEN["height"]})
        open_page(pg, html)
        pg.wait_for_timeout(300)
        print_layout(pg)
        pg.pdf(path=str(out), format="A4", print_background=True, prefer_css_page_size=True)
    return out


@dataclass
class LabView:
    """What JupyterLab shows of a report opened in it."""

    flamegraphs: int  # embedded graphs JupyterLab rendered (an untrusted notebook shows their alt text instead)
    first_visible: bool  # the first graph, scrolled to, lies in the screen
    errors: list[str] = field(default_factory=list)  # error outputs shown
    signed: bool | None = None  # this user's Jupyter trusts the notebook (unsigned: alt text is right)


def in_jupyterlab(notebook: Path, screenshot: Path | None = None, timeout_s: float = 90.0) -> LabView:
    """Open an executed report in a JupyterLab started here on loopback (its token from the environment, never
    on a command line), scroll to its first flame graph and say what shows; a screenshot of it where asked."""
    import secrets
    import time

    from secoverhead.host.process import free_port
    from secoverhead.reporting.render import is_signed

    notebook = Path(notebook).resolve()
    signed = is_signed(notebook)
    port, token = free_port(), secrets.token_hex(16)
    base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + timeout_s
    with _jupyterlab(notebook.parent, port, token):
        _wait_for(f"{base}/api/status?token={token}", deadline)
        with page(allow=(base,)) as pg:
            pg.goto(f"{base}/lab/tree/{notebook.name}?token={token}", wait_until="domcontentloaded")
            pg.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_s * 1000)
            n, visible = _flame_graphs(pg, signed, deadline)
            errors = pg.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count()
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                pg.screenshot(path=str(screenshot))
            return LabView(n, visible, [f"{errors} error output(s)"] if errors else [], signed)


@contextlib.contextmanager
def _jupyterlab(root: Path, port: int, token: str) -> Iterator[None]:
    """A JupyterLab on loopback serving root, its token in its environment; stopped on any exit."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False"]  # fmt: skip
    if os.geteuid() == 0:
        argv.append("--allow-root")
    lab = subprocess.Popen(argv, env=server_env({"JUPYTER_TOKEN": token}), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        yield
    finally:
        lab.terminate()
        try:
            lab.wait(15)
        except subprocess.TimeoutExpired:
            lab.kill()
            lab.wait()


def _wait_for(url: str, deadline: float) -> None:
    import time
    import urllib.request

    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.5)


def _flame_graphs(pg: Any, signed: bool, deadline: float) -> tuple[int, bool]:
    """How many flame graphs rendered (their own document kept: an untrusted notebook's sanitiser strips it to alt
    text), and whether the first, scrolled into view, shows. Outputs render after the cells, seconds later on a
    loaded machine, so they are waited for, not slept on."""
    import time

    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    graphs = pg.locator(".jp-OutputArea object.flamegraph[data^='data:image/svg+xml']")
    if signed:
        with contextlib.suppress(PlaywrightTimeout):
            graphs.first.wait_for(state="attached", timeout=max(deadline - time.monotonic(), 5) * 1000)
    else:
        pg.wait_for_timeout(2000)
    n = graphs.count()
    news = pg.get_by_role("button", name="No")  # JupyterLab's question about its news, in the way
    if news.count():  # a dialog that moves as it renders: one try, never the check's failure
        with contextlib.suppress(PlaywrightTimeout):
            news.first.click(timeout=5000)
    if not n:
        return 0, False
    # JupyterLab scrolls its own (windowed) panel and lays it out again, seconds later on a loaded machine: scroll
    # and look until the graph shows or the deadline passes (a fixed 1.5 s once missed it beside two busy loops)
    until = max(deadline, time.monotonic() + 15)
    while True:
        graphs.first.evaluate("el => el.scrollIntoView({block: 'center'})")
        pg.wait_for_timeout(500)
        box = graphs.first.bounding_box()
        shown = bool(box and box["height"] > 50 and box["y"] >= 0 and box["y"] + 50 <= SCREEN["height"])
        if shown or time.monotonic() > until:
            return n, shown
