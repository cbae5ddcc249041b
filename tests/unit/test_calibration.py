"""The shared calibration file: a fresh one is reused, a stale or missing one is re-taken and saved there."""

from __future__ import annotations

import json
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
