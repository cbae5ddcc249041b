"""Finding secrets in a run's artefacts, and removing them without corrupting anything.

A secret can reach a file in other spellings than its own bytes: JSON and Python escape quotes, backslashes and
newlines, HTML escapes `<>&"'`, a URI percent-encodes. Every spelling is looked for, in file contents and in
file and folder names. Text files are rewritten atomically with the secret replaced; Parquet files through
pyarrow, string cells and column names replaced, so they stay readable; any other binary file is left as it
is and named (the run fails either way). A secret too short or too common to be told from ordinary text cannot
be scanned for safely and is refused before the run (`scan_problem`)."""

from __future__ import annotations

import html
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from secoverhead.core.files import atomic_write_bytes

MIN_LENGTH = 8
# Words every run writes somewhere: a secret equal to or inside one of these would be "found" in every report.
COMMON = ("password", "secoverhead", "sbtest", "localhost", "mariadb", "mysql", "mongodb", "ferretdb", "bench")
PLACEHOLDER = "<redacted>"
MAX_SCANNED_BYTES = 1 << 30  # a larger file is not read whole: named as unscanned


def scan_problem(value: str, ordinary: Iterable[str] = ()) -> str | None:
    """Why a user's secret cannot be scanned for safely (None when it can)."""
    if len(value) < MIN_LENGTH:
        return f"it is shorter than {MIN_LENGTH} characters, too short to tell from ordinary text in a report"
    if "\0" in value:
        return "it holds a NUL byte, which no MySQL or MongoDB client can send"
    low = value.lower()
    if any(low in w for w in COMMON) or any(low in str(t).lower() for t in ordinary):
        return (
            "it appears in text every report holds (a parameter value, the notebook, the page's stylesheet or a "
            "common word)"
        )
    return None


def spellings(values: Iterable[str]) -> list[bytes]:
    """Each secret as bytes in every form a writer may give it, longest first."""
    out: set[bytes] = set()
    for v in values:
        if not v:
            continue
        for form in (v, json.dumps(v)[1:-1], repr(v)[1:-1], html.escape(v), html.escape(v, quote=False), quote(v)):
            out.add(form.encode())
    return sorted(out, key=len, reverse=True)


@dataclass
class Leak:
    path: str  # relative to the run directory, secrets replaced
    what: str  # "content" | "name"
    fixed: bool
    note: str = ""


def _replace(data: bytes, needles: list[bytes]) -> bytes:
    for n in needles:
        data = data.replace(n, PLACEHOLDER.encode())
    return data


def _text(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return False
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _clean_parquet(path: Path, values: list[str]) -> None:
    """Rewrite a Parquet file with every string cell and column name cleaned, through pyarrow's own writer."""
    # deferred: the pipeline imports this module before any run; pyarrow loads only when a Parquet file needs it
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    cols, names = [], []
    for name, col in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            for v in values:
                col = pc.replace_substring(col, v, PLACEHOLDER)
        cols.append(col)
        for v in values:
            name = name.replace(v, PLACEHOLDER)
        names.append(name)
    tmp = path.with_name(f".{path.name}.clean")
    pq.write_table(pa.Table.from_arrays(cols, names=names), tmp)
    os.replace(tmp, path)


def scan(run_dir: Path, values: list[str], *, fix: bool = True) -> list[Leak]:
    """Every place under run_dir a secret appears; with fix, each one removed where that is safe."""
    needles = spellings(values)
    if not needles:
        return []
    raw = [v for v in values if v]
    leaks: list[Leak] = []
    # deepest first, so renaming a folder never moves a file still to be visited
    for path in sorted(run_dir.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        rel = str(path.relative_to(run_dir))
        try:
            st = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            if st.st_size > MAX_SCANNED_BYTES:
                leaks.append(Leak(_replace(rel.encode(), needles).decode(), "content", False, "too large to scan"))
            else:
                try:
                    data = path.read_bytes()
                except OSError:
                    data = b""
                if any(n in data for n in needles):
                    leaks.append(_fix_content(path, rel, data, needles, raw, fix))
        if any(n in path.name.encode() for n in needles):
            clean = _replace(path.name.encode(), needles).decode().replace("/", "_")
            fixed = False
            if fix:
                try:
                    path.rename(path.with_name(clean))
                    fixed = True
                except OSError:
                    pass
            leaks.append(Leak(_replace(rel.encode(), needles).decode(), "name", fixed))
    return leaks


def _fix_content(path: Path, rel: str, data: bytes, needles: list[bytes], raw: list[str], fix: bool) -> Leak:
    shown = _replace(rel.encode(), needles).decode()
    if not fix:
        return Leak(shown, "content", False)
    try:
        if path.suffix == ".parquet":
            _clean_parquet(path, raw)
            return Leak(shown, "content", True, "rewritten through pyarrow")
        if _text(data):
            atomic_write_bytes(path, _replace(data, needles), mode=stat.S_IMODE(path.stat().st_mode))
            return Leak(shown, "content", True)
        return Leak(shown, "content", False, "binary file left as it is: delete it")
    except Exception as exc:  # a file that cannot be cleaned is named, never half-rewritten
        return Leak(shown, "content", False, f"could not be cleaned ({type(exc).__name__})")


def describe(leaks: list[Leak]) -> str:
    """One line for run.json and the terminal."""
    parts = []
    for lk in leaks[:6]:
        how = "scrubbed" if lk.fixed else "NOT removed"
        parts.append(f"{lk.path} ({'its name, ' if lk.what == 'name' else ''}{how}{'; ' + lk.note if lk.note else ''})")
    more = f" and {len(leaks) - 6} more" if len(leaks) > 6 else ""
    return "a secret appeared in " + ", ".join(parts) + more
