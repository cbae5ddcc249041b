"""What a feature will cost a DBA's own workload: measured per-operation costs (the studies' runs) moved to their
machine through the speed reference, times their rates: extra cores, latency and audit storage, each with an
interval. Run as the sixth notebook (`secoverhead run cost -p ...`) or from Python:

    from secoverhead import sizing
    calc = sizing.calculate(new_connections_per_s=2000, tls_key="ecdsa", features=["tls"])
    print("\\n".join(calc.headline()))

Light on import (the CLI checks the inputs before anything heavy loads): the calculation loads on first use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from secoverhead.core import paths
from secoverhead.sizing import recipes, sources
from secoverhead.sizing.declarations import STUDY, Params
from secoverhead.studies.protocol.spec import StudyCode, StudySpec


def load() -> StudyCode:
    # deferred: the calculation brings pandas and the result store; the CLI checks inputs with the declarations
    from secoverhead.sizing import calculator, tables

    return StudyCode(SPEC, calculator.run, lambda _calc: [], tables)


def calculate(**inputs: Any) -> Any:
    """The calculation from keyword inputs (checked as the CLI checks them): a calculator.Calculation."""
    from secoverhead.sizing import calculator  # deferred: see load()

    return calculator.calculate(**inputs)


def check(p: Params, reports_root: Path, upcoming: frozenset[str] = frozenset()) -> None:
    """Before anything runs: a finished run of every study the inputs need (or one the same command makes first),
    holding every comparison a line is priced by; the user's calibration readable."""
    root = paths.user_path(p.reports_dir) if p.reports_dir else reports_root
    found = sources.sources(root, p.studies(), p.runs, upcoming)
    target = sources.target_calibration(p.calibration_file, p.speed)
    if set(found) == set(p.studies()):
        recipes.lines(p, found, target)


SPEC = StudySpec(
    STUDY,
    "06_cost_calculator.ipynb",
    "What it will cost your workload: cores, latency, storage",
    "-",
    Params,
    load,
    check,
)

__all__ = ["SPEC", "Params", "calculate", "check", "load"]
