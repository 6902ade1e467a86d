"""Issue 37.9: every MCP tool answer has a size cap (the counts whole, a few examples, how to see the rest), and every
tool that returns structuredContent declares an outputSchema; through `agentmem serve` and the SDK's stdio client,
which checks each structuredContent against its tool's schema."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from agentmem_mcp.config import load_settings
from agentmem_mcp.store import Store

from .test_server import call, server_params

TOPICS = ["billing", "search", "auth", "upload", "export", "routing", "caching", "logging", "metrics", "queues"]


def test_every_answer_is_capped_and_matches_its_output_schema(cli_env, tmp_path: Path):
    repo = tmp_path / "webapp"
    (repo / ".git").mkdir(parents=True)
    settings = load_settings(env={}, home=Path(cli_env["AGENTMEM_HOME"]), embeddings=False)
    with Store.open(settings, project=str(repo), load_embedder=False) as store:
        for n in range(60):
            store.save(f"The {TOPICS[n % 10]} module {n} keeps its fixtures in tests/fixtures/{n}.json because "
                       f"case {n} needs them", type="fact", source="agent")
        long = store.save("The deploy checklist, step by step: " + " ".join(f"step {n} checks the {TOPICS[n % 10]} "
                                                                            "service" for n in range(1500)),
                          type="workflow", source="agent")

    async def scenario() -> None:
        async with stdio_client(server_params(cli_env, repo)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                for tool in tools:
                    assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
                    assert '"title": "' not in json.dumps(tool.output_schema), tool.name  # pydantic's titles

                result = await session.call_tool("memory_forget", {"type": "fact"})  # the client checks the schema
                assert not result.is_error, result.content
                preview = json.loads(result.content[0].text)
                assert preview == result.structured_content
                assert preview["dry_run"] and preview["count"] == 60
                assert len(preview["ids"]) == len(preview["memories"]) == 10
                assert preview["omitted"] == {"ids": 50, "memories": 50}
                assert "narrow the filter" in preview["more"]
                assert len(result.content[0].text) < 3000

                error, got = await call(session, "memory_get", {"id": long.id})
                assert not error and set(got["cut"]) == {"memory.content"}
                assert got["cut"]["memory.content"] > 40000 and len(json.dumps(got)) <= 8000
                assert got["memory"]["content"].endswith("…") and "agentmem get <id>" in got["more"]

                for tool, arguments in [("memory_search", {"query": "fixtures of the billing module", "limit": 20}),
                                        ("memory_context", {}), ("memory_stats", {}),
                                        ("memory_save", {"content": "The queues module retries three times"})]:
                    result = await session.call_tool(tool, arguments)
                    assert not result.is_error, (tool, result.content)
                    assert result.structured_content is not None, tool
                found = json.loads((await session.call_tool("memory_search", {"query": "fixtures of the billing "
                                                                               "module", "limit": 20})).content[0].text)
                assert len(found["hits"]) > 10  # search's own limit and budget are its cap

    anyio.run(scenario)


def test_a_cap_keeps_counts_examples_and_says_what_it_left_out():
    from agentmem_mcp.server.answer_cap import Cap, cap_answer, json_chars

    history = {"id": "m_1", "history": [{"version": n, "content": "x" * 3000} for n in range(1, 16)]}
    capped = cap_answer(history, Cap(items=10, chars=8000, keep_end=("history",)), "see all")
    assert [v["version"] for v in capped["history"]] == list(range(6, 16))  # the newest versions
    assert capped["omitted"] == {"history": 5} and capped["more"] == "see all"
    assert json_chars(capped) <= 8000 and set(capped["cut"].values()) == {3000}
    assert len(history["history"]) == 15 and history["history"][0]["content"] == "x" * 3000  # the input is intact
    small = {"id": "m_1", "notes": ["a", "b"]}
    assert cap_answer(small, Cap(items=10, chars=8000), "see all") == small  # nothing left out: nothing added
