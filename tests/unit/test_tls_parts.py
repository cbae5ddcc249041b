"""The tls study's parts: each engine on its original's build (the verdicts of record), the other builds beside it
when they are here, none beside a user's server or in an A/A run."""

from __future__ import annotations

import pytest

from secoverhead.app.pipeline import prepare
from secoverhead.studies.tls.declarations import PART_BUILDS, RTT_PART, _engine


def _params(*overrides: tuple[str, str]):
    return prepare("tls", overrides=[("rtt_enabled", "false"), *overrides], check_servers=False).params


def test_each_engine_runs_on_its_original_build_with_the_others_beside_it(builds_gone):
    p = _params()
    assert p.parts() == ["MongoDB", "MongoDB on mongod 6.0", "MongoDB on FerretDB", "MySQL", "MySQL on MariaDB"]
    assert [PART_BUILDS[x].label for x in ("MongoDB", "MySQL", RTT_PART)] == ["mongod 4.2", "MySQL 8.0", "mongod 4.2"]
    assert {_engine(x) for x in p.parts()} == {"MongoDB", "MySQL"}


def test_a_build_beside_that_is_missing_is_left_out(builds_gone):
    builds_gone.add("FerretDB")
    assert "MongoDB on FerretDB" not in _params().parts()


def test_nothing_runs_beside_when_asked_not_to_or_in_an_a_a_run(builds_gone):
    assert _params(("beside_builds", "false")).parts() == ["MongoDB", "MySQL"]
    assert _params(("aa", "true")).parts() == ["MongoDB", "MySQL"]


def test_nothing_runs_beside_a_users_server(builds_gone):
    p = _params(("mongo_uri", "mongodb://db.example:27017/"))
    assert p.parts() == ["MongoDB", "MySQL", "MySQL on MariaDB"]


def test_the_builds_beside_run_the_two_main_arms_and_the_record_part_all_of_them(builds_gone):
    p = _params()
    assert [a.name for a in p.arms("MongoDB on FerretDB")] == ["no TLS", "TLS"]
    assert [a.name for a in p.arms("MySQL on MariaDB")] == ["no TLS", "TLS"]
    assert [a.name for a in p.arms("MySQL")] == ["no TLS", "TLS", "TLS ECDSA", "TLS 1.2"]
    assert p.PART_WEIGHTS["MongoDB on mongod 6.0"] == 0.5 and "MongoDB" not in p.PART_WEIGHTS


class _Store:
    def __init__(self, runs):
        self._runs = runs

    def runs(self, include_profiling=False):
        return self._runs


def _rtt_result(scale_tls: float):
    """A round-trip part whose runs give the published means without TLS and `scale_tls` times the published ones
    with TLS (the reused query as published either way)."""
    import pandas as pd

    from secoverhead.measurement.parts import Part, StudyResult

    plain = {"construct_ms_mean": 3.7009, "first_query_ms_mean": 20.7456, "total_ms_mean": 24.4465}
    tls = {"construct_ms_mean": 19.8515, "first_query_ms_mean": 43.5884, "total_ms_mean": 63.4399}
    rows = []
    for r in range(3):
        rows.append({"arm": "no TLS", "round": r, "checkout_ms_mean": 9.0, "query_ms_mean": 0.7506} | plain)
        scaled = {k: v * scale_tls for k, v in tls.items()}
        rows.append({"arm": "TLS", "round": r, "checkout_ms_mean": 20.0, "query_ms_mean": 0.7643} | scaled)
    extras = {"link": {"rtt_measured_ms": 0.75}, "calibration": {"pbkdf2_sha256_15000_ms": 4.4}}
    part = Part(RTT_PART, _Store(pd.DataFrame(rows)), ["no TLS", "TLS"], {}, [], extras)
    return StudyResult("tls", None, {RTT_PART: part})


def test_seed_000s_table_is_predicted_here_with_a_reason_only_where_it_differs_by_more_than_a_quarter():
    from secoverhead.studies.tls.tables import prediction_table

    near = prediction_table(_rtt_result(1.0))
    assert list(near["measure"].replace("", None).dropna()) == [
        "build connection",
        "first query after building",
        "build + first query",
        "query on a reused client",
        "TLS / no TLS, build + first query",
        "TLS / no TLS, reused",
    ]
    assert len(near) == 4 * 2 + 2  # a row per measure and arm, one per ratio
    row = near.set_index(["measure", "arm"])
    assert row.loc[("build + first query", "no TLS"), "residual"] == "+0%"
    assert row.loc[("TLS / no TLS, build + first query", "TLS / no TLS"), "here"] == pytest.approx(2.595, abs=1e-3)
    assert not near["why, where over 25 %"].str.len().any()  # every figure within a quarter: no reason shown
    far = prediction_table(_rtt_result(0.6))
    far["measure"] = far["measure"].mask(far["measure"] == "").ffill()  # a measure is named on its first row
    why = far.set_index(["measure", "arm"])["why, where over 25 %"]
    first = why[("first query after building", "no TLS")]
    assert "9.0 / 20.0 ms" in first and "4.4 ms" in first and "0.75 ms" in first  # the run's own figures, quoted
    assert why[("TLS / no TLS, build + first query", "TLS / no TLS")]
    assert why[("first query after building", "TLS")] == ""  # the reason once, on the measure's first row
    assert why[("query on a reused client", "no TLS")] == ""  # as published: within a quarter


def test_no_round_trip_part_no_prediction_table():
    from secoverhead.measurement.parts import StudyResult
    from secoverhead.studies.tls.tables import prediction_table

    assert prediction_table(StudyResult("tls", None, {})).empty
