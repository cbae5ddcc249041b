"""The registry of studies: one package each, of one shape (see protocol/ and docs/adding-a-study.md). The
pipeline, the CLI and the notebooks reach a study's pieces through here only: STUDIES[id] is its StudySpec (light:
names, notebook, Params), load(id) its StudyCode (run, claims, tables)."""

from __future__ import annotations

import sys

from secoverhead.core.errors import SecoverheadError
from secoverhead.studies import audit, auth, https, tde, tls
from secoverhead.studies.protocol.spec import StudyCode, StudySpec

STUDIES: dict[str, StudySpec] = {s.id: s for s in (tls.SPEC, auth.SPEC, tde.SPEC, https.SPEC, audit.SPEC)}


def load(study_id: str) -> StudyCode:
    """A study's code, for a notebook: `tls = studies.load("tls")`, then tls.params(globals()), tls.run(p). In
    a notebook, a mistake the user can act on (a bad parameter) then shows as one line, as on the CLI."""
    one_line_errors()
    return STUDIES[study_id].load()


def one_line_errors() -> None:
    """In IPython (JupyterLab, papermill's kernel): a SecoverheadError is one line naming what to change, not a
    traceback through the library; the cell still fails, so a scheduled run stops on it."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return

    def one_line(shell, etype, value, tb, tb_offset=None):
        first = str(value).splitlines()[0] if str(value) else etype.__name__
        stb = [f"{etype.__name__}: {first}"]
        # IPython drops what a custom handler returns; shown through the kernel, the cell's error output carries
        # the reason (papermill's PapermillExecutionError, the CLI's line, JupyterLab), not an empty error
        show = getattr(shell, "_showtraceback", None)
        if show is not None:
            show(etype, value, stb)
        else:
            print(f"error: {first}", file=sys.stderr)
        return stb

    shell.set_custom_exc((SecoverheadError,), one_line)


def between_instances(study_id: str) -> dict[str, tuple[bool, ...]]:
    """Claim id -> per reading, whether it compares arms on instances of their own (what series/learned.py learns
    a between-run sd for)."""
    return {r.id: tuple(bool(k.between_instances) for k in r.reads) for r in load(study_id).every_rule()}
