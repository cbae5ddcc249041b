"""benchmarks/calculator_check.py's arithmetic: rounds paired off against on whatever their order, and a row whose
client fell behind a rate said to be no check."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).parents[2] / "benchmarks" / "calculator_check.py"
spec = importlib.util.spec_from_file_location("calculator_check", PATH)
cc = importlib.util.module_from_spec(spec)
sys.modules["calculator_check"] = cc  # its dataclass looks its module up
spec.loader.exec_module(cc)


def _r(on: bool, cores: float):
    return cc.Round(on, 10.0, cores, 100.0, 2000.0)


def test_each_pair_is_on_minus_off_in_either_order():
    rounds = [_r(False, 0.10), _r(True, 0.22), _r(True, 0.23), _r(False, 0.11), _r(False, 0.12), _r(True, 0.24)]
    got = cc.measured(rounds)
    assert got["pairs"] == pytest.approx([0.12, 0.12, 0.12])
    assert got["lo"] == pytest.approx(0.12) and got["hi"] == pytest.approx(0.12)
    noisy = cc.measured([_r(False, 0.1), _r(True, 0.2), _r(True, 0.25), _r(False, 0.1)])
    assert noisy["point"] == pytest.approx(0.125) and noisy["lo"] < 0.125 < noisy["hi"]


def test_a_row_whose_client_fell_behind_a_rate_is_no_check():
    """The pacer is the library's (tests/unit/test_load_curve.py); here: a round under 95 % of a rate asked did
    other work than its partner, and the row says so instead of a ratio. TDE's rounds are per transaction."""
    asked = {"new_per_s": 100.0, "queries_per_s": 2000.0, "transactions_per_s": 0.0}
    assert cc.behind([_r(False, 0.1), _r(True, 0.2)], asked) == ""
    short = cc.Round(True, 10.0, 0.2, 100.0, 1500.0)
    said = cc.behind([_r(False, 0.1), short], asked)
    assert "queries_per_s 1,500/s of 2,000 asked with the feature on" in said and "off" not in said
    tde = cc.Round(True, 10.0, 0.2, 0.0, 0.0, transactions_per_s=20.0)
    assert cc.behind([tde, cc.Round(False, 10.0, 0.1, 0.0, 0.0, 20.0)], {"transactions_per_s": 30.0}) == ""


def _args(*argv: str):
    a = cc.argparse.ArgumentParser()
    a.add_argument("--reports", type=Path, default=Path("/nonexistent"))
    a.add_argument("--features", nargs="+", default=["audit"])
    for name, default in (("--new", 100.0), ("--queries", 2000.0), ("--seconds", 10.0), ("--tps", 30.0)):
        a.add_argument(name, type=float, default=default)
    a.add_argument("--workload", default="read_only")
    a.add_argument("--pairs", type=int, default=4)
    return a.parse_args(argv)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--pairs", "1"), "at least 2 pairs"),
        (("--seconds", "0"), "more than 0 s"),
        (("--queries", "-5"), "0 or more per second"),
        (("--tps", "-5"), "0 or more per second"),
        (("--features", "audit", "--queries", "0"), "audit: nothing to measure at --queries 0"),
        (("--features", "scram", "--new", "0"), "scram: nothing to measure at --new 0"),
        (("--features", "tde", "--tps", "0"), "tde: nothing to measure at --tps 0"),
        (("--features", "tls", "--new", "0", "--queries", "0"), "tls: nothing to measure at --new 0, --queries 0"),
        (("--features", "audit"), "audit: the calculator cannot answer from /nonexistent"),
    ],
)
def test_bad_input_is_one_line_before_any_server(argv, says):
    got = cc.bad_input(_args(*argv))
    assert says in got and "\n" not in got


def test_input_the_calculator_can_answer_passes(monkeypatch):
    asked = []
    monkeypatch.setattr(cc, "predicted", lambda *a: asked.append(a) or {})
    assert cc.bad_input(_args("--features", "audit", "scram", "tde")) is None
    assert [(f, list(rate.values())) for f, _, rate, _ in asked] == [
        ("audit", [0.0, 2000.0, 0.0]),
        ("scram", [100.0, 0.0, 0.0]),
        ("tde", [0.0, 0.0, 30.0]),
    ]


def test_main_exits_2_on_bad_input(capsys):
    assert cc.main(["--pairs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("calculator_check: --pairs 1")


def _rate(new=0.0, queries=0.0, tps=0.0):
    return {"new_per_s": new, "queries_per_s": queries, "transactions_per_s": tps}


@pytest.mark.parametrize(
    ("feature", "rate", "want"),
    [
        ("tls", _rate(100, 2000), {"new_connections_per_s": 100, "reused_queries_per_s": 2000, "pooled_share": 0.0}),
        ("audit", _rate(queries=8000), {"audited_statements_per_s": 8000, "audit_approach": "server_audit"}),
        ("scram", _rate(new=120), {"new_connections_per_s": 120, "pooled_share": 0.0, "engine": "mongodb"}),
        ("https", _rate(100, 300), {"https_requests_per_s": 400, "https_new_share": 0.25, "https_resumed_share": 0}),
        ("https", _rate(queries=2000), {"https_requests_per_s": 2000, "https_new_share": 0.0}),
    ],
)
def test_the_calculator_is_asked_for_the_checks_own_rates(feature, rate, want):
    got = cc.calculator_inputs(feature, rate, "read_only")
    assert got["features"] == [feature] and got.items() >= want.items()


@pytest.mark.parametrize("workload", ["read_only", "write_only", "read_write"])
def test_tde_is_priced_for_the_one_workload_run_at_one_thread(workload):
    got = cc.calculator_inputs("tde", _rate(tps=30), workload)
    assert got["features"] == ["encryption_at_rest"] and got["concurrency"] == 1
    assert {k: v for k, v in got.items() if k.endswith("_tps")} == {
        "read_only_tps": 30 if workload == "read_only" else 0.0,
        "write_only_tps": 30 if workload == "write_only" else 0.0,
        "read_write_tps": 30 if workload == "read_write" else 0.0,
    }


def test_a_tde_round_is_its_cpu_per_transaction_at_the_rate_asked():
    fast = cc._tde_round(True, {"duration_s": 10.0, "server_cpu_total_s": 0.40, "transactions": 340}, 30)
    slow = cc._tde_round(True, {"duration_s": 10.0, "server_cpu_total_s": 0.30, "transactions": 255}, 30)
    assert fast.server_cores == pytest.approx(slow.server_cores) == pytest.approx(0.40 / 340 * 30)
    assert fast.transactions_per_s == pytest.approx(34.0) and slow.transactions_per_s == pytest.approx(25.5)
