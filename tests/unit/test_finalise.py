"""Finalising a run never turns one outcome into two: a `latest` that is a folder is left alone and said, a
reports folder whose study entry is a file is refused before anything starts, a run.json that cannot be replaced
is rewritten in the room reserved for it, and signals during finalisation wait for it to end."""

from __future__ import annotations

import json
import signal
from types import SimpleNamespace

import pytest

from secoverhead.app import pipeline, record
from secoverhead.core import signals
from secoverhead.core.errors import ConfigError
from secoverhead.core.files import write_in_place
from tests.records import run_record


def _finalise(run_dir, status="ok", params_name="x"):
    study = SimpleNamespace(title="t")
    files = [f"papermill-params/tls/{params_name.split('+')[0]}.yaml"]  # the first file names the scale
    fields = {"study": "tls", "params_name": params_name, "params_files": files, "status": "running"}
    rec = record.ReportRecord(run_dir, run_record(fields))
    rec.write(reserve=True)
    run = pipeline.ClaimedRun(run_dir, SimpleNamespace(), [], "")
    ending = record.Ending(status)
    pipeline.finalise(run, study, rec, ending)
    return ending.status, ending.error


def test_a_latest_that_is_a_folder_is_left_alone_and_the_run_keeps_its_status(tmp_path, capsys):
    (tmp_path / "tls" / "latest").mkdir(parents=True)
    run_dir = tmp_path / "tls" / "run1"
    run_dir.mkdir()
    assert _finalise(run_dir) == ("ok", None)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "ok"
    assert (tmp_path / "tls" / "latest").is_dir() and "latest not updated" in capsys.readouterr().err


def test_latest_names_the_run_that_counts_whatever_comes_after(tmp_path):
    """The newest that finished ok, of the largest scale: a failed run and a smoke run never take it over."""
    study = tmp_path / "tls"

    def run(name, status, scale):
        (study / name).mkdir(parents=True)
        _finalise(study / name, status=status, params_name=f"{scale}+run_seconds")
        return (study / "latest").resolve() if (study / "latest").is_symlink() else None

    assert run("run1", "failed", "quick") is None  # nothing finished: no latest
    assert run("run2", "ok", "smoke") == (study / "run2").resolve()
    assert run("run3", "ok", "quick") == (study / "run3").resolve()
    assert run("run4", "ok", "smoke") == (study / "run3").resolve()
    assert run("run5", "failed", "full") == (study / "run3").resolve()
    assert run("run6", "ok", "quick") == (study / "run6").resolve()


def test_a_study_folder_that_is_a_file_is_refused_before_anything_starts(tmp_path):
    (tmp_path / "tls").write_text("not a folder")
    with pytest.raises(ConfigError, match="tls is a file"):
        pipeline.check_reports_root(tmp_path)


def test_run_json_is_rewritten_in_place_when_it_cannot_be_replaced(tmp_path, monkeypatch):
    record.write_record(tmp_path / "run.json", {"status": "running", "parameters": {"x": 1}}, reserve=True)
    reserved = (tmp_path / "run.json").stat().st_size
    assert reserved >= record.RUN_JSON_RESERVE

    def no_new_files(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(record, "atomic_write_bytes", no_new_files)
    record.write_record(tmp_path / "run.json", {"status": "failed", "error": "disk full"})
    assert json.loads((tmp_path / "run.json").read_text()) == {"status": "failed", "error": "disk full"}
    with pytest.raises(OSError):
        write_in_place(tmp_path / "run.json", b" " * (reserved + 1))  # never more than the room it has


def test_a_signal_during_finalisation_waits_for_it_and_then_ends_the_run():
    old = signals.install()
    try:
        with pytest.raises(signals.Terminated) as caught, signals.deferred():
            signal.raise_signal(signal.SIGHUP)
            done = True  # reached: the signal did not interrupt the block
        assert done and caught.value.signum == signal.SIGHUP and caught.value.exit_code == 129
    finally:
        signals.restore(old)


def test_run_json_names_each_experiments_server_builds_once(tmp_path):
    """Every number names its server: run.json lists the builds each experiment's metadata recorded, one entry per
    distinct build (two certificates on one build are one entry), and an unreadable metadata file is skipped."""
    run_dir = tmp_path / "tls" / "run1"
    one = {"build": "mongod 4.2", "version": "4.2.6", "openssl": {"running": "OpenSSL 1.1.1q"}}
    meta = {"servers": {"a rsa": one, "a ecdsa": one | {"cert_type": "ecdsa"}, "b": {"build": "MySQL 8.0"}}}
    (run_dir / "results" / "tls-x").mkdir(parents=True)
    (run_dir / "results" / "tls-x" / "metadata.json").write_text(json.dumps(meta))
    (run_dir / "results" / "tls-y").mkdir()
    (run_dir / "results" / "tls-y" / "metadata.json").write_text("{not json")
    assert _finalise(run_dir) == ("ok", None)
    recorded = json.loads((run_dir / "run.json").read_text())["servers"]
    assert recorded == {
        "tls-x": [
            {"build": "mongod 4.2", "version": "4.2.6", "tls_library": "OpenSSL 1.1.1q"},
            {"build": "MySQL 8.0"},
        ]
    }
