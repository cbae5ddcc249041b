"""Private run directories: one per server instance, load client or RAM disk, named with the token of the process
that made it (core.owners), so a later start can tell a crashed owner's leftovers from a live one's."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from secoverhead.core import owners

RUN_DIR_PREFIX = "secoverhead-"
OWNED = re.compile(rf"^{RUN_DIR_PREFIX}({owners.TOKEN_PART})-")


def run_base(base: str | os.PathLike | None = None) -> Path:
    return Path(base or os.environ.get("SECOVERHEAD_RUN_BASE") or tempfile.gettempdir())


def make_run_dir(kind: str, base: str | os.PathLike | None = None) -> Path:
    """A private (0700), absolute directory for one server instance or load client, named with this process's
    token (servers chdir, so paths must be absolute)."""
    root = run_base(base)
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{owners.me()}-{kind}-", dir=root)).resolve()
