"""What each client's configuration looks like: where its files are, how its MCP server entry and hook entries are
written, and what agentmem cannot do in it (said at install, not left for the user to find out).

| client      | scope   | MCP server entry                        | hooks                                 |
|-------------|---------|-----------------------------------------|---------------------------------------|
| claude-code | user    | ``~/.claude.json``                      | ``~/.claude/settings.json``           |
| claude-code | project | ``<project>/.mcp.json``                 | ``<project>/.claude/settings.json``   |
| cursor      | user    | ``~/.cursor/mcp.json``                  | ``~/.cursor/hooks.json``              |
| cursor      | project | ``<project>/.cursor/mcp.json``          | ``<project>/.cursor/hooks.json``      |
| codex       | user    | ``~/.codex/config.toml`` (TOML)         | ``~/.codex/hooks.json``               |
| codex       | project | ``<project>/.codex/config.toml`` (TOML) | ``<project>/.codex/hooks.json``       |
| gemini      | user    | ``~/.gemini/settings.json``             | the same file                         |
| gemini      | project | ``<project>/.gemini/settings.json``     | the same file                         |

`$CODEX_HOME` (Codex) and `$GEMINI_CLI_HOME` (Gemini CLI) move the user-scope files as those clients do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..capture.clients import CLIENTS, NAMES

__all__ = ["CLIENTS", "CLIENT_EVENTS", "NAMES", "SCOPES", "ConfigFiles", "InstallError", "config_files", "hook_entry",
           "notes", "server_entry"]

SCOPES = ("user", "project")
HOOK_TIMEOUT_SECONDS = 10
CODEX_SESSION_END_TIMEOUT = 3  # Codex caps SessionEnd hooks at 3 s, and warns at every start about a longer one
CLIENT_EVENTS = {
    "claude-code": ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "PreCompact", "Stop",
                    "SessionEnd"),
    "cursor": ("sessionStart", "beforeSubmitPrompt", "postToolUse", "postToolUseFailure", "afterFileEdit", "stop",
               "sessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop", "SessionEnd"),
    "gemini": ("SessionStart", "BeforeAgent", "AfterTool", "PreCompress", "AfterAgent", "SessionEnd"),
}


class InstallError(Exception):
    """A config file cannot be changed safely; the message says which file and what to do."""


@dataclass(frozen=True)
class ConfigFiles:
    """Where a client keeps its MCP servers (`mcp`, JSON or TOML) and its hooks (`hooks`, JSON); Gemini CLI keeps
    both in one file."""

    mcp: Path
    hooks: Path

    @property
    def mcp_is_toml(self) -> bool:
        return self.mcp.suffix == ".toml"


def config_files(client: str, scope: str, *, home: Path | None = None,
                 project_dir: Path | None = None) -> ConfigFiles:
    """The config files of `client` for `scope` ("user": in `home`, default the user's home; "project": in
    `project_dir`, default the current directory)."""
    if client not in CLIENTS:
        raise InstallError(f"Unknown client {client!r}; choose one of: {', '.join(CLIENTS)}.")
    if scope not in SCOPES:
        raise InstallError(f"Unknown scope {scope!r}; choose one of: {', '.join(SCOPES)}.")
    base = Path(home) if home is not None else Path.home()
    if scope == "project":
        base = Path(project_dir if project_dir is not None else Path.cwd()).absolute()
    if client == "cursor":
        return ConfigFiles(base / ".cursor" / "mcp.json", base / ".cursor" / "hooks.json")
    if client == "codex":
        folder = base / ".codex"
        if scope == "user" and home is None and os.environ.get("CODEX_HOME"):
            folder = Path(os.environ["CODEX_HOME"]).expanduser()
        return ConfigFiles(folder / "config.toml", folder / "hooks.json")
    if client == "gemini":
        if scope == "user" and home is None and os.environ.get("GEMINI_CLI_HOME"):
            base = Path(os.environ["GEMINI_CLI_HOME"]).expanduser()
        settings = base / ".gemini" / "settings.json"
        return ConfigFiles(settings, settings)
    if scope == "user":
        return ConfigFiles(base / ".claude.json", base / ".claude" / "settings.json")
    return ConfigFiles(base / ".mcp.json", base / ".claude" / "settings.json")


def server_entry(client: str, parts: list[str]) -> dict[str, Any]:
    """The MCP server entry that starts `parts` (the agentmem command) with `serve`."""
    entry: dict[str, Any] = {"command": parts[0], "args": [*parts[1:], "serve"]}
    return {"type": "stdio", **entry} if client == "claude-code" else entry


def hook_entry(client: str, event: str, command: str) -> dict[str, Any]:
    """One event's entry of ours in the client's hooks list."""
    if client == "cursor":
        return {"command": command, "timeout": HOOK_TIMEOUT_SECONDS}
    hook: dict[str, Any] = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}
    if client == "gemini":  # Gemini CLI counts in milliseconds, and names hooks for `/hooks disable <name>`
        hook = {"name": f"agentmem-{event}", **hook, "timeout": HOOK_TIMEOUT_SECONDS * 1000}
    elif client == "codex" and event == "SessionEnd":
        hook["timeout"] = CODEX_SESSION_END_TIMEOUT
    group: dict[str, Any] = {}
    if client == "claude-code" and event in ("PostToolUse", "PostToolUseFailure"):
        group["matcher"] = "*"  # Codex and Gemini CLI run a hook with no matcher for every tool
    group["hooks"] = [hook]
    return group


def notes(client: str, scope: str) -> list[str]:
    """What agentmem cannot do in `client`, and what the user must do for it to work."""
    if client == "cursor":
        return ["Cursor's beforeSubmitPrompt hook cannot add context: its agent gets the session-start briefing "
                "and can call memory_search, but no memories are added to each prompt."]
    if client == "codex":
        found = [
            "Codex runs a new or changed hook only once you trust it: start `codex` and choose to trust the "
            "agentmem hooks in its hooks review (or open /hooks). Until then nothing is captured or injected; "
            "`codex exec` cannot ask, so trust them in an interactive session first.",
            "Codex sends no event for a failed tool call and no exit code: agentmem reads the exit code of a "
            "command from the session log Codex names (`transcript_path`) when it is there.",
            "Codex fires PostToolUse for shell commands, apply_patch edits and MCP tools only: its other tools "
            "(web search, images, plans) are not captured.",
        ]
        if scope == "project":
            found.append("Codex reads a project's .codex/ folder only once the project is trusted (it asks when "
                         "you first open it there).")
        return found
    if client == "gemini":
        return ["Gemini CLI runs hooks and MCP servers (user-level ones too) only in folders you trust (it asks "
                "the first time you open one): in a folder it does not trust nothing is captured or injected and "
                "the agent has no memory tools.",
                "Gemini CLI does not wait for its SessionEnd hook: a session cut short may miss its end marker "
                "(the background worker still summarises it once it goes quiet)."]
    return []
