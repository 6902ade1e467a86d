"""Normalise the JSON that Codex and Gemini CLI send to hooks into `HookEvent`s (see `events.py` for the others).

Standard-library only: this runs in the short-lived hook process. Pure, but `exit_code_from_log`, which reads the
end of the session log Codex names for the exit code its PostToolUse payload lacks.

Codex (0.171; the JSON schemas its binary ships, `*.command.input.schema.json`) sends `session_id`,
`transcript_path` (its rollout file, or null), `cwd`, `hook_event_name`, `model`, plus per event: SessionStart
`permission_mode`, `source` (startup | resume | clear | compact | fork); UserPromptSubmit `turn_id`, `prompt`;
Pre/PostToolUse `turn_id`, `tool_name` ("Bash" for shell commands, "apply_patch" for edits, `mcp__server__tool`),
`tool_input` (Bash and apply_patch: {"command": ...}, the patch text for apply_patch), `tool_use_id`, and
PostToolUse `tool_response` (the command's output as text: no exit code); PreCompact `trigger`; Stop
`stop_hook_active`, `last_assistant_message`; SessionEnd `reason`.

Gemini CLI (0.61; docs/hooks/reference.md in its package) sends `session_id`, `transcript_path`, `cwd`,
`hook_event_name`, `timestamp`, plus per event: SessionStart `source`; BeforeAgent `prompt`; Before/AfterTool
`tool_name` (run_shell_command, read_file, write_file, replace, glob, grep_search, ..., or an MCP tool with
`mcp_context` {server_name, tool_name, ...}), `tool_input`, AfterTool `tool_response` {llmContent, returnDisplay,
error?}; AfterAgent `prompt`, `prompt_response`, `stop_hook_active`; PreCompress `trigger`; SessionEnd `reason`.
"""

from __future__ import annotations

import json
import re

from .event_parts import HookEvent, _extra, _files, _merge, _session_id, _str, render_tool_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CODEX_EVENTS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "prompt",
    "PostToolUse": "tool_use",
    "PreToolUse": "tool_use",  # carries no result: accepted, marked extra["phase"] = "before", not recorded
    "PreCompact": "pre_compact",
    "Stop": "stop",
    "SessionEnd": "session_end",
}
GEMINI_EVENTS = {
    "SessionStart": "session_start",
    "BeforeAgent": "prompt",
    "AfterTool": "tool_use",
    "BeforeTool": "tool_use",  # as Codex's PreToolUse
    "PreCompress": "pre_compact",
    "AfterAgent": "stop",
    "SessionEnd": "session_end",
}
# What Gemini CLI adds to a typed prompt: SessionStart hooks' context, wrapped, before it (in a session with no
# terminal) and BeforeAgent hooks' context after it (agentmem's own starts with its "# agentmem:" header)
HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>\s*|\n\n# agentmem: .*\Z", re.DOTALL)
_GEMINI_EXIT = re.compile(r"^Exit Code: (-?\d{1,9})\s*$", re.MULTILINE)
_GEMINI_WRAPPER = re.compile(r"\A\s*<untrusted_context[^>]*>\n?(.*?)\n?</untrusted_context>\s*\Z", re.DOTALL)
_CODEX_EXITED = re.compile(r"^Process exited with code (-?\d{1,9})\s*$", re.MULTILINE)
LOG_TAIL_BYTES = 512 * 1024  # how much of the end of Codex's session log a hook reads for an exit code
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$")
_PATCH_MOVE = re.compile(r"^\*\*\* Move to: (.+?)\s*$")


def from_codex(raw_event: str, payload: dict) -> HookEvent:
    """A Codex hook payload as a HookEvent."""
    ev = HookEvent(client="codex", event=CODEX_EVENTS[raw_event], raw_event=raw_event,
                   session_id=_session_id(payload, ("session_id",)), cwd=_str(payload.get("cwd")),
                   extra=_extra(payload))
    if raw_event == "PreToolUse":
        ev.extra["phase"] = "before"
    if raw_event == "UserPromptSubmit":
        ev.prompt = payload.get("prompt") if isinstance(payload.get("prompt"), str) else None
    if ev.event == "tool_use":
        ev.tool = _str(payload.get("tool_name"))
        ev.tool_input = payload.get("tool_input")
        if ev.tool == "apply_patch":
            ev.tool_input, ev.files = patch_edits(ev.tool_input, ev.cwd)
        else:
            ev.files = _files(ev.tool_input)
        ev.tool_output, facts = render_tool_output(payload.get("tool_response"))
        _merge(ev.extra, facts)
        if _int(payload.get("exit_code")) is not None:  # not Codex's: what `import-history codex` read in its log
            ev.extra["exit_code"] = payload["exit_code"]
    return ev


def from_gemini(raw_event: str, payload: dict) -> HookEvent:
    """A Gemini CLI hook payload as a HookEvent."""
    ev = HookEvent(client="gemini", event=GEMINI_EVENTS[raw_event], raw_event=raw_event,
                   session_id=_session_id(payload, ("session_id",)), cwd=_str(payload.get("cwd")),
                   extra=_extra(payload))
    if raw_event == "BeforeTool":
        ev.extra["phase"] = "before"
    if raw_event == "BeforeAgent":
        ev.prompt = typed_prompt(payload.get("prompt"))
    elif raw_event == "AfterAgent" and isinstance(payload.get("prompt_response"), str):
        ev.extra["last_assistant_message"] = payload["prompt_response"]
    if ev.event == "tool_use":
        ev.tool = _gemini_tool(payload)
        ev.tool_input = payload.get("tool_input")
        ev.files = _files(ev.tool_input)
        ev.tool_output, facts = _gemini_result(payload.get("tool_response"), ev.tool or "")
        _merge(ev.extra, facts)
    return ev


def typed_prompt(prompt: Any) -> str | None:
    """What the user typed, from a Gemini CLI prompt that may carry hooks' context (agentmem's own briefing among
    it): never stored as if the user had said it."""
    if not isinstance(prompt, str):
        return None
    return HOOK_CONTEXT.sub("", prompt).strip() if "<hook_context>" in prompt or "# agentmem: " in prompt else prompt


def _gemini_tool(payload: dict) -> str | None:
    """The tool's name; an MCP tool as `mcp__<server>__<tool>`, as Claude Code and Codex name theirs."""
    context = payload.get("mcp_context")
    if isinstance(context, dict) and _str(context.get("server_name")) and _str(context.get("tool_name")):
        return f"mcp__{context['server_name']}__{context['tool_name']}"
    return _str(payload.get("tool_name"))


def _gemini_result(response: Any, tool: str) -> tuple[str | None, dict[str, Any]]:
    """(text, facts) of an AfterTool `tool_response`: its error when it has one, else what the model read
    (`llmContent`, without Gemini CLI's <untrusted_context> wrapper), a shell command's exit code too."""
    if not isinstance(response, dict):
        return render_tool_output(response)
    error = response.get("error")
    if isinstance(error, dict) and (error.get("message") or error.get("type")):
        text, facts = render_tool_output(error.get("message") or error.get("type"))
        facts["is_error"] = True
        return text, facts
    content = response.get("llmContent")
    text, facts = render_tool_output(content if content not in (None, "", []) else response.get("returnDisplay"))
    if text:
        wrapped = _GEMINI_WRAPPER.match(text)
        text = wrapped.group(1) if wrapped else text
    if tool == "run_shell_command" and text is not None:
        code = _GEMINI_EXIT.search(text)
        facts.setdefault("exit_code", int(code.group(1)) if code else 0)  # Gemini CLI writes only a non-zero code
        shown = response.get("returnDisplay")
        if isinstance(shown, str) and shown:
            text = shown
    return text, facts


def patch_edits(tool_input: Any, cwd: str | None) -> tuple[Any, list[str]]:
    """Codex's apply_patch input ({"command": "*** Begin Patch ..."}) as the edits it makes: {"file_path": the
    first file, "edits": [{"old_string", "new_string"}, ...], "files": every file}, and the files (made absolute
    from `cwd`). Anything else is returned as it is."""
    patch = tool_input.get("command") if isinstance(tool_input, dict) else tool_input
    if not isinstance(patch, str) or "*** " not in patch:
        return tool_input, []
    files: list[str] = []
    edits: list[dict[str, str]] = []
    old: list[str] = []
    new: list[str] = []
    operations: list[str] = []

    def flush() -> None:
        if old or new:
            edits.append({"old_string": "\n".join(old), "new_string": "\n".join(new)})
        old.clear()
        new.clear()

    for line in patch.splitlines()[:20000]:
        header, moved = _PATCH_FILE.match(line), _PATCH_MOVE.match(line)
        if header or moved:
            flush()
            path = _absolute((header or moved).group(2) if header else moved.group(1), cwd)
            if path not in files:
                files.append(path)
            operations.append(header.group(1).lower() if header else "move")
        elif line.startswith("@@") or line.startswith("*** End"):
            flush()
        elif line.startswith("+"):
            new.append(line[1:])
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
    flush()
    if not files:
        return tool_input, []
    shaped: dict[str, Any] = {"file_path": files[0], "edits": edits, "files": files}
    if operations and all(op == "add" for op in operations):
        shaped["operation"] = "create"
    elif operations and all(op == "delete" for op in operations):
        shaped["operation"] = "delete"
    return shaped, files[:50]


def _absolute(path: str, cwd: str | None) -> str:
    path = path.strip()
    if path.startswith("/") or not cwd or re.match(r"^[A-Za-z]:[\\/]", path):
        return path
    return cwd.rstrip("/") + "/" + path.removeprefix("./")


def exit_code_from_log(path: Any, call_id: Any) -> int | None:
    """The exit code of Codex's command `call_id`, from the last LOG_TAIL_BYTES of its session log (`path`, the
    rollout .jsonl its hooks name): Codex writes the command's end there before it runs PostToolUse. None when
    the log, the call or its code is not there."""
    if not isinstance(path, str) or not path.endswith(".jsonl") or not isinstance(call_id, str) or not call_id:
        return None
    try:
        with open(path, "rb") as log:
            log.seek(0, 2)
            log.seek(max(0, log.tell() - LOG_TAIL_BYTES))
            tail = log.read(LOG_TAIL_BYTES)
    except OSError:
        return None
    needle = json.dumps(call_id).encode()
    for line in reversed(tail.split(b"\n")):
        if needle not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        code = codex_exit_code(record.get("payload") if isinstance(record, dict) else None, call_id)
        if code is not None:
            return code
    return None


def codex_exit_code(payload: Any, call_id: str) -> int | None:
    """The exit code a rollout record's payload gives for command `call_id` (None: it gives none): a completed
    CommandExecution item (Codex 0.17x), an exec_command_end event (older Codex), or the "Process exited with
    code N" line of the call's output."""
    if not isinstance(payload, dict):
        return None
    kind = payload.get("type")
    item = payload.get("item") if kind == "item_completed" else None
    if isinstance(item, dict) and item.get("id") == call_id and _int(item.get("exit_code")) is not None:
        return _int(item.get("exit_code"))
    if kind == "exec_command_end" and payload.get("call_id") == call_id:
        return _int(payload.get("exit_code"))
    if kind == "function_call_output" and payload.get("call_id") == call_id:
        output = payload.get("output")
        if isinstance(output, str) and output.lstrip().startswith("{"):
            try:
                metadata = json.loads(output).get("metadata")
            except (ValueError, AttributeError):
                metadata = None
            if isinstance(metadata, dict):
                return _int(metadata.get("exit_code"))
        match = _CODEX_EXITED.search(output) if isinstance(output, str) else None
        return int(match.group(1)) if match else None
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
