"""The shared calibration file: a fresh one is reused, a stale or missing one is re-taken and saved there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from secoverhead.host import calibration


@pytest.fixture
def taken(monkeypatch):
    calls = []

    def measure():
        calls.append(1)
        return {"taken_at": time.time(), "rsa2048_sign_us": 600.0 + len(calls)}

    monkeypatch.setattr(calibration, "measure", measure)
    return calls


def test_a_fresh_calibration_is_reused(tmp_path, taken):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"taken_at": time.time() - 60, "rsa2048_sign_us": 500.0}))
    assert calibration.shared(path)["rsa2048_sign_us"] == 500.0
    assert not taken


def test_a_stale_calibration_is_retaken_and_saved(tmp_path, taken):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"taken_at": time.time() - calibration.MAX_AGE_S - 1, "rsa2048_sign_us": 500.0}))
    assert calibration.shared(path)["rsa2048_sign_us"] == 601.0
    assert json.loads(path.read_text())["rsa2048_sign_us"] == 601.0
    assert calibration.shared(path)["rsa2048_sign_us"] == 601.0 and len(taken) == 1


@pytest.mark.parametrize("content", [None, "not json", "[1, 2]", '{"taken_at": "soon"}'])
def test_a_missing_or_unreadable_file_is_a_new_calibration(tmp_path, taken, content):
    path = tmp_path / "cal.json"
    if content is not None:
        path.write_text(content)
    assert calibration.fresh(path) is None
    assert calibration.shared(path)["rsa2048_sign_us"] == 601.0 and len(taken) == 1


def test_without_a_file_each_call_measures(monkeypatch, taken):
    monkeypatch.delenv(calibration.ENV, raising=False)
    calibration.shared()
    calibration.shared()
    assert len(taken) == 2


def test_the_fixed_loop_is_its_fastest_chunk_across_bursts_and_keeps_the_median_beside_it():
    loop = calibration._Loop()
    loop.times = [0.0130, 0.0065, 0.0068, 0.0129, 0.0131]  # seconds per 100,000 iterations: two speeds
    fastest, median = loop.ms()
    assert fastest == pytest.approx(65.0) and median == pytest.approx(129.0)
    loop = calibration._Loop()
    loop.burst(0.05)
    assert loop.times and all(t > 0 for t in loop.times)


def test_a_speed_check_is_the_fixed_loop_now_and_what_else_ran_meanwhile():
    check = calibration.speed_check(0.02)
    assert 1 < check["loop_ms"] < 10_000  # a real loop timed: ms per 1e6 iterations on any machine this runs on
    assert check["others_cores"] >= 0


def test_a_busy_sibling_vcpu_is_seen_by_the_check():
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: no sibling")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        check = calibration.speed_check(0.2)
    finally:
        spinner.kill()
        spinner.wait()
    assert check["others_cores"] >= calibration.QUIET_CORES  # a whole core spun beside it: never a quiet check
    assert calibration.quiet([check]) == []


def _c(ms, others=0.0):
    return {"loop_ms": ms, "others_cores": others}


@pytest.mark.parametrize(
    "checks, cal, expected",
    [
        ([_c(120.0), _c(60.0), _c(110.0)], {"python_loop_ms": 60.0}, 110 / 60),  # the median over the fastest
        ([_c(66.0)], {"python_loop_ms": 60.0}, 1.1),
        ([_c(66.0), _c(125.0, others=0.95)], {"python_loop_ms": 60.0}, 1.1),  # a busy machine's check: not read
        ([_c(125.0, others=0.95)], {"python_loop_ms": 60.0}, None),  # no quiet check
        ([], {"python_loop_ms": 60.0}, None),  # a report from before speed checks
        ([_c(66.0)], {}, None),  # no calibration: nothing to set it against
        ([_c(66.0)], {"python_loop_ms": 0}, None),
        ([None, _c("x"), _c(-1), {"loop_ms": 66.0}, _c(66.0)], {"python_loop_ms": 60.0}, 1.1),  # not a check: unread
    ],
)
def test_slowdown_is_the_quiet_checks_median_over_the_calibrations_fastest(checks, cal, expected):
    got = calibration.slowdown(checks, cal)
    assert got == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(
    "cal, expected",
    [
        ({"python_loop_ms": 99.0, "python_loop_boot_fastest_ms": 65.0}, 65.0),  # a wholly slow calibration
        ({"python_loop_ms": 65.0, "python_loop_boot_fastest_ms": 65.0}, 65.0),
        ({"python_loop_ms": 65.0}, 65.0),  # a calibration from before the boot's reference
        ({"python_loop_boot_fastest_ms": 65.0}, 65.0),
        ({"python_loop_ms": 65.0, "python_loop_boot_fastest_ms": 0}, 65.0),  # not a time: unread
        ({"python_loop_ms": True}, None),
        ({}, None),
        (None, None),
    ],
)
def test_the_checks_are_set_against_the_fastest_loop_since_boot(cal, expected):
    assert calibration.fastest(cal) == expected


def test_a_slow_calibration_still_shows_a_slow_report_against_the_boots_fastest():
    cal = {"python_loop_ms": 110.0, "python_loop_boot_fastest_ms": 65.0}
    assert calibration.slowdown([_c(112.0)], cal) == pytest.approx(112 / 65)


def test_the_boots_fastest_loop_is_kept_across_calibrations_and_never_rises(monkeypatch, tmp_path):
    monkeypatch.setenv("SECOVERHEAD_CACHE", str(tmp_path))
    assert calibration.boot_fastest(70.0) == 70.0
    assert calibration.boot_fastest(99.0) == 70.0  # a slower calibration later: the reference stays
    assert calibration.boot_fastest(64.0) == 64.0
    assert calibration.boot_fastest(80.0) == 64.0
    (kept,) = (tmp_path / "speed").glob("loop-*.json")
    kept.write_text("not json")  # a damaged file: this calibration's own loop, and the file is mended
    assert calibration.boot_fastest(75.0) == 75.0
    assert calibration.boot_fastest(90.0) == 75.0


def test_the_slow_state_line_lies_between_the_two_speeds():
    assert 1.3 < calibration.SLOW_STATE < 1.73  # above one usual burst, below the slow state seen (1.73-1.80x)


def test_every_speed_reference_shown_has_the_unit_its_key_was_measured_in():
    units = {key: calibration.unit_of(key) for key in calibration.UNITS}
    assert units["aes_128_gcm_ns_per_byte"] == "ns" and units["pbkdf2_sha1_10000_ms"] == "ms"
    assert units["rsa2048_sign_us"] == "us" and units["aes_256_ctr_us_per_page"] == "us"
    assert all(units.values())
