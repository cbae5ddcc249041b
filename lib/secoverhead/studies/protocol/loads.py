"""How a feature's cost per operation moves with load: its operation paced at several rates, on the part's own
servers before they stop, the feature off and on in alternating rounds (ABBA, so a drift of the machine falls on
both), the server's CPU per operation from its cgroup. The calculator prices a DBA's rate on this curve
(sizing/curves.py) rather than at the one load the study's back-to-back runs had.

Declared per study (its rates, from light to near what the part's back-to-back runs reach) and recorded with the
part (its metadata's `load_curves`); every round is kept. Light: a study's declarations import it (the rounds
run in protocol/load_runs.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

SCHEMA = 1


@dataclass(frozen=True)
class Curve:
    """What a part measures at load: the operation (`kind`: "new" or "query", workloads/paced.py) and what one
    is (`per`), the arm it prices against its baseline, the rates, each round's length and the pairs per rate."""

    kind: str
    per: str
    arm: str
    baseline: str
    rates: tuple[float, ...]
    seconds: float
    pairs: int

    def __post_init__(self) -> None:
        if not self.rates or min(self.rates) <= 0 or self.seconds <= 0 or self.pairs < 2:
            raise ValueError(f"a load curve needs rates > 0, rounds > 0 s and 2 pairs or more: {self}")


@dataclass(frozen=True)
class Side:
    """One arm's server as the curve drives it: its operations (a context manager giving them) and its CPU
    source; cores: the cores its CPU could use (a quota, else the machine's), the curve's load per core."""

    operations: Callable[[], contextlib.AbstractContextManager[dict[str, Callable[[], Any]]]]
    cpu: Any
    cores: float


def order(pairs: int) -> Iterator[tuple[int, bool]]:
    """(pair, feature on) in ABBA order: off-on, on-off, ..."""
    for i in range(pairs):
        for on in (False, True) if i % 2 == 0 else (True, False):
            yield i, on
