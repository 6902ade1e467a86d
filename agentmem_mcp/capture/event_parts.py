"""The pieces every client's hook events are made of: `HookEvent`, the rules for session ids, the extra fields
kept, the files a tool call names, and how a tool's response becomes text (`render_tool_output`). `events.py`
(Claude Code, Cursor) and `events_codex_gemini.py` (Codex, Gemini CLI) build on them.

Pure and standard-library only: this runs in the short-lived hook process on every tool call.
"""

from __future__ import annotations

import json

from ..trust.lazy_regex import lazy

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

MAX_DEPTH = 200
TRUNCATED_DEPTH = "[TRUNCATED:depth]"  # what stands for a part nested deeper than MAX_DEPTH


class HookInputError(ValueError):
    """The hook input cannot be turned into an event; the message says what was wrong."""


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


def render_tool_output(response: Any) -> tuple[str | None, dict[str, Any]]:
    """Render a tool's response to text, returning (text, structured facts such as exit_code)."""
    facts: dict[str, Any] = {}
    text = _render(response, facts, 0) or None
    if text and "exit_code" not in facts:
        match = _EXIT_CODE_RE.match(text)
        if match:
            facts["exit_code"] = int(match.group(1))
    return text, facts


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


def _merge(extra: dict[str, Any], facts: dict[str, Any]) -> None:
    for key, value in facts.items():
        extra.setdefault(key, value)
