"""The package's structure: no module imports, directly or through others, a module that imports it back
(every import counts, those inside functions and under TYPE_CHECKING too: a lazy import hides a circle, it does
not remove it); every table's SQL writes are in its owner module; the read path writes nothing but access
statistics."""

from __future__ import annotations

import ast
import re
import traceback
from pathlib import Path

import agentmem_mcp
from agentmem_mcp.context import prompt_context, session_context

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


# -- one owner per table ------------------------------------------------------------------------

# SQL that writes a table: the statement's keywords (upper case, as the package writes SQL) and the table.
WRITE = re.compile(r"\b(?:INSERT(?:\s+OR\s+[A-Z]+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+[A-Z]+)?|DELETE\s+FROM)"
                   r"\s+([a-z_{][\w{}]*)")
MIGRATIONS = "agentmem_mcp.db.migrations"  # a migration may rewrite any table
# table -> the modules that may write it. The vector tables are still their index modules' (index/vectors.py,
# index/words.py: moving them under db/ is left until the work on a million memories there is merged); leases,
# the LLM ledger and team memory's tables (agentmem_mcp/team/, its own data layer) have an owner outside db/.
OWNERS = {
    "memories": {"agentmem_mcp.db.memories"},
    "observations": {"agentmem_mcp.db.observations"},
    "sessions": {"agentmem_mcp.db.sessions"},
    "entities": {"agentmem_mcp.db.links"},
    "memory_entities": {"agentmem_mcp.db.links"},
    "memory_links": {"agentmem_mcp.db.links"},
    "meta": {"agentmem_mcp.db.meta"},
    "audit": {"agentmem_mcp.db.audit"},
    "index_outbox": {"agentmem_mcp.db.index_outbox"},
    "schema_migrations": {MIGRATIONS},
    "memory_chunks": {"agentmem_mcp.index.vectors"},
    "memory_vectors": {"agentmem_mcp.index.vectors"},
    "vector_changes": {"agentmem_mcp.index.codes"},  # the change log that keeps each process's copy of the codes
    "word_vectors": {"agentmem_mcp.index.words"},
    "leases": {"agentmem_mcp.lease"},
    "llm_ledger": {"agentmem_mcp.llm"},
}
TEAM = "agentmem_mcp.team."  # team memory's tables (team_*), local and on its server


def _sql_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string in the module but its docstrings; an f-string's placeholder naming a
    module-level string constant reads as that constant, any other as {expression}."""
    constants = {t.id: node.value.value for node in getattr(tree, "body", []) if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for t in node.targets if isinstance(t, ast.Name)}
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    parts_of_fstrings = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and id(node) not in parts_of_fstrings:
                found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            text = ""
            for value in node.values:
                if isinstance(value, ast.Constant):
                    text += value.value
                elif isinstance(value.value, ast.Name) and value.value.id in constants:
                    text += constants[value.value.id]
                else:
                    text += "{" + ast.unparse(value.value) + "}"
            found.append((node.lineno, text))
    return found


def table_writes() -> dict[str, set[str]]:
    """table -> "module:line" of every SQL string in the package that writes it."""
    writes: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for line, text in _sql_strings(ast.parse(path.read_text(encoding="utf-8"))):
            for match in WRITE.finditer(text):
                writes.setdefault(match.group(1), set()).add(f"{module}:{line}")
    return writes


def test_each_table_is_written_by_its_owner_only():
    writes = table_writes()
    assert {"memories", "observations", "sessions", "memory_links", "meta"} <= set(writes)  # the scan finds SQL
    strays = {}
    for table, places in writes.items():
        owners = OWNERS.get(table, set())
        for place in places:
            module = place.split(":")[0]
            if module == MIGRATIONS or module in owners or table.startswith("team_") and module.startswith(TEAM):
                continue
            strays.setdefault(table, []).append(place)
    assert strays == {}, f"SQL writing a table outside its owner module (tests/test_layout.py OWNERS): {strays}"


def test_every_table_has_an_owner():
    """A table created by a migration (or by index/vectors.py) is in OWNERS or is team memory's."""
    created = set()
    for path in (PACKAGE / "db" / "migrations.py", PACKAGE / "index" / "vectors.py"):
        for _, text in _sql_strings(ast.parse(path.read_text(encoding="utf-8"))):
            created |= set(re.findall(r"CREATE (?:VIRTUAL )?TABLE (?:IF NOT EXISTS )?([a-z_{][\w{}]*)", text))
    assert {"memories", "observations", "memory_vectors"} <= created
    assert {t for t in created if t not in OWNERS and not t.startswith("team_")} == set()


def test_the_owner_check_catches_a_stray_write():
    """The scan itself: a write in a docstring is not SQL; an f-string's table constant is read."""
    tree = ast.parse('"""UPDATE memories is only words here"""\nTABLE = "word_vectors"\n'
                     'def f(conn):\n    conn.execute(f"DELETE FROM {TABLE} WHERE x")\n'
                     '    conn.execute("UPDATE memories SET a = 1")\n')
    found = [WRITE.findall(text) for _, text in _sql_strings(tree)]
    assert sorted(t for tables in found for t in tables) == ["memories", "word_vectors"]


# -- the read path ------------------------------------------------------------------------------


def _traced_writes(conn):
    """Start recording the statements of `conn` that write, each with the names of the functions on the stack."""
    writes: list[tuple[str, list[str]]] = []

    def trace(sql: str) -> None:
        if WRITE.search(sql):
            writes.append((sql, [frame.name for frame in traceback.extract_stack()]))

    conn.set_trace_callback(trace)
    return writes


def test_the_read_path_writes_only_access_statistics(store):
    """Search writes its hits' access statistics through `lifecycle.access.note_access` and nothing else; the
    briefing and prompt recall write nothing (the prompt hook records its hits' access with the same call)."""
    for title, content in (("Build command", "Run `make build` to build the project; it needs Go 1.22."),
                           ("Flaky test", "test_upload fails when the network is slow: retry it once."),
                           ("Decision", "We keep the settings in TOML, not YAML, decided with the team.")):
        store.save(content, title=title, type="fact")
    store.indexer.drain()
    writes = _traced_writes(store.conn)
    try:
        hits = store.search("how do I build the project").hits
        briefing, _ = session_context(store.conn, store.project, 1500)
        recalled, ids = prompt_context(store.conn, store.fulltext, "why does test_upload fail", store.project,
                                       budget_tokens=300, min_score=0.1)
    finally:
        store.conn.set_trace_callback(None)
    assert hits and "Build command" in briefing and ids and "test_upload" in recalled  # each read found something
    assert writes, "the search's hits were not recorded as accesses"
    assert [sql for sql, stack in writes if "note_access" not in stack] == []
    assert {sql.split(" SET ")[0] for sql, _ in writes} == {"UPDATE memories"}
