"""The between-run sd learned from reports: per cell Paule-Mandel over the newest series' reports, a term only once
MIN_REPORTS measured it, only comparisons between arms on instances of their own, one scale and target apart; the
registry adds a learned term in place of the declared one when the pipeline names its file, and refuses a broken
one by name."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest

from secoverhead.analysis import claim_registry
from secoverhead.core.errors import ConfigError
from secoverhead.series import learned
from secoverhead.studies import between_instances
from tests.records import run_json

KINDS = functools.partial(between_instances, "tde")  # the study's rules, as the pipeline passes them
HERE = "this machine's servers"


def _report(
    root: Path, k: int, value: float, *, scale: str = "quick", se: float = 0.01, study: str = "tde", revision: int = 1
) -> str:
    name = f"20261101T{k:02d}0000Z-vm-{scale}"
    d = root / study / name
    (d / "results").mkdir(parents=True)
    meta = {"study": study, "started": f"2026-11-01T{k:02d}:00:00Z", "status": "ok", "params_name": scale,
            "environment": {"tools": {"mariadbd": "10.11"}}}  # fmt: skip
    (d / "run.json").write_text(run_json(meta))
    (d / "calibration.json").write_text(json.dumps({"rsa2048_sign_us": 800}))
    # TDE's low-concurrency claim: a contrast (few threads over many, an instance cancels) and a ratio between arms
    low = {"id": "4c16g:low-concurrency-loss", "claim": "loss at low concurrency", "verdict": "inconclusive",
           "registered": {"study": study, "id": "low-concurrency-loss", "metric": "tps", "revision": revision},
           "judged": [{"quantity": "ratio", "intervals": [[0.9, 1.1]], "estimates": [[value * 3, se]]},
                      {"quantity": "loss", "intervals": [[-1, 5]], "estimates": [[value, se]]}]}  # fmt: skip
    (d / "results" / "verdicts.json").write_text(json.dumps({"verdicts": [low]}))
    return name


def test_a_term_is_learned_once_enough_reports_measured_it_and_only_between_instances(tmp_path):
    values = (-0.05, 0.03, -0.02, 0.06, 0.0)
    for k, v in enumerate(values[:-1]):
        _report(tmp_path, k, v)
    assert learned.learn(tmp_path, "tde", "quick", HERE, KINDS) == []  # four reports: the prior stands
    _report(tmp_path, 4, values[-1])
    (term,) = learned.learn(tmp_path, "tde", "quick", HERE, KINDS)
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    # the reports spread far beyond their own se (0.01): tau is nearly their sd, and the contrast (x3) is not read
    assert term["metric"] == "tps" and term["runs"] == learned.MIN_REPORTS and term["cells"] == 1
    assert math.sqrt(spread**2 - 0.01**2) == pytest.approx(term["sd"], abs=1e-3)
    assert term["estimated"].startswith("learned from 5 reports of this series, 20261101T000000Z to")


def test_reports_that_agree_within_their_own_errors_learn_no_spread_and_scales_learn_apart(tmp_path):
    for k in range(5):
        _report(tmp_path, k, 0.01 * (-1) ** k, se=0.05)
    for k in range(5, 8):
        _report(tmp_path, k, 0.5 * (-1) ** k, scale="smoke")
    (term,) = learned.learn(tmp_path, "tde", "quick", HERE, KINDS)
    assert term["sd"] == 0.0
    assert learned.learn(tmp_path, "tde", "smoke", HERE, KINDS) == []  # three smoke reports
    assert learned.learn(tmp_path, "tde", "quick", "db.example:3306", KINDS) == []  # another target: none of its own


def test_the_registry_adds_the_learned_term_in_place_of_the_declared_one_and_refuses_a_broken_file(
    tmp_path, monkeypatch
):
    for k in range(5):
        _report(tmp_path, k, 0.04 * (-1) ** k)
    run_dir = tmp_path / "tde" / "20261102T000000Z-vm-quick"
    run_dir.mkdir()
    path = learned.write(run_dir, tmp_path, "tde", "quick", HERE, KINDS)
    written = path.read_text()
    _report(tmp_path, 6, 0.5)
    assert learned.write(run_dir, tmp_path, "tde", "quick", HERE, KINDS).read_text() == written  # resumed
    monkeypatch.setenv(claim_registry.paths.LEARNED_ENV, str(path))
    claim_registry.between_runs.cache_clear()
    try:
        term = claim_registry.between_runs()[("tde", "tps")]
        assert (
            term.learned and term.runs == 5 and term.text().startswith(f"between-run sd {term.sd:.3g} added (learned")
        )
        assert not claim_registry.between_runs()[("audit", "tps")].learned  # nothing learned of it: declared
        path.write_text(json.dumps({"terms": [{"study": "tde", "metric": "tps", "sd": -1, "runs": 5}]}))
        claim_registry.between_runs.cache_clear()
        with pytest.raises(ConfigError, match=r"between_runs\.json entry 1: sd -1"):
            claim_registry.between_runs()
    finally:
        monkeypatch.delenv(claim_registry.paths.LEARNED_ENV)
        claim_registry.between_runs.cache_clear()


def test_terms_count_only_cells_with_enough_reports_and_take_the_root_mean_square_over_cells():
    """The prior (benchmarks/between_runs.py, three runs) and the learned term (five) are one computation."""
    three = [(f"r{i}", v, 1e-4) for i, v in enumerate((1.0, 1.2, 1.4))]
    flat = [(f"r{i}", 0.5, 1e-4) for i in range(3)]
    cells = {("m", "a", 0, 0): three, ("m", "b", 0, 0): flat, ("other", "c", 0, 0): three[:2]}
    assert learned.terms(cells, "s") == []  # no cell has five reports
    (entry,) = learned.terms(cells, "s", min_reports=3)  # "other" has two: no entry
    assert entry["metric"] == "m" and entry["cells"] == 2 and entry["runs"] == 3
    assert entry["sd"] == pytest.approx(math.sqrt((0.2**2 + 0.0) / 2), abs=1e-3)  # sd of 1.0, 1.2, 1.4 is 0.2


def test_reports_measured_at_an_older_revision_teach_nothing_about_the_new_measurement(tmp_path, monkeypatch):
    """After a fix raises a claim's revision, its term is learned from reports of the new revision alone: five old
    reports that spread widely count for nothing, and five new ones that agree learn no spread."""
    for k in range(5):
        _report(tmp_path, k, 0.3 * (-1) ** k)
    assert learned.learn(tmp_path, "tde", "quick", HERE, KINDS)[0]["sd"] > 0.2
    monkeypatch.setattr(claim_registry, "revision", lambda study, claim_id: 2)
    assert learned.learn(tmp_path, "tde", "quick", HERE, KINDS) == []
    new = [_report(tmp_path, k, 0.01 * (-1) ** k, se=0.05, revision=2) for k in range(5, 10)]
    (term,) = learned.learn(tmp_path, "tde", "quick", HERE, KINDS)
    assert term["sd"] == 0.0 and term["reports"] == new
