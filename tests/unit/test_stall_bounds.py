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
