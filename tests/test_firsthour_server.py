"""Issue 21, what the model reads: tool descriptions, annotations, the cost of tools/list, error messages and
answer shapes, through the real `agentmem serve` over stdio; the search score floor on a real store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from agentmem_mcp.config import load_settings
from agentmem_mcp.store import Store

from .test_server import server_params

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "webapp"
    (repo / ".git").mkdir(parents=True)
    return repo


def run_session(env: dict[str, str], cwd: Path, scenario) -> None:
    async def main() -> None:
        async with stdio_client(server_params(env, cwd)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await scenario(session)

    anyio.run(main)


def test_tools_list_is_compact_annotated_and_under_1000_tokens(cli_env, project):
    async def scenario(session: ClientSession) -> None:
        tools = (await session.list_tools()).tools
        # what a model reads of a tool: its name, description, annotations and input schema (a client keeps the
        # output schema to check structuredContent with: tests/test_tool_answers.py)
        dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"output_schema"})
                  for tool in tools]
        assert len(json.dumps(dumped)) / 4 <= 1000, len(json.dumps(dumped)) / 4
        assert all(len(json.dumps(tool.output_schema)) <= 2000 for tool in tools)
        by_name = {tool.name: tool for tool in tools}
        for tool in tools:
            assert "\n" not in tool.description and "  " not in tool.description, tool.description
            hints = tool.annotations
            assert hints is not None, tool.name
            assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint), tool.name
            assert '"title": "' not in json.dumps(tool.input_schema), tool.input_schema  # no generated titles
            assert '{"type": "null"}' not in json.dumps(tool.input_schema), tool.input_schema
        assert {name for name, tool in by_name.items() if tool.annotations.read_only_hint} == {
            "memory_search", "memory_get", "memory_context", "memory_stats"}
        assert by_name["memory_forget"].annotations.destructive_hint is True
        assert by_name["memory_save"].annotations.destructive_hint is False
        # the when-to-call guidance is still there
        assert "before starting a task" in by_name["memory_search"].description
        assert "when you learn it" in by_name["memory_save"].description
        assert "after compaction" in by_name["memory_context"].description

    run_session(cli_env, project, scenario)


def test_forget_error_names_only_its_own_parameters(cli_env, project):
    async def scenario(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        schema = set(tools["memory_forget"].input_schema["properties"])
        for arguments in ({}, {"ids": ["m_0123456789abcdef"], "type": "bug"}):
            result = await session.call_tool("memory_forget", arguments)
            assert result.is_error
            text = result.content[0].text
            assert "tier" not in text and "before" not in text, text
            named = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b|\bids\b|\btype\b", text)) - {"memory_forget"}
            assert named and named <= schema, (named, schema)

    run_session(cli_env, project, scenario)


def test_get_shows_dates_and_each_version_once(cli_env, project):
    async def scenario(session: ClientSession) -> None:
        first = (await session.call_tool("memory_save", {"content": "use yarn to install dependencies",
                                                         "type": "decision"})).structured_content
        second = (await session.call_tool("memory_save", {"content": "use pnpm to install dependencies",
                                                          "type": "decision"})).structured_content
        assert second["supersedes"] == first["id"]
        got = await session.call_tool("memory_get", {"id": second["id"]})
        memory = json.loads(got.content[0].text)["memory"]
        assert ISO.match(memory["created_at"]) and ISO.match(memory["updated_at"]), memory
        assert memory["age"] == "just now" and memory["forget_after"] is None
        assert "content_hash" not in memory and "embedding_model" not in memory
        assert not any(isinstance(value, float) and value > 1e9 for value in memory.values())
        history = json.loads((await session.call_tool("memory_get", {"id": second["id"], "history": True}))
                             .content[0].text)
        ids = [version["id"] for version in history["history"]]
        assert ids == [first["id"], second["id"]]  # the current version once, last
        assert "memory" not in history
        assert [v["is_latest"] for v in history["history"]] == [False, True]

    run_session(cli_env, project, scenario)


def test_search_text_is_compact_and_the_full_answer_is_structured(cli_env, project):
    async def scenario(session: ClientSession) -> None:
        for n, content in enumerate(["use pnpm to install dependencies: the lockfile is pnpm-lock.yaml",
                                     "the CI installs dependencies with pnpm install --frozen-lockfile",
                                     "dependencies are audited weekly with pnpm audit",
                                     "the deploy runs pnpm build then uploads dist/ to the CDN"]):
            await session.call_tool("memory_save", {"content": content, "tags": [f"t{n}"]})
        result = await session.call_tool("memory_search", {"query": "how do we install dependencies with pnpm"})
        assert not result.is_error
        text, full = result.content[0].text, result.structured_content
        compact = json.loads(text)
        assert "\n" not in text and len(text) < 0.7 * len(json.dumps(full, indent=2))
        assert [hit["id"] for hit in compact["hits"]] == [hit["id"] for hit in full["hits"]]
        assert len(compact["hits"]) == 4
        for short, hit in zip(compact["hits"], full["hits"]):
            assert set(short) <= {"id", "title", "type", "project", "snippet", "score", "age", "why", "superseded"}
            assert {"tier", "confidence", "version", "is_latest"} <= set(hit)
            assert short["snippet"] == hit["snippet"] and short["why"] == hit["why"]
        assert {"query", "mode", "notes", "tokens", "hits"} <= set(full) and "mode" in compact

    run_session(cli_env, project, scenario)


def test_search_has_a_score_floor(tmp_path, model_path, embedder):
    def open_store(floor: float | None) -> Store:
        overrides = {} if floor is None else {"search_min_score": floor}
        settings = load_settings(env={}, home=tmp_path / "home", embed_model_path=model_path, **overrides)
        return Store.open(settings, project="/repo/a", embedder=embedder, sync_index=True)

    with open_store(None) as store:
        assert store.settings.search_min_score == 0.01  # the documented default
        store.save("the build uses pnpm, not npm: the lockfile is pnpm-lock.yaml")
        store.save("deploys go through fly.io when a tag is pushed")
        store.save("the staging database is reset every night at 02:00")
        store.save("The user prefers short answers without preamble", project=None)
        floored = store.search("how do we deploy", record_access=False).hits
    with open_store(0.0) as store:
        everything = store.search("how do we deploy", record_access=False).hits
    noise = [hit for hit in everything if hit.score < 0.01]
    assert noise, [(hit.title, hit.score) for hit in everything]  # the scenario has a near-zero hit
    assert [hit.id for hit in floored] == [hit.id for hit in everything if hit.score >= 0.01]
    assert floored[0].title.startswith("deploys go through fly.io")
