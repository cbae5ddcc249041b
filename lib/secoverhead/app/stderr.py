"""What an operator's stderr says along the way (plans, notes, progress, changes): as it is on a terminal, and
with its UTC time first when stderr is a file or a pipe (a scheduler's log), so that a night's log says when each
step happened. A refusal (`error: ...`) and a run's outcome line stay one plain line for whoever reads them."""

from __future__ import annotations

import logging
import sys
import time

STAMP = "%Y-%m-%dT%H:%M:%SZ"


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


def log_format() -> logging.Formatter:
    """The library's log lines (running X into ..., notes) on stderr, stamped as say() stamps."""
    if not stamped():
        return logging.Formatter("%(message)s")
    formatter = logging.Formatter("%(asctime)s %(message)s", datefmt=STAMP)
    formatter.converter = time.gmtime
    return formatter
