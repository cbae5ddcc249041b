"""`secoverhead.load`: finished runs in one call, read-only, each row naming its run and scale."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import secoverhead
from secoverhead.core.errors import ConfigError
from secoverhead.measurement.results import ResultStore, RunRecord
from tests.records import run_json


def make_run(reports, study: str, name: str, params_name: str, tps: float) -> None:
    d = reports / study / name
    store = ResultStore(d / "results", f"{study}-x")
    server = {"engine": "MariaDB", "build": "MariaDB", "version": "10.11.19", "version_ssl_library": "OpenSSL 3.0.19"}
    store.write_metadata({"study": study, "servers": {"db off": server}})
    for i, arm in enumerate(("off", "on")):
        store.append(RunRecord(i, arm, {"threads": 16}, 0, 0, False, "t0", "t1", 1.0,
                               metrics={"tps": tps * (1 - 0.1 * i)}))  # fmt: skip
    files = [f"papermill-params/{study}/{stem}.yaml" for stem in params_name.split("+")]  # as the pipeline records
    record = {"study": study, "params_name": params_name, "params_files": files, "status": "ok"}
    (d / "run.json").write_text(run_json(record))
    verdict = {"id": "4c16g:high-concurrency-loss", "claim": "c", "verdict": "reproduced", "ratio": 0.9,
               "part": "4c16g", "server": {"build": "MariaDB", "version": "10.11.19"}}  # fmt: skip
    (d / "verdicts.json").write_text(json.dumps({"verdicts": [verdict]}))


def test_a_study_loads_every_run_once_with_its_scale_and_nothing_is_written(tmp_path):
    make_run(tmp_path, "tde", "2026-11-26-quick", "quick", 1000.0)
    make_run(tmp_path, "tde", "2026-11-26-smoke", "smoke+seed", 900.0)
    (tmp_path / "tde" / "latest").symlink_to(tmp_path / "tde" / "2026-11-26-quick")
    before = sorted(p for p in tmp_path.rglob("*"))
    r = secoverhead.load("tde", reports=tmp_path)
    assert sorted(p for p in tmp_path.rglob("*")) == before  # read-only: no folder created
    assert set(r.runs["run"]) == {"2026-11-26-quick", "2026-11-26-smoke"} and len(r.runs) == 4
    assert set(r.runs["scale"]) == {"quick", "smoke"} and {"arm", "threads", "tps", "experiment"} <= set(r.runs)
    assert list(r.verdicts["verdict"]) == ["reproduced", "reproduced"] and "scale" in r.verdicts
    # every number names the server build that produced it
    assert set(r.runs["server_build"]) == {"MariaDB"} and set(r.runs["server_tls_library"]) == {"OpenSSL 3.0.19"}
    assert set(r.verdicts["server_version"]) == {"10.11.19"} and set(r.verdicts["part"]) == {"4c16g"}
    quick = secoverhead.load("tde", reports=tmp_path, scale="quick")
    assert set(quick.runs["scale"]) == {"quick"} and len(quick.verdicts) == 1
    one = secoverhead.load(tmp_path / "tde" / "2026-11-26-smoke")
    loss = one.runs.pivot_table(index="threads", columns="arm", values="tps")
    assert float(1 - loss["on"].iloc[0] / loss["off"].iloc[0]) == pytest.approx(0.1)
    assert isinstance(r.samples(), pd.DataFrame)


def test_each_judged_cell_loads_with_its_interval_quantity_and_unit_and_a_retake_is_marked(tmp_path):
    """TDE's loss per workload as the page prints it, in one line; a run taken again names the run it repeats."""
    make_run(tmp_path, "tde", "r1", "quick", 1000.0)
    d = tmp_path / "tde" / "r1"
    judged = {"effect": "TPS loss", "quantity": "loss", "unit": "%", "cells": ["oltp_read_only", "oltp_write_only"],
              "intervals": [[1.5, 4.0], [-2.0, 9.5]]}  # fmt: skip
    verdict = json.loads((d / "verdicts.json").read_text())["verdicts"][0] | {"judged": [judged]}
    (d / "verdicts.json").write_text(json.dumps({"verdicts": [verdict]}))
    store = ResultStore(d / "results", "tde-x")
    store.append(RunRecord(2, "on", {"threads": 16}, 0, 0, False, "t0", "t1", 1.0, metrics={"tps": 880.0},
                           info={"retake_of": 1}))  # fmt: skip
    r = secoverhead.load("tde", reports=tmp_path)
    cells = r.cells.set_index("cell")
    assert list(cells.index) == ["oltp_read_only", "oltp_write_only"] and set(cells.unit) == {"%"}
    assert cells.loc["oltp_write_only", ["ci_low", "ci_high"]].tolist() == [-2.0, 9.5]
    assert cells.loc["oltp_read_only", "shown"] == "+1.5 % to +4.0 %" and set(cells.quantity) == {"loss"}
    assert set(cells.verdict) == {"reproduced"} and set(cells.id) == {"4c16g:high-concurrency-loss"}
    assert r.runs.retake_of.isna().sum() == 2 and r.runs.set_index("run_id").retake_of[2] == 1


def test_what_is_neither_a_run_nor_a_study_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="neither a run directory"):
        secoverhead.load(tmp_path / "nothing")


def test_what_load_cannot_read_is_said_and_a_link_out_of_the_run_is_not_followed(tmp_path):
    make_run(tmp_path, "tde", "2026-11-26-quick", "quick", 1000.0)
    big = tmp_path / "tde" / "2026-11-27-big"
    make_run(tmp_path, "tde", big.name, "quick", 1000.0)
    (big / "run.json").write_text(run_json({"study": "tde", "pad": "x" * (5 << 20)}))
    elsewhere = tmp_path / "elsewhere"
    make_run(tmp_path, "tde", "outside-run", "quick", 5.0)  # another run's data, linked into a third run
    (tmp_path / "tde" / "outside-run").rename(elsewhere)
    linked = tmp_path / "tde" / "2026-11-28-linked"
    make_run(tmp_path, "tde", linked.name, "quick", 1000.0)
    (linked / "results" / "tde-x" / "runs").rename(linked / "results" / "tde-x" / "runs.old")
    (linked / "results" / "tde-x" / "runs").symlink_to(elsewhere / "results" / "tde-x" / "runs")
    with pytest.warns(UserWarning) as said:
        r = secoverhead.load("tde", reports=tmp_path)
    text = str(said[0].message)
    assert "2026-11-27-big/run.json (larger than 4 MB)" in text
    assert "2026-11-28-linked/results/tde-x/runs (a link out of its run folder)" in text
    assert set(r.runs["run"]) == {"2026-11-26-quick"} and 5.0 not in set(r.runs["tps"])


def test_load_finds_the_reports_from_anywhere_and_says_when_there_are_none(tmp_path, monkeypatch):
    """From notebooks/ (where `make lab` opens JupyterLab) a study loads from $SECOVERHEAD_REPORTS; a study with
    no report there is one clear error, never empty frames; `latest` reads as the run it names."""
    make_run(tmp_path, "tde", "2026-11-26-quick", "quick", 1000.0)
    (tmp_path / "tde" / "latest").symlink_to(tmp_path / "tde" / "2026-11-26-quick")
    elsewhere = tmp_path / "notebooks"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("SECOVERHEAD_REPORTS", str(tmp_path))
    assert set(secoverhead.load("tde").runs["run"]) == {"2026-11-26-quick"}
    assert set(secoverhead.load(tmp_path / "tde" / "latest").runs["run"]) == {"2026-11-26-quick"}
    with pytest.raises(ConfigError, match=r"no audit report under .*SECOVERHEAD_REPORTS"):
        secoverhead.load("audit")
    monkeypatch.delenv("SECOVERHEAD_REPORTS")
    from secoverhead.core import paths

    assert paths.reports_root() == paths.ROOT / "reports"  # no ./reports here: the checkout's own
