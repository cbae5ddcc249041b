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

from secoverhead.core.errors import ConfigError
from secoverhead.core.params import param

SCHEMA = 1
KINDS = {"new": "connection", "query": "query"}  # the operations a curve paces (workloads/paced.py), one of each


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


@dataclass
class LoadCurveParams:
    """How a study's load curves run: the rates per kind of operation (empty: none), each round's length and the
    pairs per rate. Which arms they price is the study's (`load_arms`)."""

    load_rates: dict[str, list[float]] = param(
        {},
        "load curves after the rounds: operations a second per kind ('new': a connection made, used once and closed; "
        "'query': a query on a kept connection), each paced on the priced arms and their baseline (empty: none)",
        items=(0, 2),
    )
    load_seconds: float = param(2.0, "seconds of one load-curve round", min=0.5, max=600.0)
    load_pairs: int = param(3, "pairs of load-curve rounds (off, on) per rate", min=2, max=50)

    def check_loads(self) -> None:
        for kind, rates in self.load_rates.items():
            if kind not in KINDS:
                raise ConfigError(f"load_rates: {kind!r} is not a kind of operation ({', '.join(KINDS)})")
            if not rates or not all(isinstance(r, int | float) and r > 0 for r in rates):
                raise ConfigError(f"load_rates {kind}: {rates}: one or more rates above 0 a second")

    def curves(self, arm: str, baseline: str, per: dict[str, str] | None = None) -> list[Curve]:
        """The arm's curves against its baseline, one per kind asked (`per`: what one operation is, by kind)."""
        words = KINDS | (per or {})
        return [
            Curve(kind, words[kind], arm, baseline, tuple(float(r) for r in rates), self.load_seconds, self.load_pairs)
            for kind, rates in self.load_rates.items()
        ]
