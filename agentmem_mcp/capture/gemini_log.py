"""Gemini CLI's session logs as data: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`, the file its
hooks name in `transcript_path` (`<project>` is the project's short name, or in older versions the SHA-256 of its
root; the folder's `.project_root` file, or `~/.gemini/projects.json`, says which folder it is).

Gemini CLI 0.61 writes JSON lines: a first line with `sessionId`, `projectHash`, `startTime`, then message
records (`id`, `timestamp`, `type`: "user" | "gemini" | "info" | "error" | ..., `content`: text or parts, on a
"gemini" message `toolCalls` with each call's `name`, `args`, `result`, `status`, `resultDisplay`), a record
written again under the same `id` as it grows, and `{"$set": {...}}` lines that update the session (a list of
`messages` among them). Older versions wrote one JSON object with the same fields and a `messages` list; both are
read. The first user message is Gemini CLI's own `<session_context>`, not a prompt.

`read_session` gives the session's messages; `gemini_events` the hook calls Gemini CLI would have made (what
`agentmem import-history gemini` replays); `read_turns` the typed prompts with the agent's replies (what the
summariser reads). These are Gemini CLI's internal formats: what does not have the expected shape is skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .codex_log import epoch
from .events_codex_gemini import typed_prompt
from .redact import redact
from .transcript import MAX_TRANSCRIPT_BYTES, Turn, _clip, clean_prompt, is_noise, json_objects, relative_to

_SETUP = ("<session_context>",)


@dataclass
class GeminiSession:
    """A Gemini CLI session log read: its id, project hash, times and messages (in order, each the last version
    written of it)."""

    path: Path
    session_id: str = ""
    project_hash: str = ""
    started: float | None = None
    updated: float | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    cwd: str = ""  # the project folder, when the caller could tell it


def is_gemini_log(first_line: str) -> bool:
    """Whether a log file whose first line (or whole text) is `first_line` is a Gemini CLI session."""
    try:
        record = json.loads(first_line)
    except ValueError:
        return False
    return isinstance(record, dict) and isinstance(record.get("sessionId"), str) and (
        "projectHash" in record or "startTime" in record)


def read_session(path: str | Path) -> GeminiSession:
    """The session log at `path` (OSError when it cannot be read)."""
    session = GeminiSession(Path(path))
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read(MAX_TRANSCRIPT_BYTES)
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):  # older versions: one JSON object
        _update(session, whole, {})
        return session
    order: dict[str, dict[str, Any]] = {}
    for record in json_objects(text.split("\n")):
        _update(session, record.get("$set") if isinstance(record.get("$set"), dict) else record, order)
    session.messages = list(order.values()) if order else session.messages
    return session


def _update(session: GeminiSession, record: dict[str, Any], order: dict[str, dict[str, Any]]) -> None:
    if isinstance(record.get("sessionId"), str):
        session.session_id = record["sessionId"]
    if isinstance(record.get("projectHash"), str):
        session.project_hash = record["projectHash"]
    session.started = epoch(record.get("startTime")) or session.started
    session.updated = epoch(record.get("lastUpdated")) or session.updated
    if isinstance(record.get("messages"), list):
        messages = [m for m in record["messages"] if isinstance(m, dict)]
        if order or not isinstance(record.get("id"), str):
            order.clear()
            order.update({str(m.get("id") or n): m for n, m in enumerate(messages)})
        session.messages = messages
    if isinstance(record.get("id"), str) and isinstance(record.get("type"), str):
        order[record["id"]] = record  # a message: a later version of it replaces the earlier one in place


def message_text(message: dict[str, Any]) -> str:
    """A message's text (its text parts; never its function calls or responses)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return ""


def typed_text(message: dict[str, Any]) -> str:
    """What the user typed in a user message: its text without Gemini CLI's setup context and without what hooks
    added to it ("" for any other message)."""
    if message.get("type") != "user":
        return ""
    text = message_text(message)
    if text.lstrip().startswith(_SETUP):
        return ""
    return (typed_prompt(text) or "").strip()


def is_prompt(message: dict[str, Any]) -> bool:
    """A message the user typed."""
    return bool(typed_text(message))


def _tool_response(call: dict[str, Any]) -> dict[str, Any]:
    """An AfterTool `tool_response` ({llmContent, returnDisplay, error}) from a logged tool call."""
    outputs, errors = [], []
    result = call.get("result") if isinstance(call.get("result"), list) else []
    for part in result:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            if isinstance(response.get("output"), str):
                outputs.append(response["output"])
            if isinstance(response.get("error"), str):
                errors.append(response["error"])
    shaped: dict[str, Any] = {"llmContent": "\n".join(outputs), "returnDisplay": call.get("resultDisplay")}
    if call.get("status") in ("error", "cancelled") or errors:
        shaped["error"] = {"message": "\n".join(errors) or f"the tool call was {call.get('status')}",
                           "type": call.get("status")}
    return shaped


def gemini_events(session: GeminiSession) -> list[tuple[str, dict, float | None]]:
    """The ordered (Gemini CLI hook event name, stdin payload, when) its hooks would have sent for `session`
    (`session.cwd`: its project folder): SessionStart, BeforeAgent per typed prompt, AfterTool per tool call,
    AfterAgent at each turn's end (with the agent's last reply), SessionEnd."""
    base = {"session_id": session.session_id, "transcript_path": str(session.path), "cwd": session.cwd}
    events: list[tuple[str, dict, float | None]] = [
        ("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}, session.started)]
    prompt, reply, at = None, "", session.started

    def turn_end(when: float | None) -> None:
        events.append(("AfterAgent", {**base, "hook_event_name": "AfterAgent", "prompt": prompt,
                                      "prompt_response": reply, "stop_hook_active": False}, when))

    for message in session.messages:
        when = epoch(message.get("timestamp"))
        at = when if when is not None and (at is None or when >= at) else at
        if is_prompt(message):
            if prompt is not None:
                turn_end(at)
            prompt, reply = typed_text(message), ""
            events.append(("BeforeAgent", {**base, "hook_event_name": "BeforeAgent", "prompt": prompt}, at))
        elif message.get("type") == "gemini" and prompt is not None:
            calls = message.get("toolCalls") if isinstance(message.get("toolCalls"), list) else []
            for call in calls:
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    continue
                call_at = epoch(call.get("timestamp")) or at
                events.append(("AfterTool", {**base, "hook_event_name": "AfterTool", "tool_name": call["name"],
                                             "tool_input": call.get("args") if isinstance(call.get("args"), dict)
                                             else {}, "tool_response": _tool_response(call)}, call_at))
            reply = message_text(message) or reply
    if prompt is not None:
        turn_end(at)
    events.append(("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "exit"},
                   max(t for t in (at, session.updated, session.started, 0.0) if t is not None) or None))
    return events


def read_turns(path: str) -> list[Turn]:
    """The turns of a Gemini CLI session log: each typed prompt with the agent's replies until the next one,
    redacted. [] when the file cannot be read."""
    try:
        session = read_session(path)
    except OSError:
        return []
    root = project_root(session.path)
    turns: list[Turn] = []
    for message in session.messages:
        text = typed_text(message) or message_text(message)
        if is_prompt(message) and not is_noise(text):
            when = epoch(message.get("timestamp"))
            stamp = datetime.fromtimestamp(when).astimezone().isoformat() if when else None
            turns.append(Turn(prompt=_clip(redact(relative_to(clean_prompt(text), root)), 2000), timestamp=stamp))
        elif message.get("type") == "gemini" and turns and text.strip() and not is_noise(text):
            turns[-1].replies.append(_clip(redact(relative_to(text, root))))
    return [t for t in turns if t.prompt]


def project_root(log: Path) -> str | None:
    """The project folder of a session log at `<gemini>/tmp/<project>/chats/`: what `<project>/.project_root`
    says (Gemini CLI writes it), else None."""
    try:
        text = (log.parent.parent / ".project_root").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None
