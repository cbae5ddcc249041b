"""`secoverhead compare` as benchstat users expect: a run against a copy of itself is `~` everywhere and exits
0; a doctored 20 % slowdown is flagged worse and exits 1; geomean lines; every format; lines fit the width."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout

import numpy as np
import pytest

from secoverhead.app import cli
from secoverhead.core.files import atomic_write_json
from secoverhead.measurement.results import ResultStore, RunRecord
from secoverhead.suite import benchtable
from tests.records import run_record

ARMS = {"HTTP": 300.0, "TLS 1.2 full, RSA": 1500.0}


def _report(d, rng, slow=1.0, noisy=False):
    atomic_write_json(d / "run.json", run_record({"study": "https"}))
    store = ResultStore(d / "results", "https")
    store.write_metadata({"status": "complete"})
    run_id = 0
    for rnd in range(8):
        for arm, cpu in ARMS.items():
            us = cpu * slow * float(np.exp(rng.normal(0, 0.03)))
            m = {"server_cpu_us_per_op": us, "rps": 1e6 / us, "noise_flagged": noisy and rnd % 2 == 0}
            store.append(RunRecord(run_id, arm, {}, rnd, rnd, False, "", "", 1.0, metrics=m))
            run_id += 1
    return d


def _compare(*args):
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["compare", *map(str, args)])
    return code, out.getvalue()


def test_a_run_against_a_copy_of_itself_is_all_tilde_and_exits_0(tmp_path):
    a = _report(tmp_path / "a", np.random.default_rng(1))
    b = tmp_path / "b"
    shutil.copytree(a, b)
    code, text = _compare(a, b, "--format", "json")
    rows = json.loads(text)
    measured = [r for r in rows if r["experiment"] != "geomean"]
    assert code == 0 and len(measured) == 4
    assert all(r["vs_a"] == "~" for r in measured)
    geomeans = [r for r in rows if r["experiment"] == "geomean"]
    assert len(geomeans) == 2 and all(r["ratio"] == pytest.approx(1.0) for r in geomeans)


def test_an_arm_without_a_factor_the_others_have_is_compared_too(tmp_path):
    """HTTPS's keep-alive and resumed arms have no concurrency (NaN where the full handshakes have 4): grouping by
    it left them out, 7 of 12 arms."""

    def report(d, rng):
        atomic_write_json(d / "run.json", run_record({"study": "https"}))
        store = ResultStore(d / "results", "https")
        store.write_metadata({"status": "complete"})
        for rnd in range(6):
            for i, (arm, factors) in enumerate([("TLS 1.2 full, RSA", {"concurrency": 4}), ("HTTPS keep-alive", {})]):
                us = 100.0 * (i + 1) * float(np.exp(rng.normal(0, 0.03)))
                m = {"server_cpu_us_per_op": us, "rps": 1e6 / us}
                store.append(RunRecord(2 * rnd + i, arm, factors, rnd, rnd, False, "", "", 1.0, metrics=m))
        return d

    a, b = report(tmp_path / "a", np.random.default_rng(1)), report(tmp_path / "b", np.random.default_rng(2))
    code, text = _compare(a, b, "--format", "json")
    arms = {r["arm"] for r in json.loads(text) if r["experiment"] != "geomean"}
    assert code == 0 and arms == {"TLS 1.2 full, RSA", "HTTPS keep-alive"}, arms


def test_a_20_percent_slowdown_is_flagged_worse_and_exits_1(tmp_path):
    a = _report(tmp_path / "a", np.random.default_rng(1))
    b = _report(tmp_path / "b", np.random.default_rng(2), slow=1.2)
    code, text = _compare(a, b)
    assert code == 1
    assert text.count("worse") == 4  # CPU per request up, requests per second down, on both arms
    geomean_cpu = next(line for line in text.splitlines() if line.startswith("geomean") and "server_cpu" in line)
    assert 15 < float(geomean_cpu.split()[-2].lstrip("+")) < 25  # the slowdown, give or take the noise


def test_a_regression_on_runs_flagged_noisy_is_said_to_rest_on_a_noisy_machine(tmp_path, capsys):
    a = _report(tmp_path / "a", np.random.default_rng(1))
    quiet = _report(tmp_path / "quiet", np.random.default_rng(2), slow=1.2)
    assert _compare(a, quiet)[0] == 1 and "machine was noisy" not in capsys.readouterr().err
    loud = _report(tmp_path / "loud", np.random.default_rng(2), slow=1.2, noisy=True)
    code, _ = _compare(a, loud)
    notes = [line for line in capsys.readouterr().err.splitlines() if "the machine was noisy" in line]
    assert code == 1 and len(notes) == 4  # said of every regression; the exit stays the regressions' (issue 53)
    assert "A 0 of 8, B 4 of 8 runs flagged" in notes[0]


@pytest.mark.parametrize("fmt", ["text", "csv", "markdown"])
def test_every_format_holds_every_row(tmp_path, fmt):
    a = _report(tmp_path / "a", np.random.default_rng(1))
    b = _report(tmp_path / "b", np.random.default_rng(3))
    code, text = _compare(a, b, "--format", fmt)
    assert code in (0, 1)
    assert sum("TLS 1.2 full, RSA" in line for line in text.splitlines()) == 2
    assert sum("geomean" in line for line in text.splitlines()) == 2


def test_text_fits_the_width_it_is_given(tmp_path):
    from secoverhead.suite.crossrun import compare_reports

    a = _report(tmp_path / "a", np.random.default_rng(1))
    b = _report(tmp_path / "b", np.random.default_rng(4), slow=1.2)
    table = compare_reports(a, b)
    for width in (60, 80, 120):
        assert max(len(line) for line in benchtable.text(table, width).splitlines()) <= width


def test_vs_marks_only_intervals_beyond_one_and_words_only_beyond_the_noise():
    base = {"ratio": 1.05, "p": 0.01}
    assert benchtable.vs({**base, "ci_low": 0.99, "ci_high": 1.1, "change": "inconclusive"}) == "~"
    assert benchtable.vs({**base, "ci_low": 1.01, "ci_high": 1.1, "change": "inconclusive"}) == "+5.0 % (p=0.01)"
    assert benchtable.vs({**base, "ci_low": 1.03, "ci_high": 1.1, "change": "worse"}).startswith("+5.0 % worse")
    assert benchtable.vs({**base, "ci_low": 1.001, "ci_high": 1.01, "change": "no change"}) == "~"


def test_runs_of_other_scales_schemas_or_servers_are_said_to_differ_before_the_numbers(tmp_path, capsys):
    a = _report(tmp_path / "a", np.random.default_rng(1))
    b = _report(tmp_path / "b", np.random.default_rng(2))
    for d, scale, schema, version in ((a, "quick", 3, "1.22.1"), (b, "smoke", 2, "1.24.0")):  # 2: migrated on read
        fields = {"study": "https", "params_name": scale, "params_files": [f"{scale}.yaml"], "schema": schema}
        atomic_write_json(d / "run.json", run_record(fields) if schema == 3 else fields)
        meta = json.loads((d / "results" / "https" / "metadata.json").read_text())
        meta["servers"] = {"nginx rsa": {"engine": "nginx", "version": version}}
        atomic_write_json(d / "results" / "https" / "metadata.json", meta)
    _compare(a, b)
    err = capsys.readouterr().err
    assert "note: the runs differ in scale: A quick, B smoke" in err
    assert "note: the runs differ in schema: A 3, B 2" in err
    assert "note: the runs differ in servers: A nginx 1.22.1, B nginx 1.24.0" in err
    assert "RuntimeWarning" not in err and "All-NaN" not in err


def test_numbers_and_changes_print_as_benchstat_prints_them():
    import pandas as pd

    from secoverhead.suite import benchtable

    assert [benchtable._num(x) for x in (13_350, 2.5e6, 999_600, 12.34, float("nan"))] == [
        "13.3k", "2.50M", "1.00M", "12.34", "-"]  # fmt: skip
    unsure = {"change": "worse", "ratio": 1.939, "ci_low": 1.2, "ci_high": 2.5, "p": 1.0}
    sure = {"change": "worse", "ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3, "p": 0.001}
    assert benchtable.vs(unsure) == "~" and benchtable.vs(sure) == "+20.0 % worse (p=0.001)"
    assert benchtable.regressions(pd.DataFrame([unsure, sure])) == 1  # what prints `~` never fails a job


def test_json_counts_runs_in_whole_numbers():
    import json

    import pandas as pd

    from secoverhead.suite import benchtable

    row = {"experiment": "e", "arm": "TLS", "cell": "", "metric": "m", "unit": "ms", "a": 1.0, "b": 1.1,
           "ratio": 1.1, "ci_low": 1.05, "ci_high": 1.15, "p": 0.01, "change": "worse",
           "n_a": 3.0, "n_b": 4.0}  # fmt: skip
    (out,) = json.loads(benchtable.render(pd.DataFrame([row]), "json"))
    assert out["n_a"] == 3 and isinstance(out["n_a"], int) and out["vs_a"].startswith("+10.0 %")


def _series_report(root, k, rng, level, revision=None):
    """A finished report of one series, its every arm at `level` times the usual (the spread between reports);
    `revision`: its claim on server CPU was measured at that registry revision."""
    d = root / "https" / f"20261101T{k:02d}0000Z-vm-quick"
    (d / "results").mkdir(parents=True)
    _report(d, rng, slow=level)
    atomic_write_json(d / "run.json", run_record({"study": "https", "status": "ok", "params_name": "quick",
                                       "started": f"2026-11-01T{k:02d}:00:00Z", "environment": {}}))  # fmt: skip
    atomic_write_json(d / "calibration.json", {"rsa2048_sign_us": 800})
    v = {"id": "x", "claim": "x", "verdict": "~"}
    if revision is not None:
        v["registered"] = {"study": "https", "id": "x", "metric": "server_cpu_us_per_op", "revision": revision}
    atomic_write_json(d / "results" / "verdicts.json", {"verdicts": [v]})
    return d


def test_reports_measured_before_a_fix_to_a_metric_teach_compare_nothing_about_it_and_are_said_to_differ(
    tmp_path, capsys, monkeypatch
):
    from secoverhead.series import reports as series
    from secoverhead.suite import crossrun

    rng = np.random.default_rng(7)
    old = [_series_report(tmp_path, k, rng, lv, 1) for k, lv in enumerate([1.0, 0.88, 1.1, 0.93, 1.08, 0.9, 1.05])]
    metrics = ["server_cpu_us_per_op", "rps"]
    learned, _ = crossrun.level_spread(old[0], old[-1], metrics)
    assert {k[3] for k in learned} == set(metrics)  # five others at the registry's revision: both learned
    monkeypatch.setattr(series.claim_registry, "revision", lambda study, claim_id: 2)  # a fix to server CPU
    new = _series_report(tmp_path, 7, rng, 1.0, 2)
    learned, _ = crossrun.level_spread(old[0], new, metrics)
    assert {k[3] for k in learned} == {"rps"}  # server CPU measured otherwise in every other report: not learned
    _compare(old[0], new)
    note = "note: the runs differ in measurement: A every metric at revision 1, B server_cpu_us_per_op at revision 2"
    assert note in capsys.readouterr().err


def test_reports_that_spread_more_than_their_rounds_widen_the_comparison_once_five_others_show_it(tmp_path, capsys):
    rng = np.random.default_rng(7)
    levels = [1.0, 0.88, 1.1, 0.93, 1.08, 0.9]  # reports of one configuration, 10 % apart (their rounds: 3 %)
    reports = [_series_report(tmp_path, k, rng, level) for k, level in enumerate(levels)]
    assert _compare(reports[1], reports[4])[0] == 1  # four others: the prior, and 0.88 -> 1.08 is beyond it
    assert "the prior declared in between_runs_levels.yaml" in capsys.readouterr().err
    b = _series_report(tmp_path, 6, rng, 1.12)
    assert _compare(reports[0], b)[0] == 0  # five others: their spread widens every row, and 12 % is within it
    assert "learned from 5 reports of A's series" in capsys.readouterr().err
    doubled = _series_report(tmp_path, 8, rng, 2.4)
    assert _compare(reports[0], doubled)[0] == 1  # more than twice as slow is beyond any spread they showed


@pytest.fixture
def prior(tmp_path, monkeypatch):
    """Declares `compare`'s prior as the text given (empty: none) in a file of the test's own."""
    from secoverhead.analysis import claim_registry
    from secoverhead.core import paths

    def declare(text: str) -> None:
        f = tmp_path / "test-levels.yaml"
        f.write_text(text)
        monkeypatch.setattr(paths, "LEVEL_SPREAD", f)
        claim_registry.level_spread.cache_clear()

    yield declare
    claim_registry.level_spread.cache_clear()


def test_two_reports_apart_by_the_machines_day_are_no_regression_under_the_declared_prior(tmp_path, prior, capsys):
    """Reports 10 % apart in level, their rounds 3 %: with no spread between reports taken in, a regression; under
    a prior sd of 0.1 a report's level moves that much, so `~` (and the note names the prior)."""
    a = _report(tmp_path / "a", np.random.default_rng(1))
    b = _report(tmp_path / "b", np.random.default_rng(2), slow=1.1)
    prior("")
    assert _compare(a, b)[0] == 1 and "the intervals cover the two reports' rounds only" in capsys.readouterr().err
    entries = "".join(f"- {{study: https, metric: {m}, sd: 0.1, runs: 6, estimated: test}}\n"
                      for m in ("rps", "server_cpu_us_per_op"))  # fmt: skip
    prior(entries)
    code, text = _compare(a, b)
    assert code == 0 and "worse" not in text, text
    assert "the prior declared in test-levels.yaml (test), added until 5 reports" in capsys.readouterr().err
    twice = _report(tmp_path / "twice", np.random.default_rng(3), slow=2.0)
    assert _compare(a, twice)[0] == 1  # twice as slow is beyond that prior


@pytest.mark.parametrize("schema", [4, 1, None])
def test_a_report_of_a_schema_not_read_here_is_one_line_naming_both_versions_and_exit_2(tmp_path, capsys, schema):
    a = _report(tmp_path / "a", np.random.default_rng(1))
    b = _report(tmp_path / "b", np.random.default_rng(2))
    atomic_write_json(b / "run.json", run_record({"study": "https", "params_name": "quick"}) | {"schema": schema})
    assert cli.main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"report schema {schema!r} was written by" in err[0], err
    assert "this one reads 2 to 3" in err[0] and ("newer" in err[0]) == (schema == 4), err


def test_a_broken_prior_is_one_line_and_exit_2(tmp_path, prior, capsys):
    a = _report(tmp_path / "a", np.random.default_rng(1))
    prior("- {study: https, metric: rps, sd: .nan, runs: 6, estimated: test}\n")
    assert cli.main(["compare", str(a), str(a)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "test-levels.yaml entry 1: sd nan" in err[0], err


def test_every_study_declares_a_prior_for_each_metric_compare_reads():
    from secoverhead.analysis import claim_registry
    from secoverhead.studies import STUDIES

    declared = claim_registry.level_spread()
    missing = [(s, m) for s, st in STUDIES.items() for m in st.primary_metrics if (s, m) not in declared]
    assert not missing and all(0 < t.sd < 0.5 for t in declared.values()), missing


def test_a_noisy_note_is_said_only_of_a_regression_compare_counts():
    """A row whose change is 'worse' but whose p is above alpha prints `~` and fails nothing: it gets no note that
    the machine was noisy, since there is no regression to qualify; a counted one on flagged runs gets one."""
    import pandas as pd

    base = {"experiment": "https", "metric": "rps", "ratio": 0.8, "ci_low": 0.7, "ci_high": 0.9, "change": "worse",
            "n_a": 4, "n_b": 4, "noisy_a": 0, "noisy_b": 3}  # fmt: skip
    rows = pd.DataFrame([base | {"arm": "counted", "p": 0.001}, base | {"arm": "unsure", "p": 0.3},
                         base | {"arm": "quiet", "p": 0.001, "noisy_b": 0}])  # fmt: skip
    assert benchtable.regressions(rows) == 2
    notes = benchtable.noisy_regressions(rows)
    assert len(notes) == 1 and notes[0].startswith("https / counted rps (A 0 of 4, B 3 of 4")
