"""Files written safely: atomically (readers never see half a file), with secrets stripped from JSON, and with
the permissions the user's umask gives any other file (a reviewer who can read report.html can read its data).
Standard library only."""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from secoverhead.core.paths import (
    Unreadable as Unreadable,  # re-exported: the bounded reader lives in paths, below secrets
)
from secoverhead.core.paths import read_bounded as read_bounded
from secoverhead.core.secrets import Secret, holds_secret, redact


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


FILE_MODE = 0o666 & ~_umask()


def sanitize(obj: Any) -> Any:
    """A JSON-ready copy with secrets removed: Secret values, values of keys that name a secret, and every
    secret string this process knows; non-finite floats become null."""
    if isinstance(obj, Secret):
        return "<redacted>"
    if isinstance(obj, Mapping):
        return {
            str(k): "<redacted>" if holds_secret(str(k)) and v not in (None, "") else sanitize(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple | set | frozenset):
        return [sanitize(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return sanitize(obj.item())
    if obj is None or isinstance(obj, bool | int | float):
        return obj
    return redact(str(obj))


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write via a temporary file in the same directory, fsync, and rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, FILE_MODE if mode is None else mode)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


# The layout version of every result file the project writes (run.json, verdicts.json, the long tables,
# calibration.json, history/changes.json): a reader of an older or newer run can tell before it trusts a field.
SCHEMA = 2


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(sanitize(obj), indent=1, sort_keys=True).encode())


MAX_JSON_BYTES = 4 << 20  # run.json, verdicts.json, metadata: 10-50 kB each in a quick run; 4 MB bounds what a
# copied-in or damaged tree can make a reader hold (fifty 50 MB run.json took `index` to 2.5 GB)


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file, or None when it is missing, unreadable, not a regular file, too large or corrupt (callers
    say what they skipped)."""
    try:
        return json.loads(read_bounded(Path(path), limit))
    except (OSError, ValueError, RecursionError):
        return None


def within(path: Path, root: Path) -> bool:
    """Whether path, links followed, stays inside root: a report tree copied in from elsewhere may hold links to
    /dev/zero or to files of another user's, which are not read."""
    try:
        return Path(path).resolve().is_relative_to(Path(root).resolve())
    except (OSError, RuntimeError):
        return False


def write_in_place(path: Path, data: bytes) -> None:
    """Overwrite an existing file's bytes without a new file: on a full disk (or in a directory that no longer
    takes new files) a file whose blocks are already allocated can still be rewritten up to its size."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        if len(data) > os.fstat(fd).st_size:
            raise OSError(errno.ENOSPC, "the record is larger than the space reserved for it")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)
