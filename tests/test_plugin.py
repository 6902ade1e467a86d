"""The Claude Code plugin: its manifest (the MCP server declared where only the plugin reads it), and the wrappers
that run agentmem from its own environment, made with uv on first use (hooks/setup-env.sh), run as Claude Code runs
them: `sh "${CLAUDE_PLUGIN_ROOT}/hooks/run-hook.sh" claude-code EVENT` with the event's JSON on stdin, and
`sh "${CLAUDE_PLUGIN_ROOT}/hooks/run-server.sh"` speaking MCP on stdio."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agentmem_mcp
from agentmem_mcp.db.connection import connect

REPO = Path(__file__).resolve().parent.parent
RUN_HOOK = REPO / "hooks" / "run-hook.sh"
RUN_SERVER = REPO / "hooks" / "run-server.sh"
# what the wrappers and setup-env.sh run besides agentmem, uv and python3
TOOLS = ("sh", "cat", "mkdir", "rm", "cp", "mktemp", "sleep", "sed", "grep", "tail", "head", "date", "find", "tr",
         "cut", "wc", "setsid", "nohup")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def tool_path(tmp_path: Path, **extra: str) -> str:
    """A PATH with the commands the wrappers use and, of agentmem, uv and python3, only those given (name=target)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name in TOOLS:
        found = shutil.which(name)
        if found:
            (bindir / name).symlink_to(found)
    for name, target in extra.items():
        (bindir / name).symlink_to(target)
    return str(bindir)


def plugin_env(tmp_path: Path, path: str) -> dict[str, str]:
    """As Claude Code runs a plugin's commands: the user's environment (its proxy and certificate settings too), in
    a fresh HOME and data folder, with agentmem not on the PATH and no virtualenv active; its hooks start no shared
    process that would outlive the test."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENTMEM_", "XDG_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update(PATH=path, HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "data"),
               AGENTMEM_HOME=str(tmp_path / "agentmem-home"), AGENTMEM_HOOK_STARTS_PROCESS="0",
               CLAUDE_PLUGIN_ROOT=str(REPO))
    return env


def run_hook(env: dict[str, str], client: str, event: str, payload: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(RUN_HOOK), client, event], input=json.dumps(payload).encode(), env=env,
                          capture_output=True, timeout=60)


def wait_unlocked(env_dir: Path, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while (env_dir / "lock").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not (env_dir / "lock").exists(), (env_dir / "setup.log").read_text()


def test_the_server_is_declared_where_only_the_plugin_reads_it():
    """Claude Code run inside this checkout reads a `.mcp.json` at its root as the project's own servers (and fails
    on ${CLAUDE_PLUGIN_ROOT}): the plugin's server lives in its manifest instead."""
    plugin = load(REPO / ".claude-plugin" / "plugin.json")
    assert plugin["mcpServers"] == {"agentmem": {"type": "stdio", "command": "sh",
                                                 "args": ["${CLAUDE_PLUGIN_ROOT}/hooks/run-server.sh"]}}
    assert not list(REPO.glob(".mcp.json")) and not (REPO / ".claude" / "settings.json").exists()


def test_the_environment_is_one_per_version_under_the_data_folder(tmp_path):
    shown = subprocess.run(["sh", "-c", '. "$agentmem_root/hooks/env.sh"; printf "%s|%s" "$agentmem_version" '
                            '"$agentmem_env"'], env={"agentmem_root": str(REPO), "XDG_DATA_HOME": str(tmp_path),
                                                      "PATH": os.environ["PATH"]},
                           capture_output=True, text=True, timeout=30, check=True).stdout
    assert shown == f"{agentmem_mcp.__version__}|{tmp_path}/agentmem-env/{agentmem_mcp.__version__}"


def test_the_server_wrapper_runs_agentmem_bin_or_says_why_it_cannot_start(tmp_path):
    fake = tmp_path / "agentmem"
    fake.write_text("#!/bin/sh\necho \"started: $*\"\n")
    fake.chmod(0o755)
    env = plugin_env(tmp_path, tool_path(tmp_path))  # no agentmem, no uv, no python3
    found = subprocess.run(["sh", str(RUN_SERVER)], env=dict(env, AGENTMEM_BIN=str(fake)), capture_output=True,
                           text=True, timeout=30)
    assert found.returncode == 0 and found.stdout.strip() == "started: serve"
    missing = subprocess.run(["sh", str(RUN_SERVER)], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 1 and missing.stdout == "" and "Traceback" not in missing.stderr
    why = missing.stderr.strip().splitlines()[-1]
    assert why.startswith("agentmem: cannot set up its environment in ") and "uv is not installed" in why
    assert "docs.astral.sh/uv" in why and f"pipx install {REPO}" in why


def test_the_hook_wrapper_without_agentmem_tells_the_user_and_never_blocks(tmp_path):
    env = plugin_env(tmp_path, tool_path(tmp_path))
    env_dir = tmp_path / "data" / "agentmem-env" / agentmem_mcp.__version__
    start = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart", "source": "startup"}
    first = run_hook(env, "claude-code", "SessionStart", start)
    assert first.returncode == 0 and first.stderr == b""
    assert "agentmem" in json.loads(first.stdout)["systemMessage"]  # setting up, or (fast) why it failed
    wait_unlocked(env_dir)
    told = run_hook(env, "claude-code", "SessionStart", {**start, "session_id": "s2"})
    message = json.loads(told.stdout)["systemMessage"]
    assert message.startswith("agentmem: cannot set up its environment") and "uv is not installed" in message
    quiet = run_hook(env, "claude-code", "PostToolUse", {"session_id": "s2", "tool_name": "Bash"})
    assert quiet.returncode == 0 and quiet.stdout == b""  # told at a session's start only
    prompt = run_hook(env, "cursor", "beforeSubmitPrompt", {"conversation_id": "c1", "prompt": "hi"})
    assert json.loads(prompt.stdout) == {"continue": True}
    cursor = run_hook(env, "cursor", "sessionStart", {"conversation_id": "c1"})
    assert "uv is not installed" in json.loads(cursor.stdout)["additional_context"]
    for client in ("codex", "gemini"):  # their templates run this wrapper too, and read the same field
        other = run_hook(env, client, "SessionStart", {**start, "session_id": f"s-{client}"})
        assert "uv is not installed" in json.loads(other.stdout)["systemMessage"]
    wait_unlocked(env_dir)
    assert subprocess.run(["sh", str(RUN_HOOK)], env=env, input=b"{}", timeout=30).returncode == 0


def initialize(process: subprocess.Popen) -> dict:
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}
    process.stdin.write(json.dumps(request).encode() + b"\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


@pytest.mark.slow
@pytest.mark.long(40)
def test_first_use_makes_the_environment_with_uv_and_then_records(tmp_path, model_path):
    """agentmem not installed anywhere, uv on the PATH: the first session's start says it is setting up, the MCP
    server waits for the environment and answers `initialize`, and the next hooks record through it."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv is in the test extra"
    env = plugin_env(tmp_path, tool_path(tmp_path, uv=uv, python3=sys.executable))
    env.update(AGENTMEM_EMBED_MODEL_PATH=str(model_path),  # uv's own cache: what an earlier run downloaded
               UV_CACHE_DIR=os.environ.get("UV_CACHE_DIR") or str(Path.home() / ".cache" / "uv"))
    env_dir = tmp_path / "data" / "agentmem-env" / agentmem_mcp.__version__
    start = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart", "source": "startup"}

    first = run_hook(env, "claude-code", "SessionStart", start)
    assert "setting up its environment with uv" in json.loads(first.stdout)["systemMessage"]
    server = subprocess.Popen(["sh", str(RUN_SERVER)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        answer = initialize(server)
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    assert answer["result"]["serverInfo"]["name"] == "agentmem", server.stderr.read()
    assert (env_dir / "ready").is_file() and not (env_dir / "failed").exists()
    assert "uv" in (env_dir / "setup.log").read_text()

    prompt = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
              "prompt": "run the unit tests with pytest -q"}
    assert run_hook(env, "claude-code", "UserPromptSubmit", prompt).returncode == 0
    again = run_hook(env, "claude-code", "SessionStart", {**start, "session_id": "s2"})
    assert "systemMessage" not in json.loads(again.stdout)
    conn = connect(Path(env["AGENTMEM_HOME"]) / "agentmem.db", load_vec=False)
    try:
        prompts = [row[0] for row in conn.execute("SELECT prompt FROM observations WHERE event = 'prompt'")]
    finally:
        conn.close()
    assert prompts == ["run the unit tests with pytest -q"]
