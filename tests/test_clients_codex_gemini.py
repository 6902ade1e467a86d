"""Codex and Gemini CLI as clients, with the real clients from npm (`real_clients.py`): their own config commands
see agentmem after `agentmem install`, their hooks reach the real `agentmem hook`, what they send is stored, and a
session in one client is briefed on what was done in another. Only the model API is a stand-in (`fake_models.py`).
"""

from __future__ import annotations

import json
import subprocess

import jsonschema
import pytest

from agentmem_mcp.recall.context import HEADER, PROMPT_HEADER

from .fake_models import FakeGemini, FakeResponses
from .real_clients import (
    AGENTMEM,
    agentmem,
    client_bin,
    client_env,
    codex_config,
    codex_schemas,
    gemini_env,
    gemini_settings,
    git_project,
    rows,
    run_codex,
    run_gemini,
)

PATCH = ("*** Begin Patch\n*** Add File: src/greeting.py\n+def greet(name):\n+    return f'hello {name}'\n"
         "*** End Patch\n")


def _json_after(text: str, opener: str) -> object:
    return json.loads(text[text.index(opener):])


def test_codex_lists_agentmem_after_install_and_not_after_uninstall(tmp_path, model_path):
    home = tmp_path / "home"
    codex_config(home, "http://127.0.0.1:9")
    original = (home / ".codex" / "config.toml").read_text()
    env = client_env(home, tmp_path / "agentmem", model_path)
    done = agentmem(env, "install", "codex")
    assert done.returncode == 0, done.stderr
    listed = subprocess.run([str(client_bin("codex")), "mcp", "list", "--json"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    (entry,) = [e for e in _json_after(listed.stdout, "[") if e["name"] == "agentmem"]
    assert entry["enabled"] is True
    assert entry["transport"] == {**entry["transport"], "type": "stdio", "command": str(AGENTMEM), "args": ["serve"]}
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop", "SessionEnd"}
    assert agentmem(env, "uninstall", "codex").returncode == 0
    listed = subprocess.run([str(client_bin("codex")), "mcp", "list", "--json"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert "agentmem" not in listed.stdout
    assert (home / ".codex" / "config.toml").read_text() == original
    assert not (home / ".codex" / "hooks.json").exists()


def test_gemini_connects_to_agentmem_after_install(tmp_path, model_path):
    """`gemini mcp list` starts each server and says whether it answered: agentmem's MCP handshake over stdio. In
    a folder Gemini CLI does not trust, it disables every server (what install's note says)."""
    home = tmp_path / "home"
    gemini_settings(home)
    original = (home / ".gemini" / "settings.json").read_text()
    env = client_env(home, tmp_path / "agentmem", model_path)
    installed = agentmem(env, "install", "gemini")
    assert installed.returncode == 0 and "trust" in installed.stdout
    project = git_project(tmp_path / "proj")

    def listed(**extra: str) -> str:
        done = subprocess.run([str(client_bin("gemini")), "mcp", "list"], env={**env, **extra}, cwd=project,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    shown = listed(GEMINI_CLI_TRUST_WORKSPACE="true")
    assert "agentmem" in shown and "Connected" in shown, shown
    assert "agentmem" in listed() and "Disabled" in listed()
    assert "// my Gemini CLI settings" in (home / ".gemini" / "settings.json").read_text()
    assert agentmem(env, "uninstall", "gemini").returncode == 0
    assert (home / ".gemini" / "settings.json").read_text() == original


CODEX_PAYLOADS = {
    "SessionStart": {"source": "startup", "model": "gpt-5.5", "permission_mode": "default"},
    "UserPromptSubmit": {"turn_id": "t1", "model": "gpt-5.5", "permission_mode": "default",
                         "prompt": "How do I run the unit tests here?"},
    "PostToolUse": {"turn_id": "t1", "model": "gpt-5.5", "permission_mode": "default", "tool_name": "Bash",
                    "tool_input": {"command": "pytest -q"}, "tool_response": "3 passed in 0.1s\n",
                    "tool_use_id": "call_1"},
    "PreCompact": {"turn_id": "t1", "model": "gpt-5.5", "trigger": "auto"},
    "Stop": {"turn_id": "t1", "model": "gpt-5.5", "permission_mode": "default", "stop_hook_active": False,
             "last_assistant_message": "The tests pass."},
    "SessionEnd": {"reason": "other"},
}
SCHEMA_NAMES = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit",
                "PostToolUse": "post-tool-use", "PreCompact": "pre-compact", "Stop": "stop",
                "SessionEnd": "session-end"}


def test_each_codex_hook_event_as_its_schema_says_is_stored_and_answered_in_its_schema(tmp_path, model_path):
    """Every payload is first checked against the input schema Codex's own binary carries, and every answer
    agentmem prints against the output schema (Codex rejects an answer that does not fit)."""
    schemas = codex_schemas()
    project = git_project(tmp_path / "proj")
    env = client_env(tmp_path / "home", tmp_path / "agentmem", model_path)
    for event, fields in CODEX_PAYLOADS.items():
        payload = {"session_id": "019a0000-0000-7000-8000-000000000001", "transcript_path": None,
                   "cwd": str(project), "hook_event_name": event, **fields}
        jsonschema.validate(payload, schemas[f"{SCHEMA_NAMES[event]}.command.input"])
        done = agentmem(env, "hook", "--client", "codex", event, cwd=project, stdin=json.dumps(payload))
        assert done.returncode == 0 and done.stderr == "", done.stderr
        if done.stdout.strip():
            answer = json.loads(done.stdout)
            output = schemas.get(f"{SCHEMA_NAMES[event]}.command.output")
            assert output is not None, f"Codex reads no answer to {event}"
            jsonschema.validate(answer, output)
            assert answer["hookSpecificOutput"]["hookEventName"] == event
        else:
            assert event not in ("SessionStart",)
    stored = rows(tmp_path / "agentmem", "SELECT client, event, tool FROM observations ORDER BY id")
    assert [(r["client"], r["event"], r["tool"]) for r in stored] == [
        ("codex", "session_start", None), ("codex", "prompt", None), ("codex", "tool_use", "Bash"),
        ("codex", "pre_compact", None), ("codex", "stop", None), ("codex", "session_end", None)]
    (session,) = rows(tmp_path / "agentmem", "SELECT client, project, status FROM sessions")
    assert session == {"client": "codex", "project": str(project), "status": "ended"}


def claude_code_session(env: dict, project, session_id: str) -> None:
    """A Claude Code session as its hooks send it, through the same `agentmem hook` command."""
    base = {"session_id": session_id, "transcript_path": "", "cwd": str(project), "permission_mode": "default"}
    events = [("SessionStart", {"source": "startup"}),
              ("UserPromptSubmit", {"prompt": "Add a /health endpoint and make sure `make test` passes"}),
              ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "make test"}, "tool_use_id": "t1",
                               "tool_response": {"stdout": "ok: 14 passed, 0 failed", "stderr": "", "exitCode": 0}}),
              ("Stop", {"stop_hook_active": False}), ("SessionEnd", {"reason": "other"})]
    for event, fields in events:
        done = agentmem(env, "hook", event, cwd=project, stdin=json.dumps({**base, "hook_event_name": event, **fields}))
        assert done.returncode == 0, done.stderr


def worker(env: dict) -> None:
    done = agentmem(env, "worker", "--once", timeout=600)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.long(90)
def test_a_session_in_one_client_is_briefed_on_what_was_done_in_the_others(tmp_path, model_path):
    """Claude Code, then the real Codex, then the real Gemini CLI work on one project: each new session's briefing
    (what the client sent its model) holds the sessions of the other clients, each named with its client, and a
    prompt that asks what an earlier session learned gets that note too. Codex's and Gemini CLI's own events are
    stored with their client: shell commands with their exit codes, edits with their files."""
    client_bin("codex")
    client_bin("gemini")
    project = git_project(tmp_path / "proj")
    home, memory = tmp_path / "home", tmp_path / "agentmem"
    env = client_env(home, memory, model_path)
    claude_code_session(env, project, "cc-session-1")
    worker(env)

    codex_script = [[{"shell": "ls missing-dir"}], [{"patch": PATCH}], [{"text": "Added greet() in src/greeting.py."}]]
    with FakeResponses(codex_script) as model:
        codex_config(home, model.url)
        assert agentmem(env, "install", "codex").returncode == 0
        done = run_codex(env, project, "How do I run the tests here? Then add a greet helper.")
        assert done.returncode == 0, done.stderr[-3000:]
        sent = model.sent_text()
    assert HEADER.splitlines()[0] in sent and "(Claude Code, " in sent  # the briefing, as a developer message
    assert "make test" in sent
    codex_rows = rows(memory, "SELECT event, tool, files, extra FROM observations WHERE client = 'codex' ORDER BY id")
    assert [r["event"] for r in codex_rows] == ["session_start", "prompt", "tool_use", "tool_use", "stop",
                                                 "session_end"]
    shell, patch = codex_rows[2], codex_rows[3]
    assert shell["tool"] == "Bash" and json.loads(shell["extra"])["exit_code"] == 2  # read from Codex's own log
    assert patch["tool"] == "apply_patch" and json.loads(patch["files"]) == [str(project / "src" / "greeting.py")]
    worker(env)

    gemini_script = [[{"call": "run_shell_command", "args": {"command": "make test"}}],
                     [{"call": "write_file", "args": {"file_path": str(project / "NOTES.md"), "content": "# notes\n"}}],
                     [{"text": "Wrote NOTES.md."}]]
    with FakeGemini(gemini_script) as model:
        gemini_settings(home)
        genv = gemini_env(env, model.url)
        assert agentmem(genv, "install", "gemini").returncode == 0
        done = run_gemini(genv, project, "How do I run the tests in this project?")
        assert done.returncode == 0, done.stderr[-3000:]
        sent = model.sent_text()
    assert "(Claude Code, " in sent and "(Codex, " in sent and "greeting.py" in sent
    assert PROMPT_HEADER.splitlines()[0] in sent and "make test" in sent  # recall added to the prompt
    gemini_rows = rows(memory, "SELECT event, tool, extra FROM observations WHERE client = 'gemini' ORDER BY id")
    assert ("tool_use", "run_shell_command") in [(r["event"], r["tool"]) for r in gemini_rows]
    assert [r["event"] for r in gemini_rows][-2:] == ["stop", "session_end"]
    sessions = rows(memory, "SELECT client, project FROM sessions ORDER BY started_at")
    assert [s["client"] for s in sessions] == ["claude-code", "codex", "gemini"]
    assert {s["project"] for s in sessions} == {str(project)}
    stats = agentmem(env, "stats", cwd=project).stdout
    assert "sessions     3 (Claude Code 1, Codex 1, Gemini CLI 1)" in stats

    fresh = client_env(home, tmp_path / "imported", model_path)  # the same sessions, from the clients' own logs
    for client in ("codex", "gemini"):
        first = agentmem(fresh, "import-history", client, "--no-worker")
        assert first.returncode == 0 and "imported 1 sessions" in first.stdout, first.stdout + first.stderr
        again = agentmem(fresh, "import-history", client, "--no-worker")
        assert "imported 0 sessions (0 events); 1 already in agentmem" in again.stdout
    live = rows(memory, "SELECT id, client FROM sessions WHERE client != 'claude-code' ORDER BY id")
    assert rows(tmp_path / "imported", "SELECT id, client FROM sessions ORDER BY id") == live
