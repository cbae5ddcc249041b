"""Authentication cost with short connections (seed 001).

One package of the study shape: declarations (parameters, arms, the claims' plans), runner (servers and load),
claims (the original's claims on the runs), tables (tables and figures)."""

from __future__ import annotations

from secoverhead.studies.auth.declarations import VOCABULARY, Params
from secoverhead.studies.protocol.spec import StudyCode, StudySpec


def load() -> StudyCode:
    # deferred: the runner, claims and tables bring pandas, matplotlib and the servers; the CLI checks
    # parameters with the declarations alone, before anything heavy loads
    from secoverhead.studies.auth import claims, runner, tables

    return StudyCode(SPEC, runner.run, claims.claims, tables, rules=claims.RULES)


SPEC = StudySpec(
    "auth",
    "02_auth_short_connections.ipynb",
    "Authentication cost with short connections",
    "001",
    Params,
    load,
    vocabulary=VOCABULARY,
)
