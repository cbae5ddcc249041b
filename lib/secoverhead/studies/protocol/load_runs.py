"""A load curve's rounds (protocol/loads.py declares the curve): every rate paced on both arms' servers, in ABBA
order, a warm round of each first."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from secoverhead.studies.protocol.loads import SCHEMA, Curve, Side, order
from secoverhead.workloads.paced import paced_round


def measure(curve: Curve, off: Side, on: Side, rates: Sequence[float] | None = None) -> dict[str, Any]:
    """Every rate's rounds (a warm round of each arm first, not kept), recorded as they ran."""
    sides = {False: off, True: on}
    rounds: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        ops = {k: stack.enter_context(s.operations()) for k, s in sides.items()}
        for k, s in sides.items():  # caches, hashes, a TLS context: the first round of a server is not its own
            paced_round({curve.kind: (min(curve.rates), ops[k][curve.kind])}, min(1.0, curve.seconds), s.cpu)
        for rate in rates or curve.rates:
            for pair, k in order(curve.pairs):
                r = paced_round({curve.kind: (rate, ops[k][curve.kind])}, curve.seconds, sides[k].cpu)
                rounds.append(
                    {
                        "rate": rate,
                        "pair": pair,
                        "arm": curve.arm if k else curve.baseline,
                        "seconds": r.seconds,
                        "server_cores": r.server_cores,
                        "rate_met": r.met[curve.kind],
                        "cpu_us_per_op": r.cpu_us_per_op(curve.kind),
                    }
                )
    return {"schema": SCHEMA, **asdict(curve), "cores": off.cores, "rounds": rounds}
