"""The tls study's parts: each engine on its original's build (the verdicts of record), the other builds beside it
when they are here, none beside a user's server or in an A/A run."""

from __future__ import annotations

import pytest

from secoverhead.app.pipeline import prepare
from secoverhead.servers.builds import ServerBuild
from secoverhead.studies.tls.declarations import PART_BUILDS, RTT_PART, _engine


@pytest.fixture
def here(monkeypatch):
    """Every build present, except those named; the round-trip part skipped (it needs root)."""
    gone: set[str] = set()
    monkeypatch.setattr(ServerBuild, "missing", lambda self: "gone" if self.label in gone else None)
    return gone


def _params(*overrides: tuple[str, str]):
    return prepare("tls", overrides=[("rtt_enabled", "false"), *overrides], check_servers=False).params


def test_each_engine_runs_on_its_original_build_with_the_others_beside_it(here):
    p = _params()
    assert p.parts() == ["MongoDB", "MongoDB on mongod 6.0", "MongoDB on FerretDB", "MySQL", "MySQL on MariaDB"]
    assert [PART_BUILDS[x].label for x in ("MongoDB", "MySQL", RTT_PART)] == ["mongod 4.2", "MySQL 8.0", "mongod 4.2"]
    assert {_engine(x) for x in p.parts()} == {"MongoDB", "MySQL"}


def test_a_build_beside_that_is_missing_is_left_out(here):
    here.add("FerretDB")
    assert "MongoDB on FerretDB" not in _params().parts()


def test_nothing_runs_beside_when_asked_not_to_or_in_an_a_a_run(here):
    assert _params(("beside_builds", "false")).parts() == ["MongoDB", "MySQL"]
    assert _params(("aa", "true")).parts() == ["MongoDB", "MySQL"]


def test_nothing_runs_beside_a_users_server(here):
    p = _params(("mongo_uri", "mongodb://db.example:27017/"))
    assert p.parts() == ["MongoDB", "MySQL", "MySQL on MariaDB"]


def test_the_builds_beside_run_the_two_main_arms_and_the_record_part_all_of_them(here):
    p = _params()
    assert [a.name for a in p.arms("MongoDB on FerretDB")] == ["no TLS", "TLS"]
    assert [a.name for a in p.arms("MySQL on MariaDB")] == ["no TLS", "TLS"]
    assert [a.name for a in p.arms("MySQL")] == ["no TLS", "TLS", "TLS ECDSA", "TLS 1.2"]
    assert p.PART_WEIGHTS["MongoDB on mongod 6.0"] == 0.5 and "MongoDB" not in p.PART_WEIGHTS
