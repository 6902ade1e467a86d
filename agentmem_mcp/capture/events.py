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

from ..lazy_regex import lazy

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


class HookInputError(ValueError):
    """The hook input cannot be turned into an event; the message says what was wrong."""


EVENTS = ("session_start", "prompt", "tool_use", "file_edit", "pre_compact", "stop", "session_end")
CLIENTS = ("claude-code", "cursor", "codex", "gemini")
MAX_DEPTH = 200
TRUNCATED_DEPTH = "[TRUNCATED:depth]"  # what stands for a part nested deeper than MAX_DEPTH

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

# what a session id may be as it is (anything else is hashed): a set, not a regex, for the hook's start-up
_SESSION_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")
_EXIT_CODE_RE = lazy(r"\A\s*(?:Error:\s*)?Exit code:?\s+(-?\d{1,9})\b")
_PATH_KEYS = ("file_path", "notebook_path", "path", "filePath", "target_file", "target_notebook")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "returnCode", "return_code")
_BULKY_KEYS = frozenset({"originalFile", "structuredPatch", "usage"})
_SCALARS = (str, int, float, bool, type(None))
_EXTRA_KEYS = (
    "transcript_path", "permission_mode", "source", "reason", "trigger", "custom_instructions", "stop_hook_active",
    "tool_use_id", "model", "is_interrupt", "last_assistant_message", "agent_id", "agent_type", "generation_id",
    "cursor_version", "composer_mode", "is_background_agent", "status", "loop_count", "duration", "duration_ms",
    "final_status", "error_message", "failure_type",
)  # fmt: skip


class HookEvent:
    """One hook call, with the client's field names mapped to ours.

    A plain class, not a dataclass: every hook process imports this module, and `dataclasses`
    (with `inspect`) costs ~8 ms of start-up."""

    __slots__ = _FIELDS = ("client", "event", "raw_event", "session_id", "cwd", "tool", "tool_input",
                           "tool_output", "prompt", "files", "extra")

    def __init__(self, client: str, event: str, raw_event: str, session_id: str, cwd: str | None = None,
                 tool: str | None = None, tool_input: Any = None, tool_output: str | None = None,
                 prompt: str | None = None, files: list[str] | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        self.client, self.event, self.raw_event, self.session_id = client, event, raw_event, session_id
        self.cwd, self.tool, self.tool_input, self.tool_output = cwd, tool, tool_input, tool_output
        self.prompt = prompt
        self.files: list[str] = [] if files is None else files
        self.extra: dict[str, Any] = {} if extra is None else extra

    def replace(self, **changes: Any) -> HookEvent:
        """A copy with some fields changed."""
        return HookEvent(**({name: getattr(self, name) for name in self._FIELDS} | changes))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HookEvent):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    __hash__ = None  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        return "HookEvent(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELDS) + ")"


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


def render_tool_output(response: Any) -> tuple[str | None, dict[str, Any]]:
    """Render a tool's response to text, returning (text, structured facts such as exit_code)."""
    facts: dict[str, Any] = {}
    text = _render(response, facts, 0) or None
    if text and "exit_code" not in facts:
        match = _EXIT_CODE_RE.match(text)
        if match:
            facts["exit_code"] = int(match.group(1))
    return text, facts


def _lookup_event(table: dict[str, str], name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    if name in table:
        return name
    lowered = name.strip().lower()
    return next((raw for raw in table if raw.lower() == lowered), None)


def _clean(value: Any, depth: int) -> Any:
    """Copy JSON-like data, replacing unencodable strings and what nests deeper than MAX_DEPTH."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return TRUNCATED_DEPTH
    if isinstance(value, dict):
        return {_text(str(k)): _clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v, depth + 1) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return hex(value)  # str() of a huge int raises in Python 3.11+, and no hook sends one
    if isinstance(value, _SCALARS):
        return value
    return _text(repr(value))


def _text(value: str) -> str:
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", errors="replace").decode("utf-8")
    return value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _session_id(payload: dict, keys: tuple[str, ...]) -> str:
    wrong = None
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            value = value.strip()
            if len(value) <= 200 and _SESSION_ID_CHARS.issuperset(value):
                return value
            return sha256(value.encode("utf-8")).hexdigest()[:32]
        if value is not None and not isinstance(value, str):
            wrong = wrong or (key, type(value).__name__)
    if wrong:
        raise HookInputError(f"hook payload field {wrong[0]!r} must be a string, got {wrong[1]}")
    raise HookInputError(f"hook payload has no session id: expected a non-empty {' or '.join(keys)}")


def _maybe_json(value: Any) -> Any:
    """Cursor sends some structured fields (tool_input, tool_output, result_json) as JSON text."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return _clean(json.loads(value, strict=False), 0)
        except (ValueError, RecursionError, HookInputError):
            return value
    return value


def _render(value: Any, facts: dict[str, Any], depth: int) -> str | None:
    if value is None or depth > 8:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        parts = [_render_block(item, facts, depth) for item in value]
        return "\n".join(p for p in parts if p) or None
    if not isinstance(value, dict):
        return None
    _collect_facts(value, facts)
    if "stdout" in value or "stderr" in value:
        streams = [value.get("stdout"), value.get("stderr")]
        return "\n".join(s for s in streams if isinstance(s, str) and s) or None
    path = value.get("filePath")
    if isinstance(path, str) and ("oldString" in value or value.get("type") in ("create", "update")):
        return f"{'Created' if value.get('type') == 'create' else 'Updated'} {path}"
    inner = value.get("file")
    if isinstance(inner, dict) and isinstance(inner.get("content"), str):
        _collect_facts(inner, facts)
        return inner["content"]
    for key in ("content", "output", "result", "text", "error", "message"):
        rendered = value.get(key)
        if isinstance(rendered, (str, list)):
            return _render(rendered, facts, depth + 1)
    if isinstance(value.get("task"), dict):
        return _render(value["task"], facts, depth + 1)
    if isinstance(value.get("filenames"), list):
        names = [n for n in value["filenames"] if isinstance(n, str)]
        return "\n".join(names) or "No matches found"
    slim = {k: v for k, v in value.items() if k not in _BULKY_KEYS}
    if not slim:
        return None
    return json.dumps(slim, ensure_ascii=False, sort_keys=True, default=repr)


def _render_block(item: Any, facts: dict[str, Any], depth: int) -> str | None:
    if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
        return item["text"]
    if isinstance(item, dict) and item.get("type") in ("image", "document"):
        return f"[{item['type']}]"
    return _render(item, facts, depth + 1)


def _collect_facts(value: dict, facts: dict[str, Any]) -> None:
    for key in _EXIT_KEYS:
        code = value.get(key)
        if isinstance(code, int) and not isinstance(code, bool):
            facts.setdefault("exit_code", code)
    for key in ("is_error", "isError"):
        if isinstance(value.get(key), bool):
            facts.setdefault("is_error", value[key])
    renames = {
        "interrupted": "interrupted",
        "returnCodeInterpretation": "return_code_interpretation",
        "backgroundTaskId": "background_task_id",
        "startLine": "start_line",
        "numLines": "num_lines",
        "totalLines": "total_lines",
        "numFiles": "num_files",
        "retrieval_status": "retrieval_status",
        "status": "result_status",
    }
    for key, name in renames.items():
        if isinstance(value.get(key), (str, int, bool)):
            facts.setdefault(name, value[key])
    if value.get("type") in ("create", "update") and isinstance(value.get("filePath"), str):
        facts.setdefault("operation", value["type"])


def _files(*sources: Any) -> list[str]:
    found: list[str] = []
    for source in sources:
        candidates = [source] if isinstance(source, str) else []
        if isinstance(source, dict):
            candidates = [source.get(key) for key in _PATH_KEYS]
        for path in candidates:
            if isinstance(path, str) and path.strip() and len(path) <= 4096 and path not in found:
                found.append(path)
    return found[:50]


def _extra(payload: dict) -> dict[str, Any]:
    return {k: payload[k] for k in _EXTRA_KEYS if isinstance(payload.get(k), _SCALARS) and payload.get(k) is not None}


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


def _merge(extra: dict[str, Any], facts: dict[str, Any]) -> None:
    for key, value in facts.items():
        extra.setdefault(key, value)


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
