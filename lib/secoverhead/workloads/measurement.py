"""The unit of data a workload hands to the results layer."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import pandas as pd

from secoverhead.core.errors import SecoverheadError, Stalled


@dataclass
class Measurement:
    """What one run returns: scalar metrics, and optionally raw samples, per-interval rows, and facts
    (commands, versions, negotiated TLS) worth keeping with the run."""

    metrics: dict[str, Any]
    samples: pd.DataFrame | None = None
    intervals: pd.DataFrame | None = None
    info: dict[str, Any] = field(default_factory=dict)


# A timed run ends at its planned length, waiting only for the operations in flight; one that overruns by more than
# OVERRUN (the larger of the two) waited that long on a single operation: a stall, which fails the run. One still
# running STOP past its plan is stopped there, so no wait on a server is unbounded. Floors in seconds: a transaction
# of a few seconds is a stall on any server a DBA runs, and a busy 2-core machine delays one by well under a second.
OVERRUN = (10.0, 0.5)  # seconds, share of the plan
STOP = (60.0, 1.0)


def _past(planned_s: float, margin: tuple[float, float]) -> float:
    return planned_s + max(margin[0], margin[1] * planned_s)


def stop_after(planned_s: float) -> float:
    """When a run planned to last planned_s is stopped as stalled."""
    return _past(planned_s, STOP)


def check_against_plan(took_s: float, planned_s: float, what: str) -> None:
    """Raise Stalled when a run took longer than its plan allows (OVERRUN)."""
    if took_s > _past(planned_s, OVERRUN):
        raise Stalled(
            f"{what} ran {took_s:.1f} s of a planned {planned_s:g} s (allowed {_past(planned_s, OVERRUN):.0f} s): the "
            "server, or the path to it, stalled; the run is stopped as failed, its results so far kept"
        )


def stalled_at(planned_s: float, what: str) -> Exception:
    """The error for a run stopped at stop_after(planned_s) without finishing."""
    return Stalled(
        f"{what} did not finish {stop_after(planned_s) - planned_s:.0f} s after its planned {planned_s:g} s: the "
        "server, or the path to it, stalled; it was stopped and the run failed, its results so far kept"
    )


# One operation of a counted workload (a connection set up, a query, a request) that waits this long is a stall: the
# same floor as a timed run's overrun. A connection or SELECT 1 takes milliseconds on any server a DBA runs; a busy
# 2-core machine delays one by well under a second.
OPERATION_S = OVERRUN[0]


def check_operations(latencies_ms: Iterable[float], what: str, where: str) -> None:
    """Raise Stalled when one operation of a run waited longer than OPERATION_S: a run whose one connection took
    45 s beside others of milliseconds is the server stopping, not a measurement."""
    longest = max((float(x) for x in latencies_ms), default=0.0)
    if longest > OPERATION_S * 1e3:
        raise Stalled(
            f"{where} stalled: one {what} took {longest / 1e3:.1f} s (allowed {OPERATION_S:g} s for one); the run "
            "is stopped as failed, its results so far kept"
        )


def operation_failed(exc: BaseException, started_ns: int, what: str, where: str) -> BaseException:
    """What an operation's failure says: one that failed after more than OPERATION_S, or on a client's own timeout
    (the server did not answer within it), stalled (Stalled); one that lost its connection names the server; any
    other is its own (a refused password, a wrong label)."""
    took = (time.perf_counter_ns() - started_ns) / 1e9
    kind = _failure_kind(exc)
    if took <= OPERATION_S and kind is None:
        return exc
    text = str(exc).split(" (configured timeouts")[0].split(", Topology Description")[0]
    why = f"{type(exc).__name__}: {text.splitlines()[0][:120] if text else ''}"
    if took > OPERATION_S or kind == "timeout":  # said first: the CLI's line and run.json keep 300 characters
        return Stalled(
            f"{where} stalled: one {what} failed after {took:.1f} s ({why}); the run is stopped as failed, its "
            "results so far kept"
        )
    return SecoverheadError(f"{where} went away: one {what} lost its connection after {took:.1f} s ({why})")


def _failure_kind(exc: BaseException) -> str | None:
    """'timeout' for a driver's error that the server did not answer in time (pymongo's server selection or network
    timeout, a socket's, mysql-connector's lost connection during a query), 'lost' for a connection that went away,
    None for any other."""
    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"NetworkTimeout", "ExecutionTimeout", "TimeoutError", "timeout"}:
        return "timeout"
    if "ServerSelectionTimeoutError" in names:  # pymongo wraps every reason in it: a refused TLS handshake too
        return "timeout" if "timed out" in str(exc) or "No servers found yet" in str(exc) else "lost"
    if getattr(exc, "errno", None) == 2013:  # CR_SERVER_LOST: lost connection during a query (its read timeout)
        return "timeout"
    if names & {"ConnectionFailure", "ConnectionError"} or getattr(exc, "errno", None) in (2006, 2055):
        return "lost"
    return None


def raise_failure(exc: BaseException, started_ns: int, what: str, where: str) -> NoReturn:
    """Raise what operation_failed makes of an operation's exception (the exception itself when it is its own)."""
    failure = operation_failed(exc, started_ns, what, where)
    if failure is exc:
        raise exc
    raise failure from None


T = TypeVar("T")


def guarded(op: Callable[[], T], what: str, where: str) -> T:
    """One untimed step of a workload (a login that caches a hash, a connection that reads what TLS negotiated),
    held to the same bound as a timed operation: a stall there is a stall of the run."""
    t0 = time.perf_counter_ns()
    try:
        out = op()
    except Exception as exc:
        raise_failure(exc, t0, what, where)
    check_operations([(time.perf_counter_ns() - t0) / 1e6], what, where)
    return out


def timed_in(seconds: float, where: str) -> dict[str, Any]:
    """What a counted run records of itself for check_untimed: the seconds its timed operations took, and the server."""
    return {"timed_s": seconds, "where": where}


def check_untimed(m: Measurement, took_s: float) -> None:
    """Raise Stalled when a counted run spent more than OPERATION_S outside its timed operations: the harness's own
    questions to the server between them (its CPU counters, what TLS negotiated) waited on a server that had
    stopped answering, and the run's figures span the stall. A run that records no timed_s is not judged here."""
    timed = m.info.get("timed_s")
    if timed is None:
        return
    outside = took_s - float(timed)
    if outside > OPERATION_S:
        where = m.info.get("where") or "the server"
        raise Stalled(
            f"{where} stalled: the run took {took_s:.1f} s, {outside:.1f} s of it outside its timed operations "
            f"(allowed {OPERATION_S:g} s); the run is stopped as failed, its results so far kept"
        )
