"""secoverhead: measure what database security features cost in performance.

Layers, data flowing one way: servers -> workloads -> results -> stats -> report.
"""

__version__ = "0.1.0"


def load(what, *, reports=None, scale=None):
    """Runs and verdicts of a run directory, or of every run of a study under `reports` ($SECOVERHEAD_REPORTS,
    ./reports or the checkout's when not given), as tidy pandas frames, read-only (suite/load.py):
    `secoverhead.load("tde").runs`."""
    from secoverhead.suite.load import load as _load

    return _load(what, reports=reports, scale=scale)
