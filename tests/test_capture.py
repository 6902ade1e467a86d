"""Capture end to end: the shared Claude Code transcript replayed through the real hook scripts
(`hooks/run-hook.sh` -> `agentmem hook`), as Claude Code and as Cursor would send it, with planted secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_mcp.capture.events import parse_hook_event
from agentmem_mcp.capture.observations import scrub
from agentmem_mcp.db.connection import connect

from .conftest import REPO, SHARED, require_shared
from .secrets_corpus import SECRET_CASES
from .transcript_replay import claude_code_events, cursor_events

TRANSCRIPT = SHARED / "eval" / "transcripts" / "claude_code_spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
HOOK_SCRIPT = REPO / "hooks" / "run-hook.sh"
PLANTED = [case for case in SECRET_CASES][:: max(1, len(SECRET_CASES) // 24)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "spotter"
    (repo / ".git").mkdir(parents=True)
    return repo


@pytest.fixture
def hook_env(cli_env: dict[str, str]) -> dict[str, str]:
    env = dict(cli_env)
    env["AGENTMEM_BIN"] = str(Path(sys.executable).with_name("agentmem"))
    if not Path(env["AGENTMEM_BIN"]).exists():
        env.pop("AGENTMEM_BIN")
    return env


def run_hook(client: str, event: str, payload: dict, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(HOOK_SCRIPT), client, event], input=json.dumps(payload).encode(), env=env,
                          capture_output=True, timeout=60)


def plant_secrets(events: list[tuple[str, dict]]) -> list[str]:
    """Put a fake secret (in its realistic context) into tool outputs and prompts."""
    planted: list[str] = []
    cases = PLANTED * 4
    for n, (name, payload) in enumerate(events):
        case = cases[len(planted) % len(cases)]
        if name in ("PostToolUse", "postToolUse") and n % 4 == 0:
            response = payload.get("tool_response", payload.get("tool_output"))
            if isinstance(response, dict) and isinstance(response.get("stdout"), str):
                response["stdout"] += "\n" + case.context
            elif name == "postToolUse" and isinstance(response, str):
                payload["tool_output"] = json.dumps({"exitCode": 0, "stdout": case.context})
            else:
                payload["tool_response"] = {"stdout": case.context, "stderr": "", "interrupted": False}
            planted.append(case.secret)
        elif name in ("UserPromptSubmit", "beforeSubmitPrompt") and isinstance(payload.get("prompt"), str):
            payload["prompt"] += f"\nhere is what I ran:\n{case.context}"
            planted.append(case.secret)
    return planted


def stored_bytes(home: Path) -> bytes:
    """Every byte agentmem wrote under its home: database, WAL, index segments, logs."""
    return b"".join(path.read_bytes() for path in sorted(home.rglob("*")) if path.is_file())


def replay(client: str, events: list[tuple[str, dict]], project: Path, env: dict[str, str],
           session: str) -> list[subprocess.CompletedProcess]:
    results = []
    for name, payload in events:
        payload = json.loads(json.dumps(payload))
        if client == "claude-code":
            payload["cwd"], payload["session_id"] = str(project), session
        else:
            payload["workspace_roots"], payload["conversation_id"] = [str(project)], session
        results.append(run_hook(client, name, payload, env))
    return results


@pytest.mark.long(33)
@pytest.mark.parametrize("client", ["claude-code", "cursor"])
def test_transcript_replay_through_the_real_hooks(client, project, hook_env, home):
    require_shared(TRANSCRIPT, "the shared Claude Code transcript")
    events = claude_code_events(TRANSCRIPT) if client == "claude-code" else cursor_events(TRANSCRIPT)
    planted = plant_secrets(events)
    assert len(planted) >= 20
    results = replay(client, events, project, hook_env, "session-one")
    assert all(r.returncode == 0 for r in results), [r.stderr[-300:] for r in results if r.returncode]
    assert all(not r.stderr for r in results), [r.stderr[-300:] for r in results if r.stderr][:3]

    tool_events = [(n, p) for n, p in events if n in ("PostToolUse", "PostToolUseFailure", "postToolUse",
                                                       "postToolUseFailure")]
    expected = {}
    for name, payload in tool_events:
        ev = scrub(parse_hook_event(client, name, payload), 12000)
        from agentmem_mcp.capture.events import event_fingerprint

        expected[event_fingerprint(ev)] = expected.get(event_fingerprint(ev), 0) + 1
    conn = connect(home / "agentmem.db", load_vec=False)
    rows = conn.execute("SELECT fingerprint, count, tool FROM observations WHERE event = 'tool_use'").fetchall()
    assert sum(row["count"] for row in rows) == len(tool_events) == 150
    assert len(rows) == len(expected), "each distinct tool call is one row; identical repeats are counted"
    assert conn.execute("SELECT COUNT(*) FROM observations WHERE event = 'file_edit'").fetchone()[0] == 0
    conn.close()

    everything = stored_bytes(home)
    leaked = [secret for secret in planted if secret.encode() in everything]
    assert leaked == []

    second = run_hook(client, "SessionStart" if client == "claude-code" else "sessionStart",
                      {"session_id": "session-two", "conversation_id": "session-two", "cwd": str(project),
                       "workspace_roots": [str(project)], "hook_event_name": "SessionStart", "source": "startup"},
                      hook_env)
    answer = json.loads(second.stdout)
    context = (answer["hookSpecificOutput"]["additionalContext"] if client == "claude-code"
               else answer["additional_context"])
    from agentmem_mcp.recall.ranking import estimate_tokens

    assert estimate_tokens(context) <= 1500
    assert "session_live.ex" in context and "mix test" in context, context
    assert not any(secret in context for secret in planted)


def test_hook_survives_bad_input_and_honours_the_kill_switch(project, hook_env, home):
    for raw in (b"", b"not json", b"[1, 2]", b'{"no": "session"}', b"\xff\xfe\x00garbage", b"{" * 100000):
        done = subprocess.run(["sh", str(HOOK_SCRIPT), "claude-code", "PostToolUse"], input=raw, env=hook_env,
                              capture_output=True, timeout=60)
        assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    log = (home / "logs" / "agentmem.log").read_text()
    assert "PostToolUse failed" in log
    disabled = dict(hook_env, AGENTMEM_DISABLE="1")
    payload = {"session_id": "s", "cwd": str(project), "tool_name": "Bash", "tool_input": {"command": "ls"},
               "tool_response": {"stdout": "a b"}}
    assert run_hook("claude-code", "PostToolUse", payload, disabled).returncode == 0
    assert run_hook("cursor", "beforeSubmitPrompt", {"conversation_id": "c", "prompt": "hi"},
                    disabled).stdout == b'{"continue": true}'
    if (home / "agentmem.db").exists():
        conn = connect(home / "agentmem.db", load_vec=False)
        assert conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0] == 0
        conn.close()


def test_config_file_kill_switch_is_honoured_by_hooks(project, hook_env, home):
    home.mkdir(mode=0o700, parents=True, exist_ok=True)  # a home others may enter is refused (issue 37.8)
    (home / "config.toml").write_text("disabled = true\n")
    (home / "config.toml").chmod(0o600)
    payload = {"session_id": "s", "cwd": str(project), "tool_name": "Bash", "tool_input": {"command": "ls"},
               "tool_response": {"stdout": "a b"}}
    done = run_hook("claude-code", "PostToolUse", payload, hook_env)
    assert done.returncode == 0 and done.stdout == b""
    start = run_hook("claude-code", "SessionStart", {"session_id": "s", "cwd": str(project), "source": "startup"},
                     hook_env)
    assert start.returncode == 0 and start.stdout == b""
    assert run_hook("cursor", "beforeSubmitPrompt", {"conversation_id": "c", "prompt": "hi"},
                    hook_env).stdout == b'{"continue": true}'
    if (home / "agentmem.db").exists():
        conn = connect(home / "agentmem.db", load_vec=False)
        assert conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0] == 0
        conn.close()
    (home / "config.toml").write_text("disabled = false\n")
    assert run_hook("claude-code", "PostToolUse", payload, hook_env).returncode == 0
    conn = connect(home / "agentmem.db", load_vec=False)
    assert conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0] == 1
    conn.close()


def test_prompt_injection_only_when_relevant(project, hook_env, home, settings, embedder):
    from agentmem_mcp.store import Store

    with Store.open(settings, project=str(project), embedder=embedder) as store:
        store.save("Run the Elixir test suite with `mix test`; the LiveView tests need the DB container up",
                   type="workflow")
        store.save("We decided to keep Tailwind and drop the custom CSS", type="decision")
    relevant = run_hook("claude-code", "UserPromptSubmit",
                        {"session_id": "p1", "cwd": str(project), "prompt": "how do I run the tests?"}, hook_env)
    context = json.loads(relevant.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "mix test" in context and "Tailwind" not in context
    unrelated = run_hook("claude-code", "UserPromptSubmit",
                         {"session_id": "p1", "cwd": str(project), "prompt": "rename the websocket handler"},
                         hook_env)
    assert unrelated.stdout == b""


def test_large_and_binary_outputs_are_cut(project, hook_env, home):
    big = "START " + "x" * (5 * 1024 * 1024) + " END"
    payload = {"session_id": "big", "cwd": str(project), "tool_name": "Bash", "tool_input": {"command": "cat big"},
               "tool_response": {"stdout": big + "\x00\x01 binary", "stderr": ""}}
    assert run_hook("claude-code", "PostToolUse", payload, hook_env).returncode == 0
    conn = connect(home / "agentmem.db", load_vec=False)
    output = conn.execute("SELECT output FROM observations WHERE session_id = 'big'").fetchone()[0]
    conn.close()
    assert len(output) < 13000 and output.startswith("START") and output.rstrip().endswith("binary")


def test_sensitive_files_are_recorded_without_content(project, hook_env, home):
    secret_env = "DATABASE_URL=postgres://admin:s3cr3t-Pa55w0rd-XYZ@db.internal/app\nSTRIPE=abc"
    payload = {"session_id": "env", "cwd": str(project), "tool_name": "Read",
               "tool_input": {"file_path": str(project / ".env")},
               "tool_response": {"type": "text", "file": {"filePath": str(project / ".env"), "content": secret_env}}}
    assert run_hook("claude-code", "PostToolUse", payload, hook_env).returncode == 0
    assert b"s3cr3t-Pa55w0rd-XYZ" not in stored_bytes(home)
    conn = connect(home / "agentmem.db", load_vec=False)
    row = conn.execute("SELECT files, output FROM observations WHERE session_id = 'env'").fetchone()
    conn.close()
    assert ".env" in row["files"] and "not recorded" in row["output"]


def test_files_written_by_hooks_are_private(project, hook_env, home):
    payload = {"session_id": "perm", "cwd": str(project), "tool_name": "Bash", "tool_input": {"command": "ls"},
               "tool_response": {"stdout": "a"}}
    run_hook("claude-code", "PostToolUse", payload, hook_env)
    assert oct(os.stat(home).st_mode & 0o777) == "0o700"
    assert oct(os.stat(home / "agentmem.db").st_mode & 0o777) == "0o600"


def test_cursor_edit_tool_after_its_file_edit_keeps_the_change(project, hook_env, home):
    """Cursor reports an edit as afterFileEdit (old/new strings) and as postToolUse of edit_file (code_edit with
    markers); the stored row is the tool call, with the change the file edit reported."""
    path = str(project / "lib" / "cart.py")
    base = {"conversation_id": "c1", "generation_id": "g1", "workspace_roots": [str(project)]}
    run_hook("cursor", "afterFileEdit", {**base, "hook_event_name": "afterFileEdit", "file_path": path,
                                         "edits": [{"old_string": "return item.price * item.qty",
                                                    "new_string": "return round(item.price * item.qty, 2)"}]},
             hook_env)
    run_hook("cursor", "postToolUse", {**base, "hook_event_name": "postToolUse", "tool_name": "edit_file",
                                       "tool_input": {"target_file": path, "code_edit": "// ... existing code ...\n"
                                                      "    return round(item.price * item.qty, 2)"},
                                       "tool_output": "{}"}, hook_env)
    from agentmem_mcp.capture.compress import compress

    conn = connect(home / "agentmem.db", load_vec=False)
    rows = conn.execute("SELECT event, tool, input FROM observations WHERE session_id = 'c1' AND "
                        "event IN ('tool_use', 'file_edit')").fetchall()
    conn.close()
    assert len(rows) == 1 and rows[0]["tool"] == "edit_file", [dict(r) for r in rows]
    obs = compress(rows[0]["event"], rows[0]["tool"], json.loads(rows[0]["input"]), None, extra={"cwd": str(project)})
    assert obs.title == "Edited lib/cart.py: +1 -1 lines", obs.title
