"""Transparent data encryption impact (seed 002).

One package of the study shape: declarations (parameters, arms, the claims' plans), runner (servers and load),
claims (the original's claims on the runs), tables (tables and figures)."""

from __future__ import annotations

from secoverhead.studies.protocol.spec import StudyCode, StudySpec
from secoverhead.studies.tde.declarations import VOCABULARY, Params


def load() -> StudyCode:
    # deferred: the runner, claims and tables bring pandas, matplotlib and the servers; the CLI checks
    # parameters with the declarations alone, before anything heavy loads
    from secoverhead.studies.tde import claims, runner, tables

    return StudyCode(SPEC, runner.run, claims.claims, tables, cross_claims=claims.cross_claims, rules=claims.RULES)


SPEC = StudySpec(
    "tde", "03_tde_impact.ipynb", "Transparent data encryption impact", "002", Params, load, vocabulary=VOCABULARY
)
