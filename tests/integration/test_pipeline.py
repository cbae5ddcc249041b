"""The report pipeline: bad input fails before any kernel starts; a run produces a versioned report
directory with notebook, HTML, results and run.json; secrets never reach any of it; HTML renders offline."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from secoverhead.app.cli import main
from secoverhead.app.pipeline import prepare, run_study
from secoverhead.core.secrets import EMBEDDED_PASSWORD_ENV
from secoverhead.host import leaks
from secoverhead.host.process import free_port
from secoverhead.reporting import browser
from secoverhead.reporting.render import external_references
from secoverhead.servers import MariaDBServer
from secoverhead.studies import STUDIES

pytestmark = pytest.mark.integration
TINY = Path(__file__).parents[1] / "fixtures" / "tls_tiny.yaml"
SENTINEL = "Sentinel-Pw-4711!"


def test_list_names_every_study(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for study in STUDIES:
        assert study in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "nosuchstudy"], "unknown study 'nosuchstudy'"),
        (["run", "tls", "-p", "no_such_param", "1"], "unknown parameter 'no_such_param'"),
        (["run", "tls", "-p", "repetitions", "many"], "must be an integer"),
        (["run", "tls", "-p", "mongo_enabled", "3"], "must be true or false"),
        (["run", "tls", "-f", "/nonexistent/params.yaml"], "does not exist"),
        (["run", "tls", "--scale", "enormous"], "no scale 'enormous'"),
        (["run", "tls", "--scale", "quick", "-f", "/nonexistent/x.yaml"], "does not exist"),
        (["run", "--resume", "/nonexistent/run"], "run.json"),
        (["run", "tls", "--resume", "/nonexistent/run"], "give no study"),
        (["run", "tls", "-p", "mysql_ca_file", "NOTACERT"], "no usable certificate"),
        (["run", "--all", "-p", "seed", "1"], "not --all"),
        (["run"], "name one study or --all"),
        (["run", "tls", "-p", "mysql_password", "hunter2"], "would put a secret in a parameter"),
        (["run", "tls", "-p", "mysql_password_env", "SECOVERHEAD_UNSET_VAR"], "is not set"),
        (["run", "tls", "-p", "mysql_ca_file", "/nonexistent/ca.pem"], "does not exist"),
        (
            [
                "run",
                "tls",
                "-p",
                "mysql_host",
                "127.0.0.1",
                "-p",
                "mysql_port",
                "PORT",
                "-p",
                "mysql_user",
                "u",
                "-p",
                "mysql_password_env",
                "SECOVERHEAD_TEST_LONG_PW",
            ],
            "cannot reach",
        ),
        (["run", "tls", "-p", "mongo_uri", "mongodb://u:pw@127.0.0.1:1/"], "must not hold credentials"),
    ],
)
def test_bad_input_is_refused_before_any_kernel_starts(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.setenv("SECOVERHEAD_TEST_LONG_PW", "Long-Unusual-Pw-4711")
    notacert = tmp_path / "notacert.pem"
    notacert.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    args = [str(free_port()) if a == "PORT" else str(notacert) if a == "NOTACERT" else a for a in args]
    tmp_path = tmp_path / "reports"
    assert main([*args, "--reports", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err  # one line
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # no run directory, so no kernel was started


@pytest.fixture(scope="module")
def sentinel_db():
    old = os.environ.get(EMBEDDED_PASSWORD_ENV)
    os.environ[EMBEDDED_PASSWORD_ENV] = SENTINEL  # this server's bench password is the sentinel
    try:
        with MariaDBServer(tls="on") as db:
            yield db
    finally:
        if old is None:
            os.environ.pop(EMBEDDED_PASSWORD_ENV, None)
        else:
            os.environ[EMBEDDED_PASSWORD_ENV] = old


@pytest.fixture(scope="module")
def reports():
    path = Path(tempfile.mkdtemp(prefix="secoverhead-reports-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def sentinel_overrides(db) -> list[tuple[str, str]]:
    """Point the TLS study at db as an external server whose password is the sentinel."""
    e = db.endpoint
    return [
        ("mysql_host", e.host),
        ("mysql_port", str(e.port)),
        ("mysql_user", e.user),
        ("mysql_password_env", "SECOVERHEAD_TEST_SENTINEL_PW"),
        ("mysql_ca_file", str(e.ca_file)),
    ]


def cli_args(db) -> list[str]:
    """The same, as a user types it."""
    return [x for k, v in sentinel_overrides(db) for x in ("-p", k, v)]


@pytest.fixture(scope="module")
def good_run(sentinel_db, reports):
    assert sentinel_db.endpoint.password.reveal() == SENTINEL
    os.environ["SECOVERHEAD_TEST_SENTINEL_PW"] = SENTINEL
    return run_study(prepare("tls", files=[TINY], overrides=sentinel_overrides(sentinel_db)), reports_root=reports)


def test_a_run_produces_a_versioned_report(good_run, reports):
    assert good_run.ok, good_run.error
    d = good_run.run_dir
    assert d.parent == reports / "tls" and d.name.endswith("-tls_tiny+mysql_host")
    assert socket.gethostname().split(".")[0][:8] in d.name  # run directories carry the host
    for name in (
        "report.ipynb",
        "report.html",
        "run.json",
        "run.log",
        "results/verdicts.json",
        "results/tls-mysql/results.parquet",
        "results/tls-mysql/metadata.json",
        "calibration.json",
        "between_runs.json",  # what was learned before the run (nothing here: no report before it)
    ):
        assert (d / name).exists(), name
    assert json.loads((d / "between_runs.json").read_text())["terms"] == []
    meta = json.loads((d / "run.json").read_text())
    assert meta["status"] == "ok" and meta["duration_s"] > 0
    assert meta["environment"]["tools"]["mariadbd"] and meta["parameters"]["mysql_password_env"]
    assert (reports / "tls" / "latest").resolve() == d.resolve()


def test_run_log_holds_what_cells_print_not_object_reprs_or_kernel_warnings(good_run):
    log = (good_run.run_dir / "run.log").read_text()
    assert "Executing Cell" in log  # the log is there, cell by cell
    assert not re.search(r"<[\w.]+ object>|at 0x[0-9a-f]+>|<Figure size", log), log[-2000:]
    assert "without encryption" not in log and "Alternative text" not in log
    assert log.count("Input Notebook") == 1  # one line per event
    progress = [json.loads(p.read_text()) for p in good_run.run_dir.glob("results/*/progress.json")]
    assert progress and all(p["final"] and p["done"] == p["planned"] for p in progress)


def _kernels_of(pid: int) -> list[str]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and "secoverhead.app.kernel" in cmd:
            found.append(f"{stat.parent.name}: {cmd}")
    return found


def test_the_runs_kernel_ends_with_the_run(good_run):
    """The kernel is started on our own kernel manager (IPC transport), which papermill does not stop."""
    assert _kernels_of(os.getpid()) == []


def test_no_secret_reaches_any_artefact(good_run):
    for path in good_run.run_dir.rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    assert leaks.scan(good_run.run_dir, [SENTINEL], fix=False) == []


def test_runs_are_never_overwritten_and_latest_stays_on_the_run_that_counts(good_run, sentinel_db, reports):
    overrides = [
        *sentinel_overrides(sentinel_db),
        ("mysql_query", "SELECT * FROM no_such_table"),
    ]  # fails in the kernel
    second = run_study(prepare("tls", files=[TINY], overrides=overrides), reports_root=reports)
    assert not second.ok and "no_such_table" in second.error
    assert second.run_dir != good_run.run_dir and good_run.run_dir.exists()
    assert (second.run_dir / "report.ipynb").exists()  # the partial notebook is kept
    meta = json.loads((second.run_dir / "run.json").read_text())
    assert meta["status"] == "failed" and "no_such_table" in meta["error"]
    assert (reports / "tls" / "latest").resolve() == good_run.run_dir.resolve()  # a failed run never counts


def test_cli_exit_code_and_index(good_run, sentinel_db, reports, capsys):
    from secoverhead.suite.index import build_index

    index = build_index(reports).read_text()
    assert good_run.run_dir.name in index and "report.html" in index
    assert "reproduced" in index or "inconclusive" in index  # headline verdicts are shown
    args = ["run", "tls", "-f", str(TINY), *cli_args(sentinel_db), "-p", "mysql_query", "SELECT nope()"]
    assert main([*args, "--reports", str(reports)]) == 1


def test_html_is_conclusions_first_and_renders_offline(good_run, tmp_path):
    html_path = good_run.run_dir / "report.html"
    html = html_path.read_text()
    assert external_references(html) == []
    assert html.index("Conclusions") < html.index("Environment") < html.index("Method")
    assert "import secoverhead" not in html and "from secoverhead" not in html  # --no-input
    shot = tmp_path / "report.png"
    with browser.page() as pg:  # the project's browser: sandboxed, every request but data: URLs blocked, counted
        pg.set_viewport_size({"width": 1200, "height": 2000})
        browser.open_page(pg, html_path)
        pg.screenshot(path=str(shot))
        dom = pg.content()
        assert pg.blocked == []  # renders offline: nothing asked for
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    assert dom.count("<table") >= 4
    assert dom.count('src="data:image/png;base64,') >= 2


def test_a_finished_report_run_again_reads_what_it_recorded_and_writes_nothing(good_run):
    """As JupyterLab runs it: the kernel in the report's folder, the injected paths relative to it; the run is
    not measured again, nothing in the report changes, and the verdicts come from the recorded runs."""
    import nbformat
    from nbclient import NotebookClient

    d = good_run.run_dir
    nb = nbformat.read(d / "report.ipynb", as_version=4)
    (injected,) = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert 'output_dir = "results"' in injected.source and 'params_from = "run.json"' in injected.source
    before = {p: p.stat().st_mtime_ns for p in d.rglob("*") if p.is_file()}
    started = time.monotonic()
    NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(d)}}, timeout=300).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == [] and time.monotonic() - started < 120
    assert {p: p.stat().st_mtime_ns for p in d.rglob("*") if p.is_file()} == before
    text = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    recorded = json.loads((d / "results" / "verdicts.json").read_text())["verdicts"]
    assert recorded and all(v["claim"] in html.unescape(text) for v in recorded)
