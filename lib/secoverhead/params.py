"""Notebook parameters: loaded from papermill-params/<study>/*.yaml and -p overrides, checked against the
notebook's own `parameters` cell (names and types), and pre-flighted (secrets present, files present,
servers reachable) before any kernel starts."""

from __future__ import annotations

import ast
import os
import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from .errors import ConfigError, UnreachableServerError
from .studies import Study

RESERVED = ("output_dir",)  # set by the pipeline
_SECRET_NAME = re.compile(r"pass(word|wd)?|secret|token|credential|api_?key", re.IGNORECASE)
_TYPES = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,), "list": (list,), "dict": (dict,)}


def notebook_parameters(study: Study) -> dict[str, dict[str, Any]]:
    """Name -> {inferred_type_name, default, help} from the notebook's `parameters` cell. papermill infers a
    type only from annotations; otherwise it is taken from the default's literal value."""
    import papermill

    declared = papermill.inspect_notebook(str(study.notebook_path))
    for spec in declared.values():
        if spec.get("inferred_type_name") in (None, "None"):
            try:
                value = ast.literal_eval(spec["default"])
            except (ValueError, SyntaxError):
                continue
            spec["inferred_type_name"] = type(value).__name__ if value is not None else "None"
    return declared


def _check_name(name: str) -> None:
    if _SECRET_NAME.search(name) and not name.endswith(("_env", "_file")):
        raise ConfigError(
            f"parameter {name!r} looks like a secret: name where it lives instead "
            f"({name}_env=VARIABLE or {name}_file=PATH)"
        )


def load_params(
    study: Study,
    *,
    file: str | os.PathLike | None = None,
    profile: str | None = None,
    overrides: list[tuple[str, str]] | None = None,
) -> tuple[dict[str, Any], str]:
    """The parameters for one run and a short name for them (the file's stem, or 'defaults')."""
    if file is None and profile is not None:
        file = study.params_dir / f"{profile}.yaml"
        if not Path(file).is_file():
            known = ", ".join(p.stem for p in study.parameter_files()) or "none"
            raise ConfigError(f"study {study.id!r} has no profile {profile!r} (have: {known})")
    params: dict[str, Any] = {}
    name = "defaults"
    if file is not None:
        path = Path(file)
        if not path.is_file():
            raise ConfigError(f"parameters file {path} does not exist")
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"parameters file {path} must hold a mapping of name: value")
        params.update(loaded)
        name = path.stem
    for key, raw in overrides or []:
        params[key] = yaml.safe_load(raw) if isinstance(raw, str) else raw
        name = f"{name}+{key}" if "+" not in name else name
    declared = notebook_parameters(study)
    for key, value in params.items():
        _check_name(key)
        if key in RESERVED:
            raise ConfigError(f"parameter {key!r} is set by the pipeline, not by you")
        if key not in declared:
            raise ConfigError(f"unknown parameter {key!r} for study {study.id!r}; known: {', '.join(sorted(declared))}")
        want = declared[key].get("inferred_type_name", "None")
        types = _TYPES.get(want)
        if (
            types is not None
            and value is not None
            and not (isinstance(value, types) and not (want in ("int", "float") and isinstance(value, bool)))
        ):
            raise ConfigError(f"parameter {key!r} must be {want}, got {type(value).__name__} {value!r}")
    return params, re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


def _reachable(host: str, port: int, what: str) -> None:
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            pass
    except OSError as exc:
        raise UnreachableServerError(f"{what} {host}:{port} is unreachable: {exc.strerror or exc}") from None


def preflight(params: dict[str, Any], declared: dict[str, dict[str, Any]]) -> None:
    """Checks that need no kernel: named secrets exist, named files exist, named servers answer."""
    merged = {k: v.get("default") for k, v in declared.items()} | params
    for key, value in merged.items():
        if isinstance(value, str):
            value = value.strip("'\"") if key not in params else value
        if not value:
            continue
        if key.endswith("_env") and isinstance(value, str) and value not in os.environ:
            raise ConfigError(f"{key}: environment variable {value} is not set")
        if key.endswith("_file") and isinstance(value, str) and not Path(value).expanduser().is_file():
            raise ConfigError(f"{key}: file {value} does not exist")
    for prefix in ("mysql", "mongo"):
        host, port = merged.get(f"{prefix}_host"), merged.get(f"{prefix}_port")
        if isinstance(host, str) and host.strip("'\""):
            _reachable(host.strip("'\""), int(port or (3306 if prefix == "mysql" else 27017)), f"{prefix} server")
    uri = merged.get("mongo_uri")
    if isinstance(uri, str) and uri.strip("'\""):
        parts = urlsplit(uri.strip("'\""))
        if "@" in parts.netloc:
            raise ConfigError("mongo_uri must not hold credentials: use mongo_username and mongo_password_env")
        if parts.hostname and parts.scheme == "mongodb":
            _reachable(parts.hostname, parts.port or 27017, "MongoDB")
