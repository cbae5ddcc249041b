"""HTML for reviewers: the executed notebook without code, plots embedded, readable with no network."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from nbconvert.preprocessors import TagRemovePreprocessor

from secoverhead.core.files import atomic_write_text

_CDN_SCRIPT = re.compile(r"<script[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>", re.IGNORECASE)
_CDN_LINK = re.compile(r"<link[^>]*\bhref=\"https?://[^\"]*\"[^>]*>", re.IGNORECASE)
_MATHJAX_BLOCK = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)
_MERMAID_MODULE = re.compile(
    r"<script type=\"module\">(?:(?!</script>).)*?mermaid(?:(?!</script>).)*</script>", re.DOTALL
)


def render_html(notebook: Path, html: Path, *, title: str | None = None) -> Path:
    """`--no-input` rendering: outputs only (cells tagged remove-cell dropped), no CDN references."""

    nb = nbformat.read(notebook, as_version=4)
    if title:
        nb.metadata["title"] = title
    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    exporter.register_preprocessor(
        TagRemovePreprocessor(remove_cell_tags={"remove-cell"}, remove_all_outputs_tags={"remove-output"}), enabled=True
    )
    body, _ = exporter.from_notebook_node(nb)
    # No math and no widgets here: drop CDN scripts so the page loads nothing from the network.
    body = _MATHJAX_BLOCK.sub("", body)
    body = _MERMAID_MODULE.sub("", body)
    body = _CDN_SCRIPT.sub("", body)
    body = _CDN_LINK.sub("", body)
    atomic_write_text(html, body)  # a full disk leaves no half page behind
    return html


def external_references(html: str) -> list[str]:
    """URLs the page would fetch (scripts, stylesheets, images, module imports); should be empty."""
    return re.findall(r"(?:src|href)=\"(https?://[^\"]+)\"", html) + re.findall(
        r"import\(\"(https?://[^\"]+)\"\)", html
    )
