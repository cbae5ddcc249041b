"""Test-wide environment, set before any test or notebook kernel starts (kernels inherit it): servers'
private directories under one base that the suite checks for leftovers, and notebook results in a scratch
directory rather than the checkout, and one shared machine-speed calibration."""

import os
import tempfile
from pathlib import Path

BASE = Path(tempfile.mkdtemp(prefix="secoverhead-tests-"))
os.environ["SECOVERHEAD_RUN_BASE"] = str(BASE / "servers")
os.environ["SECOVERHEAD_RESULTS"] = str(BASE / "results")
# One machine-speed calibration for the session's study runs, as one `secoverhead run` shares one among its
# studies (about 8 s each otherwise); re-taken when it is older than calibration.MAX_AGE_S.
os.environ.setdefault("SECOVERHEAD_CALIBRATION", str(BASE / "calibration.json"))
# No first-screen screenshot for the session's many small runs (a browser start each); the README test, which
# runs every study as a user would, takes them and checks what they show.
os.environ["SECOVERHEAD_SCREENS"] = "off"


def pytest_unconfigure(config) -> None:  # the scratch base goes with the session (leftovers are checked before)
    import shutil

    shutil.rmtree(BASE, ignore_errors=True)


# Notebooks the README test already executes end to end through papermill (their check cells included): running
# them under nbval as well would repeat the same run (42 s for the TLS notebook). The cost calculator's needs the
# reports of other runs, which the README's commands make before it. test_readme.py checks that the README still
# runs them.
COVERED_BY_README = {"01_tls_overhead.ipynb": "secoverhead run tls", "06_cost_calculator.ipynb": "secoverhead run cost"}
# Notebooks that read reports, executed by a test that makes the runs they read first (a fresh clone has none).
READS_REPORTS = {"07_your_questions.ipynb": "tests/integration/test_readme_python.py"}


# The longest files first, so that the workers (make test's second phase) do not end with one of them alone on
# a long file; the order within a file is kept (a notebook's cells run in order). Their seconds in that phase on
# 2026-11-29: 306, 254, 243, 226, 121, 106, 93, 83, 79, 77, 72, 72, 65, 63 (the rest 60 or less). The Makefile
# passes --no-loadscope-reorder: without it xdist sends the files with the most tests first, and these come last.
LONGEST_FIRST = (
    "test_readme.py",
    "test_faults.py",
    "test_server_counters.py",
    "test_fleet.py",
    "test_claim_error_rates.py",
    "test_stalls.py",
    "test_real_engines_as_users.py",
    "test_users_server.py",
    "test_users_settings.py",
    "test_readme_python.py",
    "02_auth_short_connections.ipynb",
    "test_run_that_counts.py",
    "test_tool_environments.py",
    "test_signals.py",
    "05_audit_comparison.ipynb",
)


def pytest_collection_modifyitems(config, items) -> None:
    keep, skip = [], []
    for item in items:
        (skip if Path(str(item.fspath)).name in COVERED_BY_README | READS_REPORTS else keep).append(item)
    if skip:
        config.hook.pytest_deselected(items=skip)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items[:] = sorted(keep, key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))
