"""The README's Python, run as written through `secoverhead.load`, on real runs of the two studies it asks
about: a TDE run at 1 and 16 threads and a TLS run's MySQL part (both small)."""

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


def python_blocks() -> list[str]:
    text = (paths.ROOT / "README.md").read_text()
    return [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "secoverhead.load" in b]


def test_the_readme_answers_its_follow_up_questions_through_load(tmp_path):
    (block,) = python_blocks()
    env = os.environ.copy() | {"MPLBACKEND": "Agg"}
    env.pop("PYTEST_CURRENT_TEST", None)
    for study, args in (
        ("tde", ["-p", "threads", "[1, 16]", "-p", "workloads", "[oltp_read_only]", "-p", "run_seconds", "1"]),
        ("tls", ["-p", "mongo_enabled", "false"]),
    ):
        res = subprocess.run([EXE, "run", study, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=600)  # fmt: skip
        assert res.returncode == 0, res.stderr[-2000:]
    script = block + "\nimport matplotlib.pyplot as plt\nassert len(mysql) and mysql.arm.nunique() >= 2\n"
    script += "assert len(loss) and loss.notna().all(), loss\nprint('axes', len(plt.gcf().axes))\n"
    res = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "oltp_read_only" in res.stdout and "axes" in res.stdout  # the loss per run, and the histogram drawn
