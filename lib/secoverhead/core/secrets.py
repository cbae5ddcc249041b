"""Secrets: read from environment variables or files, never from parameters; never printed.

Every secret the process obtains is remembered so that `redact` can strip it from text and the report
pipeline can scan artefacts for leaks.
"""

from __future__ import annotations

import os
import re
import secrets as _stdlib_secrets
from pathlib import Path

from secoverhead.core.errors import ConfigError
from secoverhead.core.paths import file_problem, read_bounded

_KNOWN: set[str] = set()
# Shorter values cannot be told apart from ordinary text ("x" is in every report); they are not tracked.
MIN_TRACKED_LENGTH = 4


class Secret:
    """A string that does not show itself in repr/str/format, so it cannot leak by printing."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str = "generated") -> None:
        if not value:
            raise ConfigError(f"secret from {source} is empty")
        self._value = value
        self.source = source
        if len(value) >= MIN_TRACKED_LENGTH:
            _KNOWN.add(value)

    def reveal(self) -> str:
        """The secret itself, to hand to a client library. Never log the result."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret(<hidden>, source={self.source!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


EMBEDDED_PASSWORD_ENV = "SECOVERHEAD_EMBEDDED_PASSWORD"


def generate_password(nbytes: int = 18) -> Secret:
    """A password for a throwaway embedded server: $SECOVERHEAD_EMBEDDED_PASSWORD when set (the report
    pipeline sets it so it knows what to scan reports for), else a fresh random one."""
    if os.environ.get(EMBEDDED_PASSWORD_ENV):
        return Secret(os.environ[EMBEDDED_PASSWORD_ENV], source=f"env:{EMBEDDED_PASSWORD_ENV}")
    return Secret(_stdlib_secrets.token_urlsafe(nbytes), source="generated")


MAX_SECRET_FILE_BYTES = 64 << 10  # a password file is a line; a larger one is a wrong path, not read


def secret_from(*, env: str | None = None, file: str | os.PathLike | None = None) -> Secret:
    """Read a secret from an environment variable (as it is) or a file (its first line, without the line's end).

    Byte for byte: no spaces are stripped, since a password may begin or end with one. Exactly one source must be
    named; a missing variable or file is a ConfigError whose message never repeats what was named (a password
    typed where its variable or file name belongs must not be echoed)."""
    if (env is None) == (file is None):
        raise ConfigError("name exactly one of env= or file= for a secret")
    if env is not None:
        value = os.environ.get(env)
        if value is None:
            raise ConfigError("the environment variable named for the password is not set (name not repeated here)")
        return Secret(value, source=f"env:{env}")
    raw = _read_small(file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("the secret file named for the password is not UTF-8 text") from None
    first = text.split("\n", 1)[0]
    return Secret(first[:-1] if first.endswith("\r") else first, source=f"file:{Path(file).name}")


def _read_small(file: str | os.PathLike) -> bytes:
    """A regular file's bytes, refused before reading when it is large or not a regular file (a FIFO would
    block, /dev/zero would never end)."""
    if problem := file_problem(file, MAX_SECRET_FILE_BYTES):
        raise ConfigError(f"the secret file named for the password: {problem} (name not repeated here)")
    try:
        return read_bounded(Path(file).expanduser(), MAX_SECRET_FILE_BYTES)
    except OSError as exc:  # Unreadable included: a FIFO or device swapped in after the check
        why = exc.strerror or str(exc).split(" ", 1)[-1]
        raise ConfigError(f"the secret file named for the password cannot be read: {why}") from None


# The one rule for "this name is about a secret", used by parameter checks, result files and the pipeline.
_SECRET_NAME = re.compile(r"pass(word|wd)?|secret|token|credential|api_?key|private_?key", re.IGNORECASE)
REFERENCE_SUFFIXES = ("_env", "_file")


def is_secret_name(name: str) -> bool:
    """Whether a parameter, option or field name speaks of a secret (password, token, key, ...)."""
    return bool(_SECRET_NAME.search(name))


def secret_reference(name: str) -> str | None:
    """'env' or 'file' when the name says where a secret lives (mysql_password_env), else None."""
    for suffix in REFERENCE_SUFFIXES:
        if name.endswith(suffix) and is_secret_name(name[: -len(suffix)]):
            return suffix[1:]
    return None


def holds_secret(name: str) -> bool:
    """A name whose value would be the secret itself (mysql_password), not where it lives."""
    return is_secret_name(name) and not name.endswith(REFERENCE_SUFFIXES)


def known_secrets() -> frozenset[str]:
    """Every secret value this process has created or read."""
    return frozenset(_KNOWN)


def redact(text: str) -> str:
    """Replace every known secret value in text by a placeholder."""
    for value in sorted(_KNOWN, key=len, reverse=True):
        if value:
            text = text.replace(value, "<redacted>")
    return text
