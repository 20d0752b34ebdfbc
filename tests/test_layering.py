"""The compiler's import layering: no import cycle among `python/teflon`'s modules, no import of another module's
private name.

Every import counts, wherever it stands (module level, inside a function, under `TYPE_CHECKING`): a deferred
import still makes the importing module depend on the imported one, and a cycle hidden behind one is the knot this
test exists to keep out. The one allowed exception is a package's `__init__` importing its own submodules (a
package re-exporting or dispatching to what it contains is not a dependency of the package's parts on each other).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "python"
PACKAGE = "teflon"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def resolve_base(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (before its imported names)."""
    if not node.level:
        return node.module or ""
    package = name if is_package(path) else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str | None, int]]:
    """(imported module, private name imported from it or None, line) for each teflon import in one module."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    found.append((alias.name, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = resolve_base(name, path, node)
            if base not in known:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:  # `from package import submodule`
                    found.append((sub, None, node.lineno))
                else:
                    private = alias.name if alias.name.startswith("_") and not alias.name.startswith("__") else None
                    found.append((base, private, node.lineno))
    return found


def own_submodule(importer: str, path: Path, imported: str) -> bool:
    return is_package(path) and imported.startswith(importer + ".")


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    private: list[str] = []
    for name, path in known.items():
        for target, private_name, line in imports(name, path, known):
            if private_name is not None and target != name:
                private.append(f"{path.relative_to(ROOT)}:{line} imports {target}.{private_name}")
            if target != name and not own_submodule(name, path, target):
                graph[name].add(target)
    return graph, private


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
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
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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


def test_no_import_cycles() -> None:
    graph, _ = import_graph()
    found = cycles(graph)
    assert not found, "import cycles among teflon's modules:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_private_imports() -> None:
    _, private = import_graph()
    assert not private, "imports of another module's private name:\n" + "\n".join(private)


def test_checker_finds_a_cycle_and_ignores_package_reexports() -> None:
    graph = {"p": {"p.a"}, "p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": set()}
    assert cycles(graph) == [["p.a", "p.b"]]
    assert cycles({"p": set(), "p.a": {"p"}}) == []
