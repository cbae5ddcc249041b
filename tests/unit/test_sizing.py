"""The cost calculator's arithmetic on synthetic costs: units, scaling by the speed reference component by
component, intervals, retention; the whole calculation on a synthetic report tree through the real code path
(result store, paired comparisons); and bad input, one line and exit 2 before anything runs."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer
from scipy import stats

from secoverhead import sizing
from secoverhead.core.errors import ConfigError
from secoverhead.measurement.results import ResultStore, RunRecord
from secoverhead.sizing import scaling
from secoverhead.sizing import tables as cost_tables
from secoverhead.sizing.calculator import cores_text, number, parts_text, span
from secoverhead.sizing.costs import Priced
from secoverhead.sizing.estimate import Storage, compute_line, totals
from secoverhead.sizing.interval import Interval
from secoverhead.sizing.recipes import Line, Measure
from tests.records import run_json

M = {"rsa2048_sign_us": 100.0, "ecdsa_p256_sign_us": 20.0, "x25519_derive_us": 30.0, "python_loop_ms": 50.0}
RSA = (("rsa2048_sign_us", 1),)


# -- scaling ------------------------------------------------------------------------------------------------
def test_a_cost_that_is_one_signature_moves_with_the_signature_alone():
    you = M | {"rsa2048_sign_us": 200.0, "python_loop_ms": 75.0}
    assert scaling.rescale(100.0, M, you, RSA) == pytest.approx(200.0)


def test_the_rest_moves_with_the_fixed_loop():
    you = M | {"rsa2048_sign_us": 200.0, "python_loop_ms": 75.0}  # general factor 1.5
    assert scaling.rescale(150.0, M, you, RSA) == pytest.approx(200.0 + 50.0 * 1.5)
    assert scaling.rescale(50.0, M, you) == pytest.approx(75.0)  # no cryptography: all general


def test_each_primitive_by_its_own_reference():
    you = M | {"rsa2048_sign_us": 300.0, "x25519_derive_us": 10.0}
    prims = (("rsa2048_sign_us", 1), ("x25519_derive_us", 2))
    assert scaling.rescale(100 + 60 + 40, M, you, prims) == pytest.approx(300 + 20 + 40)


def test_a_neighbour_configuration_swaps_the_signature():
    ecdsa = (("ecdsa_p256_sign_us", 1),)
    assert scaling.rescale(150.0, M, M, RSA, ecdsa) == pytest.approx(20.0 + 50.0)


def test_scaling_is_monotone_so_interval_ends_stay_ends():
    you = M | {"rsa2048_sign_us": 40.0, "python_loop_ms": 90.0}
    xs = np.linspace(-100, 500, 301)
    ys = [scaling.rescale(x, M, you, RSA) for x in xs]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(ys))
    assert scaling.rescale(0.0, M, you, RSA) == 0.0
    assert scaling.rescale(50.0, M, you, RSA) == pytest.approx(20.0)  # below the signature's price: all crypto
    assert scaling.rescale(-10.0, M, you, RSA) == pytest.approx(-18.0)  # below zero: all rest


def test_a_missing_reference_moves_the_whole_cost_with_the_general_factor():
    you = {"python_loop_ms": 100.0}  # no RSA figure on the user's side
    assert scaling.rescale(150.0, {"python_loop_ms": 50.0}, you, RSA) == pytest.approx(300.0)


def test_reference_units():
    assert scaling.reference_us({"pbkdf2_sha256_15000_ms": 3.5}, "pbkdf2_sha256_15000_ms") == pytest.approx(3500)
    assert scaling.reference_us({"aes_256_ctr_ns_per_byte": 0.5}, "aes_256_ctr_ns_per_byte") == pytest.approx(5e-4)
    assert scaling.reference_us({"rsa2048_sign_us": 0}, "rsa2048_sign_us") is None


# -- arithmetic ---------------------------------------------------------------------------------------------
def _priced(m: Measure, point: float, lo: float, hi: float, base: float = 100.0, prims=()) -> Priced:
    return Priced(m, point, lo, hi, base, base + point, 10, "paired by round", 0.99, prims, M, Path("/nowhere"))


def _line(rate: float, *, key="x", side="server", rtt=0.0, measures=None) -> Line:
    m = measures or (Measure("https", "https", "full", "HTTP", "server_cpu_us_per_op"),)
    return Line(key, "https", key, "rate", rate, "request", m, rtt, side)


def test_cores_are_rate_times_cost_with_the_interval_carried():
    m = Measure("https", "https", "full", "HTTP", "server_cpu_us_per_op")
    r = compute_line(_line(2000.0, measures=(m,)), {m: _priced(m, 500.0, 400.0, 650.0)}, {}, rtt_ms=0.5)
    assert (r.cores.point, r.cores.lo, r.cores.hi) == pytest.approx((1.0, 0.8, 1.3))
    doubled = compute_line(_line(4000.0, measures=(m,)), {m: _priced(m, 500.0, 400.0, 650.0)}, {}, rtt_ms=0.5)
    assert doubled.cores.point == pytest.approx(2 * r.cores.point) and doubled.cores.hi == pytest.approx(2.6)


def test_latency_is_cpu_time_plus_round_trips():
    m = Measure("https", "https", "full", "HTTP", "server_cpu_us_per_op")
    r = compute_line(_line(1.0, rtt=2, measures=(m,)), {m: _priced(m, 500.0, 400.0, 650.0)}, {}, rtt_ms=0.75)
    assert (r.latency_ms.point, r.latency_ms.lo, r.latency_ms.hi) == pytest.approx((2.0, 1.9, 2.15))


def test_a_line_of_two_comparisons_sums_them_and_scales_each_by_its_own_cryptography():
    a = Measure("tde", "8c32g", "on", "off", "m", (("workload", "ro"),), pages=True)
    b = Measure("tde", "8c32g", "on", "off", "m", (("workload", "wo"),), pages=True)
    pages = (("rsa2048_sign_us", 1),)  # any reference: one unit of it in each
    priced = {a: _priced(a, 100.0, 90.0, 110.0, prims=pages), b: _priced(b, 200.0, 150.0, 250.0)}
    you = {"rsa2048_sign_us": 300.0}  # a's cryptography costs 3x; b has none and the loop is unchanged
    r = compute_line(_line(1e6, measures=(a, b)), priced, you, rtt_ms=0)
    assert r.measured_us.point == pytest.approx(300.0)
    assert r.us.point == pytest.approx(300.0 + 200.0)
    # the low end on a machine faster in cryptography and in the rest by one calibration's repeatability
    c, g = 1 - scaling.CRYPTO_REPEATABILITY, 1 - scaling.REPEATABILITY[scaling.GENERAL]
    assert r.us.lo == pytest.approx(90.0 * 300.0 * c / 100.0 + 150.0 * g)
    assert r.cores.point == pytest.approx(500.0)


def test_a_users_machine_widens_the_interval_by_its_references_repeatability_and_none_does_not():
    m = Measure("https", "https", "full", "HTTP", "server_cpu_us_per_op")
    priced = {m: _priced(m, 150.0, 140.0, 160.0, prims=RSA)}
    same = compute_line(_line(1e6, measures=(m,)), priced, {}, rtt_ms=0)
    assert (same.us.lo, same.us.hi) == (140.0, 160.0)  # the measuring machine's own costs: as measured
    mine = compute_line(_line(1e6, measures=(m,)), priced, dict(M), rtt_ms=0)  # a machine just like it
    assert mine.us.point == pytest.approx(150.0)
    c, g = scaling.CRYPTO_REPEATABILITY, scaling.REPEATABILITY[scaling.GENERAL]
    assert mine.us.lo == pytest.approx(100 * (1 - c) + 40 * (1 - g))
    assert mine.us.hi == pytest.approx(100 * (1 + c) + 60 * (1 + g))


def test_totals_are_each_line_at_least_zero_summed_with_shares_dominance_and_clients_apart():
    m = Measure("https", "https", "full", "HTTP", "server_cpu_us_per_op")
    n = Measure("https", "https", "keep-alive", "HTTP", "server_cpu_us_per_op")
    p = {m: _priced(m, 100.0, -20.0, 200.0), n: _priced(n, -10.0, -40.0, 20.0)}
    rs = [
        compute_line(_line(3000.0, key="a", measures=(m,)), p, {}, 0),
        compute_line(_line(1000.0, key="b", measures=(m,)), p, {}, 0),
        compute_line(_line(-0.0, key="c", measures=(m,)), p, {}, 0),
        compute_line(_line(1000.0, key="d", measures=(n,)), p, {}, 0),  # measured below zero: adds no work
        compute_line(_line(5000.0, key="client", side="client", measures=(m,)), p, {}, 0),
    ]
    t = totals(rs)
    assert (t.server.point, t.server.lo, t.server.hi) == pytest.approx((0.4, 0.0, 0.82))
    assert (t.client.point, t.client.lo, t.client.hi) == pytest.approx((0.5, 0.0, 1.0))
    assert t.dominant == "a" and t.shares["a"] == pytest.approx(0.75) and t.shares["d"] == 0
    assert "client" not in t.shares


def test_storage_per_day_retention_and_compression():
    s = Storage("server_audit", Interval(100.0, 90.0, 110.0), 1000.0, 6.0, "zstd", 10.0)
    assert s.gb_per_day.point == pytest.approx(8.64)
    days = 6 * 365.25 / 12
    assert s.gb_retained_raw.hi == pytest.approx(8.64 * 1.1 * days)
    assert s.gb_retained_compressed.point == pytest.approx(8.64 * days / 10)
    assert s.gb_rotated_daily.point == pytest.approx(8.64 * (1 + (days - 1) / 10))
    assert Storage("x", Interval(1, 1, 1), 1.0, 1.0, "none measured", None).gb_retained_compressed is None


def test_numbers_and_intervals_read_as_words():
    assert number(2000) == "2,000" and number(3.14159) == "3.14" and number(12.0) == "12" and number(0.0312) == "0.031"
    assert number(0.000234) == "0.00023" and number(-0.000234) == "-0.00023"  # never 2.3e-04 cores
    assert cores_text(Interval(1.2, 1.1, 1.4)) == "1.20 cores [1.10, 1.40]"  # the estimate leads
    assert cores_text(Interval(0.1, -0.1, 0.3)).startswith("at most 0.30 cores")
    assert span(311.2, 311.4) == "311" and span(4725.0, 4726.0) == "4,725–4,726"  # never "311–311 GB"


def test_lines_not_told_apart_from_zero_add_their_upper_ends_and_nothing_to_the_least():
    """A DBA's number to plan with: handshakes measured at 0.37-0.79 cores beside reused queries at -0.61-0.77 read
    0.37-1.56 cores, not 'at most 1.56 (reaches zero)'; all unresolved: at most their upper ends; none: the sum."""
    m = Measure("tls", "MySQL", "TLS", "no TLS", "server_cpu_us_per_op")
    handshakes = compute_line(_line(1.0, key="setup", measures=(m,)), {m: _priced(m, 0.58e6, 0.37e6, 0.79e6)}, {}, 0)
    reused = compute_line(_line(1.0, key="reused", measures=(m,)), {m: _priced(m, 0.08e6, -0.61e6, 0.77e6)}, {}, 0)
    assert handshakes.cores.lo > 0 >= reused.cores.lo
    both = parts_text([handshakes], [reused])
    assert both.startswith("0.66 cores [0.37, 1.56] (0.58 [0.37, 0.79] measured above zero; up to 0.77 more "), both
    assert parts_text([], [reused]).startswith("at most 0.77 cores (")
    assert parts_text([handshakes], []) == "0.58 cores [0.37, 0.79]"


# -- the whole calculation on synthetic runs ------------------------------------------------------------
CAL = {
    "rsa2048_sign_us": 250.0,
    "ecdsa_p256_sign_us": 20.0,
    "x25519_derive_us": 30.0,
    "python_loop_ms": 55.0,
    "taken_at": 0,
}


def _report(
    root: Path,
    study: str,
    arms: dict[str, float],
    rounds: int = 8,
    metric="server_cpu_us_per_op",
    name="20260101T000000Z-host-quick",
    status="ok",
    seed=0,
) -> Path:
    """A report directory as the pipeline writes one: run.json, calibration.json, one experiment of runs whose
    metric is each arm's true cost times 1 +- 2 % noise, interleaved in rounds."""
    run = root / study / name
    store = ResultStore(run / "results", study)
    store.write_metadata({"study": study, "calibration": CAL})
    rng = np.random.default_rng(seed)
    i = 0
    for rnd in range(1, rounds + 1):
        for arm, cost in arms.items():
            value = cost * (1 + rng.normal(0, 0.02))
            store.append(RunRecord(i, arm, {}, rnd, rnd, False, "", "", 1.0, metrics={metric: value}))
            i += 1
    (run / "run.json").write_text(run_json({"study": study, "status": status, "parameters": {}}))
    (run / "calibration.json").write_text(json.dumps(CAL))
    return run


HTTPS = {
    "HTTP": 30.0,
    "TLS 1.2 full, RSA": 530.0,
    "TLS 1.2 resumed, ticket": 110.0,
    "HTTP keep-alive": 12.0,
    "HTTPS keep-alive": 14.0,
}


def test_the_calculation_from_runs_prices_what_they_measured(tmp_path):
    _report(tmp_path, "https", HTTPS)
    inputs = dict(
        features=["https"],
        reports_dir=str(tmp_path),
        tls_version="1.2",
        https_requests_per_s=1000.0,
        https_new_share=1.0,
        https_resumed_share=0.0,
    )
    calc = sizing.calculate(**inputs)
    full = calc.line("https_full")
    assert full.measured_us.lo < 500.0 < full.measured_us.hi and full.cores.point == pytest.approx(0.5, rel=0.03)
    assert calc.line("https_resumed") is None and calc.line("https_keepalive") is None  # rate 0: not priced
    doubled = sizing.calculate(**inputs | {"https_requests_per_s": 2000.0})
    assert doubled.totals.server.point == pytest.approx(2 * calc.totals.server.point)
    # on a machine whose RSA signature is twice as slow and whose loop is the same: + one signature (250 us)
    slow = sizing.calculate(**inputs | {"speed": {"rsa2048_sign_us": 500.0}})
    assert slow.line("https_full").us.point == pytest.approx(full.us.point + 250.0)
    assert "like yours" in slow.headline()[0] and "measured it" in calc.headline()[0]


def test_the_answer_the_table_the_figure_and_the_results_file_give_one_total(tmp_path):
    """A line not told apart from zero (kept-alive HTTPS costs what HTTP does here) is in the total at [0, its upper
    end] wherever the total is shown: the headline, the table's total row, the figure's whiskers, cost.json."""
    _report(tmp_path, "https", HTTPS | {"HTTPS keep-alive": HTTPS["HTTP keep-alive"]}, seed=3)
    calc = sizing.calculate(
        features=["https"], reports_dir=str(tmp_path), tls_version="1.2", https_requests_per_s=10_000.0,
        https_new_share=0.1, https_resumed_share=0.0,
    )  # fmt: skip
    kept = calc.line("https_keepalive")
    assert kept.cores.lo < 0 < kept.cores.hi
    t = calc.totals.server
    assert t.lo == pytest.approx(calc.line("https_full").cores.lo) and t.hi > calc.line("https_full").cores.hi
    assert f"[{number(t.lo)}, {number(t.hi)}]" in calc.headline()[-1]
    table = cost_tables.cores(calc)
    assert table.loc[table["line"] == "total, server", "extra cores"].item() == cost_tables.ci(t)
    whiskers = next(c for c in cost_tables.figure(calc).axes[0].containers if isinstance(c, ErrorbarContainer))
    (x0, _), (x1, _) = whiskers.lines[2][0].get_segments()[-1]  # the last bar drawn is the total
    assert (x0, x1) == pytest.approx((t.lo, t.hi))
    saved = json.loads(cost_tables.save(calc, tmp_path).read_text())["total_server_cores"]
    assert (saved["lo"], saved["hi"]) == pytest.approx((t.lo, t.hi))


def test_the_machines_size_is_given_or_calibrated_never_assumed(tmp_path):
    """No cores given and no calibration: the answer is in cores and asks for them, with no share of a machine
    nobody described; given: the share of those; a calibration file alone: the cores `calibrate` found there."""
    _report(tmp_path, "https", HTTPS)
    inputs = dict(features=["https"], reports_dir=str(tmp_path), tls_version="1.2", https_requests_per_s=1000.0)
    unknown = sizing.calculate(**inputs)
    assert unknown.cores is None and unknown.share(unknown.totals.server) is None
    assert "% of your" not in unknown.headline()[-1] and "Give -p cores" in unknown.headline()[-1]
    given = sizing.calculate(**inputs | {"cores": 8.0})
    assert "] of your 8 cores (as you gave them)" in given.headline()[-1]
    assert given.share(Interval(2.0, 1.0, 4.0)).hi == pytest.approx(50.0)
    cal = tmp_path / "host.json"
    cal.write_text(json.dumps(M | {"machine": {"hostname": "db7", "cpu_cores": 32, "cpu_cores_usable": 24.0}}))
    found = sizing.calculate(**inputs | {"calibration_file": str(cal)})
    assert (
        found.cores == 24.0
        and "of your 24 cores (as `secoverhead calibrate` found them on db7)" in (found.headline()[-1])
    )
    assert sizing.calculate(**inputs | {"calibration_file": str(cal), "cores": 6.0}).cores == 6.0  # typed wins


def test_the_newest_finished_run_is_read_and_a_failed_one_skipped(tmp_path):
    _report(tmp_path, "https", HTTPS, name="20260101T000000Z-h-quick")
    _report(tmp_path, "https", {k: 2 * v for k, v in HTTPS.items()}, name="20260102T000000Z-h-quick")
    _report(tmp_path, "https", {k: 9 * v for k, v in HTTPS.items()}, name="20260103T000000Z-h-quick", status="failed")
    calc = sizing.calculate(features=["https"], reports_dir=str(tmp_path), tls_version="1.2")
    assert calc.book.sources["https"].run_dir.name == "20260102T000000Z-h-quick"
    assert calc.line("https_full").measured_us.point == pytest.approx(1000.0, rel=0.05)


def test_each_interval_holds_alone_unless_joint_ones_are_asked_for(tmp_path):
    _report(tmp_path, "https", HTTPS)
    base = dict(features=["https"], reports_dir=str(tmp_path), tls_version="1.2")
    calc = sizing.calculate(**base, joint=True)
    pr = calc.line("https_full").priced[0]
    assert pr.confidence == pytest.approx(1 - 0.05 / 3)  # three comparisons priced together
    alone = sizing.calculate(**base)
    assert alone.line("https_full").priced[0].confidence == pytest.approx(0.95)
    assert sizing.calculate(**base | {"https_new_share": 1.0, "https_resumed_share": 0.0}, joint=True).line(
        "https_full"
    ).priced[0].confidence == pytest.approx(0.95)  # one comparison: nothing to widen
    assert alone.line("https_full").measured_us.hi - alone.line("https_full").measured_us.lo < (
        calc.line("https_full").measured_us.hi - calc.line("https_full").measured_us.lo
    )


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"https_new_share": 0.7, "https_resumed_share": 0.4}, "cannot add up to more than 1"),
        ({"features": ["scram"]}, "scram is MongoDB's"),
        ({"engine": "mongodb", "features": ["audit"]}, "measured on the MySQL family only"),
        ({"speed": {"rsa_sign": 3}}, "unknown reference"),
        ({"speed": {"rsa2048_sign_us": -3}}, "positive number"),
        ({"runs": {"nosuch": "x"}}, "not a study the calculator reads"),
    ],
)
def test_inconsistent_inputs_are_refused(inputs, message):
    with pytest.raises(ConfigError, match=message):
        sizing.calculate(**inputs)


def test_a_missing_arm_is_named(tmp_path):
    _report(tmp_path, "https", {"HTTP": 30.0, "TLS 1.2 full, RSA": 530.0})
    with pytest.raises(ConfigError, match=r"did not measure 'TLS 1\.3 full, RSA'"):
        sizing.calculate(features=["https"], reports_dir=str(tmp_path))


# -- the command line: one line, exit 2, before any kernel starts -------------------------------------------
def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("secoverhead"))
    return subprocess.run(
        [exe, "run", "cost", "--reports", str(tmp_path / "reports"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "new_connections_per_s", "-5"], "must be between 0"),
        (["-p", "pooled_share", "1.5"], "must be between 0"),
        (["-p", "https_new_share", "0.8", "-p", "https_resumed_share", "0.5"], "cannot add up"),
        (["-p", "features", "[tls, quantum]"], "must be one of"),
        (["-p", "audit_approach", "mcafee"], "must be one of"),
        ([], "holds no finished run of study"),
        (["-p", "calibration_file", "nosuch.json", "-p", "features", "[https]"], "calibration_file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    res = _cli(tmp_path, *args)
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert not (tmp_path / "reports" / "cost").exists()  # nothing ran


def test_a_reports_folder_without_a_needed_study_is_refused(tmp_path):
    _report(tmp_path / "reports", "https", HTTPS)
    res = _cli(tmp_path, "-p", "features", "[https, tls]", "-p", "tls_version", "1.2")
    assert res.returncode == 2 and "no finished run of study 'tls'" in res.stderr, res.stderr
    res = _cli(tmp_path, "-p", "features", "[https]")  # TLS 1.3 was not measured in that run
    assert res.returncode == 2 and "did not measure 'TLS 1.3 full, RSA'" in res.stderr, res.stderr


def test_a_between_run_sd_its_claims_add_widens_the_extra_by_the_arms_level_times_it(tmp_path, monkeypatch):
    from secoverhead.analysis import claim_registry
    from secoverhead.sizing import tables as sizing_tables

    _report(tmp_path, "https", HTTPS)
    base = dict(features=["https"], reports_dir=str(tmp_path), tls_version="1.2", https_new_share=1.0,
                https_resumed_share=0.0)  # fmt: skip
    monkeypatch.setattr(claim_registry, "between_runs", lambda: {})
    own = sizing.calculate(**base).line("https_full").priced[0]
    term = claim_registry.BetweenRuns(0.05, 6, "learned from 6 reports of this series", learned=True)
    monkeypatch.setattr(claim_registry, "between_runs", lambda: {("https", "server_cpu_us_per_op"): term})
    calc = sizing.calculate(**base)
    wide = calc.line("https_full").priced[0]
    # the arm's level (530 us) times 0.05 on the log ratio: an sd of 26.5 us, at the interval's t quantile (8 rounds)
    q = stats.t.ppf(0.975, wide.n - 1)
    half = math.sqrt(((own.hi - own.lo) / 2) ** 2 + (q * wide.arm_us * 0.05) ** 2)
    assert (wide.hi - wide.lo) / 2 == pytest.approx(half) and wide.point == own.point
    assert "learned from 6 reports" in sizing_tables.comparisons(calc)["notes"].iloc[0]


def _in_series(run: Path, day: int, scale: str = "quick") -> Path:
    """A report as the index reads one: started on its day, at its scale, with a verdict recorded."""
    meta = json.loads((run / "run.json").read_text())
    meta |= {"started": f"2026-01-{day:02d}T00:00:00+00:00", "params_name": scale, "scale": scale}
    (run / "run.json").write_text(run_json(meta))
    verdict = {"id": "https:full-handshake", "claim": "c", "ratio": 2.0, "ci_low": 1.5, "ci_high": 2.5}
    (run / "results" / "verdicts.json").write_text(json.dumps({"verdicts": [verdict | {"verdict": "reproduced"}]}))
    (run / "verdicts.json").write_text((run / "results" / "verdicts.json").read_text())
    return run


def test_a_cost_is_its_series_reports_pooled_from_three_on(tmp_path, monkeypatch):
    """Reports of one series that price a cost 500, 530 and 560 us: the calculator reads the three pooled (their
    mean, an interval holding each report's spread), says so and lists them; with two, the newest alone; a report
    of another scale or a failed one is not in the series."""
    from secoverhead.analysis import claim_registry
    from secoverhead.sizing import tables as sizing_tables

    monkeypatch.setattr(claim_registry, "between_runs", lambda: {})
    base = dict(features=["https"], reports_dir=str(tmp_path), tls_version="1.2", https_new_share=1.0,
                https_resumed_share=0.0)  # fmt: skip
    full = "TLS 1.2 full, RSA"
    for day, cost in ((1, 500.0), (2, 530.0)):
        _in_series(_report(tmp_path, "https", HTTPS | {full: cost}, name=f"2026010{day}T000000Z-h-quick"), day)
    _in_series(_report(tmp_path, "https", HTTPS | {full: 900.0}, name="20260102T120000Z-h-smoke"), 2, "smoke")
    two = sizing.calculate(**base).line("https_full").priced[0]
    assert two.pooled == () and two.n == 8 and two.point == pytest.approx(530 - 30, rel=0.05)
    _report(tmp_path, "https", HTTPS | {full: 2000.0}, name="20260103T000000Z-h-quick", status="failed")
    _in_series(_report(tmp_path, "https", HTTPS | {full: 560.0}, name="20260104T000000Z-h-quick"), 4)
    calc = sizing.calculate(**base)
    pooled = calc.line("https_full").priced[0]
    assert [p.name[:8] for p in pooled.reports] == ["20260101", "20260102", "20260104"]
    assert pooled.n == 3 and pooled.design == "reports pooled" and "pooled over 3 reports" in pooled.between
    assert pooled.point == pytest.approx(500.0, rel=0.02)  # 530 - 30 us of HTTP, the three's mean
    assert pooled.lo < 470.0 and pooled.hi > 530.0  # the reports' spread (+-30 us), not one report's 2 % noise
    assert "pooled over 3 reports" in sizing_tables.comparisons(calc)["notes"].iloc[0]
    saved = json.loads(sizing_tables.save(calc, tmp_path).read_text())
    assert len(next(ln for ln in saved["lines"] if ln["key"] == "https_full")["sources"]) == 3


def test_per_statement_and_per_query_prices_say_they_are_a_floor_and_a_login_a_ceiling_on_a_quieter_server(monkeypatch):
    """The end-to-end check found a statement's and a query's price, measured back to back, held at 8,000
    statements/s and was a third of the cost at 2,000/s; handshakes held paced; a SCRAM login paced cost half its
    price. So exactly those lines say so, in their notes and in their feature's sentence, and only once however a
    line is rebuilt."""
    from dataclasses import replace
    from types import SimpleNamespace

    from secoverhead.sizing import calculator, recipes

    monkeypatch.setattr(recipes, "_arm", lambda src, study, part, *arms: arms[0])
    monkeypatch.setattr(recipes, "_tls_arm", lambda p, src, part: ("TLS 1.3, RSA", "rsa", ()))
    monkeypatch.setattr(recipes, "_need", lambda src, study, part: SimpleNamespace(levels={}))
    p = sizing.declarations.Params(features=["tls", "audit"], new_connections_per_s=100.0)
    q = sizing.declarations.Params(features=["scram"], engine="mongodb", new_connections_per_s=100.0)
    lines = recipes._db_tls(p, {}, 100.0) + recipes._audit(p, {}) + recipes._scram(q, {}, 100.0)
    busy = {ln.key: ln.busy_price for ln in lines if ln.busy_price}
    assert busy == {"tls_reused": "floor", "audit": "floor", "scram": "ceiling"}
    assert {"tls_setup", "tls_client", "scram_client"} <= {ln.key for ln in lines}
    assert all(any(n in ln.notes for n in recipes.BUSY_PRICE.values()) == bool(ln.busy_price) for ln in lines)
    assert replace(lines[1], notes=(*lines[1].notes, "x")).notes.count(recipes.BUSY_PRICE["floor"]) == 1
    calc = SimpleNamespace(lines=[SimpleNamespace(line=ln, at_load=False) for ln in lines])
    assert calculator._busy(calc, "tls") == " (per query as on a busy server: on a quieter one, a floor)"
    assert calculator._busy(calc, "scram") == " (per connection as on a busy server: on a quieter one, a ceiling)"
    assert "per statement" in calculator._busy(calc, "audit") and calculator._busy(calc, "https") == ""


def _tls_report(root: Path, name: str, parts: dict[str, float], day: int) -> Path:
    """A quick TLS report of the given parts (experiments tls-<part>), each pricing a handshake at its cost (us)."""
    run = root / "tls" / name
    for part, cost in parts.items():
        store = ResultStore(run / "results", f"tls-{part}")
        store.write_metadata({"study": "tls", "calibration": CAL})
        rng, i = np.random.default_rng(day), 0
        for rnd in range(1, 7):
            for arm, us in (("no TLS", 100.0), ("TLS", 100.0 + cost)):
                metrics = {
                    "connection_server_cpu_us_per_op": us * (1 + rng.normal(0, 0.02)),
                    "connection_client_cpu_us_per_op": us * (1 + rng.normal(0, 0.02)),
                }
                store.append(RunRecord(i, arm, {}, rnd, rnd, False, "", "", 1.0, metrics=metrics))
                i += 1
    meta = {"study": "tls", "status": "ok", "parameters": {}, "params_name": "quick"}
    (run / "run.json").write_text(run_json(meta | {"started": f"2026-01-{day:02d}T00:00:00+00:00"}))
    (run / "calibration.json").write_text(json.dumps(CAL))
    return run


def test_each_part_is_priced_from_the_newest_counting_run_that_ran_it_and_names_it(tmp_path):
    """The newest TLS run left MySQL out (mysql_enabled false): MySQL's handshakes are priced from the run before
    it, MongoDB's from the newest, and the sources and comparisons say which report each came from."""
    older = _tls_report(tmp_path, "20260101T000000Z-h-quick", {"mysql": 1000.0, "mongodb": 400.0}, 1)
    newest = _tls_report(tmp_path, "20260102T000000Z-h-quick", {"mongodb": 600.0}, 2)
    base = dict(features=["tls"], reports_dir=str(tmp_path), tls_version="1.3", tls_key="rsa",
                new_connections_per_s=100.0, reused_queries_per_s=0.0)  # fmt: skip
    mysql = sizing.calculate(**base, engine="mysql")
    priced = mysql.line("tls_setup").priced[0]
    assert priced.run_dir == older and priced.point == pytest.approx(1000.0, rel=0.05)
    mongo = sizing.calculate(**base, engine="mongodb").line("tls_setup").priced[0]
    assert mongo.run_dir == newest and mongo.point == pytest.approx(600.0, rel=0.05)
    listed = cost_tables.sources(mysql).set_index("run")
    assert listed.loc[newest.name, "parts"] == "mongodb" and listed.loc[older.name, "parts"] == "mysql"
    assert set(cost_tables.comparisons(mysql)["report"]) == {older.name}
    (older / "run.json").write_text((older / "run.json").read_text().replace('"ok"', '"failed"'))
    with pytest.raises(ConfigError, match="no 'MySQL' experiment in it or the tls runs of its scale before it"):
        sizing.calculate(**base, engine="mysql")


def _audit_report(root: Path, verdict: str) -> Path:
    """An audit report as the pipeline writes one: MySQL's experiment (general_log against no audit), the build it
    ran on, and its claims' verdicts on the part, each failing the log-share precondition when not testable."""
    run = root / "audit" / "20260101T000000Z-host-quick"
    store = ResultStore(run / "results", "audit-mysql")
    store.write_metadata({"study": "audit", "calibration": CAL})
    rng = np.random.default_rng(5)
    for rnd in range(1, 9):
        for i, (arm, us) in enumerate((("A: no audit", 80.0), ("general_log", 95.0))):
            metrics = {"server_cpu_us_per_query": us * (1 + rng.normal(0, 0.02)), "audit_bytes_per_query": 150.0}
            store.append(RunRecord(2 * rnd + i, arm, {}, rnd, rnd, False, "", "", 1.0, metrics=metrics))
    build = {"build": "MySQL 8.0", "version": "8.0.31"}
    record = {"study": "audit", "status": "ok", "parameters": {}, "servers": {"audit-mysql": [build]}}
    (run / "run.json").write_text(run_json(record | {"params_files": ["papermill-params/audit/quick.yaml"]}))
    (run / "calibration.json").write_text(json.dumps(CAL))
    check = {
        "condition": "log_writes_share_at_baseline",
        "holds": False,
        "said": "the log's write share",
        "shown": "12 %",
    }
    claims = [{"id": f"general_log-{c}", "part": "MySQL", "verdict": verdict, "preconditions": [check]} for c in "ab"]
    claims.append({"id": "server_audit-small", "part": "MariaDB", "verdict": "reproduced", "preconditions": []})
    (run / "results" / "verdicts.json").write_text(json.dumps({"verdicts": claims}))
    return run


@pytest.mark.parametrize("verdict", ["not testable here", "reproduced"])
def test_every_line_names_its_report_and_build_and_a_report_that_could_not_test_its_claims_is_said(tmp_path, verdict):
    """The answer names, for each line, the report, scale and server build it was priced from; a line from an audit
    report whose claims on the part were not testable here says so in its sentence, in cost.json and on the CLI."""
    from secoverhead.app import answer
    from secoverhead.sizing import tables as sizing_tables

    run = _audit_report(tmp_path, verdict)
    inputs = {"features": ["audit"], "audit_approach": "general_log", "audited_statements_per_s": 1000.0}
    calc = sizing.calculate(reports_dir=str(tmp_path), **inputs)
    (origin,) = calc.origins["audit"]
    assert (origin.run, origin.scale, origin.builds, origin.claims) == (run.name, "quick", ("MySQL 8.0 8.0.31",), 2)
    (priced,) = calc.priced_from()
    assert priced.startswith("auditing with general_log: audit/20260101T000000Z-host-quick (quick; MySQL 8.0 8.0.31")
    warned = "all 2 of its claims on MySQL were not testable here (the log's write share: 12 %)"
    assert (warned in calc.headline()[0]) == (warned in priced) == (verdict == "not testable here")
    results = tmp_path / "cost" / "results"
    sizing_tables.save(calc, results)
    saved = json.loads((results / "cost.json").read_text())
    assert saved["priced_from"] == [priced] and saved["lines"][0]["priced_from"][0]["not_testable"] == list(
        origin.not_testable
    )
    printed = " ".join(line.strip() for line in answer.lines(results.parent))
    assert "Priced from: auditing with general_log: audit/20260101T000000Z-host-quick" in printed
    assert (warned in printed) == (verdict == "not testable here")


def _curve(rates_us: dict[float, float], pairs: int = 3) -> dict:
    """A recorded load curve (protocol/loads.py) of general_log against no audit: at each rate the audit costs
    `us` more per statement, with a little noise."""
    rng = np.random.default_rng(3)
    rounds = []
    for rate, us in rates_us.items():
        for pair in range(pairs):
            for arm, cost in (("A: no audit", 40.0), ("general_log", 40.0 + us)):
                rounds.append({"rate": rate, "pair": pair, "arm": arm, "seconds": 2.0, "server_cores": 0.1,
                               "rate_met": rate, "cpu_us_per_op": cost * (1 + rng.normal(0, 0.01))})  # fmt: skip
    return {"schema": 1, "kind": "query", "per": "statement", "arm": "general_log", "baseline": "A: no audit",
            "rates": list(rates_us), "seconds": 2.0, "pairs": pairs, "cores": 2.0, "rounds": rounds}  # fmt: skip


@pytest.mark.parametrize(("rate", "where"), [(200.0, "below"), (1000.0, "inside"), (20000.0, "above")])
def test_a_statement_is_priced_at_the_users_load_where_its_study_measured_a_load_curve(tmp_path, rate, where):
    """The audit line on the curve at the user's rate per core (cores 2: the measuring machine's own), its note
    the load's in place of the back-to-back floor; cost.json says where on the curve it sits."""
    from secoverhead.sizing import recipes
    from secoverhead.sizing import tables as sizing_tables

    run = _audit_report(tmp_path, "reproduced")
    store = ResultStore(run / "results", "audit-mysql")
    store.update_metadata(load_curves=[_curve({600.0: 30.0, 2400.0: 20.0, 9600.0: 10.0})])
    inputs = {"features": ["audit"], "audit_approach": "general_log", "audited_statements_per_s": rate, "cores": 2}
    calc = sizing.calculate(reports_dir=str(tmp_path), **inputs)
    (line,) = calc.lines
    (priced,) = line.priced
    assert priced.load is not None and priced.load.where == where and priced.design == "paced at load"
    assert recipes.BUSY_PRICE["floor"] not in line.notes and any("your load" in n for n in line.notes)
    assert "(per statement at your load, on the curve its study measured)" in calc.headline()[0]
    extra = priced.point
    if where == "inside":  # between 600/s (30 µs) and 2,400/s (20 µs) a statement, in log rate
        assert 20 < extra < 30 and priced.lo < extra < priced.hi
    if where == "below":
        assert extra == pytest.approx(30, rel=0.05) and priced.hi > priced.load.levels[0].extra.hi
    if where == "above":  # the back-to-back price the study measured (~15 µs here), the hull of both intervals
        assert priced.lo <= min(priced.load.levels[-1].extra.lo, 15 * 0.97)
    results = tmp_path / "cost" / "results"
    sizing_tables.save(calc, results)
    saved = json.loads((results / "cost.json").read_text())["lines"][0]["priced_at_load"]
    assert saved["where"] == where and len(saved["levels"]) == 3
    assert not sizing_tables.loads(calc).empty and sizing_tables.load_figure(calc) is not None


def test_without_a_load_curve_or_a_rate_per_core_the_back_to_back_price_stays(tmp_path):
    _audit_report(tmp_path, "reproduced")
    inputs = {"features": ["audit"], "audit_approach": "general_log", "audited_statements_per_s": 1000.0}
    calc = sizing.calculate(reports_dir=str(tmp_path), **inputs)
    (line,) = calc.lines
    assert line.priced[0].load is None and not line.at_load
    from secoverhead.sizing import recipes
    from secoverhead.sizing import tables as sizing_tables

    assert recipes.BUSY_PRICE["floor"] in line.notes and sizing_tables.load_figure(calc) is None


@pytest.mark.parametrize(
    ("cal", "slowdown", "factor"),
    [
        ({"python_loop_ms": 60.0, "rsa2048_sign_us": 300.0}, None, 1.0),  # no speed check: as it is
        ({"python_loop_ms": 60.0, "rsa2048_sign_us": 300.0}, 1.5, 1.5),  # rounds in the slow state
        ({"python_loop_ms": 90.0, "python_loop_boot_fastest_ms": 60.0, "rsa2048_sign_us": 300.0}, 1.0, 60 / 90),
    ],
)
def test_a_calibration_as_the_vcpu_ran_the_rounds_slows_every_reference_alike(cal, slowdown, factor):
    from secoverhead.sizing.scaling import as_it_ran

    ran = as_it_ran(cal, slowdown)
    assert ran["python_loop_ms"] == pytest.approx(cal["python_loop_ms"] * factor)
    assert ran["rsa2048_sign_us"] == pytest.approx(300.0 * factor)


@pytest.mark.parametrize("slowdown", [1.0, 1.6])
def test_a_report_taken_in_the_slow_state_prices_at_the_machines_own_speed(tmp_path, slowdown):
    """The same measured cost, its report's rounds 1.6x slower than the vCPU's fastest: priced 1/1.6 of it
    with no machine of the user's given, and the factor named among the references that moved it."""
    run = _audit_report(tmp_path, "reproduced")
    checks = [{"loop_ms": CAL["python_loop_ms"] * slowdown, "others_cores": 0.0}] * 3
    ResultStore(run / "results", "audit-mysql").update_metadata(speed_checks=checks)
    inputs = {"features": ["audit"], "audit_approach": "general_log", "audited_statements_per_s": 1000.0}
    (line,) = sizing.calculate(reports_dir=str(tmp_path), **inputs).lines
    assert line.us.point == pytest.approx(line.measured_us.point / slowdown)
    assert any(label.startswith("python_loop_ms x") for label in line.scaled_by)
