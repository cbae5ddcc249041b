"""HTML for reviewers: the executed notebook without code, through the project's nbconvert template (which
inherits JupyterLab's and drops every script it would fetch from the network; templates/nbconvert)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import nbformat
from bs4 import BeautifulSoup
from nbconvert import HTMLExporter
from nbconvert.preprocessors import TagRemovePreprocessor

from secoverhead.core.files import atomic_write_text

TEMPLATES = Path(__file__).parent / "templates" / "nbconvert"


def render_html(
    notebook: Path, html: Path, *, title: str | None = None, status: str = "ok", why: str | None = None
) -> Path:
    """`--no-input` rendering: outputs only (cells tagged remove-cell dropped), nothing from the network; a
    report that did not finish opens with a banner saying so and why, and every report with its contents."""

    nb = nbformat.read(notebook, as_version=4)
    if title:
        nb.metadata["title"] = title
    body, _ = _exporter().from_notebook_node(nb)
    atomic_write_text(html, finish_page(body, status, why))  # a full disk leaves no half page behind
    return html


def page_frame() -> str:
    """What every report page holds whatever was measured (stylesheets, scripts, the banner's words): a password
    found in it would be found in every report, so the start refuses such a password."""
    body, _ = _exporter().from_notebook_node(nbformat.v4.new_notebook())
    return finish_page(body, "failed", "") + finish_page(body, "interrupted", "")


def _exporter() -> HTMLExporter:
    exporter = HTMLExporter(
        template_name="secoverhead",
        extra_template_basedirs=[str(TEMPLATES)],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    exporter.log.setLevel(logging.ERROR)  # its alt-text count is for notebooks without any; ours carry theirs
    exporter.register_preprocessor(
        TagRemovePreprocessor(remove_cell_tags={"remove-cell"}, remove_all_outputs_tags={"remove-output"}), enabled=True
    )
    return exporter


def trust(notebook: Path) -> None:
    """Sign the executed report for this user's Jupyter (its signature database): JupyterLab then shows its flame
    graphs (HTML holding SVG with its own script) rather than their alt text. Its outputs are the pipeline's own,
    every value in them escaped. Read back, and signed again once if lost: nbformat starts a fresh database when
    it finds the old one locked (another Jupyter writing), which drops a signature just written."""
    from nbformat.sign import NotebookNotary

    nb = nbformat.read(notebook, as_version=4)
    for _ in range(2):
        NotebookNotary().sign(nb)
        if is_signed(notebook):
            return
    raise RuntimeError("the signature did not hold in Jupyter's signature database")


def is_signed(notebook: Path) -> bool:
    """Whether this user's Jupyter trusts the notebook as it is on disk."""
    from nbformat.sign import NotebookNotary

    return bool(NotebookNotary().check_signature(nbformat.read(notebook, as_version=4)))


STATUS_BANNERS = {
    "interrupted": "This run was interrupted: after Ctrl-C its tables hold every run it recorded before it stopped "
    "(after SIGTERM, what its cells reached), and its verdicts are partial (judged at no planned look, so not at the "
    "study's stated error rate); "
    "`secoverhead run --resume` with this report's folder continues it where it stopped.",
    "failed": "This run failed: the report holds what was measured before the failure; its verdicts are not the "
    "study's.",
}


def finish_page(body: str, status: str = "ok", why: str | None = None) -> str:
    """The page as a reader meets it: a banner when the run did not finish ok, and a table of contents (the
    report's sections, h2) after its first section (the conclusions stay on the first screen), so a 15,000 px
    page can be read through."""
    soup = BeautifulSoup(body, "html.parser")
    main = soup.find("main") or soup.body
    if main is None:
        return body
    sections = [h for h in main.find_all("h2") if h.get("id")]
    if len(sections) >= 3:
        nav = soup.new_tag("nav", attrs={"class": "toc", "aria-label": "contents"})
        nav.append(soup.new_tag("b"))
        nav.b.string = "Contents"
        items = soup.new_tag("ol")
        for h in sections:
            li, a = soup.new_tag("li"), soup.new_tag("a", href=f"#{h['id']}")
            a.string = h.get_text(" ", strip=True).rstrip("¶").strip()
            li.append(a)
            items.append(li)
        nav.append(items)
        second = sections[1].find_parent("div", class_="jp-Cell") or sections[1]
        second.insert_before(nav)
    if status != "ok":
        banner = soup.new_tag("div", attrs={"class": f"run-status {status}", "role": "alert"})
        banner.append(soup.new_tag("b"))
        banner.b.string = STATUS_BANNERS.get(status, f"This run's status is {status}.")
        if why:
            banner.append(f" Why: {why}")
        main.insert(0, banner)
    return str(soup)


def external_references(html: str) -> list[str]:
    """URLs the page would fetch (scripts, stylesheets, images, module imports); should be empty."""
    return re.findall(r"(?:src|href)=\"(https?://[^\"]+)\"", html) + re.findall(
        r"import\(\"(https?://[^\"]+)\"\)", html
    )
