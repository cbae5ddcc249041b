"""Sampled call stacks from `perf script`, attributed in the terms a DBA reads.

Debian's libcrypto and libssl are stripped: their exported functions keep names (the dynamic symbol table)
but their internal ones, the assembly that does the arithmetic among them, show as `[unknown]`; and no debug
symbols are reachable here (Debian's debug archive is not). With DWARF call graphs the stacks still unwind through
them (`.eh_frame` survives stripping), so a sample whose leaf is unnamed is credited to:
- the nearest named function above it in the same library: `BN_mod_exp_mont_consttime*` is that function with the
  unnamed code it calls;
- else the nearest named function above it at all, the one that entered the unnamed code:
  `ngx_ssl_handshake -> [libssl.so.3]` is OpenSSL's internal handshake code nginx's handshake called (libssl's
  state machine, a tail call from the exported SSL_do_handshake, keeps no named frame of its own);
- else nothing: the sample is *unresolved*.
The profile records both shares: samples with no name in their leaf's library, and those unresolved.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

_FRAME = re.compile(r"^\s*[0-9a-f]+\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
UNNAMED = "[unknown]"
# A name that only says where a thread started explains nothing about where its time went.
_ENTRY_POINTS = frozenset({"_start", "__libc_start_main", "__libc_start_call_main", "start_thread", "clone3", "clone"})

Frame = tuple[str, str]  # (function, library file name); leaf first in a stack


@functools.lru_cache(maxsize=4096)  # a profile names a few dozen libraries over hundreds of thousands of frames
def library(dso: str) -> str:
    return Path(dso.strip("()")).name or UNNAMED


def category(dso: str, symbol: str) -> str:
    """The library a leaf frame belongs to, in the terms a DBA reads."""
    name = library(dso)
    if "kernel" in name or name.startswith("[k"):
        return "kernel"
    if name.startswith("libcrypto"):
        return "libcrypto (OpenSSL)"
    if name.startswith("libssl"):
        return "libssl (OpenSSL)"
    if name.startswith(("libc.so", "libc-", "ld-linux")):
        return "libc"
    if name in ("mariadbd", "mysqld", "nginx"):
        return f"server binary ({name})"
    if name == "ferretdb":
        if symbol.startswith(("crypto/", "vendor/golang.org/x/crypto", "golang.org/x/crypto")):
            return "Go crypto (in ferretdb)"
        if symbol.startswith("runtime."):
            return "Go runtime (in ferretdb)"
        return "server binary (ferretdb)"
    if name in (UNNAMED, "unknown", ""):
        return "unknown"
    return "other libraries"


def parse(script: str) -> list[list[Frame]]:
    """`perf script` text -> one list of frames per sample, leaf first. Inlined frames take their caller's
    library (perf prints `(inlined)` in its place)."""
    samples: list[list[Frame]] = []
    current: list[Frame] | None = None
    for line in script.splitlines():
        if not line.strip():
            current = None
            continue
        if not line.startswith((" ", "\t")):
            current = []
            samples.append(current)
            continue
        m = _FRAME.match(line)
        if current is not None and m:
            current.append((_OFFSET.sub("", m.group("sym")), m.group("dso")))
    out = []
    for stack in samples:
        if not stack:
            continue
        fixed: list[Frame] = []
        for i, (sym, dso) in enumerate(stack):
            if dso == "inlined":  # the next frame that is not inlined holds the code
                dso = next((d for _, d in stack[i + 1 :] if d != "inlined"), dso)
            fixed.append((sym, library(dso)))
        out.append(fixed)
    return out


def _named(sym: str) -> bool:
    return bool(sym) and sym != UNNAMED and sym not in _ENTRY_POINTS


def self_function(stack: Sequence[Frame]) -> tuple[str, bool]:
    """(the function a sample's time is credited to, whether it was resolved): the leaf when named, else the
    nearest named frame above it in the leaf's own library, marked `*` (it and the unnamed code it calls), else
    the nearest named frame above it at all, `caller -> [library]` (the code that entered the unnamed library)."""
    leaf_sym, leaf_lib = stack[0]
    if _named(leaf_sym):
        return leaf_sym, True
    for sym, lib in stack[1:]:
        if lib != leaf_lib:
            break
        if _named(sym):
            return f"{sym}*", True
    for sym, _ in stack[1:]:
        if _named(sym):
            return f"{sym} -> [{leaf_lib}]", True
    return f"[{leaf_lib}]", False


def named_in_library(stack: Sequence[Frame]) -> bool:
    """Whether a frame of the leaf's own library has a name (the stricter measure of what the symbols resolve)."""
    leaf_lib = stack[0][1]
    for sym, lib in stack:
        if lib != leaf_lib:
            return False
        if _named(sym):
            return True
    return False


@dataclass
class Summary:
    """What a profile's samples say: by library of the leaf, by function (self), by function (inclusive)."""

    samples: int = 0
    unresolved: int = 0  # no named frame anywhere above the leaf
    unnamed_in_library: int = 0  # no named frame in the leaf's own library (credited to their caller, or not)
    by_category: Counter = field(default_factory=Counter)
    self_counts: Counter = field(default_factory=Counter)  # (category, function) -> samples


def summarize(stacks: Iterable[Sequence[Frame]]) -> Summary:
    s = Summary()
    for stack in stacks:
        s.samples += 1
        leaf_sym, leaf_lib = stack[0]
        cat = category(leaf_lib, leaf_sym)
        fn, resolved = self_function(stack)
        s.unresolved += not resolved
        s.unnamed_in_library += not named_in_library(stack)
        s.by_category[cat] += 1
        s.self_counts[(cat, fn)] += 1
    return s


def folded_inclusive(folded: str) -> Counter:
    """function -> samples whose stack holds it, from a folded file (`root;...;leaf count` per line)."""
    out: Counter = Counter()
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            for name in set(stack.split(";")):
                if _named(name) and not name.startswith("["):
                    out[name] += int(count)
    return out


def folded_matching(folded: str, functions: Sequence[str]) -> int:
    """Samples with any of `functions` (names, or prefixes ending in `*`) anywhere in their stack."""
    exact = {f for f in functions if not f.endswith("*")}
    prefixes = tuple(f[:-1] for f in functions if f.endswith("*"))
    total = 0
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            names = stack.split(";")
            if any(n in exact or (prefixes and n.startswith(prefixes)) for n in names):
                total += int(count)
    return total
