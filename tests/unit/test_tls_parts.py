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
    """Loopback runs that, with the round trips the protocols count at the link's 0.75 ms, give the published
    means without TLS and `scale_tls` times the published ones with TLS; the round-trip part measures the same."""
    import pandas as pd

    from secoverhead.measurement.parts import Part, StudyResult
    from secoverhead.studies.tls.declarations import ROUND_TRIPS

    rtt = 0.75
    plain = {"construct_ms": 3.7009, "first_query_ms": 20.7456, "total_ms": 24.4465, "query_ms": 0.7506}
    tls = {"construct_ms": 19.8515 * scale_tls, "first_query_ms": 43.5884 * scale_tls,
           "total_ms": 63.4399 * scale_tls, "query_ms": 0.7643}  # fmt: skip
    loop, far = [], []
    for r in range(3):
        for arm, means, version in (("no TLS", plain, "no TLS"), ("TLS", tls, "TLS 1.3")):
            trips = {k: ROUND_TRIPS[f"{k}_median"][version] for k in means}
            loop.append({"arm": arm, "round": r} | {f"{k}_mean": v - trips[k] * rtt for k, v in means.items()})
            far.append({"arm": arm, "round": r, "checkout_ms_mean": 9.0 if arm == "no TLS" else 20.0}
                       | {f"{k}_mean": v for k, v in means.items()})  # fmt: skip
    extras = {"link": {"rtt_measured_ms": rtt}, "calibration": {"pbkdf2_sha256_15000_ms": 4.4}}
    parts = {
        "MongoDB": Part("MongoDB", _Store(pd.DataFrame(loop)), ["no TLS", "TLS"], {}, [], {}),
        RTT_PART: Part(RTT_PART, _Store(pd.DataFrame(far)), ["no TLS", "TLS"], {}, [], extras),
    }
    return StudyResult("tls", None, parts)


def test_seed_000s_table_is_predicted_here_with_a_reason_only_where_it_misses_by_more_than_a_quarter():
    from secoverhead.studies.protocol.predictions import RESIDUAL_NAMED
    from secoverhead.studies.tls.tables import prediction_table

    why_column = f"why, where over {RESIDUAL_NAMED:.0%}"
    near = prediction_table(_rtt_result(1.0))
    assert list(dict.fromkeys(near["published figure"])) == [
        "build connection",
        "first query after building",
        "build + first query",
        "query on a reused client",
        "TLS / no TLS, build + first query",
        "TLS / no TLS, reused",
    ]
    assert len(near) == 4 * 2 + 2  # a row per measure and arm, one per ratio
    row = near.set_index(["published figure", "arm"])
    assert row.loc[("build + first query", "no TLS"), "residual"] == "+0%"
    assert float(row.loc[("TLS / no TLS, build + first query", "TLS / no TLS"), "predicted for the original"]) == (
        pytest.approx(2.595, abs=0.01)  # shown to 3 figures
    )
    assert not near[why_column].str.len().any()  # every figure within a quarter: no reason shown
    far = prediction_table(_rtt_result(0.6)).set_index(["published figure", "arm"])[why_column]
    first = far[("first query after building", "TLS")]
    assert "9.0 / 20.0 ms" in first and "4.4 ms" in first and "0.75 ms" in first  # the run's own figures, quoted
    assert far[("TLS / no TLS, build + first query", "TLS / no TLS")]
    assert far[("first query after building", "no TLS")] == ""  # as published: within a quarter


def test_no_round_trip_part_no_prediction_table():
    from secoverhead.measurement.parts import StudyResult
    from secoverhead.studies.tls.tables import prediction_table

    assert prediction_table(StudyResult("tls", None, {})).empty
