"""The run that counts, on real runs: after a quick run, two smoke runs (the README's first example) leave
`latest`, the index's glance and the calculator's source on the quick run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from secoverhead.sizing.sources import source
from secoverhead.suite.index import build_index

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # reads no measured figure: not quiet
EXE = str(Path(sys.executable).with_name("secoverhead"))
# two arms, five rounds: the shortest HTTPS run whose comparisons have the power to see 20 %
SMALL = ["-p", "arms", '[HTTP, "TLS 1.2 full, RSA"]', "-p", "repetitions", "5"]


def _run(root: Path, *args: str) -> Path:
    before = set((root / "https").glob("2*")) if (root / "https").is_dir() else set()
    res = subprocess.run(
        [EXE, "run", "https", "--reports", str(root), *args, *SMALL], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-2000:]
    (made,) = set((root / "https").glob("2*")) - before
    return made


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("counts") / "reports"
    quick = _run(root, "--scale", "quick")
    return {"root": root, "quick": quick, "smoke1": _run(root), "smoke2": _run(root)}


def test_smoke_runs_after_a_quick_one_never_take_its_place(runs):
    root, quick = runs["root"], runs["quick"]
    assert (root / "https" / "latest").resolve() == quick.resolve()
    page = build_index(root).read_text()
    glance = page[page.index('id="summary"') : page.index('id="changes"')]
    assert quick.name in glance and "(quick)" in glance
    assert runs["smoke1"].name not in glance and runs["smoke2"].name not in glance
    assert runs["smoke2"].name in page  # listed below, with its scale
    assert source(root, "https").run_dir == quick  # what the calculator prices
