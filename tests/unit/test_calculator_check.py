"""benchmarks/calculator_check.py's arithmetic: rounds paired off against on whatever their order, and pacing that
never runs ahead of its rate (what the measured extra is divided by)."""

from __future__ import annotations

import importlib.util
import sys
import threading
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


def test_pacing_never_runs_ahead_of_its_rate():
    calls = []
    done = cc._paced(200.0, 0.2, lambda: calls.append(1), threading.Event())
    assert done == len(calls) and 1 <= done <= 200 * 0.2 + 1


def test_a_stop_ends_pacing():
    stop = threading.Event()
    stop.set()
    assert cc._paced(1000.0, 5.0, lambda: None, stop) == 0
