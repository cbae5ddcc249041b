"""The README tells a user what to do, on pages a person reads: short, undated (dated figures live in
benchmarks/README.md), and every page or picture it links there."""

from __future__ import annotations

import re

from secoverhead.core import paths

README = paths.ROOT / "README.md"
# pyperf's README is 5 KB, papermill's 8 KB: a person reads 150 lines
MOST_LINES = 150


def test_the_readme_is_a_page_a_person_reads():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MOST_LINES
    assert len(text.encode()) <= 12_000


def test_the_readme_carries_no_dated_measurement():
    text = README.read_text(encoding="utf-8")
    assert re.findall(r"\b20\d\d-\d\d-\d\d\b", text) == []  # a date marks an episode: benchmarks/README.md
    assert re.findall(r"\b\d+ min \d+ s\b", text) == []  # nor a timing of one run


def test_every_file_the_readme_links_is_there():
    text = README.read_text(encoding="utf-8")
    links = [t for t in re.findall(r"\]\(([^)#]+)\)", text) if not t.startswith("http")]
    assert links, "the README links its topics"
    assert [t for t in links if not (paths.ROOT / t).exists()] == []
