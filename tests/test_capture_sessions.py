"""Which hook events make a session: through the real `agentmem hook` command, fed what Claude Code sends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentmem_mcp.config import load_settings
from agentmem_mcp.db.connection import connect

# what `claude mcp list` (Claude Code 2.1) sends the SessionEnd hook as it exits: a session that never started
MCP_LIST_SESSION_END = {"session_id": "bd6ad308-e612-44c1-85f1-c255e2076e58",
                        "transcript_path": "/home/u/.claude/projects/-tmp-proj/bd6ad308.jsonl",
                        "cwd": "/tmp/proj", "hook_event_name": "SessionEnd", "reason": "other"}


def hook(event: str, payload: dict, env: dict[str, str], client: str = "claude-code") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", "hook", "--client", client, event],
                          input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=60, check=True)


def stored(home: Path) -> tuple[list[tuple], int]:
    conn = connect(load_settings(env={}, home=home).database, load_vec=False)
    try:
        return ([tuple(row) for row in conn.execute("SELECT id, status FROM sessions ORDER BY id")],
                conn.execute("SELECT count(*) FROM observations").fetchone()[0])
    finally:
        conn.close()


def stats_sessions(env: dict[str, str]) -> int:
    done = subprocess.run([sys.executable, "-m", "agentmem_mcp", "stats", "--all-projects", "--json"], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)["sessions"]


def test_an_end_without_a_session_records_nothing(cli_env, home, tmp_path):
    """`claude mcp list` fires SessionEnd for a session it never started: no "ended, 0 prompts" session, no row; the
    same for a Stop or PreCompact alone (Cursor's too). A session that did start still ends."""
    env = dict(cli_env, AGENTMEM_HOOK_HANDOFF="0")
    hook("SessionEnd", MCP_LIST_SESSION_END, env)
    hook("Stop", {**MCP_LIST_SESSION_END, "session_id": "s-stop", "hook_event_name": "Stop"}, env)
    hook("PreCompact", {**MCP_LIST_SESSION_END, "session_id": "s-compact", "hook_event_name": "PreCompact"}, env)
    hook("sessionEnd", {"conversation_id": "c1", "workspace_roots": [str(tmp_path)], "reason": "completed"}, env,
         client="cursor")
    assert stored(home) == ([], 0)
    assert stats_sessions(env) == 0

    started = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart", "source": "startup"}
    hook("SessionStart", started, env)
    hook("SessionEnd", {**started, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}, env)
    assert stored(home) == ([("s1", "ended")], 2)
    assert stats_sessions(env) == 1
