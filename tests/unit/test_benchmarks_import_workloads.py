"""benchmarks/ measure with the library's workloads, never a copy of one (a copy drifts: the calculator check's
own SCRAM login made two or three server connections where the auth study's made one). Read from the source: a
benchmark that defines a name a workload module defines, or talks to a server by hand (a query executed, an HTTP
request sent, a MongoDB client made, a pacing loop), fails here."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import secoverhead.workloads as workloads

BENCHMARKS = sorted((Path(__file__).parents[2] / "benchmarks").glob("*.py"))
# what a workload does, by the call that does it: a statement sent, an HTTP request, a MongoDB client, a login
# (a statement once, outside any loop, reads or sets the server: statement_cpu's performance_schema counter)
CONNECTS = {"MongoClient", "HTTPConnection", "HTTPSConnection"}
SENDS = {"execute", "executemany", "request", "getresponse", "find_one", "insert_many"}
GENERIC = {"run", "measure", "main"}  # verbs any script has: no workload by that name alone


def _workload_names() -> set[str]:
    names: set[str] = set()
    for info in pkgutil.iter_modules(workloads.__path__):
        module = importlib.import_module(f"{workloads.__name__}.{info.name}")
        mine = (n for n, v in vars(module).items() if callable(v) and getattr(v, "__module__", "") == module.__name__)
        names |= {n.lstrip("_") for n in mine}
    return names - GENERIC


def _called(node: ast.AST) -> str:
    f = node.func if isinstance(node, ast.Call) else None
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _by_hand(tree: ast.AST) -> list[str]:
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For | ast.While | ast.comprehension)]
    repeated = {id(c) for loop in loops for c in ast.walk(loop) if isinstance(c, ast.Call) and _called(c) in SENDS}
    calls = [
        f"{_called(n)}() at line {n.lineno}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and (_called(n) in CONNECTS or id(n) in repeated)
    ]
    pacers = [
        f"a pacing loop at line {n.lineno}"
        for n in ast.walk(tree)
        if isinstance(n, ast.While) and any(isinstance(c, ast.Call) and _called(c) == "sleep" for c in ast.walk(n))
    ]
    return calls + pacers


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_a_benchmark_defines_no_workload_of_its_own(path: Path) -> None:
    tree = ast.parse(path.read_text())
    defined = {n.name.lstrip("_") for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert not defined & _workload_names(), f"{path.name} defines what a workload module has: import it"
    assert not _by_hand(tree), f"{path.name} runs a workload by hand ({'; '.join(_by_hand(tree))}): import it"


def test_the_rule_sees_a_copied_workload() -> None:
    """A copy of the check's old pacer and point select, as it was, is caught."""
    copy = ast.parse(
        "def _paced(rate, seconds, op):\n    while True:\n        time.sleep(0.05)\n"
        "def queries(cur):\n    for _ in range(9):\n        cur.execute('SELECT 1')\n"
    )
    assert len(_by_hand(copy)) == 2 and "paced" in _workload_names()
