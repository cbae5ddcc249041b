"""A load curve's rounds (protocol/loads.py declares the curve): every rate paced on both arms' servers, in ABBA
order, a warm round of each first."""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from typing import Any

from secoverhead.studies.protocol.loads import SCHEMA, Curve, Side, order
from secoverhead.workloads.paced import paced_round


def measure(curve: Curve, off: Side, on: Side) -> dict[str, Any]:
    """Every rate's rounds (a warm round of each arm first, not kept), recorded as they ran. A failure keeps the
    rounds taken before it and says what failed: the part's own rounds stand without its curve."""
    rounds: list[dict[str, Any]] = []
    error = ""
    try:
        _rounds(curve, {False: off, True: on}, rounds)
    except Exception as exc:  # a server that stops answering, a refused login: recorded, not the part's failure
        error = f"{type(exc).__name__}: {exc}"[:300]
    return {"schema": SCHEMA, **asdict(curve), "cores": off.cores, "rounds": rounds, "error": error}


def _rounds(curve: Curve, sides: dict[bool, Side], out: list[dict[str, Any]]) -> None:
    with contextlib.ExitStack() as stack:
        ops = {k: stack.enter_context(s.operations())[curve.kind] for k, s in sides.items()}
        for k, s in sides.items():  # caches, hashes, a TLS context: the first round of a server is not its own
            paced_round({curve.kind: (min(curve.rates), ops[k])}, min(1.0, curve.seconds), s.cpu)
        for rate in curve.rates:
            for pair, k in order(curve.pairs):
                r = paced_round({curve.kind: (rate, ops[k])}, curve.seconds, sides[k].cpu)
                out.append({"rate": rate, "pair": pair, "arm": curve.arm if k else curve.baseline, "seconds": r.seconds,
                            "server_cores": r.server_cores, "rate_met": r.met[curve.kind],
                            "cpu_us_per_op": r.cpu_us_per_op(curve.kind)})  # fmt: skip
