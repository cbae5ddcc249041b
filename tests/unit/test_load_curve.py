"""A price at the DBA's load, from a measured load curve (sizing/curves.py), branch by branch: inside the measured
rates interpolated in log rate, below them widened to where the lightest segment leads, above them up to the
back-to-back price; a curve's levels from its recorded rounds (pairs on minus off, a t interval)."""

from __future__ import annotations

import math

import pytest

from secoverhead.sizing.curves import Level, at, levels
from secoverhead.sizing.interval import Interval
from secoverhead.studies.protocol.loads import Curve, order

CURVE = (
    Level(300, 150, Interval(9, 6, 12), 3),
    Level(1500, 750, Interval(5, 3, 7), 3),
    Level(6000, 3000, Interval(3, 2, 4), 3),
)
BUSY = Interval(2.7, 2.2, 3.2)


def test_at_a_measured_rate_the_price_is_that_rates() -> None:
    got = at(CURVE, 750, BUSY)
    assert got.where == "inside" and got.extra == Interval(5, 3, 7)


def test_between_two_rates_every_end_is_interpolated_in_log_rate() -> None:
    x = math.sqrt(150 * 750)  # halfway in log rate
    got = at(CURVE, x, BUSY)
    assert got.where == "inside"
    assert (got.extra.point, got.extra.lo, got.extra.hi) == pytest.approx((7, 4.5, 9.5))


def test_below_the_lightest_rate_the_point_stays_and_the_interval_widens_along_the_slope() -> None:
    got = at(CURVE, 30, BUSY)
    assert got.where == "below" and got.extra.point == 9 and got.extra.lo == 6
    assert got.extra.hi > 12  # the slope rises toward light loads: the top end goes with it
    assert "below what was measured" in got.note("statement")


def test_a_slope_that_falls_toward_light_loads_widens_the_low_end() -> None:
    rising = (Level(1, 100, Interval(2, 1, 3), 3), Level(4, 1000, Interval(6, 5, 7), 3))
    got = at(rising, 10, BUSY)
    assert got.extra.lo < 1 and got.extra.hi == 3


def test_above_the_heaviest_rate_the_interval_runs_to_the_back_to_back_price() -> None:
    busy = Interval(1.0, 0.5, 1.5)
    got = at(CURVE, 10_000, busy)
    assert got.where == "above" and got.extra.point == 1.0 and (got.extra.lo, got.extra.hi) == (0.5, 4)
    assert "back-to-back" in got.note("statement")


def test_one_level_prices_its_own_rate_and_only_widens_above() -> None:
    one = CURVE[:1]
    assert at(one, 150, BUSY).extra == CURVE[0].extra
    assert at(one, 20, BUSY).where == "below" and at(one, 20, BUSY).extra == CURVE[0].extra


def test_no_level_or_no_load_is_an_error() -> None:
    with pytest.raises(ValueError):
        at((), 10, BUSY)
    with pytest.raises(ValueError):
        at(CURVE, 0, BUSY)


def _round(rate: float, pair: int, arm: str, us: float, met: float | None = None) -> dict:
    return {"rate": rate, "pair": pair, "arm": arm, "seconds": 2.0, "server_cores": 0.1,
            "rate_met": met or rate, "cpu_us_per_op": us}  # fmt: skip


def test_levels_pair_each_round_with_its_partner_and_skip_a_rate_without_two_pairs() -> None:
    rounds = [
        _round(300, 0, "A", 20), _round(300, 0, "B", 29), _round(300, 1, "B", 31), _round(300, 1, "A", 20),
        _round(900, 0, "A", 10), _round(900, 0, "B", 14),  # one pair: no interval
        _round(600, 0, "A", 12, 590), _round(600, 0, "B", 16, 610), _round(600, 1, "B", 18), _round(600, 1, "A", 12),
        _round(600, 2, "A", 12),  # a pair cut short: left out
    ]  # fmt: skip
    got = levels({"arm": "B", "baseline": "A", "cores": 2, "rounds": rounds}, 0.95)
    assert [v.rate for v in got] == [300, 600]
    assert got[0].extra.point == pytest.approx(10) and got[0].extra.lo < 10 < got[0].extra.hi and got[0].pairs == 2
    assert got[1].per_core == pytest.approx(600 / 2) and got[1].extra.point == pytest.approx(5)


def test_rounds_alternate_abba() -> None:
    assert list(order(3)) == [(0, False), (0, True), (1, True), (1, False), (2, False), (2, True)]


@pytest.mark.parametrize("bad", [{"rates": ()}, {"rates": (0.0,)}, {"seconds": 0}, {"pairs": 1}])
def test_a_curve_that_cannot_give_an_interval_is_refused(bad) -> None:
    ok = {"kind": "query", "per": "statement", "arm": "B", "baseline": "A", "rates": (1.0,), "seconds": 1, "pairs": 2}
    with pytest.raises(ValueError):
        Curve(**(ok | bad))


def test_a_curve_that_fails_midway_keeps_the_rounds_it_took_and_says_what_failed() -> None:
    """No server: set-up logic (the rounds with a stand-in operation that fails on its 40th call)."""
    import contextlib

    from secoverhead.studies.protocol.load_runs import measure
    from secoverhead.studies.protocol.loads import Side

    calls = []

    def op() -> None:
        calls.append(1)
        if len(calls) >= 40:
            raise ConnectionError("server went away")

    side = Side(lambda: contextlib.nullcontext({"query": op}), None, 2.0)
    got = measure(Curve("query", "query", "B", "A", (100.0,), 0.1, 3), side, side)
    assert got["error"] == "ConnectionError: server went away"
    assert 1 <= len(got["rounds"]) < 6 and all(r["rate"] == 100.0 for r in got["rounds"])


def test_the_pacer_never_runs_ahead_of_its_schedule_and_a_stop_ends_it() -> None:
    import threading

    from secoverhead.workloads.paced import paced

    assert paced(200.0, 0.2, lambda: None) <= 200 * 0.2 + 1  # late ones catch up; none is early
    stop = threading.Event()
    stop.set()
    assert paced(1000.0, 5.0, lambda: None, stop) == 0
