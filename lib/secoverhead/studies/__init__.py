"""The registry of studies: one package each, of one shape (see protocol/ and docs/adding-a-study.md). The
pipeline, the CLI and the notebooks reach a study's pieces through here only: STUDIES[id] is its StudySpec (light:
names, notebook, Params), load(id) its StudyCode (run, claims, tables)."""

from __future__ import annotations

from secoverhead.studies import audit, auth, https, tde, tls
from secoverhead.studies.protocol.spec import StudyCode, StudySpec

STUDIES: dict[str, StudySpec] = {s.id: s for s in (tls.SPEC, auth.SPEC, tde.SPEC, https.SPEC, audit.SPEC)}


def load(study_id: str) -> StudyCode:
    """A study's code, for a notebook: `tls = studies.load("tls")`, then tls.params(globals()), tls.run(p)."""
    return STUDIES[study_id].load()
