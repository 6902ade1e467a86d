"""The package's structure: a few basics at the root and a folder per stage a request passes through, the edges
(cli/, server/, runtime/, viewer/) importing the library and never the reverse, storage (db/, index/) importing no
stage above it; no module imports, directly or through others, a module that imports it back (every import counts,
those inside functions and under TYPE_CHECKING too: a lazy import hides a circle, it does not remove it); every
table's SQL writes are in its owner module, and the tables db/ owns are read through db/; the read path writes
nothing but access statistics."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

import agentmem_mcp
from agentmem_mcp.recall.briefing import session_context
from agentmem_mcp.recall.context import prompt_context

PACKAGE = Path(agentmem_mcp.__file__).parent


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
    assert "agentmem_mcp.store" in edges["agentmem_mcp.cli.common"]  # the imports inside functions are read
    assert circles(edges) == []


def test_operations_do_not_import_the_store():
    """remember, forget, search and the other operations are given the store's parts (`parts.Parts`); only the
    edges (CLI, server, worker loop, viewer, the CLI's searches in the shared process) and the Store itself import
    `store`."""
    edges = module_imports()
    importers = {name for name, targets in edges.items() if "agentmem_mcp.store" in targets}
    assert importers <= {"agentmem_mcp.cli.app", "agentmem_mcp.cli.common", "agentmem_mcp.cli.commands",
                         "agentmem_mcp.server.app", "agentmem_mcp.runtime.worker", "agentmem_mcp.viewer.actions",
                         "agentmem_mcp.viewer.state", "agentmem_mcp.team.cli", "agentmem_mcp.team.tools",
                         "agentmem_mcp.runtime.search_service"}, importers


def test_circles_are_found():
    """The check itself: a circle through three modules is one group, a chain is none."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert circles({"a": {"b"}, "b": set()}) == []



# -- the stages -----------------------------------------------------------------------------------

# The package's root: its entry (`python -m agentmem_mcp`), the Python API (`store`) and the basics every stage uses.
ROOT_MODULES = {"__init__", "__main__", "config", "files", "kinds", "logs", "models", "parts", "preflight", "project",
                "store", "version"}
EDGES = {"cli", "server", "runtime", "viewer"}  # a person's command, an MCP client's server, the processes
LIBRARY = {"capture", "history", "recall", "lifecycle", "team", "upkeep", "install"}
STORAGE = {"db", "index"}
STAGES = EDGES | LIBRARY | STORAGE | {"trust"}  # trust/: the text policy, pure, used by every stage
# Edges inside a library folder: the hook process's entry and the shared process's hook socket, team memory's
# commands and MCP tools.
EDGE_MODULES = {"agentmem_mcp.__main__", "agentmem_mcp.capture.hook_client", "agentmem_mcp.capture.hook_service",
                "agentmem_mcp.team.cli", "agentmem_mcp.team.tools"}
BASICS_OF_STORAGE = {"agentmem_mcp.files", "agentmem_mcp.kinds", "agentmem_mcp.models"}


def stage(module: str) -> str | None:
    """The stage folder of a module of the package (None for the root's modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def is_edge(module: str) -> bool:
    return module in EDGE_MODULES or stage(module) in EDGES


def test_the_root_holds_only_the_basics():
    """A new module goes into the folder of its stage (README.md, "Architecture"), not the root."""
    assert {path.stem for path in PACKAGE.glob("*.py")} == ROOT_MODULES
    assert len(ROOT_MODULES) <= 12


def test_each_folder_is_a_stage():
    folders = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert folders == STAGES
    assert len(EDGES | LIBRARY | STORAGE) == len(EDGES) + len(LIBRARY) + len(STORAGE)


def test_stage_packages_import_nothing_when_imported():
    """A folder's __init__.py imports no module of the package at import time: importing one module of a stage (the
    hook's, say) loads that module and what it imports, not the whole stage."""
    found = {}
    for path in PACKAGE.glob("*/__init__.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("agentmem_mcp")):
                found.setdefault(path.parent.name, []).append(node.lineno)
            elif isinstance(node, ast.Import) and any(a.name.startswith("agentmem_mcp") for a in node.names):
                found.setdefault(path.parent.name, []).append(node.lineno)
    assert found == {}


def test_a_console_script_written_before_the_move_still_runs():
    """An install made when the command was `agentmem_mcp/cli.py` has a console script that reads `from
    agentmem_mcp.cli import main`; `agentmem install` writes `agentmem` or `python -m agentmem_mcp` (unchanged)."""
    old_script = "import sys; from agentmem_mcp.cli import main; sys.exit(main(['--version']))"
    for argv in ([sys.executable, "-c", old_script], [sys.executable, "-m", "agentmem_mcp", "--version"]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.startswith("agentmem "), (argv, done.stdout, done.stderr)

def test_the_library_never_imports_an_edge():
    """The edges (cli/, server/, runtime/, viewer/, and the hook's and team memory's entry modules) import the
    library; no module of the library, storage or the root imports an edge."""
    edges = module_imports()
    assert "agentmem_mcp.recall.briefing" in edges["agentmem_mcp.server.app"]  # an edge reads the library
    upward = {(name, target) for name, targets in edges.items() if not is_edge(name)
              for target in targets if is_edge(target)}
    assert upward == set(), sorted(upward)


def test_module_paths_named_in_the_code_and_docs_exist():
    """A docstring, comment or doc that names a module by its folder (`runtime/relay.py`, `agentmem_mcp/db/...`)
    names one that is there: a module that moved is named where it lives now (the changelog keeps the old names)."""
    named = re.compile(r"(?<![\w/.-])(?:agentmem_mcp/)?((?:" + "|".join(sorted(STAGES)) + r")/\w+\.py)\b")
    repo = PACKAGE.parent
    texts = [*PACKAGE.rglob("*.py"), *(repo / "scripts").glob("*.py"), *(repo / "tests").glob("*.py"),
             *(repo / "docs").glob("*.md"), repo / "README.md", repo / "scripts" / "README.md"]
    missing = [f"{path.relative_to(repo)}:{n}: {found}" for path in texts
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               for found in named.findall(line) if not (PACKAGE / found).exists()]
    assert missing == []


def test_storage_imports_no_stage_above_it():
    """db/ imports db/ and the records (models, kinds) and home files (files); index/ imports index/, db/ and the
    same basics. Neither imports recall, lifecycle, capture or the edges."""
    edges = module_imports()
    allowed = {"db": {"db"}, "index": {"db", "index"}}
    found = {f"{name} -> {target}" for name, targets in edges.items() if stage(name) in STORAGE
             for target in targets if target not in BASICS_OF_STORAGE and stage(target) not in allowed[stage(name)]}
    assert found == set()


def test_trust_is_pure():
    """trust/ (provenance, what reads as instructions, how text is framed as data) imports no other stage."""
    edges = module_imports()
    assert {f"{name} -> {target}" for name, targets in edges.items() if stage(name) == "trust"
            for target in targets if stage(target) != "trust"} == set()

# -- one owner per table ------------------------------------------------------------------------

# SQL that writes a table: the statement's keywords (upper case, as the package writes SQL) and the table.
WRITE = re.compile(r"\b(?:INSERT(?:\s+OR\s+[A-Z]+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+[A-Z]+)?|DELETE\s+FROM)"
                   r"\s+([a-z_{][\w{}]*)")
MIGRATIONS = "agentmem_mcp.db.migrations"  # a migration may rewrite any table
# table -> the modules that may write it. Leases, the LLM ledger and team memory's tables (agentmem_mcp/team/, its
# own data layer) have an owner outside db/.
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
    "memory_chunks": {"agentmem_mcp.db.vectors"},
    "memory_vectors": {"agentmem_mcp.db.vectors"},
    "vector_changes": {"agentmem_mcp.db.vectors"},  # the change log that keeps each process's copy of the codes
    "word_vectors": {"agentmem_mcp.db.word_vectors"},
    "leases": {"agentmem_mcp.runtime.lease"},
    "llm_ledger": {"agentmem_mcp.lifecycle.llm"},
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
    """A table created by a migration (or by db/vectors.py) is in OWNERS or is team memory's."""
    created = set()
    for path in (PACKAGE / "db" / "migrations.py", PACKAGE / "db" / "vectors.py"):
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


# SQL that reads a table (the table named after FROM or JOIN).
READ = re.compile(r"\b(?:FROM|JOIN)\s+([a-z_]+)\b")
DB = "agentmem_mcp.db."
# the tables whose SQL is db/'s (OWNERS names an owner under db/)
DB_TABLES = {table for table, owners in OWNERS.items() if all(owner.startswith(DB) for owner in owners)}


def table_reads() -> dict[str, dict[str, set[int]]]:
    """table -> module -> lines of its SQL strings that read the table."""
    found: dict[str, dict[str, set[int]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for line, text in _sql_strings(ast.parse(path.read_text(encoding="utf-8"))):
            for table in READ.findall(text):
                found.setdefault(table, {}).setdefault(module, set()).add(line)
    return found


def test_db_tables_are_read_through_db():
    """Every module outside db/ (team memory's too: its own tables are team_*, here and on its server) reads the
    tables db/ owns through db/'s named reads (`memories` through db/memories.py and db/memory_reads.py, or, awaited
    on the viewer's aiosqlite connection, db/browse.py); none reads them with its own SQL."""
    reads = table_reads()
    assert "agentmem_mcp.db.memory_reads" in reads["memories"] and "memories" in DB_TABLES  # the scan finds SQL
    strays = {f"{table}: {module}": sorted(lines) for table in DB_TABLES
              for module, lines in reads.get(table, {}).items() if not module.startswith(DB)}
    assert strays == {}, f"SQL reading db/'s tables outside db/ (db/ has the named reads): {strays}"


def test_the_viewer_writes_no_sql():
    """The viewer (agentmem_mcp/viewer/) reads through db/browse.py and changes through the library."""
    found = {}
    for path in sorted((PACKAGE / "viewer").rglob("*.py")):
        lines = [line for line, text in _sql_strings(ast.parse(path.read_text(encoding="utf-8")))
                 if re.search(r"\bSELECT\b|\bFROM\s+[a-z_]+\b\s+WHERE\b", text) or WRITE.search(text)]
        if lines:
            found[path.name] = lines
    assert found == {}


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


def test_a_search_behind_a_long_bm25_queue_leaves_it_to_the_indexer(store, monkeypatch):
    """More memories waiting for BM25 than search scans: it scans the first ones, says the rest are searched by
    meaning only, and asks the indexer's thread to apply the queue; it applies nothing itself."""
    from dataclasses import replace

    from agentmem_mcp.db import index_outbox
    from agentmem_mcp.recall.ranking_settings import RankingSettings

    saved = [store.save(f"the nightly export job {n} writes parquet files to the archive bucket").id
             for n in range(6)]
    store.indexer.drain()
    with store.transaction() as conn:
        index_outbox.queue(conn, saved, store.now())  # waiting again, as after a burst of saves elsewhere
    knobs = RankingSettings.from_settings
    monkeypatch.setattr(RankingSettings, "from_settings", lambda settings: replace(knobs(settings), pending_scan=3))
    asked = []
    monkeypatch.setattr(store.indexer, "drain", lambda *a, **k: pytest.fail("search applied the BM25 queue"))
    monkeypatch.setattr(store.indexer, "index_later", lambda: asked.append(True))
    result = store.search("nightly export parquet archive")
    assert asked and result.hits
    assert any("6 memories saved moments ago are still being indexed" in note for note in result.notes), result.notes
    assert store.indexer.backlog() == 6

