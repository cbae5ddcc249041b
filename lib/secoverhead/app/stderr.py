"""What an operator's stderr says along the way (plans, notes, progress, changes): as it is on a terminal, and
with its UTC time first when stderr is a file or a pipe (a scheduler's log), so that a night's log says when each
step happened. A refusal (`error: ...`) and a run's outcome line stay one plain line for whoever reads them."""

from __future__ import annotations

import logging
import sys
import time

STAMP = "%Y-%m-%dT%H:%M:%SZ"
PLAIN = {"plain": True}  # a log call's `extra` for a line that stays plain: how a run ended


def stamped() -> bool:
    """Whether lines carry their time: stderr is not a terminal."""
    try:
        return not sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return True


def line(text: str) -> str:
    return f"{time.strftime(STAMP, time.gmtime())} {text}" if stamped() else text


def say(text: str) -> None:
    print(line(text), file=sys.stderr, flush=True)


class _Stamped(logging.Formatter):
    converter = time.gmtime

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if getattr(record, "plain", False) else f"{self.formatTime(record, STAMP)} {text}"


def log_format() -> logging.Formatter:
    """The library's log lines (running X into ..., notes) on stderr, stamped as say() stamps, save those logged
    with extra=PLAIN."""
    return _Stamped("%(message)s") if stamped() else logging.Formatter("%(message)s")
