"""Which run counts: scale and status read from run.json, the newest ok run of the largest scale chosen."""

from __future__ import annotations

import os

from secoverhead.core import runs
from secoverhead.core.report import Report, read_report, scale_for
from tests.records import run_json, run_record


def _run(study, name, status="ok", params="quick", **extra):
    d = study / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(run_json({"status": status, "params_name": params, **extra}))
    return d


def test_the_scale_is_the_first_parameter_file_when_a_scale_else_the_sets_name_and_schema_2_is_migrated():
    assert scale_for(["papermill-params/tls/quick.yaml", "run_seconds.yaml"], "quick+run_seconds") == "quick"
    assert scale_for(["/home/me/4c16g.yaml"], "4c16g") == "4c16g" and scale_for([], "") == ""
    assert scale_for(["mine/smoke-ish.yaml"], "smoke-ish+x") == "smoke-ish+x"  # a name is never split for it
    old = {"schema": 2, "params_name": "full+seed", "params_files": ["p/tls/full.yaml", "seed.yaml"]}
    assert Report.of(old).scale == "full" and Report.of(old | {"params_files": []}).scale == "full+seed"
    assert Report.of(old | {"schema": 3, "scale": "smoke"}).scale == "smoke"  # 3: the field, whatever the files
    assert Report.of({"schema": 3, "params_name": "quick"}).scale == ""  # never recovered from a name
    assert runs.scale_rank("full") > runs.scale_rank("4c16g") == runs.scale_rank("quick") > runs.scale_rank("smoke")


def test_status_of_a_running_record_whose_owner_is_gone_is_interrupted():
    assert runs.status_of(Report.of(run_record({"status": "running", "owner_pid": os.getpid()}))) == "running"
    assert runs.status_of(Report.of(run_record({"status": "running", "owner_pid": 0}))) == "interrupted"
    assert runs.status_of(None) == "unknown"


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


def _at(hours_from_now: float) -> str:
    import datetime as dt

    when = dt.datetime.now(dt.UTC) + dt.timedelta(hours=hours_from_now)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_age_is_the_recorded_start_not_the_folder_name(tmp_path):
    study = tmp_path / "tls"
    older = _run(study, "20991231T000000Z-copied-in", started=_at(-48))  # a name that sorts first
    newer = _run(study, "20200101T000000Z-renamed", started=_at(-1))
    assert runs.runs_of(study) == [newer, older]
    assert runs.counting(study) == newer


def test_a_run_from_the_future_is_flagged_sorts_last_and_never_counts(tmp_path):
    study = tmp_path / "tls"
    real = [_run(study, f"20261120T00000{i}Z-real", started=_at(-i - 1)) for i in range(2)]
    ahead = _run(study, "20261119T000000Z-ahead", started=_at(+30))  # a host whose clock is a day ahead
    assert runs.from_the_future(read_report(ahead))
    assert not runs.from_the_future(Report.of(run_record({"started": _at(+0.05)})))  # minutes of skew: not the future
    garbage = Report.of(run_record({"started": "garbage"}))
    assert not runs.from_the_future(garbage) and runs.started_at(garbage) is None and runs.started_at(None) is None
    assert runs.runs_of(study) == [*real, ahead]
    assert runs.counting(study) == real[0]


def test_prune_keeps_the_real_newest_and_a_future_stamp_shields_nothing(tmp_path):
    from secoverhead.suite import retention

    study = tmp_path / "tls"
    real = [_run(study, f"2026112{i}T000000Z-real", started=_at(-10 + i)) for i in range(3)]
    _run(study, "20990101T000000Z-ahead", started=_at(+100))
    doomed = retention.plan(tmp_path, keep=1)
    assert real[-1] not in doomed and real[0] in doomed and real[1] in doomed
