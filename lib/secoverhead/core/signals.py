"""Signals that end a run: Ctrl-C (SIGINT), a scheduler's SIGTERM, a closed terminal's SIGHUP. Each becomes an
exception in the main thread, so every `with` block unwinds (servers stop, a user's settings are restored) and
the run is finalised. While a run is being finalised, a further signal is remembered rather than raised: a
second Ctrl-C must not leave run.json half-done."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

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


def _handler(signum: int, frame: object) -> None:
    if _deferring:
        _pending.append(signum)
        return
    raise Terminated(signum)


def install() -> dict[int, object]:
    """Handle every ending signal; returns the previous handlers for restore()."""
    return {s: signal.signal(s, _handler) for s in HANDLED}


def restore(previous: dict[int, object]) -> None:
    for s, h in previous.items():
        signal.signal(s, h)


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


def as_terminated(exc: KeyboardInterrupt) -> Terminated:
    """A plain KeyboardInterrupt (Python's own SIGINT handler, a kernel's) as the SIGINT it was."""
    return exc if isinstance(exc, Terminated) else Terminated(signal.SIGINT)
