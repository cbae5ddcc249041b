"""Parameters: each study's `Params` dataclass is the schema.

A field's type comes from its annotation; its help, range, choices and size limits from `param(...)`. Values
arrive from YAML files (layered, later files win) and `-p NAME VALUE` pairs (coerced to the declared type, as
papermill does), are checked against the schema, and the dataclass is built, all in the pipeline process
before any server or kernel starts. Every mistake is one line (a ConfigError). This module imports only the
standard library and PyYAML, so the CLI answers bad input in well under a second.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import os
import re
import reprlib
import ssl
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from secoverhead.core.errors import ConfigError
from secoverhead.core.files import Unreadable, read_bounded
from secoverhead.core.paths import file_problem
from secoverhead.core.secrets import holds_secret, secret_reference
from secoverhead.core.units import significant

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}"  # names that become directory names: no '/', no leading '.'
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # C0 controls and DEL
MAX_STR = 1000  # no parameter needs a longer string; bounds what a typo or a fuzzer can do
MAX_ITEMS_DEFAULT = 64
MAX_PLANNED_RUNS = 100_000  # beyond this no study here could finish; refused before anything starts
BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


@dataclass(frozen=True)
class Spec:
    """One parameter: name, type, default and the limits it is checked against."""

    name: str
    kind: str  # int | float | str | bool | list[int] | list[float] | list[str] | dict
    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None
    min_items: int = 0
    max_items: int = MAX_ITEMS_DEFAULT
    pattern: str | None = None
    internal: bool = False  # set by the pipeline, not by the user

    @property
    def item_kind(self) -> str | None:
        return self.kind[5:-1] if self.kind.startswith("list[") else None

    def describe_range(self) -> str:
        parts = []
        if self.choices:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        if self.min is not None or self.max is not None:
            parts.append(f"{_fmt(self.min) if self.min is not None else '-inf'}..{_fmt(self.max)}")
        if self.item_kind:
            parts.append(f"{self.min_items}..{self.max_items} items")
        if self.pattern:
            parts.append(f"matches {self.pattern}")
        return "; ".join(parts)


def _fmt(x: float | None) -> str:
    if x is None:
        return "inf"
    return significant(x, 6) if isinstance(x, float) else str(x)  # 1,000,000,000, never 1e+09


def param(
    default: Any,
    help: str = "",
    *,
    min: float | None = None,
    max: float | None = None,
    choices: Sequence[Any] | None = None,
    items: tuple[int, int] = (0, MAX_ITEMS_DEFAULT),
    pattern: str | None = None,
    internal: bool = False,
) -> Any:
    """A dataclass field carrying its schema (`items`: how many a list or mapping holds, at least and at most).
    Mutable defaults are copied per instance."""
    meta = {
        "secoverhead": {
            "help": help,
            "min": min,
            "max": max,
            "choices": tuple(choices) if choices is not None else None,
            "min_items": items[0],
            "max_items": items[1],
            "pattern": pattern,
            "internal": internal,
        }
    }
    if isinstance(default, list | dict):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def override(base: type, name: str, default: Any) -> Any:
    """base's parameter `name` with another default (a study's own): its help, bounds and choices stay base's,
    declared once there."""
    meta = base.__dataclass_fields__[name].metadata["secoverhead"]
    items = (meta["min_items"], meta["max_items"])
    return param(default, meta["help"], min=meta["min"], max=meta["max"], choices=meta["choices"], items=items,
                 pattern=meta["pattern"], internal=meta["internal"])  # fmt: skip


_SCALARS = {int: "int", float: "float", str: "str", bool: "bool"}


def _kind(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _kind(args[0])
    if hint in _SCALARS:
        return _SCALARS[hint]
    if origin is list:
        (item,) = typing.get_args(hint) or (str,)
        return f"list[{_SCALARS.get(item, 'str')}]"
    if origin is dict or hint is dict:
        return "dict"
    raise TypeError(f"unsupported parameter type {hint!r}")


def specs(cls: type) -> dict[str, Spec]:
    """The schema of a Params dataclass: name -> Spec, in declaration order."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        meta = dict(f.metadata.get("secoverhead", {}))
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        out[f.name] = Spec(name=f.name, kind=_kind(hints[f.name]), default=default, **meta)
    return out


# -- checking and coercing --------------------------------------------------------------------------------
_SHOW = reprlib.Repr()
_SHOW.maxstring, _SHOW.maxother, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxlevel = 60, 60, 6, 6, 3


def bounded_repr(value: Any) -> str:
    """A value as it goes into a one-line error: bounded in length and depth, whatever the value (a YAML alias
    bomb expands to gigabytes under repr())."""
    text = _SHOW.repr(value).replace("\n", "\\n")
    return text if len(text) <= 120 else text[:117] + "..."


def _given(spec: Spec, value: Any) -> str:
    """What the user gave, for an error: never for a parameter that names where a secret lives (a password
    typed in its place must not be echoed)."""
    return "a value that is not repeated here" if secret_reference(spec.name) else bounded_repr(value)


def _scalar(spec: Spec, kind: str, value: Any, where: str) -> Any:
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {_given(spec, value)}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer, got {_given(spec, value)}")
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"{where} must be a finite number, got {_given(spec, value)}")
        value = float(value)
    elif kind == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {_given(spec, value)}")
        if len(value) > MAX_STR or "\0" in value:
            raise ConfigError(f"{where} is longer than {MAX_STR} characters or holds a NUL byte")
        if control := _CONTROL.search(value):
            # a host, URI, path or name never holds one: a newline or an escape in a mongo_uri is a paste gone wrong
            raise ConfigError(f"{where} holds a control character ({control.group()!r}); type it without one")
        if spec.pattern and value and not re.fullmatch(spec.pattern, value):
            raise ConfigError(f"{where} must match {spec.pattern}, got {_given(spec, value)}")
    if spec.choices is not None and value not in spec.choices:
        raise ConfigError(f"{where} must be one of {', '.join(map(str, spec.choices))}; got {_given(spec, value)}")
    if kind in ("int", "float") and (
        (spec.min is not None and value < spec.min) or (spec.max is not None and value > spec.max)
    ):
        raise ConfigError(f"{where} must be between {_fmt(spec.min)} and {_fmt(spec.max)}, got {_given(spec, value)}")
    return value


def check(spec: Spec, value: Any) -> Any:
    """The value if it fits the spec (ints widened to float where a float is declared), else ConfigError."""
    where = f"parameter {spec.name!r}"
    if value is None:
        raise ConfigError(f"{where} must be {spec.kind}, got null")
    item = spec.item_kind
    if item is not None:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where} must be a list of {item}, got {_given(spec, value)}")
        if not spec.min_items <= len(value) <= spec.max_items:
            raise ConfigError(f"{where} must have {spec.min_items} to {spec.max_items} items, got {len(value)}")
        out = [_scalar(spec, item, v, f"{where} item {_given(spec, v)}") for v in value]
        if len(set(map(repr, out))) != len(out):
            raise ConfigError(f"{where} lists an item twice: {_given(spec, value)}")
        return out
    if spec.kind == "dict":
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{where} must be a mapping with string keys, got {_given(spec, value)}")
        if len(value) > spec.max_items:
            raise ConfigError(f"{where} has more than {spec.max_items} entries")
        return value
    return _scalar(spec, spec.kind, value, where)


def coerce(spec: Spec, text: str) -> Any:
    """A `-p` value (always text) turned into the declared type: strings stay verbatim (so `on` stays "on")."""
    where = f"parameter {spec.name!r}"
    kind = spec.item_kind or spec.kind
    if spec.kind == "str":
        return text
    if spec.kind == "bool":
        word = text.strip().lower()
        if word not in BOOL_WORDS:
            raise ConfigError(f"{where} must be true or false, got {_given(spec, text)}")
        return BOOL_WORDS[word]
    if spec.kind in ("int", "float"):
        try:
            if not text.isascii():  # int() and float() take any script's digits: `3٣` read as 33
                raise ValueError(text)
            return int(text) if spec.kind == "int" else float(text)
        except ValueError:
            what = "an integer" if spec.kind == "int" else "a number"
            raise ConfigError(f"{where} must be {what}, got {_given(spec, text)}") from None
    if len(text) > MAX_VALUE_TEXT:
        raise ConfigError(f"{where}: the value is longer than {MAX_VALUE_TEXT} characters")
    stripped = text.strip()
    if spec.item_kind is not None and not stripped.startswith("["):  # 1,8,16 as well as [1, 8, 16]
        return [coerce(Spec(spec.name, kind, None), t.strip()) for t in stripped.split(",") if t.strip()]
    value = _yaml_load(text, f"the value of {where}")
    if spec.item_kind is not None and isinstance(value, list):
        return [coerce(Spec(spec.name, kind, None), v) if isinstance(v, str) and kind != "str" else v for v in value]
    return value


def accept(spec: Spec, value: Any) -> Any:
    """A value from a YAML file: text for a non-text parameter is coerced like `-p`, numbers for text are
    taken as text (a user name 1234), then checked."""
    if isinstance(value, str) and spec.kind != "str":
        value = coerce(spec, value)
    elif spec.kind == "str" and isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    return check(spec, value)


# -- YAML, read safely ------------------------------------------------------------------------------------
MAX_DEPTH = 16  # parameters nest two or three levels; deeper is a mistake or an attack (RecursionError)
MAX_NODES = 100_000  # far above any parameters file; an alias bomb expands past it when its value is used
MAX_VALUE_TEXT = 64 << 10  # one -p value


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans: only true/false (YAML 1.1 would read `on`, `off`, `yes`, `no` as booleans). No
    aliases (`*a` would let 364 bytes expand to gigabytes when a value is formatted or copied: a parameters
    file has no use for them), at most MAX_DEPTH levels and MAX_NODES nodes."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = self._nodes = 0

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """A key given twice is refused: the safe loader keeps the last, so a file's earlier line did nothing."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {bounded_repr(key)} is given twice", key_node.start_mark
                )
            with contextlib.suppress(TypeError):  # an unhashable key is refused by the loader itself
                seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not accepted in parameters: write the value out", event.start_mark
            )
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH or self._nodes > MAX_NODES:
                event = self.peek_event()
                what = f"nested deeper than {MAX_DEPTH} levels" if self._depth > MAX_DEPTH else "too many values"
                raise yaml.composer.ComposerError(None, None, what, event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _yaml_load(text: str, what: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except RecursionError:
        raise ConfigError(f"{what} is nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{what} is not valid YAML{at}: {problem}") from None


MAX_FILE_BYTES = 1 << 20


def read_yaml(path: str | os.PathLike, what: str, limit: int = MAX_FILE_BYTES) -> Any:
    """A YAML file of ours or a user's, read as YAML 1.2 with the safe loader, bounded in size, depth and nodes
    (no aliases): a 3 GB or deeply nested file is one ConfigError, not an OOM kill or a traceback."""
    p = Path(path)
    if problem := file_problem(p, limit):
        raise ConfigError(f"{what} {_short(p)}: {problem}")
    try:
        raw = read_bounded(p.expanduser(), limit)  # size and kind checked before reading
    except Unreadable as exc:
        raise ConfigError(f"{what} {_short(p)}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{what} {_short(p)} cannot be read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {_short(p)} is not UTF-8 text (byte {exc.start})") from None
    return _yaml_load(text, f"{what} {_short(p)}")


def read_file(path: str | os.PathLike) -> dict[str, Any]:
    """One parameters file: a mapping of name: value."""
    loaded = read_yaml(path, "parameters file")
    if loaded is None:
        return {}
    if not isinstance(loaded, dict) or not all(isinstance(k, str) for k in loaded):
        raise ConfigError(f"parameters file {_short(Path(path))} must hold a mapping of name: value")
    return loaded


# -- building a Params ------------------------------------------------------------------------------------
def build(cls: type, values: Mapping[str, Any], *, study: str) -> Any:
    """Check every value against cls's schema and build it; cross-field rules run in its __post_init__."""
    schema = specs(cls)
    checked: dict[str, Any] = {}
    for name, value in renamed(cls, values).items():
        spec = schema.get(name)
        if spec is None:
            if holds_secret(name):
                refs = [f"{name}{s}" for s in ("_env", "_file") if f"{name}{s}" in schema]
                where = " or ".join(f"{r}=..." for r in refs) or "an environment variable or a file"
                raise ConfigError(
                    f"parameter {bounded_repr(name)} would put a secret in a parameter: name where it lives ({where})"
                )
            raise ConfigError(
                f"unknown parameter {bounded_repr(name)} for study {study!r}; `secoverhead params {study}` lists them"
            )
        if spec.internal:
            raise ConfigError(f"parameter {name!r} is set by the pipeline, not by you")
        checked[name] = accept(spec, value)
    try:
        return cls(**checked)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{study}: {str(exc).splitlines()[0]}") from None


_SAID_RENAMED: set[str] = set()


def renamed(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """Values under a parameter's old name (cls.RENAMED: old -> new, kept for a release) moved to its new name,
    said once per process; a recorded run's parameters and a user's files keep working."""
    out = dict(values)
    for old, new in getattr(cls, "RENAMED", {}).items():
        if old in out:
            value = out.pop(old)
            out.setdefault(new, value)
            if old not in _SAID_RENAMED:
                _SAID_RENAMED.add(old)
                print(f"warning: parameter {old} is now {new}", file=sys.stderr)
    return out


def layer(
    *,
    files: Sequence[str | os.PathLike] = (),
    overrides: Sequence[tuple[str, str]] = (),
    schema: Mapping[str, Spec],
) -> dict[str, Any]:
    """Files in order (later ones win), then `-p` pairs coerced to their declared types."""
    values: dict[str, Any] = {}
    for f in files:
        values.update(read_file(f))
    for name, text in overrides:
        spec = schema.get(name)
        values[name] = coerce(spec, text) if spec is not None else text
    return values


def params_name(files: Sequence[str | os.PathLike], overrides: Sequence[tuple[str, str]]) -> str:
    """A short name for a parameter set, for the report directory: file stems, then the first -p name."""
    name = "+".join(Path(f).stem for f in files) or "defaults"
    if overrides:
        name += f"+{overrides[0][0]}"
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)[:80]


def secret_parameters(p: Any) -> dict[str, tuple[str, str]]:
    """name -> ('env' | 'file', where) for every parameter that says where a secret lives and is set."""
    out = {}
    for f in dataclasses.fields(p):
        kind = secret_reference(f.name)
        value = getattr(p, f.name)
        if kind and isinstance(value, str) and value:
            out[f.name] = (kind, value)
    return out


def _short(path: str | os.PathLike, limit: int = 120) -> str:
    """A path as it goes into a one-line error: long ones cut in the middle."""
    text = str(path)
    return text if len(text) <= limit else f"{text[:60]}…{text[-40:]} ({len(text)} characters)"


def preflight(p: Any) -> None:
    """What can be checked without a kernel: named secrets exist, named files exist, and every external server
    the parameters name answers, accepts the credentials and (with a CA file) verifies."""
    for name, (kind, where) in secret_parameters(p).items():
        if kind == "env" and where not in os.environ:
            raise ConfigError(f"{name}: the environment variable it names is not set (name not repeated here)")
        if kind == "file" and (problem := file_problem(where)):
            raise ConfigError(f"{name}: the file it names: {problem} (name not repeated here)")
    for f in dataclasses.fields(p):
        value = getattr(p, f.name)
        if not (f.name.endswith("_file") and isinstance(value, str) and value):
            continue
        if problem := file_problem(value):
            raise ConfigError(f"{f.name}: file {_short(value)}: {problem}")
        if f.name.endswith("_ca_file"):
            try:
                ssl.create_default_context(cafile=str(Path(value).expanduser()))
            except (ssl.SSLError, ValueError, OSError) as exc:
                raise ConfigError(f"{f.name}: {_short(value)} holds no usable certificate ({exc})") from None
    servers = p.external_servers()
    described = []
    for server in servers:
        with server:  # connects, logs in, reads facts; leaves nothing behind
            described.append(server.describe())
    if servers:
        p.check_servers(described)  # what only their facts together say (auth: one build on both sides)
        p.check_clients()  # and every client tool the run uses logs in with the same credentials


def describe(cls: type) -> list[dict[str, Any]]:
    """Rows for `secoverhead params STUDY`: name, type, default (the value itself, as JSON types it), range, help."""
    return [
        {
            "name": s.name,
            "type": s.kind,
            "default": s.default,
            "range": s.describe_range(),
            "help": s.help,
        }
        for s in specs(cls).values()
        if not s.internal
    ]
