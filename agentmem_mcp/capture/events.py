"""Normalise the JSON that Claude Code, Cursor, Codex and Gemini CLI send to hooks into one `HookEvent` (Codex and
Gemini CLI: `events_codex_gemini.py`).

Pure and standard-library only: this runs in the short-lived hook process on every tool call.

Claude Code (code.claude.com/docs/en/hooks) sends `session_id`, `transcript_path`, `cwd`,
`permission_mode`, `hook_event_name`, plus per event: SessionStart `source`; UserPromptSubmit
`prompt`; PostToolUse `tool_name`, `tool_input`, `tool_response`, `tool_use_id`; PostToolUseFailure
`tool_name`, `tool_input`, `tool_use_id`, `error`, `is_interrupt`; PreCompact `trigger`,
`custom_instructions`; Stop `stop_hook_active`; SessionEnd `reason`.

Cursor (cursor.com/docs/hooks) sends `conversation_id`, `generation_id`, `hook_event_name`,
`workspace_roots`, optionally `model`, `cursor_version`, `transcript_path`, plus per event:
sessionStart `session_id`, `is_background_agent`, `composer_mode`; beforeSubmitPrompt `prompt`,
`attachments`; postToolUse `tool_name`, `tool_input`, `tool_output` (a JSON string), `tool_use_id`,
`cwd`, `duration`; postToolUseFailure adds `error_message`, `failure_type`; afterFileEdit
`file_path`, `edits` [{old_string, new_string}]; before/afterShellExecution `command`, `cwd`,
`output`, `duration`; before/afterMCPExecution `tool_name`, `tool_input` (a JSON string),
`result_json`; stop `status`, `loop_count`; sessionEnd `session_id`, `reason`, `duration_ms`,
`final_status`, `error_message`; preCompact `trigger`.
"""

from __future__ import annotations

import json
import re

from ..trust.lazy_regex import lazy
from .event_parts import (
    MAX_DEPTH,
    TRUNCATED_DEPTH,
    HookEvent,
    HookInputError,
    _clean,
    _extra,
    _files,
    _maybe_json,
    _merge,
    _session_id,
    _str,
    render_tool_output,
)

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from typing import Any

try:  # the interpreter's own SHA-256: hashlib would load OpenSSL first (~3 ms of every hook's start-up)
    from _sha2 import sha256  # CPython >= 3.12
except ImportError:  # pragma: no cover - depends on the interpreter
    try:
        from _sha256 import sha256  # CPython 3.10, 3.11
    except ImportError:
        from hashlib import sha256

__all__ = [
    "CLAUDE_CODE_EVENTS",
    "CLIENTS",
    "CURSOR_EVENTS",
    "EVENTS",
    "MAX_DEPTH",
    "TRUNCATED_DEPTH",
    "HookEvent",
    "HookInputError",
    "decode_payload",
    "event_fingerprint",
    "parse_hook_event",
    "render_tool_output",
]


EVENTS = ("session_start", "prompt", "tool_use", "file_edit", "pre_compact", "stop", "session_end")
CLIENTS = ("claude-code", "cursor", "codex", "gemini")

CLAUDE_CODE_EVENTS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "prompt",
    "PostToolUse": "tool_use",
    "PostToolUseFailure": "tool_use",
    "PreCompact": "pre_compact",
    "Stop": "stop",
    "SessionEnd": "session_end",
}
CURSOR_EVENTS = {
    "sessionStart": "session_start",
    "beforeSubmitPrompt": "prompt",
    "postToolUse": "tool_use",
    "postToolUseFailure": "tool_use",
    "afterShellExecution": "tool_use",
    "afterMCPExecution": "tool_use",
    # The "before" hooks carry no result; they are accepted so a misconfigured hook does not
    # error, and marked extra["phase"] = "before" so the caller can skip or keep them.
    "beforeShellExecution": "tool_use",
    "beforeMCPExecution": "tool_use",
    "afterFileEdit": "file_edit",
    "preCompact": "pre_compact",
    "stop": "stop",
    "sessionEnd": "session_end",
}

def decode_payload(raw: bytes) -> Any:
    """Decode a hook's stdin into JSON: invalid UTF-8 becomes U+FFFD, control characters inside
    strings are accepted; whatever nests deeper than MAX_DEPTH becomes TRUNCATED_DEPTH (the rest of the
    event is kept); empty input or invalid JSON raise HookInputError."""
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, (bytes, bytearray, memoryview)):
        text = bytes(raw).decode("utf-8", errors="replace")
    else:
        raise HookInputError(f"hook input must be bytes, got {type(raw).__name__}")
    text = text.strip(" \t\r\n\x00\ufeff")
    if not text:
        raise HookInputError("empty hook input: expected a JSON object on stdin")
    try:
        try:
            value = json.loads(text, strict=False)
        except RecursionError:  # deeper than the parser goes: cut the deep parts out of the text first
            value = json.loads(_prune_deep(text, MAX_DEPTH), strict=False)
    except (ValueError, RecursionError) as exc:
        raise HookInputError(f"hook input is not valid JSON: {exc}") from None
    return _clean(value, 0)


_JSON_TOKEN = lazy(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def _prune_deep(text: str, limit: int) -> str:
    """The JSON text with every array or object that opens at depth `limit` replaced by TRUNCATED_DEPTH."""
    out: list[str] = []
    depth, kept_upto, cut_from = 0, 0, -1
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token == "[" or token == "{":
            if depth == limit and cut_from < 0:
                cut_from = m.start()
            depth += 1
        elif token == "]" or token == "}":
            depth -= 1
            if depth == limit and cut_from >= 0:
                out += [text[kept_upto:cut_from], json.dumps(TRUNCATED_DEPTH)]
                kept_upto, cut_from = m.end(), -1
    return "".join(out) + text[kept_upto:]


def parse_hook_event(client: str, event_name: str, payload: Any) -> HookEvent:
    """Map one decoded hook payload to a HookEvent.

    client is one of CLIENTS; event_name is the client's own hook name (matched
    case-insensitively); a `hook_event_name` in the payload that disagrees is recorded in
    extra["payload_event"] and the argument wins. Raises HookInputError, and nothing else, for an
    unknown client or event, a payload that is not an object, or a missing session id.
    """
    client_key = client.strip().lower().replace("_", "-") if isinstance(client, str) else ""
    if client_key == "claude":
        client_key = "claude-code"
    if client_key not in CLIENTS:
        raise HookInputError(f"unknown client {client!r}: expected one of {', '.join(CLIENTS)}")
    if client_key in ("codex", "gemini"):
        from . import events_codex_gemini as other

        table = other.CODEX_EVENTS if client_key == "codex" else other.GEMINI_EVENTS
    else:
        table = CLAUDE_CODE_EVENTS if client_key == "claude-code" else CURSOR_EVENTS
    raw_event = _lookup_event(table, event_name)
    if raw_event is None:
        raise HookInputError(f"unknown {client_key} hook event {event_name!r}: expected one of {', '.join(table)}")
    if not isinstance(payload, dict):
        raise HookInputError(f"hook payload must be a JSON object, got {type(payload).__name__}")
    payload = _clean(payload, 0)
    if client_key == "claude-code":
        ev = _from_claude_code(raw_event, payload)
    elif client_key == "cursor":
        ev = _from_cursor(raw_event, payload)
    elif client_key == "codex":
        ev = other.from_codex(raw_event, payload)
    else:
        ev = other.from_gemini(raw_event, payload)
    declared = payload.get("hook_event_name")
    if isinstance(declared, str) and declared.lower() != raw_event.lower():
        ev.extra["payload_event"] = declared
    return ev


def event_fingerprint(ev: HookEvent) -> str:
    """sha256 hex of what the event says happened (not when): equal for repeated identical
    events, different when the command, input or output differ."""
    body = [ev.event, ev.tool, ev.tool_input, ev.tool_output, ev.prompt, ev.files]
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=repr)
    return sha256(text.encode("ascii")).hexdigest()


def _lookup_event(table: dict[str, str], name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    if name in table:
        return name
    lowered = name.strip().lower()
    return next((raw for raw in table if raw.lower() == lowered), None)


def _from_claude_code(raw_event: str, payload: dict) -> HookEvent:
    ev = HookEvent(
        client="claude-code",
        event=CLAUDE_CODE_EVENTS[raw_event],
        raw_event=raw_event,
        session_id=_session_id(payload, ("session_id",)),
        cwd=_str(payload.get("cwd")),
        extra=_extra(payload),
    )
    if raw_event == "UserPromptSubmit":
        ev.prompt = payload.get("prompt") if isinstance(payload.get("prompt"), str) else None
    if ev.event == "tool_use":
        ev.tool = _str(payload.get("tool_name"))
        ev.tool_input = payload.get("tool_input")
        response = payload.get("tool_response")
        if raw_event == "PostToolUseFailure":
            response = payload.get("error", response)
            ev.extra["is_error"] = True
        ev.tool_output, facts = render_tool_output(response)
        for key, value in facts.items():
            ev.extra.setdefault(key, value)
        ev.files = _files(ev.tool_input, response if isinstance(response, dict) else None)
    return ev


def _from_cursor(raw_event: str, payload: dict) -> HookEvent:
    roots = payload.get("workspace_roots")
    root = next((r for r in roots if _str(r)), None) if isinstance(roots, list) else None
    ev = HookEvent(
        client="cursor",
        event=CURSOR_EVENTS[raw_event],
        raw_event=raw_event,
        session_id=_session_id(payload, ("conversation_id", "session_id", "generation_id")),
        cwd=root or _str(payload.get("cwd")),
        extra=_extra(payload),
    )
    if raw_event.startswith("before") and ev.event == "tool_use":
        ev.extra["phase"] = "before"
    if _str(payload.get("cwd")) and payload.get("cwd") != ev.cwd:
        ev.extra["command_cwd"] = payload["cwd"]
    if raw_event == "beforeSubmitPrompt":
        ev.prompt = payload.get("prompt") if isinstance(payload.get("prompt"), str) else None
        attached = _attachment_paths(payload.get("attachments"))
        if attached:
            ev.extra["attachments"] = attached
    elif raw_event in ("afterShellExecution", "beforeShellExecution"):
        ev.tool = "Shell"
        command = payload.get("command")
        ev.tool_input = {"command": command} if isinstance(command, str) else {}
        ev.tool_output, facts = render_tool_output(payload.get("output"))
        _merge(ev.extra, facts)
    elif raw_event in ("afterMCPExecution", "beforeMCPExecution"):
        name = _str(payload.get("tool_name")) or "unknown"
        ev.tool = name if name.startswith(("MCP:", "mcp__")) else f"MCP:{name}"
        ev.tool_input = _maybe_json(payload.get("tool_input"))
        ev.tool_output, facts = render_tool_output(_maybe_json(payload.get("result_json")))
        _merge(ev.extra, facts)
    elif raw_event in ("postToolUse", "postToolUseFailure"):
        ev.tool = _str(payload.get("tool_name"))
        ev.tool_input = _maybe_json(payload.get("tool_input"))
        response = _maybe_json(payload.get("tool_output"))
        if raw_event == "postToolUseFailure":
            response = payload.get("error_message", response)
            ev.extra["is_error"] = True
        ev.tool_output, facts = render_tool_output(response)
        _merge(ev.extra, facts)
        ev.files = _files(ev.tool_input)
    elif raw_event == "afterFileEdit":
        edits = payload.get("edits")
        ev.tool_input = {
            "file_path": payload.get("file_path"),
            "edits": [e for e in edits if isinstance(e, dict)] if isinstance(edits, list) else [],
        }
        ev.files = _files(payload.get("file_path"))
    return ev


def _attachment_paths(attachments: Any) -> list[str]:
    if not isinstance(attachments, list):
        return []
    paths = []
    for item in attachments[:50]:
        if isinstance(item, dict):
            path = item.get("file_path", item.get("filePath"))
            if isinstance(path, str) and path:
                paths.append(path)
    return paths
