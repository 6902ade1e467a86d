"""The coding agents agentmem serves: their ids (as hooks, sessions and the CLI name them) and the names shown to a
user or an agent (the briefing's session lines, install's messages)."""

from __future__ import annotations

CLIENTS = ("claude-code", "cursor", "codex", "gemini")
NAMES = {"claude-code": "Claude Code", "cursor": "Cursor", "codex": "Codex", "gemini": "Gemini CLI"}
