"""Where things live: the cache of built tools, and the binaries found in it."""

from __future__ import annotations

import os
from pathlib import Path

FERRETDB_VERSION = "v1.24.0"


def cache_dir() -> Path:
    """Cache for built tools, shared by every checkout (so fresh clones reuse the FerretDB build)."""
    env = os.environ.get("SECOVERHEAD_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "secoverhead"
    return base.expanduser().resolve()


def ferretdb_binary() -> Path:
    """The FerretDB binary: $SECOVERHEAD_FERRETDB, else the one `make setup` builds into the cache."""
    env = os.environ.get("SECOVERHEAD_FERRETDB")
    return Path(env) if env else cache_dir() / f"ferretdb-{FERRETDB_VERSION}" / "ferretdb"
