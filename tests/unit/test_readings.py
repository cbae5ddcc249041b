"""Readings and the registry: every region shape, branch by branch, and for every registered claim no input on
which reproduce and refute hold at once."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from secoverhead.analysis import claim_registry as registry
from secoverhead.analysis.readings import GAP, REFUTE, REPRODUCE, Reading
from secoverhead.analysis.stats import sequence_half, t_quantile
from secoverhead.analysis.verdicts import Verdict

R, N, U = Verdict.REPRODUCED, Verdict.NOT_REPRODUCED, Verdict.INCONCLUSIVE


@pytest.mark.parametrize(
    "reading, lo, hi, expected",
    [
        (Reading.above("x", 1.3), 1.4, 1.6, R),
        (Reading.above("x", 1.3), 1.0, 1.2, N),
        (Reading.above("x", 1.3), 1.2, 1.4, U),
        (Reading.above("x", 1.3, refute_below=1.1), 1.15, 1.25, U),  # in the gap
        (Reading.above("x", 1.3, refute_below=1.1), 1.0, 1.05, N),
        (Reading.below("x", 0.5), 0.2, 0.4, R),
        (Reading.below("x", 0.5), 0.6, 0.7, N),
        (Reading.below("x", 0.5, refute_above=0.7), 0.55, 0.65, U),
        (Reading.band("x", 15, 45), 20, 40, R),
        (Reading.band("x", 15, 45), 5, 12, N),
        (Reading.band("x", 15, 45), 50, 60, N),
        (Reading.band("x", 15, 45), 10, 50, U),  # wider than the band: touches both labels
        (Reading.band("x", 15, 45), 10, 20, U),
        (Reading.band("x", 15, 45, margin=2), 13.5, 14.5, U),  # between the band and its margin
        (Reading.band("x", 15, 45, margin=2), 5, 12.9, N),
        (Reading.above("x", 1.3), math.nan, 1.4, U),
        (Reading.above("x", 1.3), 1.6, 1.4, U),  # not an interval
    ],
)
def test_one_interval(reading, lo, hi, expected):
    assert reading.decide([(lo, hi)]) == expected


def test_several_intervals_all_and_any():
    every = Reading.below("loss %", 5.0)
    assert every.decide([(1, 3), (2, 4)]) == R
    assert every.decide([(1, 3), (4, 6)]) == U
    assert every.decide([(1, 3), (6, 8)]) == N  # one cell refutes
    one = Reading.below("contrast", 0.98, combine="any")
    assert one.decide([(0.8, 0.9), (0.99, 1.1)]) == R  # one cell reproduces
    assert one.decide([(0.99, 1.1), (1.0, 1.2)]) == N  # refuting needs every cell
    assert one.decide([(0.95, 1.1), (1.0, 1.2)]) == U
    assert every.decide([]) == U


def test_refuting_intervals_are_read_apart():
    r = Reading.below("loss %", 5.0)
    # reproduce on the narrow intervals, refute on the wide ones
    assert r.decide([(1, 4)], [(0, 5.5)]) == R
    assert r.decide([(5.5, 7)], [(5.2, 8)]) == N
    assert r.decide([(5.5, 7)], [(4.5, 8)]) == U  # the narrow one is beyond 5, the widened one is not


def test_readings_refuse_regions_that_cannot_decide():
    with pytest.raises(ValueError):
        Reading("x", (1.0,), (REPRODUCE, REPRODUCE))
    with pytest.raises(ValueError):
        Reading("x", (2.0, 1.0), (REFUTE, GAP, REPRODUCE))
    with pytest.raises(ValueError):
        Reading("x", (1.0,), (REFUTE,))
    with pytest.raises(ValueError):
        Reading.from_dict({"effect": "x", "shape": "circle"})


def test_describe_names_the_regions():
    assert Reading.band("TPS loss, %", 15, 45, quantity="loss").describe() == (
        "TPS loss, %: reproduce [15 %, 45 %]; refute below 15 % or above 45 %"
    )
    assert "reproduce above 50 %" in Reading.above("share won back", 0.5, quantity="share").describe()
    assert "reproduce above 1.0526×" in Reading.above("TPS ratio", 1.0526).describe()
    assert "one cell reproduces" in Reading.below("c", 0.98, combine="any").describe()


# -- the registry ---------------------------------------------------------------------------------------
CLAIMS = list(registry.claims().values())


def test_every_published_claim_quotes_its_original_and_the_suites_own_are_marked():
    assert {c.source for c in CLAIMS} == {"published", "extension", "suite"}
    for c in CLAIMS:
        if c.source != "suite":
            assert c.original and c.quote and c.translation, c.id
        assert c.metric and c.why and c.reading.effect, c.id
    # the suite's own hypotheses the originals never made (STUDIES.md: 001 has no pooling, 003 no ECDSA or
    # keep-alive, 004 no figure for init_connect or binlog alone)
    own = {(c.study, c.id) for c in CLAIMS if not c.published}
    assert ("auth", "pooling") in own and ("https", "recovery:TLS 1.2 full, ECDSA") in own
    assert ("https", "recovery:HTTPS keep-alive") in own
    # remedies seed 003 names but does not measure: extensions of its claim, counted apart
    extension = {(c.study, c.id) for c in CLAIMS if c.source == "extension"}
    assert extension == {
        ("https", "recovery:TLS 1.2 resumed, session cache"),
        ("https", "recovery:TLS 1.2 resumed, ticket"),
        ("https", "recovery:TLS 1.3 resumed, session cache"),
        ("https", "recovery:TLS 1.3 resumed, ticket"),
    }
    # seed 000 measured MongoDB only: its claims on MySQL are extensions
    setup = next(c for c in CLAIMS if c.id == "setup")
    assert setup.source_on("MongoDB") == "published" and setup.source_on("MySQL") == "extension"


def test_the_registry_rejects_an_unquoted_published_claim(registry_from):
    with pytest.raises(ValueError, match="quotes"):
        registry_from(
            "- {id: x, study: s, source: published, claim: c, metric: tps, why: w,"
            " reading: {effect: e, shape: above, line: 1}}\n"
        )


def test_a_raised_revision_is_recorded_explained_in_changes_and_a_bad_one_refused(registry_from):
    """A claim measured otherwise after a fix carries its revision into verdicts.json, and CHANGES.md says why."""
    changes = (registry.paths.CLAIMS.parent / "CHANGES.md").read_text()
    raised = [c for c in CLAIMS if c.revision > 1]
    assert raised, "auth-client-cpu is at revision 3"
    for c in raised:
        assert f"`{c.id}` at revision {c.revision}" in changes, c.id
        assert c.record()["revision"] == c.revision
    assert registry.revision("auth", "auth-client-cpu") == 3 and registry.revision("audit", "gone") == 1
    with pytest.raises(ValueError, match="revision is a whole number"):
        registry_from(
            "- {id: x, study: s, source: suite, claim: c, metric: tps, why: w, mechanism: m, revision: 0,"
            " preconditions: [{condition: round_trip_ms, at_least: 1, why: w, where: w}],"
            " reading: {effect: e, quantity: ratio, unit: x, shape: above, line: 1}}\n"
        )


def test_audit_is_read_on_tps_as_the_original_computes_it():
    for c in registry.of_study("audit"):
        assert c.metric == "tps", c.id
    loss = registry.get("audit", "general_log-loss").reading
    assert (loss.cuts, loss.labels) == ((15.0, 45.0), (REFUTE, REPRODUCE, REFUTE))


def _interval(draw, centre_range=(-60.0, 60.0)):
    c = draw(st.floats(*centre_range, allow_nan=False))
    w = draw(st.floats(0.0, 40.0, allow_nan=False))
    widen = draw(st.floats(1.0, 3.0, allow_nan=False))
    scale = draw(st.sampled_from([0.01, 1.0]))  # ratios near 1 and percentages
    mid, half = c * scale, w * scale
    return (mid - half, mid + half), (mid - half * widen, mid + half * widen)


@st.composite
def _cells(draw):
    n = draw(st.integers(1, 5))
    pairs = [_interval(draw) for _ in range(n)]
    narrow, wide = [p[0] for p in pairs], [p[1] for p in pairs]
    if draw(st.booleans()):  # either may be the one that refutes
        narrow, wide = wide, narrow
    return narrow, wide


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.study}:{c.id}" for c in CLAIMS])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_no_input_is_both_reproduced_and_refuted(claim, data):
    """Over random cells (intervals, and refuting intervals that contain them or lie inside them), reproduce and
    refute never hold together, for any reading of any registered claim; decide() agrees with holds()."""
    sets = [data.draw(_cells()) for _ in claim.readings()]
    holds = [r.holds(i, f) for r, (i, f) in zip(claim.readings(), sets, strict=True)]
    rep, ref = all(h[0] for h in holds), any(h[1] for h in holds)
    for h in holds:
        assert not (h[0] and h[1])
    assert not (rep and ref)
    assert claim.decide(*sets) == (R if rep else N if ref else U)


@pytest.mark.parametrize(
    "reading, lo, hi, n, expected",
    [
        (Reading.band("x", 15, 45), 10, 30, 8, 32),  # centre 20, half 10, room 5: 4x the rounds
        (Reading.above("x", 1.3), 1.2, 1.6, 4, 16),  # centre 1.4, half 0.2, room 0.1
        (Reading.above("x", 1.3), 1.1, 1.5, 4, None),  # centre on the line: no number of rounds decides
        (Reading.above("x", 1.3, refute_below=1.1), 1.1, 1.3, 4, None),  # centre in the gap
        (Reading.above("x", 1.3), math.nan, 1.5, 4, None),
    ],
)
def test_rounds_an_undecided_interval_would_need(reading, lo, hi, n, expected):
    assert reading.rounds_to_decide(lo, hi, n) == expected


def test_an_undecided_claim_says_how_many_rounds_would_decide_it():
    from secoverhead.analysis.claimcheck import Grounds, verdict_of

    v = verdict_of("audit", "general_log-loss", U, "e", grounds=Grounds(intervals=(([(10.0, 30.0)], None),), rounds=8))
    assert v.rounds_needed == 32 and "about 32 would decide it" in v.evidence
    v = verdict_of("audit", "general_log-loss", U, "e", grounds=Grounds(intervals=(([(5.0, 25.0)], None),), rounds=8))
    assert v.rounds_needed is None and "on the claim's line" in v.evidence
    assert (
        verdict_of(
            "audit", "general_log-loss", R, "e", grounds=Grounds(intervals=(([(20.0, 30.0)], None),), rounds=8)
        ).rounds_needed
        is None
    )


@pytest.mark.parametrize(
    "floor, expected",
    [
        (0.0, 32),  # no floor: as above
        (3.0, 46),  # the run's own half-width squared 100 - 9, room^2 - floor^2 = 16: 8 * 91 / 16 = 45.5
        (5.0, None),  # the floor alone fills the room: no number of rounds in one run decides it
        (6.0, None),
    ],
)
def test_a_between_run_floor_takes_rounds_or_every_hope_of_them(floor, expected):
    reading = Reading.band("x", 15, 45)  # [10, 30] over 8 rounds: centre 20, half 10, room 5
    got = reading.rounds_to_decide(10, 30, 8, floor)
    assert got == expected
    if got:  # the run's own half-width shrinks as 1/sqrt(rounds), the floor stays: together within the room
        assert math.sqrt((100 - floor**2) * 8 / got + floor**2) <= 5


def test_reports_to_decide_are_the_fewest_whose_confidence_sequence_fits_the_room():
    reading = Reading.band("x", 15, 45)
    spread = 10 / t_quantile(7, 0.975)  # a report's half-width of 10 over 8 rounds, read back as its spread
    k = reading.runs_to_decide(10, 30, 8)  # centre 20, room 5 to the cut at 15
    assert k is not None and sequence_half(spread, k, 0.95) < 5 <= sequence_half(spread, k - 1, 0.95)
    assert k > 4  # more than a fixed-sample interval's four: the sequence holds at every look, so it is wider
    narrow = reading.runs_to_decide(15.5, 16.5, 8)
    assert narrow is not None and 3 <= narrow < k  # finite from three reports, fewer where the room is wider
    assert Reading.above("x", 1.3).runs_to_decide(1.1, 1.5, 4) is None  # on the line: runs never decide it
