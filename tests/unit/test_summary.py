"""The summary a reviewer reads first and the tables' presentation: the measured interval on the claim's own
scale, a chip per verdict, the detail with the reading, a figure only where intervals were recorded; tables
with CIs beside their metric, names as words, p-values readable, no Python reprs."""

from __future__ import annotations

import pandas as pd

from secoverhead.analysis import claimcheck
from secoverhead.analysis.verdicts import Verdict
from secoverhead.reporting import summary, tables


def _verdict(**kw):
    v = claimcheck.verdict_of(
        "tls",
        "setup",
        kw.pop("verdict", Verdict.REPRODUCED),
        "median 1 -> 2 ms; n=4 rounds",
        part="MongoDB",
        grounds=claimcheck.Grounds(intervals=(([(1.5, 2.1)], None),), rounds=4),
    )
    return v.as_dict()


def test_a_verdict_records_the_intervals_its_reading_judged():
    v = _verdict()
    assert v["judged"][0]["intervals"] == [[1.5, 2.1]] and v["judged"][0]["cuts"] == [1.3]


def test_the_line_says_the_measured_interval_on_the_claims_scale_with_a_chip_and_a_detail():
    page = summary.claims_html([_verdict()])
    assert "reproduced" in page and "background:#1a7f37" in page
    assert "1.5× to 2.1×" in page and "<details" in page and "reproduce above 1.3×" in page
    assert "<details" not in summary.claims_html([_verdict()], details=False)


def test_scales_read_in_their_units():
    assert summary.measured([{"effect": "TPS loss with general_log, %", "intervals": [[10.8, 32.4]]}]) == (
        "TPS loss with general_log, %: +10.8 % to +32.4 %"
    )
    assert "pp" in summary.measured([{"effect": "CPU on minus off, percentage points", "intervals": [[1, 2]]}])
    many = summary.measured([{"effect": "ratio", "intervals": [[0.9, 1.0], [0.95, 1.1], [0.8, 1.2], [1, 1.1]]}])
    assert many.startswith("ratio: 4 cells, from 0.8")


def test_each_interval_is_named_by_its_cell_and_many_cells_by_their_named_ends():
    two = summary.measured(
        [{"effect": "TPS loss, %", "intervals": [[-1.1, 0.9], [-2.3, 0.3]], "cells": ["write x16", "read x16"]}]
    )
    assert two == "TPS loss, %: write x16 -1.1 % to +0.9 %, read x16 -2.3 % to +0.3 %"
    many = summary.measured(
        [
            {
                "effect": "CPU on minus off, percentage points",
                "intervals": [[1, 2], [0.5, 3], [2, 4], [1, 1.5]],
                "cells": ["a", "b", "c", "d"],
            }
        ]
    )
    assert many == "CPU on minus off, percentage points: 4 cells, from +0.5 pp (b) to +4 pp (c)"
    # names that do not match the intervals one for one are not guessed at
    assert "x" not in summary.measured([{"effect": "loss %", "intervals": [[1, 2]], "cells": ["x", "y"]}])


def test_a_verdict_keeps_its_cells_names_only_when_they_match_its_intervals():
    sets = (([(0.9, 1.0), (0.95, 1.05)], None),)
    v = claimcheck.verdict_of(
        "tls", "setup", Verdict.INCONCLUSIVE, "e", grounds=claimcheck.Grounds(intervals=sets, cells=(["a", "b"],))
    )
    assert v.as_dict()["judged"][0]["cells"] == ["a", "b"]
    v = claimcheck.verdict_of(
        "tls", "setup", Verdict.INCONCLUSIVE, "e", grounds=claimcheck.Grounds(intervals=sets, cells=(["a"],))
    )
    assert v.as_dict()["judged"][0]["cells"] == []
    assert summary.figure([v.as_dict()]) is not None


def test_counts_keep_the_originals_apart_from_the_suites_own():
    own = {**_verdict(verdict=Verdict.INCONCLUSIVE), "source": "suite"}
    assert summary.tally([_verdict(), own]) == "published claims: 1 reproduced; the suite's own: 1 inconclusive"


def test_the_figure_draws_what_was_recorded_and_nothing_without_it():
    assert summary.figure([{**_verdict(), "judged": []}]) is None
    fig = summary.figure([_verdict()])
    assert len(fig.axes) == 1


def test_tables_read_as_words_with_their_intervals():
    df = pd.DataFrame(
        {
            "arm": ["on"],
            "server_cpu_us_per_op": [10.0],
            "server_cpu_us_per_op_ci_low": [9.0],
            "server_cpu_us_per_op_ci_high": [11.0],
            "duet": ["3:on:[('threads', 16), ('workload', 'oltp_read_only')]"],
            "note": [None],
            "p": [3.2e-5],
        }
    )
    out = tables.readable(df)
    assert list(out.columns) == ["arm", "server CPU per op (µs) [95 % CI]", "duet", "note", "p"]
    assert out.iloc[0, 1] == "10 [9, 11]" and out.iloc[0, 2] == "3:on:threads 16, workload oltp_read_only"
    assert pd.isna(out.iloc[0, 3])
    html = tables.styled(df).to_html()
    assert "&lt;0.001" in html and "None" not in html


def test_a_share_shows_as_the_percentage_its_evidence_gives():
    """A share won back is a fraction: the line shows 86 %, as the evidence does, never '0.9 %'."""
    import re

    import numpy as np

    from secoverhead.studies.https import claims as https_claims

    rng = np.random.default_rng(0)
    rows = [
        {"arm": arm, "round": r, "server_cpu_us_per_op": mean * rng.lognormal(0, 0.01)}
        for r in range(8)
        for arm, mean in (("HTTP", 10.0), ("TLS 1.2 full, RSA", 110.0), ("TLS 1.2 resumed, session cache", 24.0))
    ]
    (v,) = [v for v in https_claims.part_claims("https", pd.DataFrame(rows)) if "session cache" in v.id]
    shown = summary.measured(v.judged)
    lo, hi = v.judged[0]["intervals"][0]
    assert f"{lo * 100:.1f} %" in shown and f"{hi * 100:.1f} %" in shown, shown
    assert f"[{lo * 100:.1f} %, {hi * 100:.1f} %]" in v.evidence, v.evidence  # the same numbers, the same unit
    (point,) = re.findall(r"([\d.]+) % \[", v.evidence)
    assert lo * 100 <= float(point) <= hi * 100 and 80 < float(point) < 92


def test_a_table_shows_every_value_and_header_as_text_never_markup():
    """Values come from parameters, arm names and copied-in runs: data, never markup."""
    evil = {"<b>name</b>": ["<iframe src=/etc/shadow>", "<img src=x onerror=alert(1)>"], "value": [1.5, 2.0]}
    page = tables.styled(pd.DataFrame(evil)).to_html()
    assert "<iframe" not in page and "<img" not in page and "<b>name" not in page
    assert "&lt;iframe src=/etc/shadow&gt;" in page and "&lt;b&gt;name&lt;/b&gt;" in page


def test_a_sentence_carries_a_name_as_text_and_its_code_spans_as_written():
    from secoverhead.reporting.display import as_text

    assert as_text("**<iframe src=/etc/shadow>** costs `a < b`") == "**&lt;iframe src=/etc/shadow>** costs `a < b`"


def test_a_claim_not_testable_here_is_drawn_without_the_regions_that_would_judge_it():
    """Its interval is a measurement: green and red behind it would read as a verdict the claim did not get."""
    from matplotlib.colors import to_hex

    def regions(verdict):
        fig = summary.figure([_verdict(verdict=verdict)])
        ax = fig.axes[0]
        return {to_hex(p.get_facecolor()) for p in ax.patches}, ax.get_title(loc="left")

    judged, title = regions(Verdict.REPRODUCED)
    assert summary.REGION_COLOURS["reproduce"] in judged and "not testable" not in title
    shown_, title = regions(Verdict.NOT_TESTABLE)
    assert shown_ == {summary.REGION_COLOURS["gap"]}, shown_
    assert "not testable here: measured instead, a fact, not a verdict" in title.replace("\n", " ")


def test_an_identifier_or_path_wraps_after_its_separators_and_stays_escaped():
    """A run's name or a parameter's path may wrap on a printed page after / _ = + , : ; and nowhere inside a word;
    markup in it shows as text."""
    from secoverhead.reporting.summary import breakable

    assert breakable("calibration_file=/tmp/a b") == "calibration_<wbr>file=<wbr>/<wbr>tmp/<wbr>a b"
    assert breakable("<b>&x;</b>") == "&lt;b&gt;&amp;x;<wbr>&lt;/<wbr>b&gt;"  # no break inside an entity
    assert breakable("20261203T083654Z-vm-smoke+run_seconds").count("<wbr>") == 2
