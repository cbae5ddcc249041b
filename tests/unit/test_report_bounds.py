"""A report is read only inside itself, and results go only where the project may write: a run folder whose files
link out of it is refused by every command that reads one run (pdf, compare, load, --resume, a notebook's replay)
and skipped, with its name, by those that read many (index, load of a study); a papermill or JupyterLab run refuses
an output_dir of other files and a params_from that is not a run.json, in one line, before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from secoverhead.core.errors import ConfigError
from secoverhead.studies import STUDIES
from tests.records import run_json

EXE = str(Path(sys.executable).with_name("secoverhead"))
SENTINEL = "sentinel-outside-the-report-2f9c"


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = os.environ.copy()
    env.pop("PYTEST_CURRENT_TEST", None)
    return subprocess.run([EXE, *args], env=env, capture_output=True, text=True, timeout=300)


def _run(root: Path, name: str) -> Path:
    d = root / "tls" / name
    (d / "results").mkdir(parents=True)
    (d / "run.json").write_text(run_json({"study": "tls", "status": "ok", "params_name": "smoke", "parameters": {}}))
    (d / "report.html").write_text("<html><body>the report</body></html>")
    return d


@pytest.fixture
def outside(tmp_path) -> Path:
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(f"root:{SENTINEL}:19000:0:99999:7:::\n")
    return secret


def test_pdf_refuses_a_report_html_that_links_out_and_prints_nothing(tmp_path, outside):
    run = _run(tmp_path / "reports", "20261201T000000Z-vm-smoke")
    (run / "report.html").unlink()
    (run / "report.html").symlink_to(outside)
    res = _cli("pdf", str(run))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "report.html is a link that leads out of the run folder" in res.stderr
    assert not (run / "report.pdf").exists() and SENTINEL not in res.stdout + res.stderr


@pytest.mark.parametrize("link", ["run.json", "results/verdicts.json", "results/tls"])
def test_compare_and_resume_refuse_and_index_names_a_run_with_a_link_out(tmp_path, outside, link):
    root = tmp_path / "reports"
    good = _run(root, "20261201T000000Z-vm-smoke")
    bad = _run(root, "20261202T000000Z-vm-smoke")
    target = bad / link
    if target.exists():
        target.unlink()
    target.symlink_to(outside.parent if link == "results/tls" else outside)
    for args in (("compare", str(good), str(bad)), ("run", "--resume", str(bad), "--reports", str(root))):
        res = _cli(*args)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert "leads out of the run folder" in res.stderr or "no readable run.json" in res.stderr, res.stderr
    res = _cli("index", "--reports", str(root))
    assert res.returncode == 0, res.stderr[-2000:]
    page = (root / "index.html").read_text()
    assert f"{bad.name}/{link} (a link out of its run folder)" in page and SENTINEL not in page


def test_load_refuses_one_run_and_skips_it_among_many(tmp_path, outside, monkeypatch):
    import secoverhead

    root = tmp_path / "reports"
    _run(root, "20261201T000000Z-vm-smoke")
    bad = _run(root, "20261202T000000Z-vm-smoke")
    (bad / "results" / "verdicts.json").symlink_to(outside)
    with pytest.raises(ConfigError, match="leads out of the run folder"):
        secoverhead.load(bad)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = secoverhead.load("tls", reports=root)
    assert [d.name for d in got.dirs] == ["20261201T000000Z-vm-smoke"]
    assert any("a link out of its run folder" in str(w.message) for w in seen)


def test_a_notebook_run_again_replays_only_what_lies_inside_its_report(tmp_path, outside):
    from secoverhead.studies.protocol.runner import replay

    run = _run(tmp_path / "reports", "20261201T000000Z-vm-smoke")
    (run / "results").rmdir()
    (run / "results").symlink_to(outside.parent)
    cls = STUDIES["tls"].Params
    p = cls.from_namespace({"output_dir": str(run / "results"), "params_from": str(run / "run.json")})
    with pytest.raises(ConfigError, match="is not inside the report it replays"):
        replay(p, "tls", ["MongoDB"])


@pytest.mark.parametrize(
    ("namespace", "says"),
    [
        ({"output_dir": "/etc"}, "holds files that are not this project's results"),
        ({"output_dir": "/etc/hostname"}, "is not a folder"),
        ({"params_from": "/etc/hostname"}, r"is not a run.json of this project \(not JSON\)"),
        ({"params_from": "/no/such/run.json"}, "cannot be read"),
        ({"params_from": "/dev/zero"}, "cannot be read"),
    ],
)
def test_papermill_and_jupyterlab_refuse_an_output_dir_or_params_from_not_the_projects(namespace, says):
    with pytest.raises(ConfigError, match=says) as err:
        STUDIES["tls"].Params.from_namespace(namespace)
    assert "\n" not in str(err.value)


def test_a_run_json_of_another_study_is_refused(tmp_path):
    rj = tmp_path / "run.json"
    rj.write_text(run_json({"study": "audit", "parameters": {}}))
    with pytest.raises(ConfigError, match=r"a run\.json of study 'audit', not of 'tls'"):
        STUDIES["tls"].Params.from_namespace({"params_from": str(rj)})


def test_results_go_to_a_new_or_empty_folder_or_one_of_the_projects(tmp_path):
    cls = STUDIES["tls"].Params
    new, empty, theirs = tmp_path / "new", tmp_path / "empty", tmp_path / "theirs"
    empty.mkdir()
    theirs.mkdir()
    (theirs / "notes.txt").write_text("the user's")
    for d in (new, empty):
        p = cls.from_namespace({"output_dir": str(d)})
        assert p.results_dir() == d and (d / ".secoverhead-results").is_file()
        cls.from_namespace({"output_dir": str(d)})  # ours now, with what a run put there: taken again
        (d / "tls").mkdir()
        cls.from_namespace({"output_dir": str(d)})
    with pytest.raises(ConfigError, match=r"not this project's results \(notes.txt\)"):
        cls.from_namespace({"output_dir": str(theirs)})
