"""The import graph of the ``sessiond`` package, read from the source.

Every import counts — module level, inside functions, under ``TYPE_CHECKING`` — because a
deferred or type-only import is still a dependency (it is how code reaches back up a layer).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import sessiond

PACKAGE = Path(sessiond.__file__).parent


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) for every module under ``root``."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path, is_package)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same tree it imports (a copy the caller may change).

    Parsing every module takes seconds on a loaded machine: done once per test process, when a
    test first asks, never at collection."""
    return {name: set(targets) for name, targets in _read_graph(root).items()}


@functools.cache
def _read_graph(root: Path) -> dict[str, frozenset[str]]:
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    if full in modules:
                        graph[name].add(full)
                    elif target in modules:
                        graph[name].add(target)
    return {name: frozenset(targets) for name, targets in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found
