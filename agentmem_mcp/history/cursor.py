"""`agentmem import-history cursor`: a user's past Cursor conversations (the `state.vscdb` files under
Cursor's `User` folder, see `capture/cursor_log.py`) replayed through the capture path Cursor's hooks use:
each typed prompt and each tool call becomes the hook event Cursor would have sent (parsed, scrubbed and
redacted like a live one, stored with the time it happened), then the background worker compresses them and
writes the summaries and learned knowledge. The agent's replies reach the summary as a Claude Code
transcript's do: the session's `transcript_path` names the conversation, which the summariser reads.

A conversation already in the store (captured live by Cursor's hooks, whose session id is the same
composer id, or imported before) is skipped: a second import adds nothing.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture.cursor_log import (
    Conversation,
    folder_of_uri,
    listed_composers,
    load_messages,
    log_pointer,
    open_readonly,
    read_conversations,
)
from .claude_code import ImportSummary, Progress, import_sessions

_TOOL_ALIASES = {"run_terminal_command": "run_terminal_cmd"}


def default_root() -> Path:
    """Cursor's `User` folder on this system (Linux `~/.config/Cursor/User`, macOS
    `~/Library/Application Support/Cursor/User`, Windows `%APPDATA%/Cursor/User`)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Cursor" / "User"
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "Cursor" / "User"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "Cursor" / "User"


@dataclass
class CursorHistory:
    """The conversations found under a Cursor `User` folder, and what was left out while reading them."""

    conversations: list[Conversation] = field(default_factory=list)
    empty: int = 0  # opened, nothing sent
    left_out: dict[str, int] = field(default_factory=dict)

    def leave_out(self, reason: str, count: int = 1) -> None:
        if count:
            self.left_out[reason] = self.left_out.get(reason, 0) + count


def _workspace_folder(folder: Path) -> str | None:
    try:
        data = json.loads((folder / "workspace.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return folder_of_uri(data.get("folder")) if isinstance(data, dict) else None


def read_history(root: Path, *, project: str | None = None, since: float | None = None) -> CursorHistory:
    """Every conversation under `root` (Cursor's `User` folder) with the project folder it belongs to, oldest
    first: only those in `project` (a path) when given, only those active since `since` (unix time) when
    given. Conversations whose folder cannot be told are left out (they would otherwise become memories of
    every project), like those no file could be read for; each reason is counted."""
    history = CursorHistory()
    folders: dict[str, str] = {}  # composer id -> folder
    hashes: dict[str, str] = {}  # workspace hash -> folder
    found: dict[str, Conversation] = {}
    for db in sorted((root / "workspaceStorage").glob("*/state.vscdb")):
        folder = _workspace_folder(db.parent)
        if folder:
            hashes[db.parent.name] = folder
        try:
            with open_readonly(db) as conn:
                listed = listed_composers(conn)
                local, broken = read_conversations(conn, db, messages=False)  # older Cursor kept them here
        except (sqlite3.Error, OSError):
            history.leave_out("state.vscdb files that could not be read")
            continue
        history.leave_out("conversations of an unknown shape", broken)
        for composer_id in listed:
            if folder:
                folders.setdefault(composer_id, folder)
        for conv in local:
            conv.folder = conv.folder or folder
            found.setdefault(conv.composer_id, conv)
    global_db = root / "globalStorage" / "state.vscdb"
    if global_db.is_file():
        try:
            with open_readonly(global_db) as conn:
                shared, broken = read_conversations(conn, global_db, messages=False)
        except (sqlite3.Error, OSError):
            history.leave_out("state.vscdb files that could not be read")
            shared, broken = [], 0
        history.leave_out("conversations of an unknown shape", broken)
        for conv in shared:
            if conv.composer_id in found and found[conv.composer_id].size:
                continue
            found[conv.composer_id] = conv
    wanted = Path(project).resolve() if project else None
    for conv in found.values():
        conv.folder = folders.get(conv.composer_id) or hashes.get(conv.workspace_hint or "") or conv.folder
        if not conv.size:
            history.empty += 1
            continue
        if not conv.folder or (since is not None and conv.updated_at is None):
            try:  # a user message may name the workspace; the messages say when it was last active
                load_messages(conv)
            except OSError:
                history.leave_out("state.vscdb files that could not be read")
                continue
        if not conv.folder:
            history.leave_out("conversations with no project folder")
            conv.messages = []
            continue
        if since is not None and (conv.last_at is None or conv.last_at < since):
            continue
        if wanted is not None and not (Path(conv.folder) == wanted or wanted in Path(conv.folder).parents):
            continue
        history.conversations.append(conv)
    history.conversations.sort(key=lambda c: (c.created_at or c.last_at or 0, c.composer_id))
    return history


def _loaded_events(conv: Conversation, summary: ImportSummary) -> list[tuple[str, dict, float | None]]:
    """`cursor_events` of a conversation whose messages are read now and let go afterwards."""
    load_messages(conv)
    try:
        if conv.unreadable:
            summary.left_out["unreadable messages"] = summary.left_out.get("unreadable messages", 0) + conv.unreadable
        return cursor_events(conv)
    finally:
        conv.messages, conv.loaded = [], False


def _tool_name(name: str) -> str:
    base = re.sub(r"_v\d+$", "", name)
    return _TOOL_ALIASES.get(base, base)


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _error_text(result: Any) -> str:
    """What a failed tool call's result says: its error or message text when it has one, else the result."""
    if isinstance(result, str) and result.lstrip()[:1] == "{":
        try:
            result = json.loads(result)
        except ValueError:
            pass
    if isinstance(result, dict):
        said = next((result[k] for k in ("error", "message", "output") if isinstance(result.get(k), str)), None)
        if said and said.strip():
            return said
    return _as_text(result) or "the tool call failed"


def cursor_events(conv: Conversation) -> list[tuple[str, dict, float | None]]:
    """The ordered (Cursor hook event name, stdin payload, when: unix time or None) Cursor's hooks would have
    sent for the conversation: sessionStart, beforeSubmitPrompt per typed prompt, postToolUse (or
    postToolUseFailure) per tool call, stop at the end of each turn, sessionEnd. A message without its own
    time takes the time of the one before it (the conversation's start for the first)."""
    base = {"conversation_id": conv.composer_id, "workspace_roots": [conv.folder] if conv.folder else [],
            "transcript_path": log_pointer(conv)}
    start = conv.created_at or conv.last_at
    events: list[tuple[str, dict, float | None]] = [
        ("sessionStart", {**base, "hook_event_name": "sessionStart", "session_id": conv.composer_id}, start)]
    at, in_turn = start, False
    for n, message in enumerate(conv.messages):
        at = message.at if message.at is not None and (at is None or message.at >= at) else at
        if message.role == "user":
            if in_turn:
                events.append(("stop", {**base, "hook_event_name": "stop", "status": "completed"}, at))
            events.append(("beforeSubmitPrompt", {**base, "hook_event_name": "beforeSubmitPrompt",
                                                  "prompt": message.text}, at))
            in_turn = True
        elif message.tool is not None:
            tool = message.tool
            fields = {"tool_name": _tool_name(tool.name), "tool_input": tool.args if tool.args is not None else {},
                      "tool_use_id": tool.call_id or f"{conv.composer_id}:{n}"}
            if tool.failed:
                events.append(("postToolUseFailure", {**base, "hook_event_name": "postToolUseFailure", **fields,
                                                      "error_message": _error_text(tool.result)},
                               at))
            else:
                events.append(("postToolUse", {**base, "hook_event_name": "postToolUse", **fields,
                                               "tool_output": _as_text(tool.result)}, at))
    end = max(at or 0, conv.last_at or 0) or None
    events.append(("stop", {**base, "hook_event_name": "stop", "status": "completed"}, at))
    events.append(("sessionEnd", {**base, "hook_event_name": "sessionEnd", "session_id": conv.composer_id,
                                  "reason": "other"}, end))
    return events


def import_history(settings: Any, history: CursorHistory, progress: Progress | None = None) -> ImportSummary:
    """Replay the conversations of `history` through Cursor's capture path into the store of `settings`."""
    summary = ImportSummary(empty=history.empty, left_out=dict(history.left_out))
    return import_sessions(settings, "cursor", history.conversations, lambda conv: _loaded_events(conv, summary),
                           progress=progress, summary=summary, session_of=lambda conv: conv.composer_id)
