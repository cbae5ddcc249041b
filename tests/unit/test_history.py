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
from scipy import stats

from secoverhead.reporting import plots
from secoverhead.series import reports as series
from secoverhead.suite import expected, history
from tests.records import run_json


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
    (d / "run.json").write_text(run_json(meta))
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
    (audit / "run.json").write_text(run_json({"study": "audit", "status": "ok"}))
    mislaid = tmp_path / "tls" / "20261101T000000Z-b"  # an audit run copied into tls/
    mislaid.mkdir(parents=True)
    (mislaid / "run.json").write_text(run_json({"study": "audit", "status": "ok"}))
    for run in (str(audit), "../audit/20261101T000000Z-a", mislaid.name, ".."):
        with pytest.raises(ConfigError):
            expected.mark(tmp_path, "tls", run, "why")
    assert not (tmp_path / expected.FILE).exists()
    (mislaid / "run.json").write_text(run_json({"study": "tls", "status": "ok"}))
    assert expected.mark(tmp_path, "tls", mislaid.name, "why").exists()


def _series_frame(values, *, se=0.02, claim="cpu", series="a", metric="server_cpu_us_per_op", revision=1):
    """One series' reports as history rows: each report's log estimate over its own rounds and its se."""
    rows = [
        {"study": "auth", "run": f"202611{1 + k:02d}T000000Z-{series}", "started": f"2026-11-{1 + k:02d}T00:00:00Z",
         "commit": "", "target": "t", "server": "s", "speed class": "x", "scale": "quick", "claim id": claim,
         "claim": claim, "metric": metric, "revision": revision, "verdict": "inconclusive", "log estimate": v, "se": se,
         "ratio": math.exp(v), "ci low": math.exp(v - 2 * se), "ci high": math.exp(v + 2 * se)}
        for k, v in enumerate(values)
    ]  # fmt: skip
    df = pd.DataFrame(rows)
    df["date"] = pd.to_datetime(df["started"], utc=True)
    return df


def test_a_step_in_the_newest_report_is_reported_the_night_it_lands():
    rng = np.random.default_rng(3)
    before = list(0.2 + rng.normal(0, 0.03, 5))  # five reports of one configuration
    assert history.newest_steps(_series_frame(before)) == []  # five: nothing to predict the sixth from yet
    assert history.newest_steps(_series_frame([*before, 0.2 + 0.01])) == []  # within what they showed
    (step,) = history.newest_steps(_series_frame([*before, 0.2 + math.log(1.5)]))  # +50 %
    assert step.run == "20261106T000000Z-a" and step.direction == "worse" and step.after / step.before > 1.4


def test_a_fix_to_a_claims_measurement_starts_its_series_and_raises_no_alarm():
    """The same step, measured at a new revision of the claim, is the first report of a new series, not a step."""
    before = list(0.2 + np.random.default_rng(3).normal(0, 0.03, 5))
    fixed = _series_frame([0.2 + math.log(1.5)], revision=2)
    fixed["run"], fixed["date"] = "20261106T000000Z-a", pd.Timestamp("2026-11-06", tz="UTC")
    night = pd.concat([_series_frame(before), fixed], ignore_index=True)
    assert history.newest_steps(night) == []
    assert len(history.newest_steps(night.assign(revision=1))) == 1  # one revision: the step is found


def test_nights_of_reports_like_their_series_raise_an_alarm_no_more_often_than_stated():
    """Three series a night, each report drawn with a between-run sd (0.03) and its own se (0.02), judged every
    night from the sixth report to the thirtieth: nights with any alarm stay within NIGHT_ALPHA (a binomial bound
    that a rate twice the stated one fails nine times in ten; the draws are seeded, so the count is fixed)."""
    rng = np.random.default_rng(11)
    nights = alarms = 0
    for _ in range(20):
        draws = {s: 0.1 + rng.normal(0, 0.03, 30) + rng.normal(0, 0.02, 30) for s in "abc"}
        for n in range(6, 31):
            night = pd.concat([_series_frame(draws[s][:n], claim=s, series=s) for s in "abc"], ignore_index=True)
            nights += 1
            alarms += bool(history.newest_steps(night))
    bound = stats.binom.ppf(0.999, nights, history.NIGHT_ALPHA)
    assert alarms <= bound, (alarms, nights)
    assert stats.binom.sf(bound, nights, 2 * history.NIGHT_ALPHA) > 0.85, alarms  # twice the rate would fail


def test_a_series_server_is_the_build_its_verdict_ran_on():
    """Not the machine's mariadbd for every study (FerretDB's, mongod's and nginx's series said MariaDB 10.11)."""
    from secoverhead.series.reports import server_of

    assert server_of({"server": {"build": "mongod 4.2", "version": "4.2.6"}}) == "mongod 4.2 4.2.6"
    assert server_of({"server": {"build": "nginx 1.22.1", "version": "1.22.1"}}) == "nginx 1.22.1"
    assert server_of({"server": {"build": "MariaDB", "version": "10.11.19-MariaDB"}}) == "MariaDB 10.11.19-MariaDB"
    assert server_of({"server": {}}) == ""  # a part without a server: auth's nonce generator


def test_every_series_drawn_looks_its_own_and_its_legend_lies_below_the_axes():
    """Twelve TLS series drew with ten colours (the eleventh and twelfth looked like the first two), and their
    legend, inside the axes, hid the upper lines."""
    import matplotlib.pyplot as plt

    looks = {tuple(str(v) for v in history._style(i).values()) for i in range(50)}
    assert len(looks) == 50
    night = pd.concat([_series_frame([0.1, 0.2, 0.3], claim=f"c{k}", series="a") for k in range(12)])
    fig = history.history_figure(night, "TLS", [])
    fig.canvas.draw()
    (ax,) = fig.axes
    lines = [c.lines[0] for c in ax.containers]
    assert len({(ln.get_color(), ln.get_marker(), str(ln.get_linestyle())) for ln in lines}) == 12
    legend, x_axis = ax.get_legend().get_window_extent(), ax.xaxis.get_tightbbox()
    assert legend.y1 <= x_axis.y0  # below the axes, their dates and the axis' label
    assert plots.overlaps(fig) == []
    plt.close(fig)


def test_a_reports_vcpu_slowdown_is_its_parts_speed_checks_over_its_fastest_and_the_index_shows_it(tmp_path):
    slow, usual, before = (_run(tmp_path, k, 800, 2.0, (1.0, 3.0)) for k in range(3))
    for name, checks in ((slow, [110.0, 115.0]), (usual, [70.0, 72.0])):
        for part, part_checks in (("tde-4c16g", checks), ("tde-8c32g", checks[:1])):
            checks_ = [{"loop_ms": c, "others_cores": 0.0} for c in part_checks]
            meta = {"calibration": {"python_loop_ms": 62.0}, "speed_checks": checks_}
            (tmp_path / "tde" / name / "results" / part).mkdir()
            (tmp_path / "tde" / name / "results" / part / "metadata.json").write_text(json.dumps(meta))
    df = series.collect(tmp_path, "tde")
    by_run = df.drop_duplicates("run").set_index("run")["vcpu slowdown (x)"]
    assert by_run[slow] == pytest.approx(110 / 62) and by_run[usual] == pytest.approx(70 / 62)
    assert math.isnan(by_run[before])  # a report from before the checks: not known, never 1
    table = history.table_html(df)
    assert "RSA sign ~800 us; vCPU 1.77x its fastest" in table  # beside the speed class: A4 holds no more columns
