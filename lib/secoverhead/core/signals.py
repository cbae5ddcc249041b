"""Signals that end a run: Ctrl-C (SIGINT), a scheduler's SIGTERM, a closed terminal's SIGHUP. Each becomes an
exception in the main thread, so every `with` block unwinds (servers stop, a user's settings are restored) and
the run is finalised. While a run is being finalised, a further signal is remembered rather than raised: a
second Ctrl-C must not leave run.json half-done.

Python runs a handler between any two bytecodes, so its exception can land in code that cannot raise: a weakref
callback or a `__del__` (an import's module-lock callback took a SIGINT 1 s into a run on a busy machine, and the
run went on to the end). Python reports those to sys.unraisablehook and drops them; the hook installed here sends
such a signal again, a moment later, so that it lands where it can end the run."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """A signal that ends the run (KeyboardInterrupt's subclass, so everything that stops on Ctrl-C stops)."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.outcome = ""  # what the interrupted run recorded, and where, for the one line the CLI prints

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_deferring = 0
_pending: list[int] = []


_raised: list[int] = []  # the signals raised as Terminated since install(): behind() reads them


def _handler(signum: int, frame: object) -> None:
    if _deferring:
        _pending.append(signum)
        return
    _raised.append(signum)
    raise Terminated(signum)


REDELIVER_AFTER_S = 0.05
_previous_unraisable: list[Any] = []


def _unraisable(info: Any) -> None:
    """A Terminated that Python swallowed (raised inside a callback that cannot raise): send its signal again."""
    exc = getattr(info, "exc_value", None)
    if isinstance(exc, Terminated):
        timer = threading.Timer(REDELIVER_AFTER_S, os.kill, (os.getpid(), exc.signum))
        timer.daemon = True
        timer.start()
        return
    (_previous_unraisable[-1] if _previous_unraisable else sys.__unraisablehook__)(info)


@contextlib.contextmanager
def _held() -> Iterator[None]:
    """The ending signals held by the kernel while handlers are swapped: one arriving half-way is delivered after,
    to the handler then in place, never to a swap left half done (its exception out of a `finally`)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def install() -> dict[Any, Any]:
    """Handle every ending signal; returns the previous handlers for restore()."""
    with _held():
        _raised.clear()
        _previous_unraisable.append(sys.unraisablehook)
        sys.unraisablehook = _unraisable
        return {s: signal.signal(s, _handler) for s in HANDLED} | {"unraisablehook": _previous_unraisable[-1]}


def restore(previous: dict[Any, Any]) -> None:
    """Put the previous handlers back. A signal another thread took half-way is remembered, then sent again to the
    handler put back (the kernel holds it only from this thread)."""
    global _deferring
    with _held():
        _deferring += 1
        try:
            for s, h in previous.items():
                if s == "unraisablehook":
                    sys.unraisablehook = h
                    if _previous_unraisable:
                        _previous_unraisable.pop()
                else:
                    signal.signal(s, h)
        finally:
            _deferring -= 1
    if not _deferring and _pending:
        signum = _pending[0]
        _pending.clear()
        os.kill(os.getpid(), signum)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block, ending signals are remembered instead of raised; the first is raised when the
    outermost block ends normally (so the next study of `--all` does not start)."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    if not _deferring and _pending:
        signum = _pending[0]
        _pending.clear()
        raise Terminated(signum)


def raised() -> bool:
    """Whether an ending signal has been raised since install()."""
    return bool(_raised)


def behind(exc: BaseException) -> Terminated | None:
    """The ending signal an exception was raised while unwinding from (a lock half-taken when the signal landed,
    released again on the way out), if any: that exception is the signal's, not a fault of its own. Some C code
    replaces the signal's exception outright (PyCapsule_Import turns it into "could not import module
    _socket"), so a signal raised since install() counts too."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return as_terminated(exc)
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return Terminated(_raised[-1]) if _raised else None


def as_terminated(exc: KeyboardInterrupt) -> Terminated:
    """A plain KeyboardInterrupt (Python's own SIGINT handler, a kernel's) as the SIGINT it was."""
    return exc if isinstance(exc, Terminated) else Terminated(signal.SIGINT)
