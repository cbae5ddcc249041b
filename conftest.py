"""Test-wide environment, set before any test or notebook kernel starts (kernels inherit it): servers'
private directories under one base that the suite checks for leftovers, and notebook results in a scratch
directory rather than the checkout, and one shared machine-speed calibration."""

import os
import sys
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


# The tests that read a measured figure (marked quiet) need the machine to themselves: another secoverhead run here
# (a `make reports` beside `make test`) fills both cores for minutes, and a 1-ms link then measures 1.4 ms. They
# wait for it to end, at most this long, saying so; what they measure is then this machine's, not a neighbour's.
QUIET_WAIT_S = 45 * 60


def _ancestors(pid: int) -> set[int]:
    """A process and its ancestors: a run a test starts is this session's descendant (kernels start sessions of
    their own, but stay children)."""
    chain = set()
    while pid > 1 and pid not in chain:
        chain.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return chain


def other_runs() -> list[int]:
    """Pids of secoverhead runs on this machine that this test session did not start."""
    mine, found = os.getpid(), []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not any(a.endswith(b"bin/secoverhead") or a == b"secoverhead.app.cli" for a in argv) or b"run" not in argv:
            continue
        if mine not in _ancestors(int(proc.name)):
            found.append(int(proc.name))
    return found


def pytest_collection_finish(session) -> None:
    import time

    if not any(item.get_closest_marker("quiet") for item in session.items):
        return
    deadline, said = time.monotonic() + QUIET_WAIT_S, False
    while (others := other_runs()) and time.monotonic() < deadline:
        if not said:
            say = session.config.pluginmanager.get_plugin("terminalreporter")
            line = f"waiting for another secoverhead run here (pid {others[0]}) to end: these read measured figures"
            say.write_line(line) if say is not None else print(line, file=sys.stderr)
            said = True
        time.sleep(5)


def pytest_collection_modifyitems(config, items) -> None:
    keep, skip = [], []
    for item in items:
        (skip if Path(str(item.fspath)).name in COVERED_BY_README | READS_REPORTS else keep).append(item)
    if skip:
        config.hook.pytest_deselected(items=skip)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items[:] = sorted(keep, key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))
