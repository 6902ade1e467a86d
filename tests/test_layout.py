"""The package's structure: no module imports, directly or through others, a module that imports it back.
Every import counts, those inside functions and under TYPE_CHECKING too (a lazy import hides a circle, it does
not remove it)."""

from __future__ import annotations

import ast
from pathlib import Path

import agentmem_mcp

PACKAGE = Path(agentmem_mcp.__file__).parent
# The viewer's routes register themselves on the app that imports them (agentmem_mcp/viewer/), and the hook's
# hand-off client and the hook import each other (capture/hook.py, capture/hook_client.py, where the hook's import
# budget rules): circles left to the work on those two.
KNOWN = [{"agentmem_mcp.viewer.actions", "agentmem_mcp.viewer.app", "agentmem_mcp.viewer.pages",
          "agentmem_mcp.viewer.upkeep"}, {"agentmem_mcp.capture.hook", "agentmem_mcp.capture.hook_client"}]


def module_imports() -> dict[str, set[str]]:
    """module name -> the package's modules it imports."""
    paths = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    edges: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in paths else module for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges[name].update(t for t in targets if t in paths and t not in (name, "agentmem_mcp"))
    return edges


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    edges = module_imports()
    assert "agentmem_mcp.store" in edges["agentmem_mcp.cli_io"]  # the imports inside functions are read
    assert [group for group in circles(edges) if group not in KNOWN] == []


def test_operations_do_not_import_the_store():
    """remember, forget, search and the other operations are given the store's parts (`parts.Parts`); only the
    edges (CLI, server, worker loop, viewer) and the Store itself import `store`."""
    edges = module_imports()
    importers = {name for name, targets in edges.items() if "agentmem_mcp.store" in targets}
    assert importers <= {"agentmem_mcp.cli", "agentmem_mcp.cli_io", "agentmem_mcp.cli_commands",
                         "agentmem_mcp.server", "agentmem_mcp.worker", "agentmem_mcp.viewer.actions",
                         "agentmem_mcp.viewer.app", "agentmem_mcp.team.cli", "agentmem_mcp.team.tools"}, importers


def test_circles_are_found():
    """The check itself: a circle through three modules is one group, a chain is none."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert circles({"a": {"b"}, "b": set()}) == []
