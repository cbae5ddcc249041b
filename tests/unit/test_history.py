"""The history across runs, from report directories written as the pipeline writes them: one series per claim
(per cell where a claim reads several), a noisy machine kept in one speed class and another machine in its own,
a step found with its direction, a mark of the claim covering its cells."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from secoverhead.reporting import series
from secoverhead.suite import expected, history


def _verdicts(ratio: float, loss: tuple[float, float]) -> dict:
    return {
        "verdicts": [
            {
                "id": "setup",
                "claim": "TLS makes set-up slower",
                "verdict": "reproduced",
                "ratio": ratio,
                "ci_low": ratio * 0.98,
                "ci_high": ratio / 0.98,
                "registered": {"metric": "connect_ms"},
            },
            {
                "id": "4c16g:high-concurrency-loss",
                "claim": "under 5 %",
                "verdict": "reproduced",
                "ratio": None,
                "registered": {"metric": "tps"},
                "judged": [
                    {
                        "effect": "TPS loss at the most threads, %",
                        "intervals": [list(loss), [-1.0, 1.0]],
                        "cells": ["write x16", "read x16"],
                    }
                ],
            },
            {
                "id": "cpu-pp",
                "claim": "CPU rises a few points",
                "verdict": "inconclusive",
                "ratio": None,
                "registered": {"metric": "server_cpu_pct_of_limit"},
                "judged": [{"effect": "CPU utilisation on minus off, percentage points", "intervals": [[1, 2]]}],
            },
        ]
    }


def _run(root: Path, k: int, rsa_us: float, ratio: float, loss: tuple[float, float], scale="quick", status="ok") -> str:
    name = f"20261101T{k:02d}0000Z-vm-{scale}"
    d = root / "tde" / name
    (d / "results").mkdir(parents=True)
    meta = {"study": "tde", "started": f"2026-11-01T{k:02d}:00:00Z", "environment": {}, "status": status}
    meta["params_name"] = scale
    (d / "run.json").write_text(json.dumps(meta))
    (d / "calibration.json").write_text(json.dumps({"rsa2048_sign_us": rsa_us}))
    (d / "results" / "verdicts.json").write_text(json.dumps(_verdicts(ratio, loss)))
    return name


def test_a_noisy_machine_stays_one_class_and_a_machine_twice_as_slow_is_another():
    noisy = [724, 1017, 836, 742, 990, 760]
    assert len(set(series.speed_classes(noisy))) == 1
    assert len(set(series.speed_classes([*noisy, 2100, 2300]))) == 2
    assert series.speed_classes([None, "x", -1]) == ["unknown"] * 3
    # the fixed grid the classes replaced split these (a boundary between 837 and 1,171 us at ~990)
    assert len({round(math.log(x, 1.4)) for x in noisy}) > 1


def test_cells_are_series_of_their_own_a_loss_read_as_its_tps_ratio_and_pp_left_without_one():
    v = _verdicts(2.0, (2.0, 4.0))["verdicts"]
    assert series.series_of(v[0]) == [("setup", "TLS makes set-up slower", 2.0, 2.0 * 0.98, 2.0 / 0.98)]
    cells = series.series_of(v[1])
    claim = "4c16g:high-concurrency-loss"
    assert [c[0] for c in cells] == [f"{claim} [write x16]", f"{claim} [read x16]"]
    _, _, mid, lo, hi = cells[0]
    assert (lo, hi) == (0.96, 0.98) and math.isclose(mid, math.sqrt(0.96 * 0.98))
    assert series.series_of(v[2]) == [("cpu-pp", "CPU rises a few points", None, None, None)]


def test_a_step_in_one_cell_is_found_worse_in_its_series_alone_and_a_mark_covers_it(tmp_path):
    rng = np.random.default_rng(7)
    runs = []
    for k in range(24):
        loss = 2.0 if k < 14 else 12.0  # the write cell's TPS loss steps from 2 % to 12 % at run 14
        noise = rng.normal(0, 0.3)
        runs.append(_run(tmp_path, k, 800 * (1 + 0.15 * rng.uniform(-1, 1)), 2.0, (loss - 1 + noise, loss + 1 + noise)))
    df = series.collect(tmp_path, "tde")
    assert df["speed class"].nunique() == 1 and df["run"].nunique() == 24
    found = history.changes(df, tmp_path)
    assert [(c.claim_id, c.direction) for c in found] == [("4c16g:high-concurrency-loss [write x16]", "worse")]
    assert abs(runs.index(found[0].run) - 14) <= 2
    expected.mark(tmp_path, "tde", found[0].run, "moved to a slower disk", claim="4c16g:high-concurrency-loss")
    assert history.changes(df, tmp_path)[0].expected == "moved to a slower disk"
    out = history.export_csv(df, tmp_path / "history" / "tde.csv")
    assert "write x16" in out.read_text()


def test_smoke_runs_are_a_series_of_their_own_and_unfinished_runs_are_no_point(tmp_path):
    for k in range(8):
        _run(tmp_path, k, 800, 2.0, (1.0, 3.0))
    for k in range(8, 14):  # smoke runs: a different scale, wider and elsewhere; never a change of the quick series
        _run(tmp_path, k, 800, 5.0, (10.0, 20.0), scale="smoke")
    _run(tmp_path, 14, 800, 9.0, (40.0, 50.0), status="failed")
    _run(tmp_path, 15, 800, 9.0, (40.0, 50.0), status="interrupted")
    df = series.collect(tmp_path, "tde")
    assert df["run"].nunique() == 14 and set(df["scale"]) == {"quick", "smoke"}
    assert history.changes(df, tmp_path) == []


def test_a_text_cell_a_spreadsheet_would_run_is_written_as_text(tmp_path):
    targets = ["=HYPERLINK(1)", "@SUM(A1)", "+1", "prod"]
    df = pd.DataFrame({"target": targets, "ratio": [-1.5, 1.0, 2.0, 3.0]})
    out = history.export_csv(df, tmp_path / "h.csv").read_text().splitlines()
    assert out[1].startswith("'=HYPERLINK") and out[2].startswith("'@SUM") and out[3].startswith("'+1")
    assert out[4] == "prod,3.0" and out[1].endswith(",-1.5")  # numbers as they are


def test_a_mark_names_a_run_of_its_own_study_by_folder(tmp_path):
    """`expect tls <an audit run>` is refused: by a path that leaves tls/, or by a folder whose run.json names
    another study; nothing is written."""
    from secoverhead.core.errors import ConfigError

    audit = tmp_path / "audit" / "20261101T000000Z-a"
    audit.mkdir(parents=True)
    (audit / "run.json").write_text(json.dumps({"study": "audit", "status": "ok"}))
    mislaid = tmp_path / "tls" / "20261101T000000Z-b"  # an audit run copied into tls/
    mislaid.mkdir(parents=True)
    (mislaid / "run.json").write_text(json.dumps({"study": "audit", "status": "ok"}))
    for run in (str(audit), "../audit/20261101T000000Z-a", mislaid.name, ".."):
        with pytest.raises(ConfigError):
            expected.mark(tmp_path, "tls", run, "why")
    assert not (tmp_path / expected.FILE).exists()
    (mislaid / "run.json").write_text(json.dumps({"study": "tls", "status": "ok"}))
    assert expected.mark(tmp_path, "tls", mislaid.name, "why").exists()
