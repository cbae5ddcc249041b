"""Test-wide environment, set before any test or notebook kernel starts (kernels inherit it): servers'
private directories under one base that the suite checks for leftovers, and notebook results in a scratch
directory rather than the checkout."""

import os
import tempfile
from pathlib import Path

BASE = Path(tempfile.mkdtemp(prefix="secoverhead-tests-"))
os.environ["SECOVERHEAD_RUN_BASE"] = str(BASE / "servers")
os.environ["SECOVERHEAD_RESULTS"] = str(BASE / "results")


def pytest_unconfigure(config) -> None:  # the scratch base goes with the session (leftovers are checked before)
    import shutil

    shutil.rmtree(BASE, ignore_errors=True)
