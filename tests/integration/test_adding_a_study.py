"""The study shape is the whole interface: a sixth study written exactly as docs/adding-a-study.md gives it (the
11 files it lists: package, notebook, parameter file, claim, registry line, environment, change log, its test)
passes its own test and the unit tests that hold every study to the shape, runs at smoke scale through
`secoverhead run` in a copy of the checkout, with a report, a verdict on its claim and a place in the index, and
nothing else in the checkout changed."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import nbformat
import pytest
import yaml

from secoverhead.core import paths

pytestmark = [pytest.mark.integration]
GUIDE = paths.ROOT / "docs" / "adding-a-study.md"


def guide_files() -> dict[str, str]:
    """What the guide gives, by the bold words that introduce each code block (a file's path, or "The claim ...",
    "The registry")."""
    files, current, body = {}, None, None
    for line in GUIDE.read_text().splitlines(keepends=True):
        if body is not None:
            if line.startswith("```"):
                files[current], current, body = "".join(body), None, None
            else:
                body.append(line)
        elif line.startswith("**"):
            current = line[2:].split("**", 1)[0].replace("\\", "")
        elif line.startswith("```") and current is not None:
            body = []
    return files


def percent_to_notebook(source: str) -> nbformat.NotebookNode:
    """A percent-format script as a notebook (what `jupytext --to notebook` does for these cells)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "secoverhead", "display_name": "Python (secoverhead)", "language": "python"}
    for i, chunk in enumerate(re.split(r"^# %%", source, flags=re.M)[1:]):
        header, _, body = chunk.partition("\n")
        body = body.strip("\n")
        if "[markdown]" in header:
            cell = nbformat.v4.new_markdown_cell("\n".join(line.removeprefix("# ") for line in body.splitlines()))
        else:
            cell = nbformat.v4.new_code_cell(body)
            if "parameters" in header:
                cell.metadata["tags"] = ["parameters"]
        cell.id = f"c{i:02d}"
        nb.cells.append(cell)
    return nb


MAX_FILES = 11


def listed_files() -> list[str]:
    """The numbered list of the files the toy study touches."""
    return re.findall(r"^\d+\. `([^`]+)`", GUIDE.read_text(), re.M)


def test_the_guide_gives_every_file_of_the_shape_and_lists_every_file_it_touches():
    files, listed = guide_files(), listed_files()
    pkg = "lib/secoverhead/studies/hashing/"
    assert {pkg + f for f in ("__init__.py", "declarations.py", "runner.py", "claims.py")} <= set(files)
    assert {"notebooks/90_hashing.ipynb", "papermill-params/hashing/quick.yaml", "tests/unit/test_hashing.py"} <= set(
        files
    )
    assert len(listed) <= MAX_FILES and len(set(listed)) == len(listed), listed
    for block in files:  # every block is one of the files listed (a path, or the file its words name)
        assert any(block.startswith(f) or f in block for f in listed), block


def _apply(tree, files: dict[str, str]) -> None:
    """Every block of the guide into the tree, as a user follows it."""
    for rel, body in files.items():
        if rel.startswith("The "):
            continue
        target = tree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".ipynb"):
            nbformat.write(percent_to_notebook(body), target)
        else:
            target.write_text(body)
    claim = next(b for p, b in files.items() if p.startswith("The claim"))
    with open(tree / "data/claims/registry.yaml", "a") as f:
        f.write("\n" + claim)
    registry = tree / "lib/secoverhead/studies/__init__.py"
    lines = next(b for p, b in files.items() if p.startswith("The registry")).splitlines()
    text = registry.read_text()
    text = re.sub(r"^from secoverhead\.studies import .*$", lines[0], text, flags=re.M)
    start = text.index("STUDIES: dict")
    end = text.index("}\n", start) + 2
    registry.write_text(text[:start] + "\n".join(lines[2:]) + "\n" + text[end:])
    envs = tree / "data/claims/environments.yaml"
    env_block = next(b for p, b in files.items() if p.startswith("The environment"))
    envs.write_text(envs.read_text().replace("\nconstants:", "\n" + env_block.rstrip("\n") + "\nconstants:", 1))
    doc = yaml.safe_load(envs.read_text())
    fp = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]  # what the test prints
    changes = tree / "data/claims/CHANGES.md"
    entry = next(b for p, b in files.items() if p.startswith("The change log")).replace("<fingerprint>", fp)
    text = changes.read_text()
    first = text.index("\n## ")
    changes.write_text(text[: first + 1] + entry + "\n" + text[first + 1 :])


def _changed(tree) -> set[str]:
    """Files of the tree that are new or differ from the checkout's."""
    out = set()
    for f in tree.rglob("*"):
        if f.is_file() and "__pycache__" not in f.parts:
            rel = f.relative_to(tree)
            orig = paths.ROOT / rel
            if not orig.is_file() or orig.read_bytes() != f.read_bytes():
                out.add(str(rel))
    return out


def test_a_toy_study_from_the_guide_runs_through_secoverhead_run(tmp_path):
    tree = tmp_path / "checkout"
    for name in ("lib", "notebooks", "papermill-params", "data", "docs", "tests", "conftest.py", "pyproject.toml"):
        src = paths.ROOT / name
        ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
        shutil.copytree(src, tree / name, ignore=ignore) if src.is_dir() else shutil.copy(src, tree / name)
    _apply(tree, guide_files())
    assert "hashing.SPEC" in (tree / "lib/secoverhead/studies/__init__.py").read_text()
    assert _changed(tree) == set(listed_files()), "the toy touches exactly the files the guide lists"

    env = os.environ | {"PYTHONPATH": str(tree / "lib"), "SECOVERHEAD_STATE": str(tmp_path / "state")}
    env.pop("PYTEST_CURRENT_TEST", None)
    shape = ["tests/unit/test_hashing.py", "tests/unit/test_environments.py", "tests/unit/test_layers.py",
             "tests/unit/test_vocabulary.py", "tests/unit/test_glossary.py", "tests/unit/test_params.py"]  # fmt: skip
    held = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *shape], env=env,
                          cwd=tree, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert held.returncode == 0, held.stdout[-3000:]
    cli = [sys.executable, "-m", "secoverhead.app.cli"]
    listed = subprocess.run([*cli, "list"], env=env, cwd=tree, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "hashing" in listed.stdout, listed.stderr
    res = subprocess.run(
        [*cli, "run", "hashing", "--reports", str(tmp_path / "reports")],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    run = (tmp_path / "reports" / "hashing" / "latest").resolve()
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "ok" and record["study"] == "hashing"
    verdicts = json.loads((run / "results" / "verdicts.json").read_text())
    text = json.dumps(verdicts)
    assert "sha512-per-byte" in text and any(v in text for v in ("reproduced", "inconclusive"))
    assert "Passed unknown parameter" not in (run / "run.log").read_text()
    assert "hashing" in (tmp_path / "reports" / "index.html").read_text()
    assert not (paths.ROOT / "lib/secoverhead/studies/hashing").exists()  # the checkout itself is untouched
