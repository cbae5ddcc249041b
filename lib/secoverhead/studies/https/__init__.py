"""HTTPS vs HTTP under load (seed 003).

One package of the study shape: declarations (parameters, arms, the claims' plans), runner (servers and load),
claims (the original's claims on the runs), tables (tables and figures)."""

from __future__ import annotations

from secoverhead.studies.https.declarations import VOCABULARY, Params
from secoverhead.studies.protocol.spec import StudyCode, StudySpec


def load() -> StudyCode:
    # deferred: the runner, claims and tables bring pandas, matplotlib and the servers; the CLI checks
    # parameters with the declarations alone, before anything heavy loads
    from secoverhead.studies.https import claims, runner, tables

    return StudyCode(SPEC, runner.run, claims.claims, tables, rules=claims.RULES)


SPEC = StudySpec(
    "https", "04_https_handshake.ipynb", "HTTPS vs HTTP under load", "003", Params, load, vocabulary=VOCABULARY
)
