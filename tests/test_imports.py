"""The package's import graph: no circle anywhere, and no backend leaning on another backend.

Every `import` and `from ... import` of every module counts, those inside functions too (a lazy
import only postpones a circle) and those under `if TYPE_CHECKING:` (a type named only for the
checker is still something the module needs from the other). The graph is read from the sources
with `ast`, so nothing is imported to test it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import REPO

PACKAGE = "reprokit"
# Each turns roles into running things; they share lower modules, never each other.
BACKEND_MODULES = frozenset({
    "reprokit.run.process_backend",
    "reprokit.run.manual",
    "reprokit.run.containers.backend",
    "reprokit.run.swarm.backend",
})

Graph = dict[str, set[str]]


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package by its dotted name; a package by its own name, not `__init__`."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """The dotted names a module's import statements ask for, relative imports made absolute;
    `from a import b` gives `a.b` (a submodule, or a name that `known_target` trims to `a`)."""
    names: set[str] = set()
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                anchor = here[:len(here) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.update(f"{base}.{alias.name}" for alias in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return names


def known_target(name: str, modules: set[str]) -> str | None:
    """The module of the package that importing `name` runs: its longest dotted prefix that is one."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def import_graph(root: Path, package: str) -> Graph:
    """Module -> the package's modules it imports (itself left out: `from reprokit import x`
    in reprokit/__init__.py would be no circle)."""
    modules = module_names(root, package)
    graph: Graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = {known_target(name, set(modules)) for name in
                   imported_names(tree, module, path.name == "__init__.py")}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def find_cycles(graph: Graph) -> list[list[str]]:
    """One circle per edge that closes one in a depth-first walk, as [a, b, ..., a]; none when
    the graph has no circle (a walk finds a closing edge whenever there is one)."""
    done: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = [start]
        on_path = {start}
        stack = [iter(sorted(graph.get(start, ())))]
        while stack:
            target = next(stack[-1], None)
            if target is None:
                stack.pop()
                on_path.discard(path[-1])
                done.add(path.pop())
            elif target in on_path:
                cycles.append(path[path.index(target):] + [target])
            elif target not in done:
                path.append(target)
                on_path.add(target)
                stack.append(iter(sorted(graph.get(target, ()))))
    return cycles


def reachable(graph: Graph, start: str) -> dict[str, list[str]]:
    """Every module that `start` imports, directly or not, with one import path to it."""
    paths = {start: [start]}
    pending = [start]
    while pending:
        module = pending.pop()
        for target in sorted(graph.get(module, ())):
            if target not in paths:
                paths[target] = paths[module] + [target]
                pending.append(target)
    del paths[start]
    return paths


def test_the_cycle_finder_finds_a_circle_in_a_hand_made_graph() -> None:
    """a -> b -> c -> a is found; the d -> a edge outside it is not part of the circle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [["a", "b", "c", "a"]] == find_cycles(graph)


def test_the_cycle_finder_finds_nothing_in_a_graph_without_a_circle() -> None:
    """A diamond (two paths to one module) is no circle."""
    graph = {"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}
    assert [] == find_cycles(graph)


def test_the_graph_counts_imports_inside_functions_and_type_checking_blocks(tmp_path: Path) -> None:
    """A lazy import is an edge, and so is an `if TYPE_CHECKING:` import; `from . import` resolves."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import high\n")
    (package / "high.py").write_text("def f():\n    from . import low\n    return low\n")
    graph = import_graph(tmp_path, "pkg")
    assert {"pkg": set(), "pkg.low": {"pkg.high"}, "pkg.high": {"pkg.low"}} == graph
    assert [["pkg.high", "pkg.low", "pkg.high"]] == find_cycles(graph)


def test_the_package_has_no_import_circle() -> None:
    """A circle, even through a lazy import, means two modules each need the other: split them."""
    cycles = find_cycles(import_graph(REPO, PACKAGE))
    assert [] == [" -> ".join(cycle) for cycle in cycles]


def test_no_backend_imports_another_backend() -> None:
    """What two backends share lives below both (plans, containers.image, cluster), so that
    each backend can be read, changed and tested alone."""
    graph = import_graph(REPO, PACKAGE)
    assert BACKEND_MODULES <= set(graph), "a backend module was renamed: update BACKEND_MODULES"
    leaning = [" -> ".join(path) for backend in sorted(BACKEND_MODULES)
               for target, path in reachable(graph, backend).items() if target in BACKEND_MODULES]
    assert [] == leaning
