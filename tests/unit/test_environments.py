"""The environments claims are judged in are frozen like the readings: data/claims/environments.yaml declares them
per study and scale, the parameter files and the code must agree with it, and any change of it needs an entry in
data/claims/CHANGES.md naming its fingerprint."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
import yaml

from secoverhead.app.pipeline import prepare
from secoverhead.core import paths
from secoverhead.servers.replica_set import READ_PREFERENCE, MongodReplicaSet
from secoverhead.studies import STUDIES
from secoverhead.studies.audit.declarations import PART_BUILDS as AUDIT_BUILDS
from secoverhead.studies.auth.declarations import PART_BUILDS as AUTH_BUILDS
from secoverhead.studies.tde.declarations import PART_BUILDS as TDE_BUILDS
from secoverhead.studies.tde.declarations import PURGE_THREADS
from secoverhead.studies.tde.instances import EMULATED, ORIGINAL_SCALE_THREADS
from secoverhead.studies.tls.declarations import PART_BUILDS

DECLARED = paths.CLAIMS.parent / "environments.yaml"
CHANGES = paths.CLAIMS.parent / "CHANGES.md"


def declared() -> dict:
    return yaml.safe_load(DECLARED.read_text(encoding="utf-8"))


def fingerprint(doc: dict) -> str:
    """Twelve hex digits of the declaration's canonical JSON: what CHANGES.md names for the version in force."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


def _in_force(study: str, scale: str) -> dict:
    names = declared()["scales"][study][scale]
    p = prepare(study, scale=scale, check_servers=False).params
    return {n: getattr(p, n) for n in names}


CASES = [(s, scale) for s, scales in declared()["scales"].items() for scale in scales]


@pytest.mark.parametrize("study, scale", CASES, ids=[f"{s}-{scale}" for s, scale in CASES])
def test_the_parameter_files_keep_the_declared_environment(study, scale):
    assert _in_force(study, scale) == declared()["scales"][study][scale], (
        f"{study} at {scale} scale runs in another environment than data/claims/environments.yaml declares: "
        "change the declaration with an entry in data/claims/CHANGES.md, or put the parameter back"
    )


def test_every_study_and_scale_is_declared():
    for study, spec in STUDIES.items():
        scales = set(spec.scales())
        assert scales == set(declared()["scales"].get(study, {})), study


def test_the_code_keeps_the_declared_constants():
    tde = declared()["constants"]["tde"]
    held = {
        k: {
            "cores": v.cores,
            "iops": v.iops,
            "read_latency_us": v.read_latency_us,
            "flush_latency_us": v.flush_latency_us,
        }
        for k, v in EMULATED.items()
    }
    assert held == tde["instances"]
    assert tde["purge_threads"] == PURGE_THREADS
    assert tuple(tde["original_scale_threads"]) == ORIGINAL_SCALE_THREADS
    assert {part: TDE_BUILDS[part].label for part in tde["servers"]} == tde["servers"] and set(TDE_BUILDS) == set(
        tde["servers"]
    )
    tls = declared()["constants"]["tls"]
    assert {part: PART_BUILDS[part].label for part in tls["servers"]} == tls["servers"]
    assert f'"{tls["driver"]}"' in (paths.ROOT / "pyproject.toml").read_text(encoding="utf-8")
    rs = {f.name: f.default for f in dataclasses.fields(MongodReplicaSet)}
    topology = {"members": rs["voting"], "read_only_members": rs["read_only"], "read_preference": READ_PREFERENCE}
    assert topology == tls["rtt_topology"]
    auth = declared()["constants"]["auth"]
    assert {part: AUTH_BUILDS[part].label for part in auth["servers"]} == auth["servers"]
    audit = declared()["constants"]["audit"]
    assert {part: AUDIT_BUILDS[part].label for part in audit["servers"]} == audit["servers"] and set(
        AUDIT_BUILDS
    ) == set(audit["servers"])


def test_the_declaration_in_force_has_its_entry_in_the_change_log():
    fp = fingerprint(declared())
    assert f"environments {fp}" in CHANGES.read_text(encoding="utf-8"), (
        f"data/claims/environments.yaml changed: its fingerprint is now {fp}; CHANGES.md needs an entry "
        f"'environments {fp}' saying why, with a reason that is not a measured effect"
    )


def test_changing_a_declared_fact_without_an_entry_fails():
    """What a reviewer fears: the quota moved in a quick file. The parameter check fails at once, and moving the
    declaration with it leaves a fingerprint the change log does not name."""
    doc = declared()
    doc["scales"]["audit"]["quick"]["server_cpu_limit"] = 0.6
    assert fingerprint(doc) != fingerprint(declared())
    assert f"environments {fingerprint(doc)}" not in CHANGES.read_text(encoding="utf-8")
    p = prepare("audit", scale="quick", overrides=[("server_cpu_limit", "0.6")], check_servers=False).params
    names = declared()["scales"]["audit"]["quick"]
    assert {n: getattr(p, n) for n in names} != names  # what the parameter test above would then find
