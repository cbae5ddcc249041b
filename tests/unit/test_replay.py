"""A finished report's notebook run again reads what its run recorded: which runs count as finished, and
remeasure sends a new measurement elsewhere, never into the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from secoverhead.studies import STUDIES
from tests.records import run_json


@pytest.fixture
def report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    return tmp_path


def _params(status, **extra):
    Path("run.json").write_text(run_json({"status": status, "parameters": {}}))
    ns = {"output_dir": "results", "params_from": "run.json", **extra}
    return STUDIES["tls"].Params.from_namespace(ns, study="tls")


@pytest.mark.parametrize("status, replays", [("running", False), ("ok", True), ("failed", True), ("interrupted", True)])
def test_a_run_that_ended_is_read_back_and_the_pipelines_own_run_measures(report, status, replays):
    p = _params(status)
    assert p.replays() is replays and p.output_dir == "results"


def test_remeasure_measures_elsewhere_and_a_notebook_of_no_report_measures(report):
    p = _params("ok", remeasure=True)
    assert not p.replays() and p.output_dir == "" and report not in p.results_dir().resolve().parents
    assert not STUDIES["tls"].Params.from_namespace({}, study="tls").replays()
    (report / "run.json").write_text("{corrupt")
    p = STUDIES["tls"].Params.from_namespace({"output_dir": "results"}, study="tls")
    assert not p.replays()


def test_a_report_with_no_recorded_experiment_says_so(report):
    from secoverhead.core.errors import ConfigError
    from secoverhead.studies.protocol.runner import replay

    with pytest.raises(ConfigError, match="no recorded experiment"):
        replay(_params("ok"), "tls", ["MySQL"])
