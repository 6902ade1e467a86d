"""Codex's session logs as data: the rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`,
`archived_sessions/` for archived ones) that its hooks name in `transcript_path`.

Each line is `{"timestamp", "type", "payload"}`: `session_meta` (the session's id, working directory, Codex
version), `turn_context` (a turn's directory), `response_item` (what the model saw and said, in the Responses
API's shapes: messages, `function_call` / `custom_tool_call` and their outputs, `compaction`), and `event_msg`
(what happened: the typed prompts and the agent's messages, commands with their exit codes, turn ends). Codex
0.17x writes `item_completed` events (UserMessage, AgentMessage, CommandExecution, FileChange); older versions
wrote `user_message`, `agent_message`, `exec_command_end`, `task_complete`; both are read. The oldest logs (no
wrapper, the items themselves) are read from their response items.

`read_session` gives the session as client-neutral steps; `codex_events` the hook calls Codex would have made
(what `agentmem import-history codex` replays); `read_turns` the typed prompts with the agent's replies (what
the summariser reads). These are Codex's internal formats, not a published interface: what does not have the
expected shape is skipped, never an error.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .events_codex_gemini import codex_exit_code
from .redact import redact
from .transcript import MAX_TRANSCRIPT_BYTES, Turn, _clip, clean_prompt, is_noise, json_objects, relative_to

SHELL_TOOLS = frozenset({"exec_command", "shell", "shell_command", "local_shell", "container.exec"})
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<user_shell_command>",
             "<turn_aborted>", "<skills_instructions>", "<permissions instructions>", "<collaboration_mode>",
             "<INSTRUCTIONS>", "<hook_prompt")
_EXEC_HEADER = re.compile(r"\A(?:Chunk ID: [^\n]*\n)?(?:Wall time: [^\n]*\n)?(?:Process exited with code [^\n]*\n)?"
                          r"(?:Original token count: [^\n]*\n)?Output:\n", re.DOTALL)
_CWD = re.compile(r"<cwd>([^<\n]+)</cwd>")


@dataclass
class Step:
    """One thing that happened: kind "prompt" (text), "reply" (text), "tool" (name, input, output, call_id,
    exit_code), "compact", or "stop" (text: the turn's last message); `at` is unix time or None."""

    kind: str
    at: float | None
    text: str = ""
    name: str = ""
    input: Any = None
    output: Any = None
    call_id: str = ""
    exit_code: int | None = None


@dataclass
class CodexSession:
    """A rollout file read: the session's id, directory, times and steps."""

    path: Path
    session_id: str = ""
    cwd: str = ""
    started: float | None = None
    ended: float | None = None
    steps: list[Step] = field(default_factory=list)


def epoch(stamp: Any) -> float | None:
    """Unix time of an ISO 8601 timestamp, or None."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def is_rollout(first_line: str) -> bool:
    """Whether a .jsonl file whose first line is `first_line` is a Codex rollout."""
    try:
        record = json.loads(first_line)
    except ValueError:
        return False
    return isinstance(record, dict) and (record.get("type") == "session_meta" or (
        "payload" in record and record.get("type") in ("response_item", "event_msg", "turn_context")))


def records_of(path: str | Path, limit: int = MAX_TRANSCRIPT_BYTES) -> list[dict]:
    """The JSON objects of a rollout file, in order, skipping broken lines (the first `limit` bytes)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return json_objects(handle.read(limit).split("\n"))


def read_session(path: str | Path) -> CodexSession:
    """The steps of the rollout file at `path` (OSError when it cannot be read)."""
    session = CodexSession(Path(path))
    records = records_of(path)
    events = [r.get("payload") for r in records if r.get("type") == "event_msg" and isinstance(r.get("payload"), dict)]
    typed = any(_event_kind(e) in ("user_message", "UserMessage") for e in events)
    said = any(_event_kind(e) in ("agent_message", "AgentMessage") for e in events)
    pending: dict[str, tuple[str, Any]] = {}
    exits: dict[str, int] = {}
    for record in records:
        at = epoch(record.get("timestamp"))
        kind = record.get("type")
        payload = record.get("payload") if isinstance(record.get("payload"), dict) else None
        if payload is None and kind not in ("session_meta", "turn_context", "event_msg", "response_item"):
            payload, kind = record, "response_item"  # the oldest logs: the items themselves
        if payload is None:
            continue
        session.started = session.started if session.started is not None else at
        session.ended = at if at is not None else session.ended
        if kind == "session_meta":
            session.session_id = session.session_id or _text(payload.get("id") or payload.get("session_id"))
            session.cwd = session.cwd or _text(payload.get("cwd"))
            session.started = epoch(payload.get("timestamp")) or session.started
        elif kind == "turn_context":
            session.cwd = session.cwd or _text(payload.get("cwd"))
        elif kind == "event_msg":
            _event_step(session, payload, at, typed, said, exits)
        elif kind == "response_item":
            _item_step(session, payload, at, typed, said, pending)
        elif kind == "compacted":
            session.steps.append(Step("compact", at))
    if not session.session_id and isinstance(records[:1] and records[0].get("id"), str):
        session.session_id = records[0]["id"]  # the oldest logs: a first line with the session's id
    for step in session.steps:
        if step.kind == "tool" and step.exit_code is None:
            step.exit_code = exits.get(step.call_id)
    return session


def _event_kind(payload: Any) -> str:
    if not isinstance(payload, dict):
        return ""
    item = payload.get("item")
    if payload.get("type") == "item_completed" and isinstance(item, dict):
        return str(item.get("type") or "")
    return str(payload.get("type") or "")


def _event_step(session: CodexSession, payload: dict, at: float | None, typed: bool, said: bool,
                exits: dict[str, int]) -> None:
    kind = _event_kind(payload)
    item = payload.get("item") if isinstance(payload.get("item"), dict) else {}
    if kind in ("user_message", "UserMessage") and typed:
        text = _text(payload.get("message")) if kind == "user_message" else _content_text(item.get("content"))
        if text.strip() and not text.lstrip().startswith(_INJECTED):
            session.steps.append(Step("prompt", at, text=text))
    elif kind in ("agent_message", "AgentMessage") and said:
        text = _text(payload.get("message")) if kind == "agent_message" else _content_text(item.get("content"))
        if text.strip():
            session.steps.append(Step("reply", at, text=text))
    elif kind in ("CommandExecution", "exec_command_end"):
        call_id = _text(item.get("id") if kind == "CommandExecution" else payload.get("call_id"))
        code = codex_exit_code(payload, call_id)
        if call_id and code is not None:
            exits[call_id] = code
    elif kind in ("task_complete", "turn_aborted"):
        session.steps.append(Step("stop", at, text=_text(payload.get("last_agent_message"))))
    elif kind == "context_compacted":
        session.steps.append(Step("compact", at))


def _item_step(session: CodexSession, payload: dict, at: float | None, typed: bool, said: bool,
               pending: dict[str, tuple[str, Any]]) -> None:
    kind = payload.get("type")
    if kind == "message":
        text = _content_text(payload.get("content"))
        if not session.cwd and (found := _CWD.search(text)):
            session.cwd = found.group(1).strip()
        if payload.get("role") == "user" and not typed and text.strip() and not text.lstrip().startswith(_INJECTED):
            session.steps.append(Step("prompt", at, text=text))
        elif payload.get("role") == "assistant" and not said and text.strip():
            session.steps.append(Step("reply", at, text=text))
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        call_id = _text(payload.get("call_id") or payload.get("id"))
        if kind == "local_shell_call":
            pending[call_id] = ("local_shell", payload.get("action"))
        else:
            raw = payload.get("arguments") if kind == "function_call" else payload.get("input")
            pending[call_id] = (_text(payload.get("name")), _arguments(raw))
    elif kind in ("function_call_output", "custom_tool_call_output"):
        call_id = _text(payload.get("call_id"))
        if call_id in pending:
            name, arguments = pending.pop(call_id)
            output = payload.get("output")
            session.steps.append(Step("tool", at, name=name, input=arguments, output=output, call_id=call_id,
                                      exit_code=codex_exit_code(payload, call_id)))
    elif kind == "compaction":
        session.steps.append(Step("compact", at))


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str) and raw.lstrip()[:1] == "{":
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") in (
            "input_text", "output_text", "text", "Text")]
        return "\n".join(t for t in texts if isinstance(t, str))
    return ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def hook_tool(step: Step) -> tuple[str, Any, Any] | None:
    """(tool_name, tool_input, tool_response) of a tool step as Codex's PostToolUse hook sends them, or None for a
    tool whose calls fire no hook (plans, images, web search, a shell's later input)."""
    name, args = step.name, step.input if step.input is not None else {}
    if name in SHELL_TOOLS:
        command = args.get("cmd") or args.get("command") if isinstance(args, dict) else None
        if isinstance(command, list):
            command = _argv_command(command)
        if not isinstance(command, str) or not command.strip():
            return None
        return "Bash", {"command": command}, _shell_output(step.output)
    if name == "apply_patch":
        patch = args.get("input") or args.get("patch") or args.get("command") if isinstance(args, dict) else args
        return ("apply_patch", {"command": patch}, _output_text(step.output)) if isinstance(patch, str) else None
    if "__" in name:  # an MCP server's tool
        return (name if name.startswith("mcp__") else f"mcp__{name}"), args, _output_text(step.output)
    return None


def _argv_command(argv: list[Any]) -> str:
    parts = [str(a) for a in argv]
    if len(parts) == 3 and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and parts[1] in ("-lc", "-c"):
        return parts[2]
    return shlex.join(parts)


def _output_text(output: Any) -> Any:
    if isinstance(output, str) and output.lstrip().startswith("{"):
        try:
            decoded = json.loads(output)
        except ValueError:
            return output
        if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
            return decoded["output"]
    return output


def _shell_output(output: Any) -> Any:
    """A command's output as Codex's hooks give it: without the header the model reads before it."""
    text = _output_text(output)
    return _EXEC_HEADER.sub("", text, count=1) if isinstance(text, str) else text


def codex_events(session: CodexSession) -> list[tuple[str, dict, float | None]]:
    """The ordered (Codex hook event name, stdin payload, when) its hooks would have sent for `session`:
    SessionStart, UserPromptSubmit per typed prompt, PostToolUse per shell command, patch and MCP call (with the
    exit code the log kept, which live hooks read from the same log), PreCompact and SessionStart ("compact") at
    a compaction, Stop at each turn's end, SessionEnd."""
    base = {"session_id": session.session_id, "transcript_path": str(session.path), "cwd": session.cwd}
    events: list[tuple[str, dict, float | None]] = [
        ("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}, session.started)]
    in_turn = False
    for step in session.steps:
        if step.kind == "prompt":
            if in_turn:
                events.append(("Stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False}, step.at))
            events.append(("UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit", "prompt": step.text},
                           step.at))
            in_turn = True
        elif step.kind == "tool" and (shaped := hook_tool(step)) is not None:
            name, tool_input, response = shaped
            payload = {**base, "hook_event_name": "PostToolUse", "tool_name": name, "tool_input": tool_input,
                       "tool_response": response, "tool_use_id": step.call_id}
            if step.exit_code is not None:
                payload["exit_code"] = step.exit_code
            events.append(("PostToolUse", payload, step.at))
        elif step.kind == "compact":
            events.append(("PreCompact", {**base, "hook_event_name": "PreCompact", "trigger": "auto"}, step.at))
            events.append(("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "compact"}, step.at))
        elif step.kind == "stop" and in_turn:
            events.append(("Stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False,
                                    "last_assistant_message": step.text or None}, step.at))
            in_turn = False
    if in_turn:
        events.append(("Stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False}, session.ended))
    events.append(("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "other"}, session.ended))
    return events


def read_turns(path: str) -> list[Turn]:
    """The turns of a Codex rollout: each typed prompt with the agent's messages until the next one, redacted,
    paths relative to the session's directory. [] when the file cannot be read."""
    try:
        session = read_session(path)
    except OSError:
        return []
    root = session.cwd.rstrip("/") or None
    turns: list[Turn] = []
    for step in session.steps:
        if step.kind == "prompt" and not is_noise(step.text):
            stamp = datetime.fromtimestamp(step.at).astimezone().isoformat() if step.at else None
            turns.append(Turn(prompt=_clip(redact(relative_to(clean_prompt(step.text), root)), 2000),
                              timestamp=stamp))
        elif step.kind == "reply" and turns and not is_noise(step.text):
            turns[-1].replies.append(_clip(redact(relative_to(step.text, root))))
    return [t for t in turns if t.prompt]
