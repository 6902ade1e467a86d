"""`agentmem serve` spawned as a real subprocess and driven through the MCP SDK's stdio client."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TOOLS = {"memory_save", "memory_search", "memory_forget", "memory_get", "memory_context", "memory_stats"}


def server_params(env: dict[str, str], cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env, cwd=str(cwd))


async def call(session: ClientSession, tool: str, arguments: dict) -> tuple[bool, object]:
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return True, text
    return False, json.loads(text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "webapp"
    (repo / ".git").mkdir(parents=True)
    return repo


def test_every_tool_over_stdio(cli_env, project):
    async def scenario() -> None:
        async with stdio_client(server_params(cli_env, project)) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.server_info.name == "agentmem"
                tools = {tool.name: tool for tool in (await session.list_tools()).tools}
                assert TOOLS <= set(tools)
                assert "before" in tools["memory_search"].description.lower()
                assert "decision" in tools["memory_save"].description.lower()

                error, first = await call(session, "memory_save", {"content": "use yarn to install dependencies",
                                                                   "type": "decision"})
                assert not error and first["action"] == "created"
                error, second = await call(session, "memory_save", {"content": "use pnpm to install dependencies",
                                                                    "type": "decision"})
                assert second["action"] == "superseded" and second["supersedes"] == first["id"]
                error, dup = await call(session, "memory_save", {"content": "use pnpm to install dependencies"})
                assert dup["action"] == "duplicate"
                error, pref = await call(session, "memory_save", {"content": "The user prefers short answers",
                                                                  "type": "preference", "scope": "global",
                                                                  "priority": "P0"})
                assert not error

                error, found = await call(session, "memory_search", {"query": "how do we install dependencies"})
                assert not error and [h["id"] for h in found["hits"]][0] == second["id"]
                assert first["id"] not in [h["id"] for h in found["hits"]]
                assert all(h["project"] in (str(project), None) for h in found["hits"])
                assert found["hits"][0]["why"]

                error, got = await call(session, "memory_get", {"id": second["id"], "history": True})
                assert [m["id"] for m in got["history"]] == [first["id"], second["id"]]

                error, context = await call(session, "memory_context", {})
                assert "short answers" in context["context"] and "pnpm" in context["context"]

                error, stats = await call(session, "memory_stats", {})
                assert stats["memories"] == 2 and stats["superseded_versions"] == 1

                error, preview = await call(session, "memory_forget", {"type": "decision"})
                assert preview["dry_run"] and preview["count"] == 2
                error, gone = await call(session, "memory_forget", {"ids": [second["id"]], "reason": "test"})
                assert not gone["dry_run"] and set(gone["ids"]) == {first["id"], second["id"]}
                error, found = await call(session, "memory_search", {"query": "install dependencies"})
                assert second["id"] not in [h["id"] for h in found["hits"]]

                bad_calls = [
                    ("memory_save", {"content": ""}), ("memory_save", {"content": "ok"}),
                    ("memory_save", {"content": "fine content here", "type": "nonsense"}),
                    ("memory_save", {"content": "fine content here", "importance": 7}),
                    ("memory_save", {"content": 12}), ("memory_save", {}),
                    ("memory_search", {"query": ""}), ("memory_search", {"query": "x", "limit": -1}),
                    ("memory_search", {"query": "x", "limit": 10**9}), ("memory_search", {"query": None}),
                    ("memory_search", {"query": "x", "type": "nonsense"}),
                    ("memory_get", {"id": "../../etc/passwd"}), ("memory_get", {"id": "m_0000000000000000"}),
                    ("memory_forget", {}), ("memory_forget", {"ids": ["m_0000000000000000"]}),
                    ("memory_forget", {"ids": "not-a-list"}),
                ]
                for tool, arguments in bad_calls:
                    error, message = await call(session, tool, arguments)
                    assert error, (tool, arguments)
                    assert isinstance(message, str) and len(message) > 10, (tool, arguments, message)
                error, still = await call(session, "memory_get", {"id": pref["id"]})
                assert not error and still["memory"]["priority"] == "P0"

    anyio.run(scenario)


def test_initialize_answers_before_the_model_loads(cli_env, project):
    async def scenario() -> float:
        started = time.perf_counter()
        async with stdio_client(server_params(cli_env, project)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                elapsed = time.perf_counter() - started
                error, found = await call(session, "memory_search", {"query": "anything at all"})
                assert not error and found["mode"] in ("hybrid", "bm25+graph")
                return elapsed

    elapsed = anyio.run(scenario)
    assert elapsed < 10  # generous: the benchmark (scripts/bench_hooks.py) measures it properly


def test_roots_choose_the_project(cli_env, project, tmp_path):
    other = tmp_path / "other-repo"
    (other / ".git").mkdir(parents=True)
    from mcp import types

    async def list_roots(_context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{other}", name="other")])

    async def scenario() -> None:
        async with stdio_client(server_params(cli_env, project)) as (read, write):
            async with ClientSession(read, write, list_roots_callback=list_roots) as session:
                await session.initialize()
                error, saved = await call(session, "memory_save", {"content": "the other repo deploys with fly"})
                assert not error, saved
                error, got = await call(session, "memory_get", {"id": saved["id"]})
                assert got["memory"]["project"] == str(other)

    anyio.run(scenario)


def test_the_server_worker_embeds_words_and_search_credits_similar_ones(cli_env, project):
    """Over stdio, as an agent uses it: saved memories get their word vectors from the server's own worker,
    then a search says which similar words it credited."""
    async def scenario() -> None:
        async with stdio_client(server_params(cli_env, project)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                error, trip = await call(session, "memory_save", {
                    "content": "Last year I took a solo trip to Spain and loved the food there."})
                assert not error, trip
                await call(session, "memory_save", {"content": "The release checklist lives in docs/release.md."})
                for _ in range(120):  # the worker's first pass comes a few seconds after start-up
                    error, stats = await call(session, "memory_stats", {})
                    if stats["vector_backlog"] == {"memories": 0, "sentence_pieces": 0, "words": 0}:
                        break
                    await anyio.sleep(0.5)
                assert stats["vector_backlog"]["words"] == 0, stats
                error, found = await call(session, "memory_search", {"query": "Which countries have I visited?"})
                assert not error
                hit = next(h for h in found["hits"] if h["id"] == trip["id"])
                assert "similar words: " in hit["why"], hit

    anyio.run(scenario)
