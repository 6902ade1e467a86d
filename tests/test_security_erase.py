"""Forget erases (issue 18 item 8): after `agentmem forget`, no file under the home (database, WAL, BM25 segments)
still holds the forgotten text, measured as `grep -a` would: by searching every byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=300)


def files_holding(home: Path, needle: str) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*")
                  if p.is_file() and needle.encode() in p.read_bytes())


def test_forget_session_leaves_the_prompt_nowhere_on_disk(cli_env, home, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    prompt_word, tool_word, kept_word = "marmaladekestrel", "quillfeatherbrook", "harbourlighthouse"

    def hook(session: str, event: str, payload: dict) -> None:
        body = {"session_id": session, "cwd": str(project), "hook_event_name": event} | payload
        done = run(cli_env, project, "hook", event, stdin=json.dumps(body))
        assert done.returncode == 0, done.stderr

    for session, word in (("s-forget", prompt_word), ("s-keep", kept_word)):
        hook(session, "SessionStart", {"source": "startup"})
        hook(session, "UserPromptSubmit", {"prompt": f"The deploy box is named {word}; the release key is {word}42."})
        hook(session, "PostToolUse", {"tool_name": "Bash", "tool_input": {"command": f"ssh {word} make release"},
                                      "tool_response": {"stdout": f"{word if session == 's-keep' else tool_word} ok",
                                                        "stderr": ""}})
        hook(session, "Stop", {"stop_hook_active": False})
        hook(session, "SessionEnd", {"reason": "exit"})
    assert run(cli_env, project, "worker", "--once").returncode == 0
    assert run(cli_env, project, "save", f"Releases are cut from the {kept_word} box").returncode == 0
    assert files_holding(home, prompt_word) and files_holding(home, tool_word)  # it was all there

    done = run(cli_env, project, "forget", "--session", "s-forget", "--i-am-the-user")
    assert done.returncode == 0, done.stderr
    assert "forgot" in done.stdout
    assert files_holding(home, prompt_word) == [] and files_holding(home, tool_word) == []
    found = run(cli_env, project, "search", kept_word)
    assert kept_word in found.stdout  # what was not forgotten is still found
    assert files_holding(home, kept_word)


def test_forget_by_id_leaves_the_memory_nowhere_on_disk(cli_env, home, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    saved = run(cli_env, project, "save", "The old staging password hint was periwinkleostrich", "--json")
    assert saved.returncode == 0, saved.stderr
    other = run(cli_env, project, "save", "Use pnpm to install dependencies")
    assert other.returncode == 0
    memory_id = json.loads(saved.stdout)["id"]
    assert files_holding(home, "periwinkleostrich")
    done = run(cli_env, project, "forget", memory_id, "--i-am-the-user")
    assert done.returncode == 0, done.stderr
    assert files_holding(home, "periwinkleostrich") == []
    assert "pnpm" in run(cli_env, project, "search", "pnpm install").stdout
