"""HTML for reviewers: the executed notebook without code, through the project's nbconvert template (which
inherits JupyterLab's and drops every script it would fetch from the network; templates/nbconvert)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from nbconvert.preprocessors import TagRemovePreprocessor

from secoverhead.core.files import atomic_write_text

TEMPLATES = Path(__file__).parent / "templates" / "nbconvert"


def render_html(notebook: Path, html: Path, *, title: str | None = None) -> Path:
    """`--no-input` rendering: outputs only (cells tagged remove-cell dropped), nothing from the network."""

    nb = nbformat.read(notebook, as_version=4)
    if title:
        nb.metadata["title"] = title
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
    body, _ = exporter.from_notebook_node(nb)
    atomic_write_text(html, body)  # a full disk leaves no half page behind
    return html


def external_references(html: str) -> list[str]:
    """URLs the page would fetch (scripts, stylesheets, images, module imports); should be empty."""
    return re.findall(r"(?:src|href)=\"(https?://[^\"]+)\"", html) + re.findall(
        r"import\(\"(https?://[^\"]+)\"\)", html
    )
