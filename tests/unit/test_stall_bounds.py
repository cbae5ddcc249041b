"""A run against its plan: every branch of the stall rule."""

from __future__ import annotations

import pytest

from secoverhead.core.errors import Stalled
from secoverhead.workloads.measurement import check_against_plan, stalled_at, stop_after


@pytest.mark.parametrize(("took", "planned"), [(8.0, 8), (17.9, 8), (29.9, 20), (120.0, 100), (10.5, 1)])
def test_a_run_within_its_overrun_passes(took, planned):
    check_against_plan(took, planned, "sysbench run")  # 10 s or half the plan past it, whichever is larger


@pytest.mark.parametrize(("took", "planned"), [(18.1, 8), (91.6, 8), (30.1, 20), (150.1, 100)])
def test_a_run_past_its_overrun_is_a_stall_named_with_both_lengths(took, planned):
    with pytest.raises(Stalled, match=rf"ran {took:.1f} s of a planned {planned:g} s.*stalled"):
        check_against_plan(took, planned, "sysbench run")


def test_a_run_is_stopped_a_minute_or_its_length_past_its_plan_and_says_so():
    assert stop_after(8) == 68 and stop_after(100) == 200
    assert "did not finish 60 s after its planned 2 s" in str(stalled_at(2, "sysbench run"))
    assert stop_after(8) > 18  # a stall is stopped after it could have been seen as one


# -- a counted workload: one operation against OPERATION_S ------------------------------------------------
def test_operations_within_the_bound_pass_and_one_past_it_is_a_stall_naming_the_server():
    from secoverhead.workloads.measurement import OPERATION_S, check_operations

    check_operations([0.2, 3.3, 1200.0], "connection", "the MySQL server at 127.0.0.1:3306")
    check_operations([], "connection", "x")
    with pytest.raises(Stalled, match=r"the MySQL server at 127\.0\.0\.1:3306 stalled: one connection took 45\.2 s"):
        check_operations([0.17, 45_200.0, 3.3], "connection", "the MySQL server at 127.0.0.1:3306")
    assert OPERATION_S == 10.0  # the same floor as a timed run's overrun


def test_an_operations_failure_says_stall_lost_connection_or_stays_its_own():
    import time

    import pymongo.errors

    from secoverhead.core.errors import SecoverheadError
    from secoverhead.workloads.measurement import OPERATION_S, operation_failed

    now = time.perf_counter_ns()
    long_ago = now - int((OPERATION_S + 5) * 1e9)
    where = "the MongoDB server at 127.0.0.1:27017"
    cancelled = pymongo.errors._OperationCancelled("operation cancelled")
    stalled = operation_failed(cancelled, long_ago, "connection", where)
    assert isinstance(stalled, Stalled) and where in str(stalled) and "stalled" in str(stalled)
    lost = operation_failed(cancelled, now, "connection", where)
    assert type(lost) is SecoverheadError and str(lost).startswith(f"{where} went away: one connection lost its")
    refused_tls = pymongo.errors.ServerSelectionTimeoutError("SSL handshake failed: 127.0.0.1:27017: EOF")
    assert type(operation_failed(refused_tls, now, "connection", where)) is SecoverheadError  # not a stall
    timed_out = operation_failed(pymongo.errors.ServerSelectionTimeoutError("No servers found yet"), now, "x", where)
    assert isinstance(timed_out, Stalled)  # the client's own timeout: the server did not answer within it
    refused = pymongo.errors.OperationFailure("Authentication failed.")
    assert operation_failed(refused, now, "connection", where) is refused  # a refusal is said as the server said it
    assert isinstance(operation_failed(refused, long_ago, "connection", where), Stalled)


def test_a_counted_run_that_waited_outside_its_operations_is_a_stall():
    from secoverhead.workloads.measurement import Measurement, check_untimed, timed_in

    where = "the MongoDB server at mongodb://127.0.0.1:27017/"
    check_untimed(Measurement({}, info=timed_in(1.2, where)), took_s=9.0)  # 7.8 s besides: a busy machine's
    check_untimed(Measurement({}), took_s=300.0)  # a run that times no operations (sysbench) is judged by its plan
    with pytest.raises(Stalled, match=r"stalled: the run took 14\.0 s, 12\.8 s of it outside its timed operations"):
        check_untimed(Measurement({}, info=timed_in(1.2, where)), took_s=14.0)
