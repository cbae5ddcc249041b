"""The cost calculator on the reports of a real smoke run: nginx's full handshakes measured by the HTTPS study,
then priced by the calculator, which must agree with what the study measured, and scale with the rate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from secoverhead import sizing
from secoverhead.measurement.results import ResultStore

pytestmark = [pytest.mark.integration, pytest.mark.slow]
FULL = "TLS 1.2 full, RSA"


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cost") / "reports"
    exe = str(Path(sys.executable).with_name("secoverhead"))
    res = subprocess.run(
        [exe, "run", "https", "--reports", str(root), "-p", "arms", f'[HTTP, "{FULL}"]', "-p", "repetitions", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return root


def _inputs(root: Path, rate: float) -> dict:
    return dict(
        features=["https"],
        reports_dir=str(root),
        tls_version="1.2",
        https_requests_per_s=rate,
        https_new_share=1.0,
        https_resumed_share=0.0,
    )


def test_the_handshake_cost_is_what_the_https_study_measured(reports):
    calc = sizing.calculate(**_inputs(reports, 1000.0))
    line = calc.line("https_full")
    run = calc.book.sources["https"].run_dir
    runs = ResultStore(run / "results", "https").runs()
    med = runs.groupby("arm")["server_cpu_us_per_op"].median()
    measured_extra = med[FULL] - med["HTTP"]  # the study's own figure: nginx CPU per full handshake over HTTP
    assert measured_extra > 0
    assert line.measured_us.lo <= measured_extra <= line.measured_us.hi, (measured_extra, line.measured_us)
    assert line.us == line.measured_us  # no machine of the user's given: the measuring machine's costs
    # cores = rate x cost: 1,000 handshakes/s at the measured extra
    assert line.cores.point == pytest.approx(1000 * line.measured_us.point / 1e6)
    # and the whole per-request cost of a full handshake beside it is what nginx spent per request in that arm
    per_request = calc.book.level("https", "https", FULL, "server_cpu_us_per_op", 0.95)[0]
    assert per_request.point == pytest.approx(float(np.mean(runs[runs["arm"] == FULL]["server_cpu_us_per_op"])))


def test_doubling_a_rate_doubles_the_cores(reports):
    one = sizing.calculate(**_inputs(reports, 1500.0)).totals.server
    two = sizing.calculate(**_inputs(reports, 3000.0)).totals.server
    assert two.point == pytest.approx(2 * one.point) and two.lo == pytest.approx(2 * one.lo)
    assert two.hi == pytest.approx(2 * one.hi)


def test_the_calculator_report_through_the_pipeline(reports):
    exe = str(Path(sys.executable).with_name("secoverhead"))
    args = [
        "-p",
        "features",
        "[https]",
        "-p",
        "tls_version",
        "1.2",
        "-p",
        "https_new_share",
        "1",
        "-p",
        "https_resumed_share",
        "0",
        "-p",
        "cores",
        "8",
    ]
    res = subprocess.run(
        [exe, "run", "cost", "--reports", str(reports), *args], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]
    run = (reports / "cost" / "latest").resolve()
    data = json.loads((run / "results" / "cost.json").read_text())
    assert data["headline"][0].startswith("Serving HTTPS (TLS 1.2, RSA-2048) at 3,000 requests/s")
    assert "of your 8 cores" in data["headline"][-1]
    assert "  Serving HTTPS (TLS 1.2, RSA-2048) at 3,000 requests/s" in res.stdout  # the answer, on the terminal
    assert not re.search(r"object at 0x|<[\w.]+ object>", res.stdout + res.stderr), res.stderr[-2000:]
    html = (run / "report.html").read_text()
    assert "What it costs" in html and "Beside the rules of thumb" in html and "Serving HTTPS" in html
    assert "In all," in (reports / "index.html").read_text()  # the index opens with it too
