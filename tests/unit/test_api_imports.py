"""judge.api's modules import one another one way: the graph of their imports (every
``import`` anywhere in a module, a function's lazy import included) has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import judge.api

PACKAGE = "judge.api"
ROOT = Path(judge.api.__file__).parent


def _edges() -> dict[str, set[str]]:
    """module -> the judge.api modules it imports (``from judge.api import tables`` names
    the submodule ``tables``)."""
    modules = {p.stem for p in ROOT.glob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for m in modules:
        for node in ast.walk(ast.parse((ROOT / f"{m}.py").read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                base = node.module if node.level == 0 else f"{PACKAGE}.{node.module}"
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                head, _, name = t.partition(f"{PACKAGE}.")
                if not head and name.split(".")[0] in modules:
                    graph[m].add(name.split(".")[0])
        graph[m].discard(m)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for nxt in sorted(graph[n]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_cycle_finder_finds_a_cycle_and_none_in_a_chain():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_judge_api_has_no_import_cycle():
    graph = _edges()
    assert graph["routes"] >= {"outcomes", "service"}  # the parser sees real imports
    assert _cycle(graph) is None
