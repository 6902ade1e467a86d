"""Observations: one row per captured hook event, scoped to its session.

`scrub` is the privacy policy (pure): secrets redacted, `<private>` blocks dropped, deny-listed files
recorded without their content, large outputs cut to head + tail. `ObservationStore.record` writes
the row: an identical repeated event in a session is stored once with a count.
"""

from __future__ import annotations

import json
import re
import time

from ..db import observations, sessions
from ..db.connection import Connection, IntegrityError, write_transaction
from ..trust.lazy_regex import lazy
from .events import HookEvent, event_fingerprint
from .redact import (
    decodes_secrets,
    dumps_environment,
    is_sensitive_path,
    makes_secrets,
    names_sensitive_file,
    redact,
    redact_value,
    truncate_middle,
    without_sensitive_lines,
)

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from typing import Any

WITHHELD = "[content of a sensitive file, not recorded]"
DECODED = "[output of a decoding command, not recorded]"
ENVIRONMENT = "[output of a command that prints the environment or stored secrets, not recorded]"
GENERATED = "[output of a command that makes a secret, not recorded]"
_CONTENT_KEYS = ("content", "new_string", "old_string", "edits", "new_source", "contents", "text")
MAX_INPUT_CHARS = 8000
MAX_PROMPT_CHARS = 8000
EDIT_TWIN_SECONDS = 120
MARKER_EVENTS = ("session_end", "stop", "pre_compact")  # they neither open a session nor carry work of their own
_EDIT_TOOL = lazy(r"edit|write|replace|patch|apply", re.IGNORECASE)


def _withhold_content(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (WITHHELD if k in _CONTENT_KEYS else _withhold_content(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_withhold_content(v) for v in value]
    return value


def _command(tool_input: Any) -> str | None:
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    return command if isinstance(command, str) else None


def scrub(ev: HookEvent, max_output_chars: int) -> HookEvent:
    """The event as it may be stored: nothing secret, nothing private, nothing huge.

    A tool call on a deny-listed file (`.env`, keys, `.pgpass`, ...), whether by a file tool or by a shell command
    naming it (`cat .env`, `source .env`, `cat .e*`), keeps no content and no output; a shell command that decodes or
    decrypts (`base64 -d`), prints the environment (`printenv`, `kubectl get secret -o yaml`) or makes a secret
    (`openssl rand -hex 32`) keeps no output; lines of a search's output that come from a deny-listed file are
    dropped."""
    command = _command(ev.tool_input)
    sensitive = any(is_sensitive_path(path) for path in ev.files) or (
        command is not None and names_sensitive_file(command))
    tool_input = redact_value(_withhold_content(ev.tool_input) if sensitive else ev.tool_input)
    input_text = json.dumps(tool_input, ensure_ascii=False, default=str) if tool_input is not None else None
    if input_text is not None and len(input_text) > MAX_INPUT_CHARS:
        tool_input = {"truncated": truncate_middle(input_text, MAX_INPUT_CHARS)}
    output = ev.tool_output
    if output is not None:
        if sensitive:
            output = WITHHELD
        elif command is not None and decodes_secrets(command):
            output = DECODED
        elif command is not None and dumps_environment(command):
            output = ENVIRONMENT
        elif command is not None and makes_secrets(command):
            output = GENERATED
        else:
            output = redact(without_sensitive_lines(truncate_middle(output, max_output_chars * 2)))
        output = truncate_middle(output, max_output_chars)
    prompt = redact(truncate_middle(ev.prompt, MAX_PROMPT_CHARS)) if ev.prompt else ev.prompt
    extra = redact_value(ev.extra)
    return ev.replace(tool_input=tool_input, tool_output=output, prompt=prompt, extra=extra,
                      files=[redact(f) for f in ev.files])


def _with_twin_edits(tool_input: str | None, edit_input: str | None) -> str | None:
    """A Cursor tool call's input, given the old/new strings its afterFileEdit twin reported when the call itself
    carries none (Cursor's `edit_file` sends `code_edit` with "existing code" markers, not the change)."""
    try:
        call, edit = json.loads(tool_input or "null"), json.loads(edit_input or "null")
    except ValueError:
        return tool_input
    if not isinstance(call, dict) or not isinstance(edit, dict) or not edit.get("edits"):
        return tool_input
    if call.get("edits") or call.get("old_string") or call.get("new_string"):
        return tool_input
    return json.dumps({**call, "edits": edit["edits"]}, ensure_ascii=False)


class ObservationStore:
    """Session-scoped observation rows and the sessions table (hook side: plain SQLite, no extensions)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def record(self, ev: HookEvent, project: str | None, now: float | None = None) -> int | None:
        """Store a scrubbed event; returns the observation id (an identical repeat bumps its count), or None for a
        marker (SessionEnd, Stop, PreCompact) of a session nothing else is stored of: `claude mcp list` ends a
        session it never started, and that would be an empty "ended" session in stats and the viewer."""
        now = time.time() if now is None else now
        fingerprint = event_fingerprint(ev)
        input_json = json.dumps(ev.tool_input, ensure_ascii=False, default=str) if ev.tool_input is not None else None
        with write_transaction(self.conn) as conn:
            if ev.event in MARKER_EVENTS and not sessions.known(conn, ev.session_id):
                return None
            self._touch_session(conn, ev, project, now)
            merged = self._merge_edit_twin(conn, ev, input_json, now)
            if merged is not None:
                return merged
            return observations.add(
                conn, session_id=ev.session_id, project=project, client=ev.client, event=ev.event, tool=ev.tool,
                input=input_json, output=ev.tool_output, prompt=ev.prompt,
                files=json.dumps(ev.files, ensure_ascii=False),
                extra=json.dumps(ev.extra, ensure_ascii=False, default=str), fingerprint=fingerprint, now=now)

    @staticmethod
    def _merge_edit_twin(conn: Connection, ev: HookEvent, input_json: str | None, now: float) -> int | None:
        """Cursor reports one edit twice (postToolUse and afterFileEdit): keep one row per edit.

        afterFileEdit after the tool call is dropped; a tool call after afterFileEdit replaces that row.
        """
        if not ev.files or ev.client != "cursor":
            return None
        is_edit_tool = ev.event == "tool_use" and bool(_EDIT_TOOL.search(ev.tool or ""))
        if ev.event != "file_edit" and not is_edit_tool:
            return None
        twin_event = "tool_use" if ev.event == "file_edit" else "file_edit"
        for row in observations.recent_events(conn, ev.session_id, twin_event, now - EDIT_TWIN_SECONDS):
            if twin_event == "tool_use" and not _EDIT_TOOL.search(row["tool"] or ""):
                continue
            if not set(json.loads(row["files"] or "[]")) & set(ev.files):
                continue
            if ev.event == "tool_use":
                input_json = _with_twin_edits(input_json, row["input"])
                try:
                    observations.replace_event(conn, row["id"], event=ev.event, tool=ev.tool, input=input_json,
                                               output=ev.tool_output, fingerprint=event_fingerprint(ev), now=now)
                except IntegrityError:  # the very same tool call is already stored
                    return int(row["id"])
            return int(row["id"])
        return None

    @staticmethod
    def _touch_session(conn: Connection, ev: HookEvent, project: str | None, now: float) -> None:
        sessions.touch(conn, session_id=ev.session_id, project=project, client=ev.client, cwd=ev.cwd, now=now,
                       ended=ev.event == "session_end",
                       needs_summary=ev.event in ("stop", "session_end", "pre_compact"))
