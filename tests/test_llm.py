"""The optional LLM path against a scripted provider: budget, validation, fallback to rules, sources.

The real `anthropic` client runs up to its network call against an unroutable local port; nothing
here reaches the network.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from agentmem_mcp.capture.events import HookEvent
from agentmem_mcp.capture.observations import ObservationStore
from agentmem_mcp.config import load_settings
from agentmem_mcp.lifecycle import summarize
from agentmem_mcp.lifecycle.llm import (
    LLM,
    AnthropicProvider,
    Budget,
    LLMError,
    parse_json,
    provider_from_settings,
)
from agentmem_mcp.runtime.worker import Worker

from .llm_fakes import ScriptedProvider


def llm_for(store, *responses, daily_tokens: int = 1_000_000) -> tuple[LLM, ScriptedProvider]:
    provider = ScriptedProvider(list(responses))
    return LLM(provider, Budget(lambda: store.conn, daily_tokens, store.now)), provider


def ledger(store) -> list[tuple[str, int]]:
    return [(r[0], r[1]) for r in store.conn.execute(
        "SELECT purpose, input_tokens + output_tokens FROM llm_ledger ORDER BY id")]


def record_edits(store, n: int, session: str = "s1") -> list[int]:
    observations = ObservationStore(store.conn)
    ids = []
    for i in range(n):
        path = f"/repo/a/src/handler_{i}.py"
        ev = HookEvent(client="claude-code", event="tool_use", raw_event="PostToolUse", session_id=session,
                       cwd="/repo/a", tool="Edit", files=[path],
                       tool_input={"file_path": path, "old_string": f"x = {i}", "new_string": f"x = {i + 1}"})
        ids.append(observations.record(ev, store.project))
    return ids


def titles(store, ids: list[int]) -> list[str]:
    marks = ",".join("?" * len(ids))
    return [r[0] for r in store.conn.execute(f"SELECT title FROM observations WHERE id IN ({marks}) ORDER BY id", ids)]


# -- parsing -------------------------------------------------------------------------------------------

def test_parse_json_tolerates_fences_and_words_around_the_value():
    assert parse_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json('Here it is: {"a": [1, 2]} hope that helps') == {"a": [1, 2]}
    with pytest.raises(ValueError):
        parse_json("no json at all")


# -- the worker with an LLM ---------------------------------------------------------------------------

def compress_answer(ids: list[int]) -> str:
    return json.dumps({"observations": [{"id": i, "title": f"LLM title {i}", "facts": ["changed x"],
                                         "importance": 0.55} for i in ids]})


def test_llm_compression_stops_at_the_daily_budget_and_the_rules_take_over(store):
    ids = record_edits(store, 25)
    llm, provider = llm_for(store, (compress_answer(ids[:20]), 11_000, 500), (compress_answer(ids[20:]), 10, 10),
                            daily_tokens=12_000)
    assert Worker(store, llm=llm, sweep=False).compress_batch().compressed == 25
    assert len(provider.calls) == 1 and ledger(store) == [("compress", 11_500)]
    assert titles(store, ids[:20]) == [f"LLM title {i}" for i in ids[:20]]
    assert all(t.startswith("Edited src/handler_") or t.startswith("Edited /repo") for t in titles(store, ids[20:]))
    assert store.stats()["llm_today"]["tokens"] == 11_500
    assert store.conn.execute("SELECT importance FROM observations WHERE id = ?", (ids[0],)).fetchone()[0] == 0.55


def test_malformed_llm_output_is_retried_once_then_the_rules_decide(store):
    ids = record_edits(store, 3)
    llm, provider = llm_for(store, "I compressed them for you!", json.dumps({"observations": [{"id": 999}]}),
                            compress_answer(ids))
    Worker(store, llm=llm, sweep=False).compress_batch()
    assert len(provider.calls) == 2 and [p for p, _ in ledger(store)] == ["compress", "compress"]
    assert all(t.startswith("Edited ") and "LLM" not in t for t in titles(store, ids))
    assert len(provider.responses) == 1  # the valid answer was never asked for


def test_narrative_summary_keeps_the_rules_facts(store):
    ids = record_edits(store, 2, session="narrated")
    with store.transaction() as tx:
        tx.execute("UPDATE sessions SET needs_summary = 1")
    Worker(store, sweep=False).compress_batch()
    llm, provider = llm_for(store, json.dumps({"title": "Bumped the handler constants",
                                               "narrative": "Changed x in two handlers."}))
    assert summarize.summarize_due(store, llm=llm) == 1
    summary = store.conn.execute("SELECT * FROM memories WHERE type = 'summary'").fetchone()
    assert summary["title"] == "Session: Bumped the handler constants"
    assert summary["content"].startswith("Changed x in two handlers.\n")  # the narrative, then the rules' facts
    assert "\nFiles changed: src/handler_0.py, src/handler_1.py" in summary["content"]
    assert json.loads(summary["source_ids"]) == [f"obs:{i}" for i in ids]
    assert "Files changed" in provider.calls[0]["prompt"]


def save_summaries(store, n: int) -> list[str]:
    return [store.save(f"Session {i}: worked on the billing export; tests run with pytest -q; edited "
                       f"billing/export_{i}.py", tier="episodic", type="summary", source="consolidation",
                       key=f"session-summary:s{i}", session_id=f"s{i}").id for i in range(n)]


def test_merged_knowledge_links_to_the_summaries_it_came_from(store):
    summaries = save_summaries(store, 5)
    answer = {"facts": [{"title": "Billing exports live in billing/", "type": "architecture",
                         "content": "Billing export code lives in billing/export_*.py, one module per format.",
                         "sources": summaries[:3]}],
              "workflows": [{"title": "Run the tests", "steps": "Run pytest -q from the repository root.",
                             "sources": summaries}]}
    llm, provider = llm_for(store, json.dumps({"facts": [{"title": "x", "content": "cites nothing real here",
                                                          "sources": ["m_ffffffffffffffff"]}]}), json.dumps(answer))
    assert summarize.merge_summaries(store, "/repo/a", llm) == 2
    fact = store.conn.execute("SELECT * FROM memories WHERE key = 'merge:billing-exports-live-in-billing'").fetchone()
    flow = store.conn.execute("SELECT * FROM memories WHERE key LIKE 'workflow:llm:%'").fetchone()
    assert fact["type"] == "architecture" and fact["confidence"] == 0.5 and fact["source"] == "consolidation"
    assert json.loads(fact["source_ids"]) == summaries[:3]
    links = {r[0] for r in store.conn.execute(
        "SELECT dst_id FROM memory_links WHERE src_id = ? AND relation = 'derived_from'", (fact["id"],))}
    assert links == set(summaries[:3])
    assert flow["tier"] == "procedural" and json.loads(flow["source_ids"]) == summaries
    assert len(provider.calls) == 2  # the answer citing an unknown id was retried
    assert summarize.merge_summaries(store, "/repo/a", llm) == 0 and len(provider.calls) == 2  # nothing new


def test_reflection_stores_insights_with_their_sources(store):
    fact = store.save("The test suite runs with pytest -q from the repository root", type="workflow").id
    record_edits(store, 30)
    with store.transaction() as tx:
        tx.execute("UPDATE observations SET status = 'compressed', kind = 'file_edit', importance = 0.8")
    llm, provider = llm_for(store, json.dumps({"questions": ["How are the tests run in this project?"]}),
                            json.dumps({"insights": [{"content": "Tests are always run with pytest -q before a "
                                                                 "change is considered done.", "sources": [fact]}]}))
    assert summarize.reflect(store, "/repo/a", llm) == 1
    insight = store.conn.execute("SELECT * FROM memories WHERE key LIKE 'insight:%'").fetchone()
    assert insight["type"] == "pattern" and json.loads(insight["source_ids"]) == [fact]
    assert store.conn.execute("SELECT COUNT(*) FROM memory_links WHERE src_id = ? AND dst_id = ?",
                              (insight["id"], fact)).fetchone()[0] == 1
    assert f"[{fact}]" in provider.calls[1]["prompt"]
    assert summarize.reflect(store, "/repo/a", llm) == 0 and len(provider.calls) == 2  # below the threshold again


# -- the real client, settings, and the hook's imports ------------------------------------------------------

def test_anthropic_client_runs_up_to_the_network_call(store):
    provider = AnthropicProvider("sk-ant-test-not-a-key", base_url="http://127.0.0.1:9", timeout=5, max_retries=0)
    started = time.monotonic()
    with pytest.raises(LLMError, match="Connection"):
        provider.complete("system", "prompt", 10)
    assert time.monotonic() - started < 30
    llm = LLM(provider, Budget(lambda: store.conn, 10_000))
    assert llm.ask_json("judge", "system", "prompt", lambda a: a) is None
    assert ledger(store) == []


def test_provider_from_settings(tmp_path):
    assert provider_from_settings(load_settings(env={}, home=tmp_path)) is None
    on = load_settings(env={"AGENTMEM_LLM": "anthropic"}, home=tmp_path)
    assert provider_from_settings(on, env={}) is None
    provider = provider_from_settings(on, env={"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert isinstance(provider, AnthropicProvider) and provider.model == "claude-haiku-4-5"
    assert provider._client is None  # the client is built on the first call


def test_the_hook_never_imports_the_llm(tmp_path):
    code = (
        "import json, sys\n"
        "from agentmem_mcp.capture.hook import handle\n"
        "payload = {'session_id': 's', 'cwd': '/tmp', 'hook_event_name': 'Stop'}\n"
        f"handle('claude-code', 'Stop', json.dumps(payload).encode(), {{'AGENTMEM_HOME': {str(tmp_path)!r}, "
        "'AGENTMEM_LLM': 'anthropic', 'ANTHROPIC_API_KEY': 'sk-ant-x'})\n"
        "print(json.dumps([m for m in sys.modules if m.startswith(('anthropic', 'agentmem_mcp.lifecycle.llm'))]))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
