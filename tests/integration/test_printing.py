"""What a reviewer prints holds what the page folds: Chromium prints a closed <details> as its summary alone,
whatever the print stylesheet says (a 19-page TLS report printed none of its evidence)."""

from __future__ import annotations

import re

import pytest

from secoverhead.reporting import browser

pytestmark = pytest.mark.integration

LINES = "".join(f"<p>evidence line {i}: median 6129 us -&gt; 33,760 us</p>" for i in range(300))
PAGE = (
    "<!doctype html><html><head><style>@media print { details { display: block; } }</style></head><body><main>"
    f"<p>verdict</p><details><summary>evidence</summary>{LINES}</details></main></body></html>"
)


def _pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page\b", pdf))


def test_a_folded_section_prints_whole(tmp_path):
    html = tmp_path / "page.html"
    html.write_text(PAGE)
    with browser.page() as pg:  # printed as the stylesheet alone leaves it: the summary line, one page
        browser.open_page(pg, html)
        pg.emulate_media(media="print")
        pg.pdf(path=str(tmp_path / "folded.pdf"), format="A4")
    assert _pages((tmp_path / "folded.pdf").read_bytes()) == 1
    printed = browser.pdf(html, tmp_path / "page.pdf").read_bytes()
    assert _pages(printed) >= 5  # 300 lines: several A4 pages (10 here)


def test_the_originals_chinese_words_have_a_font(tmp_path):
    """Two originals are Chinese blog posts quoted in their words: without a CJK font they print as boxes. The
    page's Chinese is drawn from a font that covers Chinese (Chromium names the fonts a node was drawn with)."""
    import subprocess

    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    assert fonts.strip(), "no font covers Chinese (make setup installs fonts-wqy-microhei)"
    html = tmp_path / "zh.html"
    html.write_text("<!doctype html><meta charset=utf-8><body><span id=zh>连接数</span>")
    with browser.page() as pg:
        browser.open_page(pg, html)
        cdp = pg.context.new_cdp_session(pg)
        root = cdp.send("DOM.getDocument")["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "#zh"})["nodeId"]
        cdp.send("CSS.enable")
        used = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    assert used and all(f["familyName"] in fonts for f in used), (used, fonts)


def test_a_word_or_number_cut_across_lines_in_print_is_seen_and_an_identifier_wrapped_after_underscores_is_not(
    tmp_path,
):
    """The probe the README's check reads: equal fixed columns cut 'concurrency' and '11211.887'; an identifier
    with break opportunities after its underscores wraps whole pieces."""
    cells = "<td>concurrency</td><td>11211.887</td>" + "<td>x</td>" * 10
    ident = "connection_<wbr>server_<wbr>cpu_<wbr>us_<wbr>per_<wbr>op"
    page = tmp_path / "page.html"
    page.write_text(
        "<!doctype html><html><head><style>td { overflow-wrap: break-word; }</style></head><body><main>"
        f"<table style='table-layout:fixed;width:200px'><tr>{cells}</tr></table>"
        f"<table style='width:90px'><tr><td>{ident}</td></tr></table></main></body></html>"
    )
    seen = browser.first_screen(page)
    assert "concurrency" in seen.print_split_words and "11211.887" in seen.print_split_words
    assert not {"connection", "server", "cpu", "us", "per", "op"} & set(seen.print_split_words)


def _report_pages(tmp_path, name: str, cells: list) -> int:
    import nbformat

    from secoverhead.reporting.render import render_html

    notebook = tmp_path / f"{name}.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), notebook)
    html = render_html(notebook, tmp_path / f"{name}.html")  # the reports' own template and print stylesheet
    return _pages(browser.pdf(html, tmp_path / f"{name}.pdf").read_bytes())


def test_a_long_output_starts_on_the_page_its_heading_is_on(tmp_path):
    """JupyterLab's print stylesheet keeps each output on one page: the auth report's conclusions (a count, then a
    list longer than the rest of page 1, as two outputs of one cell) began on page 2 and left page 1 white under
    its title. Printed from outputs, they take no more pages than the same words written in the notebook."""
    import nbformat

    intro = "# Study\n\nIntroduction.\n\n## Conclusions"
    count = "<p><b>published claims: 2 not reproduced</b></p>"
    listed = "".join(f"<div class='claim'>claim {i}: measured 1.35x to 1.77x</div>" for i in range(60))
    claims = f"<div class='claims'>{listed}</div>"  # about one and a third A4 pages
    outputs = [nbformat.v4.new_output("display_data", {"text/html": h}) for h in (count, claims)]
    as_outputs = [nbformat.v4.new_markdown_cell(intro), nbformat.v4.new_code_cell("", outputs=outputs)]
    as_words = [nbformat.v4.new_markdown_cell(f"{intro}\n\n{count}\n\n{claims}")]
    assert _report_pages(tmp_path, "outputs", as_outputs) <= _report_pages(tmp_path, "words", as_words)
