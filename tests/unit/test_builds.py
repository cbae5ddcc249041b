"""Server builds: a part runs on the build it names or on the nearest one here, said so; verdicts and tables name
the build each number came from."""

from __future__ import annotations

import pytest

from secoverhead.analysis.verdicts import ClaimVerdict, Verdict
from secoverhead.core.errors import ConfigError
from secoverhead.measurement.parts import Part
from secoverhead.reporting.summary import server_name
from secoverhead.reporting.tables import across_builds, verdict_table
from secoverhead.servers import builds
from secoverhead.servers.builds import (
    FERRETDB,
    MARIADB,
    MONGOD_42,
    MONGOD_60,
    MYSQL_80,
    MYSQL_8033,
    ServerBuild,
    nearest,
)


@pytest.fixture
def missing(monkeypatch):
    """Make the named builds missing here, the others present."""
    gone: set[str] = set()
    monkeypatch.setattr(ServerBuild, "missing", lambda self: f"{self.label} gone" if self.label in gone else None)
    return gone


def test_the_build_asked_for_runs_when_it_is_here(missing):
    assert nearest(MONGOD_42) == (MONGOD_42, "")
    assert nearest(MYSQL_80) == (MYSQL_80, "")


def test_a_missing_build_is_replaced_by_the_nearest_and_says_why(missing):
    missing.add("mongod 4.2")
    assert nearest(MONGOD_42) == (MONGOD_60, "mongod 4.2 gone")
    missing.add("mongod 6.0")
    assert nearest(MONGOD_42) == (FERRETDB, "mongod 4.2 gone; mongod 6.0 gone")
    missing.add("MySQL 8.0")
    assert nearest(MYSQL_80) == (MYSQL_8033, "MySQL 8.0 gone")
    missing.add("MySQL 8.0.33")
    assert nearest(MYSQL_80) == (MARIADB, "MySQL 8.0 gone; MySQL 8.0.33 gone")


def test_the_nearest_wraps_around_within_its_engine_only(missing):
    missing.add("FerretDB")
    build, why = nearest(FERRETDB)
    assert build is MONGOD_42 and why == "FerretDB gone"


def test_an_engine_with_no_build_here_is_refused_with_every_reason(missing):
    missing.update({"MySQL 8.0", "MySQL 8.0.33", "MariaDB"})
    with pytest.raises(
        ConfigError, match=r"no MySQL server can start here: MySQL 8\.0 gone; MySQL 8\.0\.33 gone; MariaDB gone"
    ):
        nearest(MYSQL_80)


def test_every_build_belongs_to_one_engine_and_names_its_server_class():
    for engine, order in builds.BY_ENGINE.items():
        assert all(b.engine == engine for b in order)
        assert not order[0].stand_in, "an engine's first build is an original's"
    assert {b.kind for b in builds.BUILDS.values()} == {"mongod", "mysql", "ferretdb", "mariadb"}
    assert all(b.about for b in builds.BUILDS.values())


def test_a_fetched_build_that_is_absent_says_how_to_fetch_it(monkeypatch, tmp_path):
    monkeypatch.setenv("SECOVERHEAD_CACHE", str(tmp_path))
    assert "not fetched (make setup)" in (MONGOD_42.missing() or "")


def _part(name: str, facts: dict) -> Part:
    return Part(name=name, store=None, arms=["no TLS", "TLS"], servers={"rsa": facts})


def test_a_part_names_its_build_version_and_tls_library():
    p = _part("MongoDB", {"build": "mongod 4.2", "version": "4.2.6", "openssl": "OpenSSL 1.1.1q  5 Jul 2022"})
    assert p.server == {"build": "mongod 4.2", "version": "4.2.6", "tls_library": "OpenSSL 1.1.1q  5 Jul 2022"}
    assert p.label == "MongoDB (mongod 4.2)"
    beside = _part("MongoDB on FerretDB", {"build": "FerretDB", "version": "v1.24.0", "tls_library": "Go"})
    assert beside.label == "MongoDB on FerretDB" and beside.server["tls_library"] == "Go"


def test_a_part_whose_first_fact_is_not_a_server_names_the_server_after_it():
    """TDE's parts record their data disk first: the part's server is the first fact that describes a server."""
    part = Part(
        name="4c16g",
        store=None,
        arms=["encryption off", "encryption on"],
        servers={"data disk": {"data_disk": "ramdisk"}, "mysql off": {"build": "MariaDB", "version": "10.11.19"}},
    )
    assert part.server == {"build": "MariaDB", "version": "10.11.19"}


def test_a_user_mongod_reports_its_running_openssl_and_a_report_before_builds_its_engine():
    user = _part("MongoDB", {"engine": "MongoDB", "version": "6.0.5", "openssl": {"running": "OpenSSL 3.0.2"}})
    assert user.server == {"build": "MongoDB 6.0.5", "version": "6.0.5", "tls_library": "OpenSSL 3.0.2"}
    old = _part("MongoDB", {"engine": "FerretDB", "version": "v1.24.0"})
    assert old.label == "MongoDB (FerretDB)"


def test_a_stand_in_says_what_it_stands_in_for():
    server = {"build": "mongod 6.0", "version": "6.0.5", "tls_library": "OpenSSL 3.0", "stands_in_for": "mongod 4.2"}
    assert server_name(server) == "mongod 6.0 (6.0.5, OpenSSL 3.0), standing in for mongod 4.2"
    assert server_name({"build": "MariaDB"}) == "MariaDB"
    assert server_name({}) == ""


def _verdict(part: str, build: str, verdict: Verdict, claim_id: str = "setup") -> ClaimVerdict:
    judged = [{"effect": "set-up time, TLS / no TLS", "quantity": "ratio", "unit": "×", "intervals": [[1.5, 2.0]]}]
    return ClaimVerdict(
        claim=f"{part}: set-up slower", verdict=verdict, evidence="5 rounds", id=f"{part}:{claim_id}", part=part,
        server={"build": build, "version": "x"}, judged=judged,
    )  # fmt: skip


def test_the_same_claim_across_builds_is_one_column_with_a_row_per_part():
    vs = [
        _verdict("MongoDB", "mongod 4.2", Verdict.REPRODUCED),
        _verdict("MongoDB on FerretDB", "FerretDB", Verdict.INCONCLUSIVE),
        _verdict("MongoDB", "mongod 4.2", Verdict.NOT_TESTABLE, "reused"),
    ]
    t = across_builds(vs).set_index("part")
    assert list(t.index) == ["MongoDB (mongod 4.2)", "MongoDB on FerretDB"]
    assert list(t.columns) == ["setup", "reused"]
    assert t.loc["MongoDB (mongod 4.2)", "setup"].startswith("reproduced")
    assert (
        "inconclusive" in t.loc["MongoDB on FerretDB", "setup"]
        and "set-up time" in t.loc["MongoDB on FerretDB", "setup"]
    )
    assert t.isna().loc["MongoDB on FerretDB", "reused"]  # not judged there
    assert verdict_table(vs)["server"].iloc[0] == "mongod 4.2 (x)"


def test_a_stand_in_and_a_missing_original_are_said_in_the_verdicts_note():
    from secoverhead.servers.builds import build_note

    assert build_note({"build": "mongod 4.2"}).startswith("mongod 4.2.6")
    assert build_note({"build": "FerretDB"}).startswith("measured on a stand-in: FerretDB")
    note = build_note({"build": "mongod 6.0", "stands_in_for": "mongod 4.2"})
    assert note.endswith("stands in for mongod 4.2, which cannot run here: not measured on the original's engine")
    assert build_note({"build": "a build of the user's"}) == ""


def test_a_users_server_is_named_as_the_builds_here_are():
    from secoverhead.servers.builds import BUILDS, identified

    assert identified("MongoDB", "6.0.5") == "mongod 6.0" and identified("MongoDB", "4.2.6") == "mongod 4.2"
    assert identified("MongoDB", "7.0.42", ferretdb=True) == "FerretDB"
    assert (
        identified("MySQL", "8.0.31") == "MySQL 8.0" and identified("MySQL", "8.0.36-0ubuntu0.22.04.1") == "MySQL 8.0"
    )
    assert identified("MySQL", "10.11.19-MariaDB-0+deb12u1") == "MariaDB"
    assert {
        identified("MongoDB", "4.2.6"),
        identified("MySQL", "8.0.31"),
        identified("MySQL", "10.11.6-MariaDB"),
    } <= set(BUILDS)


def test_a_users_server_of_another_version_is_described_by_what_it_reported():
    from secoverhead.servers.builds import build_note

    theirs = build_note({"build": "mongod 6.0", "version": "6.0.14", "tls_library": "OpenSSL 3.0.2"})
    assert theirs == "mongod 6.0: version 6.0.14, OpenSSL 3.0.2"
    assert "6.0.5" in build_note({"build": "mongod 6.0", "version": "6.0.5"})  # the fetched build: its own words
