"""Each study's model of its original: the shared record's residual, interval and reasons branch by branch, and
every study's table predicting its original's figures by the model's arithmetic, each large residual or figure
left unpredicted with a reason."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from secoverhead.measurement.parts import Part, StudyResult
from secoverhead.studies.protocol.judging import published
from secoverhead.studies.protocol.predictions import RESIDUAL_NAMED, Prediction, table, unexplained


class _Store:
    def __init__(self, runs: pd.DataFrame, meta: dict | None = None):
        self._runs, self._meta = runs, meta or {}

    def runs(self, include_profiling: bool = False) -> pd.DataFrame:
        return self._runs

    def metadata(self) -> dict:
        return self._meta


def _part(name, rows, extras=None, servers=None, meta=None):
    runs = pd.DataFrame(rows)
    return Part(name, _Store(runs, meta), sorted(set(runs.get("arm", []))), servers or {}, [], extras or {})


# --- the record ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("published_value", "high", "predicted", "residual"),
    [
        (10.0, None, 12.0, 0.2),  # a value: predicted / published - 1
        (10.0, None, 5.0, -0.5),
        (0.0, 5.0, 3.0, 0.0),  # inside a range
        (2.0, 5.0, 1.0, -0.5),  # below it: against its lower end
        (0.0, 5.0, 10.0, 1.0),  # above it: against its upper end
        (5.0, 0.0, 10.0, 1.0),  # a range's ends in either order
    ],
)
def test_a_residual_is_the_prediction_against_the_figure_or_the_nearer_end_of_a_range(
    published_value, high, predicted, residual
):
    p = Prediction("f", "a", "u", published_value, high, predicted=predicted)
    assert p.residual() == pytest.approx(residual)


def test_no_residual_without_a_prediction_or_against_zero():
    assert math.isnan(Prediction("f", "a", "u", 10.0).residual())  # not predicted
    assert math.isnan(Prediction("f", "a", "u", 0.0, predicted=3.0).residual())  # a zero figure has no ratio
    assert math.isnan(Prediction("f", "a", "u", 0.0, 5.0, predicted=-1.0).residual())  # below a range ending at 0


def test_a_residual_is_large_only_beyond_the_named_line():
    at = Prediction("f", "a", "u", 100.0, predicted=100 * (1 + RESIDUAL_NAMED))
    beyond = Prediction("f", "a", "u", 100.0, predicted=100 * (1 + RESIDUAL_NAMED) + 1)
    assert not at.large() and beyond.large()
    assert not Prediction("f", "a", "u", 100.0).large()  # not predicted: not large, but it needs a reason


def test_a_prediction_over_runs_is_their_median_with_an_interval_that_holds_it():
    p = Prediction("f", "a", "u", 1.0).over([1.0, 2.0, 3.0, 4.0, 100.0])
    assert p.predicted == 3.0 and p.low <= 3.0 <= p.high
    assert math.isnan(Prediction("f", "a", "u", 1.0).over([]).predicted)


def test_the_table_gives_a_reason_only_where_the_residual_is_large_or_nothing_is_predicted():
    rows = [
        Prediction("near", "a", "u", 10.0, predicted=11.0, why="w1"),
        Prediction("far", "a", "u", 10.0, predicted=20.0, why="w2"),
        Prediction("none", "a", "u", 10.0, why="w3"),
    ]
    t = table(rows).set_index("published figure")
    why = t[f"why, where over {RESIDUAL_NAMED:.0%}"]
    assert list(why) == ["", "w2", "w3"]
    assert list(t["residual"]) == ["+10%", "+100%", "not predicted"]
    assert unexplained(rows) == []
    assert unexplained([Prediction("far", "a", "u", 10.0, predicted=20.0)]) == ["far (a)"]
    assert unexplained([Prediction("none", "a", "u", 10.0)]) == ["none (a)"]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (8000.0, "8,000"),
        (2370.4, "2,370"),
        (12.345, "12.3"),
        (0.00023, "0.00023"),  # small, but a measurement: never 2.3e-04
        (5.55e-15, "0"),  # two equal cells' difference in floating point: no difference
        (-1.11e-14, "0"),
    ],
)
def test_a_figure_in_the_table_is_never_in_e_notation(value, shown):
    row = table([Prediction("f", "a", "u", value, predicted=value, low=value, high=value)]).iloc[0]
    assert row["published"] == row["predicted for the original"] == shown
    assert row["95 % interval"] == f"[{shown}, {shown}]"


# --- every study's model ------------------------------------------------------------------------------------


def _numeric_figures(study: str) -> set[tuple[str, str]]:
    pub = published(study)
    numeric = pd.to_numeric(pub["value"], errors="coerce").notna()
    return set(zip(pub.loc[numeric, "measure"], pub.loc[numeric, "arm"], strict=True))


def _tde_result():
    from secoverhead.studies.tde.declarations import OFF, ON

    rows = []
    for rnd in range(3):
        for threads in (1, 16):
            for arm, cpu in ((OFF, 1000.0), (ON, 1200.0)):
                rows.append({"round": rnd, "workload": "oltp_read_only", "threads": threads, "arm": arm,
                             "tps": 100.0 if arm == OFF else 95.0, "server_cpu_us_per_op": cpu,
                             "data_reads_per_txn": 5.0, "fsyncs_per_txn": 0.0,
                             "server_cpu_pct_of_limit": 40.0 if arm == OFF else 42.0})  # fmt: skip
    servers = {"mysql": {"buffer_pool_sizing": {"data_to_buffer_pool": 3.4}}}
    return StudyResult("tde", None, {"4c16g": _part("4c16g", rows, servers=servers)})


def test_tde_predicts_the_one_thread_loss_from_the_original_instances_split():
    from secoverhead.studies.tde.mechanism import predictions

    few = {p.figure: p for p in predictions(_tde_result().parts["4c16g"])}["TPS loss with few concurrent queries"]
    # one thread on 4c16g: 1,000 us of CPU + 5 reads x 200 us = 2 ms (500 TPS); encrypted 2.2 ms: 1 - 2 / 2.2
    assert few.predicted == pytest.approx(100 * (1 - 2.0 / 2.2), rel=1e-6)
    assert few.measured == pytest.approx(5.0)  # this machine's own: 1 - 95 / 100


def test_tde_table_covers_every_published_figure_and_explains_each_miss():
    from secoverhead.studies.tde.tables import prediction_table

    t = prediction_table(_tde_result())
    covered = set(t["published figure"])
    for measure in ("TPS loss with few concurrent queries", "TPS loss with many concurrent queries",
                    "CPU utilisation increase", "data set : buffer pool"):  # fmt: skip
        assert measure in covered
    assert any("Percona" in f for f in covered)
    assert (t.loc[t["residual"] == "not predicted", f"why, where over {RESIDUAL_NAMED:.0%}"].str.len() > 0).all()


def _https_part():
    from secoverhead.studies.https.declarations import BASELINE, FULL

    rows = [{"arm": BASELINE, "server_cpu_us_per_op": 100.0, "rps": 9000.0} for _ in range(3)]
    rows += [{"arm": FULL, "server_cpu_us_per_op": 1100.0, "rps": 900.0} for _ in range(3)]
    cal = {"rsa2048_sign_us": 600.0, "go_rsa2048_sign_us": 1200.0}
    return _part("nginx", rows, extras={"calibration": cal})


def test_https_predicts_the_go_services_rates_from_its_cores_and_gos_signature():
    from secoverhead.studies.https.tables import predictions

    rows = {(p.figure, p.arm): p for p in predictions(_https_part())}
    assert rows[("throughput under ab -n 100000 -c 100", "HTTP")].predicted == pytest.approx(4e6 / 100)
    # a full handshake's CPU with OpenSSL's 600 us signature replaced by Go's 1,200
    assert rows[("throughput under ab -n 100000 -c 100", "HTTPS (full handshake)")].predicted == pytest.approx(
        4e6 / (1100 - 600 + 1200)
    )
    sign = rows[("ServerKeyExchange (RSA signature) per handshake", "HTTPS (full handshake)")]
    assert (sign.predicted, sign.measured) == (pytest.approx(1.2), pytest.approx(0.6))
    assert "1.20 ms" in sign.why and "Go" in sign.why
    assert {(p.figure, p.arm) for p in rows.values()} == _numeric_figures("https")
    assert unexplained(list(rows.values())) == []


def _audit_part():
    from secoverhead.studies.audit.declarations import BASELINE

    rows = [{"arm": BASELINE, "round": r, "tps": 400.0, "qps": 8000.0, "server_cpu_us_per_op": 2000.0}
            for r in range(3)]  # fmt: skip
    rows += [{"arm": "general_log", "round": r, "tps": 300.0, "qps": 6000.0, "server_cpu_us_per_op": 2200.0,
              "log_io_us_per_txn": 2000.0} for r in range(3)]  # fmt: skip
    return _part("MySQL", rows)


def test_audit_predicts_general_logs_loss_from_the_closed_systems_least_bound():
    from secoverhead.studies.audit.tables import prediction_table, predictions

    rows = {(p.figure, p.arm): p for p in predictions(_audit_part())}
    # the log's 2 ms of file time a transaction caps TPS at 500, below the original's 1,150 and its cores' bound
    assert rows[("TPS change vs A", "general_log")].predicted == pytest.approx(100 * (500 / 1150 - 1))
    assert rows[("QPS", "A: no audit")].predicted == pytest.approx(1150 * 20)
    assert "3.07" in rows[("TPS", "A: no audit")].why  # cores implied: 1,150 x 2 ms / 0.75 of this machine's
    t = prediction_table(StudyResult("audit", None, {"MySQL": _audit_part()}))
    assert set(zip(t["published figure"], t["arm"], strict=True)) == _numeric_figures("audit")


def test_auth_predicts_the_seeded_bar_from_a_logins_cpu_less_its_random_reads():
    from secoverhead.studies.auth.tables import predictions

    random_source = {"mongod 4.2": [
        {"mechanism": "none", "server_cpu_us_per_op": 300.0, "opens_per_op": 0.0, "bytes_per_op": 0.0},
        {"mechanism": "SCRAM-SHA-1", "server_cpu_us_per_op": 1000.0, "opens_per_op": 1.0, "bytes_per_op": 8191.0},
    ]}  # fmt: skip
    extras = {"random_source": random_source, "calibration": {"urandom_8191_us": 20.0}}
    meta = {"environment": {"machine": {"kernel": "6.1"}}}
    part = _part("MongoDB", [{"arm": "auth off"}], extras=extras, meta=meta)
    rows = predictions(StudyResult("auth", None, {"MongoDB": part}))
    seeded = next(p for p in rows if p.arm.startswith("auth on (seeded"))
    assert seeded.predicted == pytest.approx(100 * (1000 - 20) / 1000)
    assert "900 us" in seeded.why and "45x" in seeded.why and "6.1" in seeded.why  # the read the original needed
    assert {(p.figure, p.arm) for p in rows} == _numeric_figures("auth")
    assert unexplained(rows) == []


def test_tdes_conclusions_say_which_of_the_originals_instances_no_verdict_speaks_for():
    from secoverhead.studies.tde.tables import scope_notes

    one = _tde_result()
    (note,) = scope_notes(one)
    assert "emulated 4c16g" in note and "8c32g was not run" in note
    both = StudyResult("tde", None, {n: _part(n, [{"arm": "x"}]) for n in ("4c16g", "8c32g on MariaDB")})
    assert scope_notes(both) == []


def test_an_interval_end_a_single_run_cannot_give_is_shown_as_none_not_as_minus_infinity():
    from secoverhead.core.units import shown, shown_interval

    nan = float("nan")
    assert shown(nan, "ratio") == "n/a" and shown_interval(nan, nan, "loss") == "n/a to n/a"
    assert shown(float("inf"), "ratio") == "∞" and shown(-float("inf"), "difference", "us") == "-∞"
