"""TLS overhead on connections: MongoDB and MySQL (seed 000).

One package of the study shape: declarations (parameters, arms, the claims' plans), runner (servers and load),
claims (the original's claims on the runs), tables (tables and figures)."""

from __future__ import annotations

from secoverhead.studies.protocol.spec import StudyCode, StudySpec
from secoverhead.studies.tls.declarations import VOCABULARY, Params


def load() -> StudyCode:
    # deferred: the runner, claims and tables bring pandas, matplotlib and the servers; the CLI checks
    # parameters with the declarations alone, before anything heavy loads
    from secoverhead.studies.tls import claims, runner, tables

    return StudyCode(SPEC, runner.run, claims.claims, tables, rules=claims.RULES)


SPEC = StudySpec(
    "tls",
    "01_tls_overhead.ipynb",
    "TLS overhead on connections: MongoDB and MySQL",
    "000",
    Params,
    load,
    vocabulary=VOCABULARY,
)
