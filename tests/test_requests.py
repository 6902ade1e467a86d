"""Requests as values: each operation (save, search, forget) takes one typed request, checked in one place, and no
function of the package takes more than eight parameters, but for the exceptions named here with their reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import agentmem_mcp
from agentmem_mcp.lifecycle.forget import ForgetRequest, forget
from agentmem_mcp.lifecycle.remember import SaveRequest, save
from agentmem_mcp.models import SHOWN_TIERS, InvalidInput, NotFound, SearchRequest
from agentmem_mcp.recall.retrieval import search

PACKAGE = Path(agentmem_mcp.__file__).parent
MAX_PARAMETERS = 8

# "module path::qualified name" -> why it keeps more than MAX_PARAMETERS parameters
WIDE_ON_PURPOSE = {
    "server/app.py::build_server.memory_save": "an MCP tool: its parameters are the tool's input schema",
    "server/app.py::build_server.memory_search": "an MCP tool: its parameters are the tool's input schema",
    "capture/event_parts.py::HookEvent.__init__": "a value's constructor (a plain class, not a dataclass, to keep "
                                                  "`dataclasses` off the hook path)",
    "lifecycle/forgetting_columns.py::MemoryColumns.__init__": "a value's constructor: one array per column",
    "db/observations.py::add": "the observations table's insert: one keyword per column",
    "db/audit.py::_stated_hash": "the fields an audit row's hash binds, in the order they are bound",
    "viewer/state.py::Viewer.page": "a whole HTML page: the request and the frame template's slots, by keyword",
    "index/fulltext.py::FulltextIndex.search": "the BM25 index's query, keyword-only: filters a SearchRequest "
                                               "checked already, and the scoring's knobs (expansion's boosts)",
}


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Every parameter, keyword-only and */** included, `self` / `cls` of a method not."""
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args]
    count = len(names) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    return count - 1 if names and names[0] in ("self", "cls") else count


def wide_functions() -> dict[str, int]:
    """"path::qualified name" -> parameter count, for each function of the package over MAX_PARAMETERS."""
    found: dict[str, int] = {}

    def walk(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                if parameter_count(child) > MAX_PARAMETERS:
                    found[f"{path}::{name}"] = parameter_count(child)
                walk(child, path, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, path, f"{prefix}{child.name}.")
            else:
                walk(child, path, prefix)

    for file in sorted(PACKAGE.rglob("*.py")):
        walk(ast.parse(file.read_text(encoding="utf-8")), file.relative_to(PACKAGE).as_posix(), "")
    return found


def test_no_function_takes_more_than_eight_parameters():
    wide = wide_functions()
    unexplained = {name: count for name, count in wide.items() if name not in WIDE_ON_PURPOSE}
    assert unexplained == {}, "give the operation a request value (lifecycle/remember.py: SaveRequest)"
    assert sorted(set(WIDE_ON_PURPOSE) - set(wide)) == []  # an exception that is one no more goes


def test_the_walk_counts_keyword_only_and_method_parameters():
    tree = ast.parse("class A:\n    def f(self, a, /, b, *c, d=1, **e): pass\ndef g(a, *, b, c): pass\n")
    method, function = tree.body[0].body[0], tree.body[1]
    assert (parameter_count(method), parameter_count(function)) == (5, 3)


def test_save_takes_a_request_and_the_keyword_form_builds_the_same(store):
    asked = SaveRequest("use pnpm, not npm: the lockfile is pnpm-lock.yaml", type="decision", tags=["build"])
    saved = save(store, asked)
    assert (saved.action, store.get(saved.id).type, store.get(saved.id).tags) == ("created", "decision", ["build"])
    again = store.save("use pnpm, not npm: the lockfile is pnpm-lock.yaml", type="decision", tags=["build"])
    assert (again.action, again.id) == ("duplicate", saved.id)
    with pytest.raises(TypeError, match="fields in it"):
        store.save(asked, type="fact")


def test_a_bad_save_request_says_what_is_wrong_and_writes_nothing(store):
    with pytest.raises(InvalidInput, match="ttl_days must be a number of days between 0 and 36500"):
        store.save(SaveRequest("a fine memory about the build", ttl_days=-1))
    with pytest.raises(InvalidInput, match="^unknown option for a memory: .*'colour'"):
        store.save_many([{"content": "a fine memory about the build", "colour": "blue"}])
    with pytest.raises(InvalidInput, match="^each item needs a content$"):
        store.save_many([{"title": "no content"}])
    assert store.stats()["memories"] == 0


def test_search_request_is_checked_and_completed_in_one_place():
    done = SearchRequest("  how are tests run\x00 ", types="bug").validated("/repo/a", 1200)
    assert (done.query, done.project, done.types, done.tiers, done.budget_tokens) == \
        ("how are tests run", "/repo/a", ["bug"], list(SHOWN_TIERS), 1200)
    assert done.projects == ["/repo/a", None]
    assert SearchRequest("q", all_projects=True).validated("/repo/a", 1200).projects is None
    for bad, message in (({"limit": 0}, "limit must be a whole number from 1 to 100"),
                         ({"budget_tokens": 10}, "budget_tokens must be a whole number from 50 to 100000"),
                         ({"min_confidence": 2}, "min_confidence must be between 0 and 1"),
                         ({"since": "yesterday"}, "since must be a unix timestamp"),
                         ({"tiers": "cold"}, "tier must be one of")):
        with pytest.raises(InvalidInput, match=message):
            SearchRequest("how are tests run", **bad).validated(None, 1200)
    with pytest.raises(InvalidInput, match="query is empty"):
        SearchRequest(" ").validated(None, 1200)


def test_search_takes_a_request(store):
    saved = store.save("run the unit tests with pytest -x tests/unit before pushing", type="workflow")
    found = search(store, SearchRequest("how are the unit tests run", limit=3, record_access=False))
    assert [hit.id for hit in found.hits][:1] == [saved.id]
    assert store.get(saved.id).access_count == 0
    assert [h.id for h in store.search("how are the unit tests run", limit=3).hits][:1] == [saved.id]


def test_forget_request_is_checked_before_anything_is_looked_up(store):
    for bad, message in (({}, "say what to forget"), ({"ids": ["m_0000000000000000"], "type": "bug"},
                                                      "say what to forget"),
                         ({"ids": []}, "ids must be a list of 1 to 1000 memory ids"),
                         ({"session_id": ""}, "session_id must be a non-empty string"),
                         ({"type": "rumour"}, "type must be one of"),
                         ({"older_than_days": -1}, "older_than_days must be a positive number")):
        with pytest.raises(InvalidInput, match=message):
            ForgetRequest(**bad).validated()
    assert ForgetRequest(ids="m_0000000000000000").validated().ids == ["m_0000000000000000"]
    with pytest.raises(NotFound, match="no memory m_0000000000000000"):
        forget(store, ForgetRequest(ids="m_0000000000000000"))


def test_forget_takes_a_request(store):
    kept = store.save("deploys go through fly.io when a tag is pushed", source="user")
    gone = store.save("the staging database is reset every night at 02:00", type="context")
    preview = forget(store, ForgetRequest(type="context", dry_run=True))
    assert (preview.dry_run, preview.ids) == (True, [gone.id])
    result = store.forget(ForgetRequest(ids=[gone.id, kept.id], keep_protected=True, reason="test"))
    assert (result.ids, result.left) == ([gone.id], [kept.id])
    assert store.get(kept.id).id == kept.id
