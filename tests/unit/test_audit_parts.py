"""The audit study's parts: MySQL's approaches on MySQL 8.0, server_audit on MariaDB, each with its own baseline;
one part against a user's server or in an A/A run."""

from __future__ import annotations

from secoverhead.app.pipeline import prepare
from secoverhead.studies.audit.declarations import BASELINE, PART_BUILDS, VOCABULARY, part_arms


def _params(*overrides: tuple[str, str]):
    return prepare("audit", overrides=list(overrides), check_servers=False).params


def test_each_approach_runs_on_its_engine_beside_that_engines_baseline():
    p = _params()
    assert p.parts() == ["MySQL", "MariaDB"]
    assert [a.name for a in p.arm_list("MySQL")] == [BASELINE, "binlog only", "init_connect + binlog", "general_log"]
    assert [a.name for a in p.arm_list("MariaDB")] == [BASELINE, "server_audit"]
    assert all(a.part == "MariaDB" for a in p.arm_list("MariaDB"))
    assert {k: b.label for k, b in PART_BUILDS.items()} == {"MySQL": "MySQL 8.0", "MariaDB": "MariaDB"}
    assert VOCABULARY.parts["MariaDB"] == (BASELINE, "server_audit")


def test_a_part_whose_approaches_were_not_asked_for_does_not_run():
    assert _params(("arms", f'["{BASELINE}", "general_log"]')).parts() == ["MySQL"]
    assert _params(("arms", f'["{BASELINE}", "server_audit"]')).parts() == ["MariaDB"]
    assert _params(("arms", f'["{BASELINE}"]')).parts() == ["MySQL"]


def test_a_users_server_and_an_a_a_run_are_one_part():
    assert _params(("aa", "true")).parts() == ["MySQL"]
    assert part_arms("nowhere") == ()


def test_planned_runs_count_each_parts_arms():
    p = _params()
    assert p.planned_runs() == 6 * (p.repetitions + p.warmup + 1)
