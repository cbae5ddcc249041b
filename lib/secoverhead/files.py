"""Files written safely: atomically (readers never see half a file), with secrets stripped from JSON, and with
the permissions the user's umask gives any other file (a reviewer who can read report.html can read its data).
Standard library only."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .secrets import Secret, holds_secret, redact


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


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(sanitize(obj), indent=1, sort_keys=True).encode())


def read_json(path: Path) -> Any:
    """A JSON file, or None when it is missing, unreadable or corrupt (callers say what they skipped)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
