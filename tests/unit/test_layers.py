"""The library's folders are its layers, and imports run one way between them: a module imports only from its
own layer or the ones below it, never up, and no modules import each other in a cycle (imports inside
functions count too: deferring an import does not make a cycle a design)."""

from __future__ import annotations

import ast
from pathlib import Path

from secoverhead.core import paths

LIB = paths.ROOT / "lib" / "secoverhead"
# bottom to top: a layer may use the ones before it
LAYERS = (
    "core",  # errors, paths, files, secrets, units, signals, locks, the parameter schema
    "host",  # this machine: processes, cgroups, CPU accounting, noise, speed reference, perf
    "network",  # links with a round trip, in network namespaces
    "servers",  # MariaDB, FerretDB, nginx we start, and the user's servers
    "workloads",  # the load generators and probes, and the Measurement they return
    "analysis",  # statistics and claim readings: pure functions of run tables
    "measurement",  # experiments: rounds, arms, sequential looks, the result store
    "series",  # across reports: a study's series, each claim's standing verdict, the between-run sd learned
    "reporting",  # one study's tables, plots and report
    "studies",  # the study protocol and the five study packages
    "sizing",  # the cost calculator: the studies' measured costs priced for a DBA's workload and machine
    "suite",  # across studies and runs: index, history, run-to-run comparison, retention
    "fleet",  # many targets and client hosts on Dask distributed: the fleet file, its jobs, their runner
    "app",  # the pipeline, the CLI, the kernel launcher
)
MAX_FUNCTION_LINES = 60  # a function is a short list of named steps; ruff holds its arguments and branches


def module_name(f: Path) -> str:
    parts = f.relative_to(LIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(f: Path) -> set[str]:
    """Every secoverhead module f imports, anywhere in it (relative imports resolved)."""
    mod = module_name(f)
    pkg = mod if f.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(f.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            if src.startswith("secoverhead"):
                out |= {f"{src}.{a.name}" for a in node.names} | {src}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("secoverhead")}
    return out


def modules() -> dict[str, Path]:
    return {module_name(f): f for f in LIB.rglob("*.py")}


def layer(mod: str) -> int | None:
    parts = mod.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: {i for i in imports(f) if i in known and i != m} for m, f in known.items()}


def test_every_module_lives_in_a_layer_folder():
    top = ("secoverhead", "secoverhead.__main__")  # the package and `python -m secoverhead`: above every layer
    loose = [m for m in modules() if m not in top and layer(m) is None]
    assert not loose, f"modules outside the layer folders {LAYERS}: {loose}"


def upward(g: dict[str, set[str]]) -> list[str]:
    return [
        f"{m} ({LAYERS[layer(m)]}) imports {i} ({LAYERS[layer(i)]})"
        for m, deps in g.items()
        if layer(m) is not None
        for i in deps
        if layer(i) is not None and layer(i) > layer(m)
    ]


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(g.get(m, ())):
            if state.get(d) == 1:
                found.append([*path[path.index(d) :], d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    return found


def test_imports_never_run_up_a_layer():
    assert not (up := upward(graph())), "\n".join(up)


def test_no_import_cycles():
    g = graph()
    for pkg_init in [m for m, f in modules().items() if f.name == "__init__.py"]:
        g[pkg_init] = {d for d in g[pkg_init] if not d.startswith(pkg_init + ".")}  # a package re-exporting its own
    assert not (found := cycles(g)), "\n".join(" -> ".join(c) for c in found)


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """(name, lines) of every function or method in source longer than limit, decorators and docstring included."""
    return [
        (node.name, n)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (n := node.end_lineno - min([node.lineno, *(d.lineno for d in node.decorator_list)]) + 1) > limit
    ]


def test_no_function_of_the_library_is_over_60_lines():
    long = {m: found for m, f in modules().items() if (found := long_functions(f.read_text()))}
    assert not long, long


def test_the_function_length_check_can_fail():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def f():\n{body}\n") == [("f", MAX_FUNCTION_LINES + 1)]
    assert long_functions(f"def f():\n{body}\n", limit=MAX_FUNCTION_LINES + 1) == []


def test_the_checks_can_fail():
    """An upward import and a cycle, in a made-up graph, are both caught."""
    g = {"secoverhead.core.errors": {"secoverhead.studies.tls"}, "secoverhead.studies.tls": set()}
    assert upward(g) == ["secoverhead.core.errors (core) imports secoverhead.studies.tls (studies)"]
    g = {"secoverhead.host.a": {"secoverhead.host.b"}, "secoverhead.host.b": {"secoverhead.host.a"}}
    assert cycles(g) == [["secoverhead.host.a", "secoverhead.host.b", "secoverhead.host.a"]]
    assert not upward({"secoverhead.app.cli": {"secoverhead.core.errors"}})


STUDY_FILES = {"__init__.py", "declarations.py", "runner.py", "claims.py"}


def test_every_study_package_has_the_same_files():
    from secoverhead.studies import STUDIES

    for sid in STUDIES:
        have = {f.name for f in (LIB / "studies" / sid).glob("*.py")}
        assert have >= STUDY_FILES, f"{sid} lacks {STUDY_FILES - have}"
        extra = have - STUDY_FILES
        assert extra <= {"tables.py", "instances.py", "mechanism.py"}, f"{sid}: files outside the shape: {extra}"


def test_a_study_is_reached_through_the_registry_only():
    """Outside its own package, no module imports a study's files (the registry and the protocol are the way in),
    and nothing finds a study's pieces by reflection."""
    from secoverhead.studies import STUDIES

    for m, deps in graph().items():
        own = next((sid for sid in STUDIES if m.startswith(f"secoverhead.studies.{sid}")), None)
        for d in deps:
            target = next((sid for sid in STUDIES if d.startswith(f"secoverhead.studies.{sid}")), None)
            if target and target != own:
                assert m == "secoverhead.studies", f"{m} reaches into study {target} ({d})"
    for f in LIB.rglob("*.py"):
        text = f.read_text()
        for needle in ("import_module", "__import__(", "sys.modules["):
            assert needle not in text, f"{f.relative_to(LIB)} uses {needle}"
