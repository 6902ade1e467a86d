"""Cursor's chat history as data: the conversations ("composers") kept in its `state.vscdb` SQLite files.

Cursor (a VS Code fork) keeps key-value tables `ItemTable` and `cursorDiskKV` in
`<Cursor>/User/globalStorage/state.vscdb` and one `state.vscdb` per workspace folder
(`<Cursor>/User/workspaceStorage/<hash>/`, whose `workspace.json` names the folder). A conversation is the
JSON value of `composerData:<composerId>`; its messages ("bubbles", type 1 = the user, 2 = the agent) are
either inline (`conversation`) or stored one per key, `bubbleId:<composerId>:<bubbleId>`, in the order of
`fullConversationHeadersOnly`. A workspace's `ItemTable` row `composer.composerData` lists its composers.

Only those keys are read: never the rest of `ItemTable`, which holds Cursor's login tokens. The files are
opened without writing to Cursor's folders: immutable when no write-ahead log is beside the file (Cursor is
not writing it), else as a private temporary copy of the file and its log (kept while neither changes,
removed when the process exits). These are Cursor's internal
formats: every value is checked, and what does not have the expected shape is skipped and counted.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlparse

from .redact import redact, truncate_middle
from .transcript import Turn, _clip, clean_prompt, is_noise, relative_to

LOG_SCHEME = "cursor-composer:"  # a session's `transcript_path` when its log is a Cursor conversation
COMPOSERS_KEY = "composer.composerData"
FAILED_STATUSES = frozenset({"error", "failed", "failure", "cancelled", "canceled", "rejected", "aborted"})
_MAX_VALUE_BYTES = 16 * 1024 * 1024  # a bubble bigger than this (a pasted dump) is skipped, not parsed
MAX_TEXT_CHARS = 256 * 1024  # a message's text or a tool call's arguments or result, kept from a bubble


@dataclass
class ToolCall:
    """One tool call the agent made: Cursor's `toolFormerData`."""

    name: str
    args: Any
    result: Any
    failed: bool
    call_id: str | None = None


@dataclass
class Message:
    """One bubble: the user's prompt, the agent's text, or a tool call (with the text around it, if any)."""

    role: str  # "user" or "assistant"
    text: str
    at: float | None = None
    tool: ToolCall | None = None


@dataclass
class Conversation:
    """One Cursor conversation, its messages in order, and what could not be read of it."""

    composer_id: str
    db: Path
    created_at: float | None = None
    updated_at: float | None = None
    folder: str | None = None
    workspace_hint: str | None = None  # the workspace hash the conversation names, if it names one
    messages: list[Message] = field(default_factory=list)
    unreadable: int = 0  # bubbles missing or of an unknown shape
    size: int = 0  # how many messages it lists, read or not
    loaded: bool = False  # whether `messages` were read (`load_messages`)

    @property
    def name(self) -> str:
        return self.composer_id

    @property
    def last_at(self) -> float | None:
        stamps = [t for t in [self.updated_at, self.created_at, *(m.at for m in self.messages)] if t is not None]
        return max(stamps) if stamps else None


_snapshots: dict[Path, tuple[tuple[int, ...], Path]] = {}  # Cursor file -> (its signature, our private copy)
_snapshots_lock = threading.Lock()


@contextmanager
def open_readonly(db: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a Cursor `state.vscdb` that writes nothing next to it. With no `-wal` file
    beside it, the file is opened immutable; with one (Cursor has it open), a private copy of the file and
    its log is read instead (`_snapshot`). Raises sqlite3.Error or OSError."""
    if Path(f"{db}-wal").exists():
        conn = sqlite3.connect(_snapshot(db))
    else:
        conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        conn.execute("PRAGMA query_only = 1")
        yield conn
    finally:
        conn.close()


def _snapshot(db: Path) -> Path:
    """A copy of `db` and its `-wal` in a private temporary folder (0700), made again only when either file
    changed, so that summarising many imported conversations copies a large file once. One copy per file at
    a time: the previous one is removed when a new one is made, and every copy when the process exits."""
    wal = Path(f"{db}-wal")
    stats = (db.stat(), wal.stat())
    signature = tuple(n for st in stats for n in (st.st_mtime_ns, st.st_size, st.st_ino))
    key = db.resolve()
    with _snapshots_lock:
        known = _snapshots.get(key)
        if known is not None and known[0] == signature and known[1].exists():
            return known[1]
        if known is not None:
            shutil.rmtree(known[1].parent, ignore_errors=True)
        elif not _snapshots:
            atexit.register(_remove_snapshots)
        folder = Path(tempfile.mkdtemp(prefix="agentmem-cursor-"))
        copy = folder / "state.vscdb"
        try:
            shutil.copyfile(db, copy)
            shutil.copyfile(wal, folder / "state.vscdb-wal")
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            _snapshots.pop(key, None)
            raise
        _snapshots[key] = (signature, copy)
        return copy


def _remove_snapshots() -> None:
    with _snapshots_lock:
        for _, copy in _snapshots.values():
            shutil.rmtree(copy.parent, ignore_errors=True)
        _snapshots.clear()


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _decode(value: Any) -> Any:
    if isinstance(value, (bytes, memoryview)):
        value = bytes(value)
        if len(value) > _MAX_VALUE_BYTES:
            return None
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str) or len(value) > _MAX_VALUE_BYTES:
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _prefixed(conn: sqlite3.Connection, prefix: str) -> Iterator[tuple[str, Any]]:
    """(key, JSON value) of the cursorDiskKV rows whose key starts with `prefix` (a range scan of its index)."""
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    for key, value in conn.execute("SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?", (prefix, upper)):
        yield key, _decode(value)


def listed_composers(conn: sqlite3.Connection) -> list[str]:
    """The composer ids a workspace's `ItemTable` lists under `composer.composerData` ([] if none)."""
    if "ItemTable" not in _tables(conn):
        return []
    row = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (COMPOSERS_KEY,)).fetchone()
    data = _decode(row[0]) if row else None
    composers = data.get("allComposers") if isinstance(data, dict) else None
    if not isinstance(composers, list):
        return []
    return [c["composerId"] for c in composers if isinstance(c, dict) and isinstance(c.get("composerId"), str)]


def read_conversations(conn: sqlite3.Connection, db: Path, only: str | None = None,
                       messages: bool = True) -> tuple[list[Conversation], int]:
    """The conversations stored in one state.vscdb (only composer `only` when given), and how many
    `composerData` values could not be read at all. messages=False reads what each conversation says of
    itself (times, size, workspace) and leaves its messages to `load_messages`: a long history's tool
    results do not all sit in memory at once."""
    if "cursorDiskKV" not in _tables(conn):
        return [], 0
    found, unreadable = [], 0
    rows = _prefixed(conn, f"composerData:{only}") if only else _prefixed(conn, "composerData:")
    for key, data in rows:
        composer_id = key.split(":", 1)[1]
        if only and composer_id != only:
            continue
        if not isinstance(data, dict) or not composer_id:
            unreadable += 1
            continue
        found.append(_conversation(conn, db, composer_id, data, messages))
    return found, unreadable


def load_messages(conv: Conversation) -> None:
    """Read the messages of a conversation listed with messages=False from its file (and the folder a user
    message names, if it has none). Raises OSError when the file cannot be read; a conversation gone from it
    since has no messages, all of them unreadable."""
    if conv.loaded:
        return
    try:
        with open_readonly(conv.db) as conn:
            found, _ = read_conversations(conn, conv.db, only=conv.composer_id)
    except sqlite3.Error as exc:
        raise OSError(f"{conv.db}: {exc}") from exc
    if found:
        conv.messages, conv.unreadable = found[0].messages, found[0].unreadable
        conv.folder = conv.folder or found[0].folder
    else:
        conv.messages, conv.unreadable = [], conv.size
    conv.loaded = True


def _conversation(conn: sqlite3.Connection, db: Path, composer_id: str, data: dict, messages: bool = True,
                  ) -> Conversation:
    conv = Conversation(composer_id=composer_id, db=db, created_at=epoch(data.get("createdAt")),
                        updated_at=epoch(data.get("lastUpdatedAt")), workspace_hint=_workspace_hint(data))
    headers = data.get("fullConversationHeadersOnly")
    inline = data.get("conversation")
    listed = headers if isinstance(headers, list) and headers else inline if isinstance(inline, list) else []
    conv.size = len(listed)
    if not messages:
        return conv
    conv.loaded = True
    if isinstance(headers, list) and headers:
        stored = {key.rsplit(":", 1)[1]: value for key, value in _prefixed(conn, f"bubbleId:{composer_id}:")}
        mapped = data.get("conversationMap") if isinstance(data.get("conversationMap"), dict) else {}
        bubbles = []
        for header in headers:
            bubble_id = header.get("bubbleId") if isinstance(header, dict) else None
            bubble = stored.get(bubble_id) or mapped.get(bubble_id) if isinstance(bubble_id, str) else None
            if isinstance(bubble, dict) and "type" not in bubble and isinstance(header, dict):
                bubble = {**bubble, "type": header.get("type")}
            bubbles.append(bubble)
    elif isinstance(inline, list):
        bubbles = inline
    else:
        bubbles = []
    for bubble in bubbles:
        message = _message(bubble)
        if message is None:
            conv.unreadable += 1
        elif message.text or message.tool:
            conv.messages.append(message)
            if conv.folder is None and message.role == "user" and isinstance(bubble, dict):
                conv.folder = _first_folder(bubble.get("workspaceUris"))
    return conv


def _message(bubble: Any) -> Message | None:
    """A bubble as a message; None when it is not a bubble of a known type. An empty one (a reasoning trace,
    a placeholder) is a message without text."""
    if not isinstance(bubble, dict) or bubble.get("type") not in (1, 2, "user", "ai", "assistant"):
        return None
    role = "user" if bubble["type"] in (1, "user") else "assistant"
    text = bubble.get("text") if isinstance(bubble.get("text"), str) else ""
    if not text.strip() and isinstance(bubble.get("richText"), str):
        text = _rich_text(bubble["richText"])
    message = Message(role=role, text=_bounded(text.strip()),
                      at=epoch(bubble.get("createdAt") or bubble.get("timestamp")))
    tool = bubble.get("toolFormerData")
    if role == "assistant" and isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"]:
        args = tool.get("rawArgs", tool.get("params"))
        status = tool.get("status")
        extra = tool.get("additionalData")
        inner = extra.get("status") if isinstance(extra, dict) else None
        failed = any(isinstance(s, str) and s.lower() in FAILED_STATUSES for s in (status, inner))
        message.tool = ToolCall(name=tool["name"][:200], args=_bounded(args), result=_bounded(tool.get("result")),
                                failed=failed,
                                call_id=tool.get("toolCallId") if isinstance(tool.get("toolCallId"), str) else None)
    return message


def _bounded(value: Any) -> Any:
    """A text cut to its head and tail past MAX_TEXT_CHARS (capture truncates further); other values as they are."""
    return truncate_middle(value, MAX_TEXT_CHARS) if isinstance(value, str) and len(value) > MAX_TEXT_CHARS else value


def _rich_text(value: str) -> str:
    """The text of a Lexical editor state (Cursor's `richText`)."""
    try:
        root = json.loads(value)
    except (ValueError, RecursionError):
        return ""
    parts: list[str] = []

    def walk(node: Any, depth: int) -> None:
        if depth > 50 or not isinstance(node, dict):
            return
        if isinstance(node.get("text"), str):
            parts.append(node["text"])
        for child in node.get("children", []) if isinstance(node.get("children"), list) else []:
            walk(child, depth + 1)
        if node.get("type") == "paragraph":
            parts.append("\n")

    walk(root.get("root") if isinstance(root, dict) else None, 0)
    return "".join(parts).strip()


def _workspace_hint(data: dict) -> str | None:
    ident = data.get("workspaceIdentifier")
    if isinstance(ident, dict) and isinstance(ident.get("id"), str):
        return ident["id"]
    return ident if isinstance(ident, str) else None


def _first_folder(uris: Any) -> str | None:
    if isinstance(uris, list):
        for uri in uris:
            path = folder_of_uri(uri)
            if path:
                return path
    return None


def folder_of_uri(uri: Any) -> str | None:
    """The folder path of a VS Code folder URI (`file:///home/u/app`, `vscode-remote://ssh-remote+h/srv/app`)."""
    if isinstance(uri, dict):  # a serialised vscode Uri
        uri = uri.get("external") or uri.get("fsPath") or uri.get("path")
    if not isinstance(uri, str) or not uri.strip():
        return None
    parsed = urlparse(uri)
    if not parsed.scheme:
        return uri if uri.startswith("/") else None
    path = unquote(parsed.path)
    if re.match(r"^/[A-Za-z]:/", path):  # file:///c:/Users/...
        path = path[1:]
    return path.rstrip("/") or None if path else None


def epoch(value: Any) -> float | None:
    """Unix time of Cursor's timestamps: milliseconds (composers) or ISO 8601 text (bubbles)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else float(value)
        return seconds if 1e9 < seconds < 1e10 else None
    if isinstance(value, str) and value.strip():
        try:
            stamp = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        return stamp.timestamp()
    return None


def log_pointer(conv: Conversation) -> str:
    """What a session's `transcript_path` says when its log is this Cursor conversation."""
    query = {"db": str(conv.db), "composer": conv.composer_id}
    if conv.folder:
        query["root"] = conv.folder
    return LOG_SCHEME + urlencode(query)


def read_logged_turns(pointer: str) -> list[Turn]:
    """The turns of the Cursor conversation a `log_pointer` names, as the summariser reads a Claude Code
    transcript: typed prompts and the agent's replies, redacted, paths relative to the project folder.
    [] when the file or the conversation is gone or unreadable."""
    query = parse_qs(pointer[len(LOG_SCHEME):])
    db, composer = query.get("db", [""])[0], query.get("composer", [""])[0]
    root = query.get("root", [""])[0] or None
    if not db or not composer or not os.path.isfile(db):
        return []
    try:
        with open_readonly(Path(db)) as conn:
            conversations, _ = read_conversations(conn, Path(db), only=composer)
    except (sqlite3.Error, OSError):
        return []
    return turns_of(conversations[0], root) if conversations else []


def turns_of(conv: Conversation, root: str | None) -> list[Turn]:
    """A conversation's turns: each typed prompt with the agent's text replies until the next one."""
    turns: list[Turn] = []
    for message in conv.messages:
        text = message.text
        if message.role == "user":
            if is_noise(text):
                continue
            stamp = datetime.fromtimestamp(message.at, timezone.utc).isoformat() if message.at else None
            turns.append(Turn(prompt=_clip(redact(relative_to(clean_prompt(text), root)), 2000), timestamp=stamp))
        elif turns and text and not is_noise(text):
            turns[-1].replies.append(_clip(redact(relative_to(text, root))))
    return [t for t in turns if t.prompt]
