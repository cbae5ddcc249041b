"""Verdicts on claims, and parameter validation against a notebook's parameters cell."""

from __future__ import annotations

import numpy as np
import pytest

from secoverhead.errors import ConfigError
from secoverhead.params import load_params, notebook_parameters
from secoverhead.report import claim_direction, environment_table, summarize_runs
from secoverhead.stats import compare
from secoverhead.studies import STUDIES


def sample(rng, n, scale, sigma=0.02):
    return scale * rng.lognormal(0, sigma, n)


def test_claim_markedly_slower():
    rng = np.random.default_rng(0)
    base = sample(rng, 20, 1.0)
    assert (
        claim_direction("x", compare(base, sample(rng, 20, 2.5)), expect="slower", min_ratio=1.3).verdict
        == "reproduced"
    )
    # slower, but by less than the claim's size: the whole CI is below 1.3
    assert (
        claim_direction("x", compare(base, sample(rng, 20, 1.1)), expect="slower", min_ratio=1.3).verdict
        == "not reproduced"
    )
    assert claim_direction("x", compare(base, sample(rng, 20, 0.7)), expect="slower").verdict == "not reproduced"


def test_claim_small_difference():
    rng = np.random.default_rng(1)
    base = sample(rng, 30, 1.0)
    assert (
        claim_direction("x", compare(base, sample(rng, 30, 1.03)), expect="similar", max_ratio=1.10).verdict
        == "reproduced"
    )
    assert (
        claim_direction("x", compare(base, sample(rng, 30, 1.4)), expect="similar", max_ratio=1.10).verdict
        == "not reproduced"
    )


def test_claim_with_too_little_data_is_inconclusive():
    v = claim_direction("x", compare([1.0, 1.1, 0.9], [3.0, 3.1, 2.9]), expect="slower", min_ratio=1.3)
    assert v.verdict == "inconclusive" and "n=3/3" in v.evidence


def test_summarize_runs_gives_median_and_ci():
    import pandas as pd

    runs = pd.DataFrame({"arm": ["a"] * 10 + ["b"] * 10, "x": list(range(10)) + list(range(10, 20))})
    t = summarize_runs(runs, ["x"], ["arm"]).set_index("arm")
    assert t.loc["a", "x"] == 4.5 and t.loc["a", "x_ci_low"] <= 4.5 <= t.loc["a", "x_ci_high"]
    assert t.loc["b", "runs"] == 10


def test_environment_table_names_the_stand_in():
    env = {"machine": {"cpu_model": "cpu", "cpu_cores": 2}, "python": "3.11", "tools": {"sysbench": "1.0.20"}}
    t = environment_table({"db": {"engine": "MariaDB", "version": "10.11", "emulates": "MySQL 8.0"}}, env)
    assert "stands in for MySQL 8.0" in " ".join(t["value"])


def test_notebook_parameter_types_are_inferred_from_defaults():
    declared = notebook_parameters(STUDIES["tls"])
    assert declared["repetitions"]["inferred_type_name"] == "int"
    assert declared["mongo_enabled"]["inferred_type_name"] == "bool"
    assert declared["max_minutes"]["inferred_type_name"] == "float"


@pytest.mark.parametrize("study", list(STUDIES))
def test_every_profile_file_validates_against_its_notebook(study):
    s = STUDIES[study]
    files = s.parameter_files()
    assert {"smoke", "quick", "full"} <= {f.stem for f in files}
    for f in files:
        params, name = load_params(s, file=f)
        assert name == f.stem and params
    assert "Expected duration" in (s.params_dir / "full.yaml").read_text()


def test_int_is_accepted_for_a_float_but_not_a_bool_for_an_int():
    s = STUDIES["tls"]
    params, _ = load_params(s, overrides=[("max_minutes", "5")])
    assert params["max_minutes"] == 5
    with pytest.raises(ConfigError, match="must be int"):
        load_params(s, overrides=[("repetitions", "true")])
