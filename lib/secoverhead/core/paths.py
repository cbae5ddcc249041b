"""Where things live: the checkout's folders, the cache of built tools, and the binaries found in it.

The one place that knows the repository's layout; every other module asks here.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

FERRETDB_VERSION = "v1.24.0"
INFERNO_VERSION = "0.12.8"

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = ROOT / "notebooks"
PARAMS = ROOT / "papermill-params"
PUBLISHED = ROOT / "data" / "published"
CLAIMS = ROOT / "data" / "claims" / "registry.yaml"  # the claims and their readings, fixed before the data
BETWEEN_RUNS = ROOT / "data" / "claims" / "between_runs.yaml"  # what varies between runs, as declared sds
ERROR_RATES = ROOT / "data" / "claims" / "error_rates.json"  # wrong verdicts measured by `make error-rates`
LEVEL_SPREAD = ROOT / "data" / "claims" / "between_runs_levels.yaml"  # what compare adds between two reports
LEARNED_ENV = "SECOVERHEAD_BETWEEN_RUNS"  # the pipeline points a report's kernel at the sds learned before it


MAX_INPUT_BYTES = 1 << 20  # certificates, keys, parameters: kilobytes; a larger input file is a wrong path


def file_problem(path: str | os.PathLike, max_bytes: int | None = MAX_INPUT_BYTES) -> str | None:
    """Why `path` cannot be used as an input file ("does not exist", "is not a file" for a FIFO or a device,
    "is larger than ..."), or None if it is one. Checked without reading it.

    pathlib's is_file() raises on some errors (ENAMETOOLONG, EACCES on a parent) instead of saying False."""
    try:
        p = Path(path).expanduser()
        if p.is_file():
            if max_bytes is not None and p.stat().st_size > max_bytes:
                return f"is larger than {max_bytes} bytes"
            return None
        return "is not a file" if p.exists() else "does not exist"
    except (OSError, ValueError, RuntimeError) as exc:  # ValueError: a NUL byte; RuntimeError: ~nosuchuser
        return getattr(exc, "strerror", None) or str(exc)


class Unreadable(OSError):
    """A file that is not read: not a regular file, or larger than the caller's bound."""


def read_bounded(path: Path, limit: int) -> bytes:
    """A regular file's bytes, checked before reading: a FIFO (which would block), a device (/dev/zero would
    never end) or a file over `limit` bytes raises Unreadable; the file is opened without blocking and read
    to at most limit bytes, so a file that grows meanwhile cannot exhaust memory either."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"{Path(path).name} is not a regular file")
        if st.st_size > limit:
            raise Unreadable(f"{Path(path).name} is larger than {limit} bytes")
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise Unreadable(f"{Path(path).name} is larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def user_path(value: str | os.PathLike) -> Path:
    """A path the user typed, expanded and absolute; ValueError (one line) when it cannot be one."""
    try:
        return Path(value).expanduser().resolve()
    except (OSError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{str(value)[:120]!r} is not a usable path ({exc})") from None


def built_tool(source: Path, name: str) -> Path:
    """Where `make setup` puts the tool built from `source` (scripts/build-<tool>.sh): named by the source's
    hash, so a changed source is another build."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12] if source.is_file() else "missing"
    return cache_dir() / f"{source.parent.name}-{digest}" / name


def cache_dir() -> Path:
    """Cache for built tools, shared by every checkout (so fresh clones reuse the FerretDB build)."""
    env = os.environ.get("SECOVERHEAD_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "secoverhead"
    return base.expanduser().resolve()


def ferretdb_binary() -> Path:
    """The FerretDB binary: $SECOVERHEAD_FERRETDB, else the one `make setup` builds into the cache."""
    env = os.environ.get("SECOVERHEAD_FERRETDB")
    return Path(env) if env else cache_dir() / f"ferretdb-{FERRETDB_VERSION}" / "ferretdb"


def inferno_bin() -> Path:
    """Folder of the inferno flame-graph tools (Rust port of Brendan Gregg's FlameGraph) `make setup` builds."""
    return cache_dir() / f"inferno-{INFERNO_VERSION}" / "bin"


def state_dir() -> Path:
    """Where the library keeps state between runs (journals of changes to external servers)."""
    env = os.environ.get("SECOVERHEAD_STATE")
    base = (
        Path(env) if env else Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "secoverhead"
    )
    return base.expanduser().resolve()


REPORTS_ENV = "SECOVERHEAD_REPORTS"  # where the reports are, for a reader anywhere (secoverhead.load)


def reports_root(given: str | os.PathLike | None = None) -> Path:
    """The reports folder a reader means: the one given, else $SECOVERHEAD_REPORTS, else ./reports where it
    exists (the CLI's default), else the checkout's own (a notebook opened in notebooks/ reads the reports
    `make reports` wrote)."""
    if given is not None:
        return Path(given)
    env = os.environ.get(REPORTS_ENV)
    if env:
        return Path(env)
    here = Path("reports")
    return here if here.is_dir() else ROOT / "reports"


def interactive_results() -> Path:
    """Where a notebook run outside the pipeline writes: $SECOVERHEAD_RESULTS, else results/interactive/."""
    env = os.environ.get("SECOVERHEAD_RESULTS")
    return Path(env) if env else ROOT / "results" / "interactive"


# A Dask scheduler the run reaches other client hosts through (a load from several hosts at once); `secoverhead
# fleet` sets it for the runs it starts.
SCHEDULER_ENV = "SECOVERHEAD_SCHEDULER"
