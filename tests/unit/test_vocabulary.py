"""Each study's names are declared once, in its package, and handed out by the registry (StudySpec.vocabulary):
the calculator asks for arms, parts and metrics by role, so a study renaming or dropping an arm is caught here, in
a second, not by a slow integration run; and no study's arm, part or metric name is spelled outside its package."""

from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
from pathlib import Path

import pytest

from secoverhead.core import paths
from secoverhead.core.errors import ConfigError
from secoverhead.core.params import build
from secoverhead.sizing import recipes
from secoverhead.sizing.declarations import AUDIT_APPROACHES, SCRAM_MECHANISMS, TDE_INSTANCES, Params
from secoverhead.sizing.sources import Measured, Source
from secoverhead.studies import STUDIES
from secoverhead.studies.protocol.spec import Vocabulary

LIB = paths.ROOT / "lib" / "secoverhead"
FACTORS = {
    "tde": {"workload": {"oltp_read_only", "oltp_write_only"}, "threads": {"1", "16"}},
    "auth": {"concurrency": {"1", "4"}},
}


def sources(vocabularies: dict[str, Vocabulary]) -> dict[str, Source]:
    """Runs that measured every part and arm each study declares."""
    return {
        sid: Source(sid, Path(f"/runs/{sid}"), {"study": sid}, {
            part.lower(): Measured(Path("/x"), set(arms), {k: set(v) for k, v in FACTORS.get(sid, {}).items()})
            for part, arms in v.parts.items()
        })
        for sid, v in vocabularies.items()
    }  # fmt: skip


def every_input() -> list[Params]:
    """The calculator's inputs over every choice that selects a different arm, part or metric."""
    out = []
    for engine, version, key, resumption, approach, instance in itertools.product(
        ("mysql", "mongodb"), ("1.3", "1.2"), ("rsa", "ecdsa"), ("ticket", "session cache"), AUDIT_APPROACHES,
        TDE_INSTANCES,
    ):  # fmt: skip
        features = ["tls", "https"] + (["scram"] if engine == "mongodb" else ["encryption_at_rest", "audit"])
        mechanisms = SCRAM_MECHANISMS if engine == "mongodb" else SCRAM_MECHANISMS[:1]
        for mechanism in mechanisms:
            out.append(build(Params, {"engine": engine, "tls_version": version, "tls_key": key,
                                      "resumption": resumption, "audit_approach": approach, "tde_instance": instance,
                                      "scram_mechanism": mechanism, "features": features}, study="cost"))  # fmt: skip
    return out


def check_measures(vocabularies: dict[str, Vocabulary]) -> None:
    src = sources(vocabularies)
    for p in every_input():
        for line in recipes.lines(p, src):
            for m in line.measures:
                v = vocabularies[m.study]
                assert m.part in v.parts, f"{line.key}: {m.study} has no part {m.part!r}"
                assert {m.arm, m.baseline} <= set(v.arms(m.part)), f"{line.key}: {m.arm!r} / {m.baseline!r}"
                assert m.metric in v.metrics.values(), f"{line.key}: {m.study} declares no metric {m.metric!r}"


def test_every_recipe_prices_arms_parts_and_metrics_its_study_declares():
    check_measures({sid: s.vocabulary for sid, s in STUDIES.items()})


@pytest.mark.parametrize("study", [s for s in STUDIES if STUDIES[s].vocabulary.roles])
def test_an_arm_a_role_names_that_the_study_no_longer_has_fails_here(study, monkeypatch):
    """The study drops (or renames without its role) the arm one of the calculator's roles plays."""
    v = STUDIES[study].vocabulary
    arm = next(a for a in v.roles.values() if a not in v.parts)  # an arm, not a part
    parts = {part: tuple(a for a in arms if a != arm) for part, arms in v.parts.items()}
    changed = {sid: s.vocabulary for sid, s in STUDIES.items()} | {study: dataclasses.replace(v, parts=parts)}
    monkeypatch.setattr(recipes, study.upper(), changed[study])
    with pytest.raises((AssertionError, ConfigError)):
        check_measures(changed)


def test_a_renamed_arm_is_renamed_for_the_calculator_too(monkeypatch):
    """Renaming through the declarations (arm and role together) keeps every recipe working."""
    v = STUDIES["tls"].vocabulary
    old = v["tls 1.3 rsa"]

    def renamed(name: str) -> str:
        return "TLS 1.3, RSA" if name == old else name

    parts = {part: tuple(renamed(a) for a in arms) for part, arms in v.parts.items()}
    roles = {r: renamed(a) for r, a in v.roles.items()}
    tls = dataclasses.replace(v, parts=parts, roles=roles)
    monkeypatch.setattr(recipes, "TLS", tls)
    check_measures({sid: s.vocabulary for sid, s in STUDIES.items()} | {"tls": tls})


@functools.cache
def _lower_layer_names() -> frozenset[str]:
    """String constants of the servers and workloads layers: an engine, a mechanism, an audit mode or a metric
    those layers define is theirs to name (a study naming an arm after one does not own it)."""
    out = set()
    for layer in ("servers", "workloads"):
        for f in (LIB / layer).rglob("*.py"):
            out |= {n.value for n in ast.walk(ast.parse(f.read_text())) if isinstance(n, ast.Constant)
                    and isinstance(n.value, str)}  # fmt: skip
    return frozenset(out)


def literals_outside(study: str, names: set[str]) -> list[str]:
    home = LIB / "studies" / study
    found = []
    for f in LIB.rglob("*.py"):
        if home in f.parents:
            continue
        for n in ast.walk(ast.parse(f.read_text())):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names:
                found.append(f"{f.relative_to(LIB)}:{n.lineno} {n.value!r}")
    return found


@pytest.mark.parametrize("study", list(STUDIES))
def test_no_arm_part_or_metric_name_of_a_study_is_spelled_outside_its_package(study):
    v = STUDIES[study].vocabulary
    others = {
        sid: s.vocabulary.names | set(s.vocabulary.metrics.values()) for sid, s in STUDIES.items() if sid != study
    }
    own = (v.names | set(v.metrics.values())) - _lower_layer_names() - set(STUDIES)  # a study's id is the registry's
    own -= {n for names in others.values() for n in names}  # a name two studies declare is each one's, in its package
    assert not (found := literals_outside(study, own)), found


def test_the_literal_check_can_fail():
    assert literals_outside("tls", {"quick"})  # "quick" is spelled in many places
