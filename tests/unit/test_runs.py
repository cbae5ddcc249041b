"""Which run counts: scale and status read from run.json, the newest ok run of the largest scale chosen."""

from __future__ import annotations

import json
import os

from secoverhead.core import runs


def _run(study, name, status="ok", params="quick", **extra):
    d = study / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"status": status, "params_name": params, **extra}))
    return d


def test_scale_of_reads_the_first_parameter_file():
    assert runs.scale_of("quick+run_seconds") == "quick"
    assert runs.scale_of("smoke") == "smoke"
    assert runs.scale_of("4c16g") == "4c16g"
    assert runs.scale_of(None) == ""
    assert runs.scale_rank("full") > runs.scale_rank("4c16g") == runs.scale_rank("quick") > runs.scale_rank("smoke")


def test_status_of_a_running_record_whose_owner_is_gone_is_interrupted():
    assert runs.status_of({"status": "running", "owner_pid": os.getpid()}) == "running"
    assert runs.status_of({"status": "running", "owner_pid": 0}) == "interrupted"
    assert runs.status_of("not a record") == "unknown"


def test_the_run_that_counts_is_the_newest_ok_of_the_largest_scale(tmp_path):
    study = tmp_path / "tls"
    assert runs.counting(study) is None  # no folder
    _run(study, "20261101T000000Z-a", params="smoke")
    assert runs.counting(study).name == "20261101T000000Z-a"  # only smoke: smoke is the largest there is
    quick = _run(study, "20261102T000000Z-b", params="quick")
    _run(study, "20261103T000000Z-c", params="smoke")
    _run(study, "20261104T000000Z-d", status="failed", params="full")
    _run(study, "20261105T000000Z-e", status="running", params="full", owner_pid=0)
    (study / "latest").symlink_to("20261103T000000Z-c")
    assert runs.counting(study) == quick
    assert runs.describe(quick) == "20261102T000000Z-b (quick)"
    full = _run(study, "20261106T000000Z-f", params="full")
    assert runs.counting(study) == full
    assert [p.name for p in runs.runs_of(study)][:2] == ["20261106T000000Z-f", "20261105T000000Z-e"]


def test_a_corrupt_record_never_counts(tmp_path):
    study = tmp_path / "tls"
    good = _run(study, "20261101T000000Z-a")
    (study / "20261102T000000Z-b").mkdir()
    (study / "20261102T000000Z-b" / "run.json").write_text("{not json")
    assert runs.counting(study) == good
