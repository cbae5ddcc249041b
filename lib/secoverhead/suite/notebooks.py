"""Every notebook the pipeline runs, in the order `secoverhead run --all` runs them: the five studies, then the
cost calculator, which reads their reports."""

from __future__ import annotations

from secoverhead.sizing import SPEC as COST
from secoverhead.studies import STUDIES, StudySpec

NOTEBOOKS: dict[str, StudySpec] = {**STUDIES, COST.id: COST}
