"""Report tables: summaries with CIs over runs, the environment naming the stand-in, noise flags, units."""

from __future__ import annotations

import pandas as pd
import pytest

from secoverhead.core.units import unit
from secoverhead.reporting import tables
from secoverhead.reporting.tables import environment_table, noise_table, summarize_runs


def test_summarize_runs_gives_median_ci_and_flags():
    runs = pd.DataFrame(
        {
            "arm": ["a"] * 10 + ["b"] * 10,
            "x": list(range(10)) + list(range(10, 20)),
            "client_bound": [False] * 19 + [True],
            "noise_flagged": [True] + [False] * 19,
        }
    )
    t = summarize_runs(runs, ["x", "not_there"], ["arm"]).set_index("arm")
    assert t.loc["a", "x"] == 4.5 and t.loc["a", "x_ci_low"] <= 4.5 <= t.loc["a", "x_ci_high"]
    assert t.loc["b", "runs"] == 10 and t.loc["b", "client-bound runs"] == 1 and t.loc["a", "noisy runs"] == 1


def test_environment_table_names_the_stand_in_and_the_cpu_accounting():
    env = {
        "machine": {"cpu_model": "cpu", "cpu_cores": 2, "hostname": "h"},
        "python": "3.11",
        "tools": {"sysbench": "1.0.20"},
    }
    servers = {
        "db": {
            "engine": "MariaDB",
            "version": "10.11",
            "emulates": "MySQL 8.0",
            "embedded": True,
            "cpu_accounting": "cgroup-v1-cpuacct",
        }
    }
    text = " ".join(environment_table(servers, env)["value"])
    assert "stands in for MySQL 8.0" in text and "cgroup-v1-cpuacct" in text


def test_noise_table_says_why_a_run_was_flagged():
    runs = pd.DataFrame(
        {
            "arm": ["a", "b"],
            "round": [0, 0],
            "noise_flagged": [True, False],
            "noise_steal_fraction": [0.19, 0.0],
            "noise_outside_cores": [0.1, 0.0],
        }
    )
    t = noise_table(runs)
    assert len(t) == 1 and "steal 19.0%" in t["why"].iloc[0]
    assert noise_table(runs.assign(noise_flagged=False)).empty


def test_metric_units_and_directions():
    assert unit("tps") == ("1/s", True) and unit("ops_per_s") == ("1/s", True)
    assert unit("server_cpu_us_per_op") == ("us", False) and unit("query_ms_median") == ("ms", False)
    assert unit("tps_per_server_core") == ("1/CPU-s", True)
    assert unit("system_ns_per_nonce") == ("ns", False) and unit("audit_bytes_per_transaction")[0] == "bytes"
    assert unit("client_bound") == ("flag", False) and unit("duration_s") == ("s", None)


def test_verdicts_of_the_originals_and_of_the_suite_are_counted_apart():
    from secoverhead.analysis.verdicts import ClaimVerdict, Verdict
    from secoverhead.reporting.tables import verdict_counts, verdict_table
    from secoverhead.suite.index import _tally

    vs = [
        ClaimVerdict("a", Verdict.REPRODUCED, "e", source="published", registered={"reading_text": "x: reproduce"}),
        ClaimVerdict("b", Verdict.INCONCLUSIVE, "e", source="published"),
        ClaimVerdict("c", Verdict.NOT_REPRODUCED, "e", source="suite", sensitivity="without: reproduced"),
    ]
    assert verdict_counts(vs) == "published claims: 1 reproduced, 1 inconclusive; the suite's own: 1 not reproduced"
    t = verdict_table(vs)
    assert list(t["source"]) == ["published", "published", "the suite's own"]
    assert t["reading"].iloc[0] == "x: reproduce" and "without one-off duets (check)" in t
    assert "without one-off duets (check)" not in verdict_table(vs[:2])  # only where a study recorded one
    assert _tally([v.as_dict() for v in vs]) == "published claims: 1 of 2 decided; the suite's own: 1 of 1 decided"


def test_measured_values_print_without_an_exponent():
    from secoverhead.core.units import figure

    assert figure(33761.2) == "33,760" and figure(9999.5) == "10,000" and figure(6129.0) == "6129"
    assert figure(0.0546) == "0.0546" and figure(1.234e-5) == "0.00001234" and figure(float("nan")) == "nan"
    assert figure(-2.3e-6) == "-0.0000023" and figure(0.0) == "0"


def test_a_readings_numbers_print_without_an_exponent_however_far_an_interval_reaches():
    from secoverhead.core.units import shown

    assert (
        shown(1.12e-5, "ratio") == "0.0000112×" and shown(0.5, "ratio") == "0.5×" and shown(1.6234, "ratio") == "1.62×"
    )
    assert shown(123456.0, "ratio") == "123,456×" and shown(1.0526, "ratio", exact=True) == "1.0526×"
    assert shown(2.5e-7, "difference", "s") == "+0.00000025 s" and shown(-3.2e6, "difference", "us") == "-3,200,000 us"
    assert shown(1234.5, "difference", "us") == "+1,230 us" and shown(0.0, "difference", "us") == "+0 us"
    assert shown(1.5e7, "difference", "us", exact=True) == "15,000,000 us"


def test_p_values_print_as_papers_print_them():
    from secoverhead.core.units import p_text
    from secoverhead.reporting.tables import _p

    assert p_text(7.4e-38) == "p<0.001" and p_text(0.001) == "p=0.001" and p_text(0.0123) == "p=0.012"
    assert p_text(1.0) == "p=1" and p_text(float("nan")) == "p=n/a"
    assert _p(4e-5) == "&lt;0.001" and _p(0.04) == "0.04" and _p("x") == "x"  # escaped for the page


def test_text_cells_and_headers_may_wrap_after_an_underscore_numbers_and_markup_stay_as_they_are():
    df = pd.DataFrame({"metric": ["server_cpu_us_per_op", "<b>a_b</b>", None], "v": [1.5, 2.25, 3.0],
                       "mixed": ["x_y", 2.5, 7], "Odd_Name": [1, 2, 3]})  # fmt: skip
    page = tables.styled(df).to_html()
    assert ">server_<wbr>cpu_<wbr>us_<wbr>per_<wbr>op<" in page and ">&lt;b&gt;a_<wbr>b&lt;/b&gt;<" in page
    assert ">x_<wbr>y<" in page and ">2.500<" in page and ">7<" in page and ">1.500<" in page
    assert ">Odd_<wbr>Name<" in page and "<b>" not in page


@pytest.mark.parametrize(
    "checks, expected",
    [
        ([110.0, 70.0, 112.0], (110 / 62, "2 of 3")),  # two rounds in the slow state
        ([70.0, 72.0], (71 / 62, "0 of 2")),
        ([], None),  # no checks: nothing said of the vCPU
    ],
)
def test_the_noise_summary_says_how_slow_the_vcpu_ran_before_the_rounds(checks, expected):
    runs = pd.DataFrame({"noise_steal_fraction": [0.0, 0.01]})
    meta = {
        "calibration": {"python_loop_ms": 62.0},
        "speed_checks": [{"round": 0, "loop_ms": c, "others_cores": 0.0} for c in checks]
        + [{"round": 9, "loop_ms": 125.0, "others_cores": 0.9}],  # a sibling vCPU busy: not the host's state
    }
    out = tables.noise_summary(runs, meta)
    assert out["noise_steal_fraction"] == pytest.approx(0.005)
    if expected is None:
        assert tables.SLOWDOWN not in out
    else:
        assert out[tables.SLOWDOWN] == pytest.approx(expected[0]) and out[tables.SLOW_CHECKS] == expected[1]


@pytest.mark.parametrize("loop_ms, said", [(115.0, True), (72.0, False)])
def test_a_part_whose_vcpu_ran_in_its_slow_state_says_so_above_its_tables(monkeypatch, loop_ms, said):
    from secoverhead.reporting import report

    class Part:
        name, label = "tls-mysql", "MySQL"

        def runs(self):
            return pd.DataFrame({"noise_steal_fraction": [0.0]})

        def metadata(self):
            check = {"round": 0, "loop_ms": loop_ms, "others_cores": 0.04}
            return {"calibration": {"python_loop_ms": 62.0}, "speed_checks": [check] * 2}

    lines: list[str] = []
    monkeypatch.setattr(report, "say", lines.append)
    rows = report._noise_of(Part())
    assert rows[0][tables.SLOWDOWN] == pytest.approx(loop_ms / 62.0)
    assert any("slow state" in line and "(2 of 2 such checks" in line for line in lines) is said


def test_the_design_table_counts_the_runs_an_interrupted_part_recorded(tmp_path):
    """An interrupted part has no end-of-run note (its metadata's completed_runs): the table counts its store."""
    from secoverhead.measurement.parts import Part
    from secoverhead.measurement.results import ResultStore, RunRecord

    store = ResultStore(tmp_path / "results", "tls")
    store.write_metadata({"status": "running"})
    for i in range(3):
        store.append(RunRecord(i, "plain", {}, i, i, False, "", "", 1.0, metrics={"x": 1.0}))
    store.append(RunRecord(3, "plain", {}, 3, 3, False, "", "", 1.0, status="error", metrics={}))
    t = tables.design_table({"tls": Part(name="tls", store=store, arms=["plain"], servers={})})
    assert t.loc[0, "runs (incl. warm-up, profiling)"] == 3 and t.loc[0, "rounds measured"] == 3
