"""The auth study's MongoDB claims on the original's build (mongod 4.2, the verdicts of record) and on mongod 6.0
beside it when it is here; nothing beside a user's server or in an A/A run; the build beside is judged by the
MongoDB rules under its own name."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from secoverhead.app.pipeline import prepare
from secoverhead.core.errors import ConfigError
from secoverhead.studies.auth.claims import part_claims
from secoverhead.studies.auth.declarations import BESIDE, PART_BUILDS, engine_of


def _params(*overrides: tuple[str, str]):
    return prepare("auth", overrides=list(overrides), check_servers=False).params


def test_mongod_6_0_runs_beside_mongod_4_2(builds_gone):
    p = _params()
    assert p.parts() == ["MongoDB", BESIDE, "MySQL", "nonce"]
    assert [PART_BUILDS[x].label for x in ("MongoDB", BESIDE)] == ["mongod 4.2", "mongod 6.0"]
    assert engine_of(BESIDE) == "MongoDB" and engine_of("nonce") == "nonce"
    assert p.planned_runs() > _params(("beside_builds", "false")).planned_runs()


def test_the_build_beside_runs_the_arms_its_claims_read(builds_gone):
    p = _params()
    assert [a.name for a in p.arms(BESIDE)] == ["auth off", "SCRAM-SHA-256", "pooled SCRAM-SHA-256"]
    assert p.part_design(BESIDE) == p.design
    assert set(p.server_keys(BESIDE).values()) == {"off", "on"}


def test_nothing_beside_when_missing_asked_not_to_a_users_server_or_a_a(builds_gone):
    assert _params(("beside_builds", "false")).parts() == ["MongoDB", "MySQL", "nonce"]
    assert _params(("aa", "true")).parts() == ["MongoDB", "MySQL", "nonce"]
    assert BESIDE not in _params(("mongo_uri", "mongodb://db.example:27017/")).parts()
    assert BESIDE not in _params(("mongo_enabled", "false")).parts()
    builds_gone.add("mongod 6.0")
    assert _params().parts() == ["MongoDB", "MySQL", "nonce"]


def test_the_build_beside_is_judged_by_the_mongodb_rules_under_its_own_name():
    rng = np.random.default_rng(1)
    rows = [
        {
            "arm": arm,
            "concurrency": 2,
            "round": r,
            "status": "ok",
            "warmup": False,
            "profiling": False,
            "server_cpu_us_per_op": base * rng.uniform(0.98, 1.02),
            "client_cpu_us_per_op": base * 3,
        }
        for r in range(6)
        for arm, base in (("auth off", 1000.0), ("SCRAM-SHA-256", 1500.0), ("pooled SCRAM-SHA-256", 100.0))
    ]
    ours = part_claims(BESIDE, pd.DataFrame(rows), top=2)
    record = part_claims("MongoDB", pd.DataFrame(rows), top=2)
    assert [v.id.replace(BESIDE, "MongoDB") for v in ours] == [v.id for v in record] and len(ours) == 3
    assert all(v.claim.startswith(f"{BESIDE}: ") for v in ours)
    assert [v.verdict for v in ours] == [v.verdict for v in record]


# -- a user's MongoDB and the one without auth they name for the auth-off arms -----------------------------------
NAMED = (("mongo_uri", "mongodb://db.example:27017/"), ("mongo_username", "dba"), ("mongo_password_env", "HOME"))


def test_a_named_mongodb_runs_auth_off_only_where_a_server_without_auth_is_named():
    alone = _params(*NAMED)
    assert "auth off" not in [a.name for a in alone.arms("MongoDB")]
    both = _params(*NAMED, ("mongo_noauth_uri", "mongodb://staging.example:27017/"))
    arms = {a.name: a.server for a in both.arms("MongoDB")}
    assert arms["auth off"] == "off" and arms["auth off + TLS"] == "off" and arms["SCRAM-SHA-256"] == "on"
    assert [type(s).__name__ for s in both.external_servers()] == ["ExternalMongo", "ExternalMongo"]
    off = both.external_servers()[-1]
    assert off.auth_off and off.username is None and off.server_cpu == "serverStatus"
    assert not _params(*NAMED, ("mongo_noauth_uri", "mongodb://s:1/"), ("mongo_enabled", "false")).external_servers()


class _Answered:
    """A user's server as preflight sees it after it answered: entered, described, left."""

    def __init__(self, facts):
        self.facts, self.entered = facts, 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        return False

    def describe(self):
        return self.facts


ON = {"engine": "MongoDB", "build": "mongod 4.2.6", "authentication": "SCRAM as bench"}
OFF = {"engine": "MongoDB", "build": "mongod 4.2.6", "authentication": "off (read back: it lists databases ...)"}


@pytest.mark.parametrize(
    ("off_build", "refused"),
    [("mongod 4.2.6", False), ("mongod 6.0.5", True), (None, False)],  # None: no server without auth named
)
def test_two_builds_either_side_of_auth_are_refused_before_the_kernel(monkeypatch, off_build, refused):
    """Through preflight, before any client tool logs in (and so before any kernel or load): one line."""
    from secoverhead.core.params import preflight

    p = _params(*NAMED, ("mongo_noauth_uri", "mongodb://staging.example:27017/"))
    servers = [_Answered(ON)] + ([_Answered({**OFF, "build": off_build})] if off_build else [])
    logged_in = []
    monkeypatch.setattr(type(p), "external_servers", lambda self: servers)
    monkeypatch.setattr(type(p), "check_clients", lambda self: logged_in.append(True))
    if refused:
        with pytest.raises(ConfigError, match=r"^mongo_noauth_uri runs mongod 6\.0\.5, mongo_uri mongod 4\.2\.6: "):
            preflight(p)
    else:
        preflight(p)
    assert all(s.entered == 1 for s in servers) and logged_in == ([] if refused else [True])


@pytest.mark.parametrize(
    "overrides, message",
    [
        ((("mongo_noauth_uri", "mongodb://s.example/"),), "set mongo_uri and mongo_username"),
        ((*NAMED[:1], ("mongo_noauth_uri", "mongodb://s.example/")), "set mongo_uri and mongo_username"),
        ((*NAMED, ("mongo_noauth_uri", "mongodb://db.example:27017")), "another server"),
        ((*NAMED, ("mongo_noauth_uri", "mongodb://u:p@s.example/")), "mongo_noauth_uri must not hold credentials"),
        ((*NAMED, ("mongo_noauth_uri", "http://s.example/")), "mongo_noauth_uri must start with mongodb://"),
        ((*NAMED, ("mongo_noauth_uri", "mongodb://s.example:70000/")), "mongo_noauth_uri is not a valid URI"),
        (
            (*NAMED, ("mongo_noauth_uri", "mongodb://s.example/"), ("mongo_noauth_server_cpu", "ssh://h/mongod")),
            "server_cpu_ssh_key",
        ),
    ],
)
def test_a_server_without_auth_is_checked_before_anything_starts(overrides, message):
    with pytest.raises(ConfigError, match=message):
        _params(*overrides)
