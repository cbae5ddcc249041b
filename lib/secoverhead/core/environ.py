"""The environment a process this project starts gets: locale, paths and what it is given, never the rest of ours.
A user's exported passwords (the admin's among them) sit in our environment so that we can read the one each run
names; no server or tool needs any of them, and a process's environment sits at the top of its stack (a profile's
DWARF stack copies once carried every exported password into perf.data)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

KEPT_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", "LOGNAME", "SSL_CERT_FILE", "SSL_CERT_DIR")


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a server or tool starts with: KEPT_ENV and LC_*, and `extra` (what that one process needs)."""
    base = {k: v for k, v in os.environ.items() if k in KEPT_ENV or k.startswith("LC_")}
    return base | dict(extra or {})


@contextlib.contextmanager
def scrubbed_environ(keep: tuple[str, ...] = ()) -> Iterator[None]:
    """os.environ reduced to server_env() (and `keep`) for a block, restored after: for a library that copies our
    environment into a process it starts itself (Playwright's driver), where no env= can be passed."""
    saved = dict(os.environ)
    try:
        kept = server_env({k: saved[k] for k in keep if k in saved})
        os.environ.clear()
        os.environ.update(kept)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def settle_platform() -> None:
    """Python's platform module learns the processor by running `uname -p` with our whole environment the first
    time anything reads it (platform.platform(), a library's version report: one such child once held an exported
    password during a TDE run). Learn it once here, scrubbed; the answer is cached for every later reader."""
    import platform

    with scrubbed_environ():
        _ = platform.uname().processor
