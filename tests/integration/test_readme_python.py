"""The README's Python, run as written through `secoverhead.load`, and the questions notebook that answers the
README's follow-up questions, executed from notebooks/, on real runs of the two studies they ask about: TDE runs at
1 and 16 threads and TLS runs of the MySQL part (two, so that a series pools; all small)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from secoverhead.core import paths

pytestmark = [pytest.mark.integration, pytest.mark.slow]
EXE = str(Path(sys.executable).with_name("secoverhead"))
QUESTIONS = paths.NOTEBOOKS / "07_your_questions.ipynb"
TDE = ["-p", "threads", "[1, 16]", "-p", "workloads", "[oltp_read_only]", "-p", "run_seconds", "1"]


def python_blocks() -> list[str]:
    text = (paths.ROOT / "README.md").read_text()
    return [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "secoverhead.load" in b]


def _env() -> dict[str, str]:
    env = os.environ.copy() | {"MPLBACKEND": "Agg"}
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """A folder whose reports/ holds a TDE run and two TLS runs, made as a user makes them."""
    where = tmp_path_factory.mktemp("readme-python")
    tls = ["-p", "mongo_enabled", "false"]
    for study, args in (("tde", TDE), ("tls", tls), ("tls", tls)):
        res = subprocess.run([EXE, "run", study, *args], cwd=where, env=_env(), capture_output=True, text=True,
                             timeout=600)  # fmt: skip
        assert res.returncode == 0, res.stderr[-2000:]
    return where


def test_the_readme_answers_its_follow_up_questions_through_load(made):
    (block,) = python_blocks()
    script = block + "\nimport matplotlib.pyplot as plt\nassert len(mysql) and mysql.arm.nunique() >= 2\n"
    script += "loss = newest[newest.quantity == 'loss']\nassert len(loss) and loss.shown.str.endswith('%').all()\n"
    script += "assert len(setup) and setup.shown.str.endswith('×').all(), setup\nprint('axes', len(plt.gcf().axes))\n"
    script += "assert (standing['reports pooled'] == 2).any(), standing\n"
    res = subprocess.run([sys.executable, "-c", script], cwd=made, env=_env(), capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "oltp_read_only" in res.stdout and "axes" in res.stdout  # the loss per run, and the histogram drawn


def test_the_questions_notebook_answers_each_from_notebooks_with_intervals_and_units(made, tmp_path):
    """Executed where JupyterLab opens it (notebooks/), the reports found through $SECOVERHEAD_REPORTS; each answer
    is at most five lines of code and shows judged intervals in their unit, and the standing verdict of two runs."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(QUESTIONS, as_version=4)
    answers = [c for c in nb.cells if c.cell_type == "code" and "secoverhead.load(" in c.source]
    assert len(answers) == 3 and all(len(c.source.strip().splitlines()) <= 5 for c in answers)
    os.environ["SECOVERHEAD_REPORTS"] = str(made / "reports")  # the kernel inherits it
    try:
        where = {"metadata": {"path": str(QUESTIONS.parent)}}  # run from notebooks/, as JupyterLab runs it
        NotebookClient(nb, timeout=300, kernel_name="secoverhead", resources=where).execute()
    finally:
        os.environ.pop("SECOVERHEAD_REPORTS")
    shown = ["".join(o.get("data", {}).get("text/html", "") for o in c.outputs) for c in answers]  # as JupyterLab
    assert " %" in shown[0] and "oltp_read_only" in shown[0]  # a TPS loss per workload, in %
    assert "×" in shown[1] and "MySQL" in shown[1]  # set-up as a ratio, on the build that ran it
    assert "<td>2 of 2</td>" in shown[2], shown[2]  # the two TLS reports, both tested
