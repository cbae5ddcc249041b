"""Every notebook is valid nbformat 4.5: each cell carries an id (a cell added without one made nbformat warn
on every run, and newer nbformat versions will refuse it)."""

from __future__ import annotations

import json

import nbformat
import pytest

from secoverhead.core import paths

NOTEBOOKS = sorted(paths.NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_cell_has_an_id_and_the_notebook_validates(path):
    raw = json.loads(path.read_text())
    assert all("id" in c for c in raw["cells"]), [i for i, c in enumerate(raw["cells"]) if "id" not in c]
    nbformat.validate(nbformat.reads(path.read_text(), as_version=4))
