"""`agentmem import-history claude-code`: a user's past Claude Code sessions (`~/.claude/projects/**/*.jsonl`)
replayed through the capture path the hooks use (events parsed and scrubbed, redaction included, stored as
observations with the time they happened), then handed to the background worker, which compresses them
and writes the session summaries and learned knowledge as it does for live sessions.

How a transcript becomes hook events is a copy of `tests/transcript_replay.py` (which the tests use to drive
the real hook command), reduced to Claude Code and given each event's time: the same events as the hooks record,
so a session counts the same whichever way it arrives. A session resumed with `claude --resume` starts with copies
of the earlier session's records (same `uuid`): Claude Code fired no hook for them, so they are left out here too
(the transcripts are read oldest first, each one's uuids remembered). A session already in the store (captured
live, or imported before) is skipped: a second import adds nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..db import sessions

# user records Claude Code wrote itself, for which it fired no UserPromptSubmit
_NOT_TYPED = ("<command-", "<local-command", "<task-notification>", "<system-reminder>", "Caveat:",
              "[Request interrupted")


def read_transcript(path: str | Path) -> list[dict]:
    """The transcript's JSON objects, in order, skipping blank or broken lines."""
    records = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append(record)
    return records


def _steps(path: str | Path, seen_uuids: set[str] | None = None) -> tuple[dict, list[tuple[str, dict]]]:
    """Client-neutral steps: ("prompt", {text}), ("tool", {...}), ("compact", {trigger}), ("stop", {}). With
    `seen_uuids`, records whose uuid is in it are left out (a resumed session's copies of an earlier one) and this
    file's uuids added."""
    records = [r for r in read_transcript(path) if not r.get("isSidechain")]
    if seen_uuids is not None:
        fresh = [r for r in records if not (isinstance(r.get("uuid"), str) and r["uuid"] in seen_uuids)]
        seen_uuids.update(r["uuid"] for r in records if isinstance(r.get("uuid"), str))
        records = fresh
    session = {
        "session_id": next((r["sessionId"] for r in records if isinstance(r.get("sessionId"), str)), ""),
        "cwd": next((r["cwd"] for r in records if isinstance(r.get("cwd"), str)), ""),
        "permission_mode": next(
            (r["permissionMode"] for r in records if isinstance(r.get("permissionMode"), str)), "default"
        ),
        "transcript_path": str(path),
        "timestamps": [r["timestamp"] for r in records if isinstance(r.get("timestamp"), str)],
    }
    pending: dict[str, dict] = {}
    steps: list[tuple[str, dict]] = []
    for record in records:
        at = _epoch(record.get("timestamp"))
        kind = record.get("type")
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        content = message.get("content")
        if kind == "assistant" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    pending[block.get("id")] = block
        elif kind == "user" and isinstance(content, list) and _has_tool_result(content):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    use = pending.pop(block.get("tool_use_id"), None)
                    if use is not None:
                        steps.append(("tool", {**_tool_step(use, block, record), "at": at}))
        elif kind == "user" and not record.get("isMeta") and not record.get("isCompactSummary"):
            text = _user_text(content)
            if text and not text.lstrip().startswith(_NOT_TYPED):
                steps.append(("prompt", {"text": text, "uuid": record.get("uuid"), "at": at}))
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            meta = record.get("compactMetadata") if isinstance(record.get("compactMetadata"), dict) else {}
            steps.append(("compact", {"trigger": meta.get("trigger") or "auto", "at": at}))
        elif kind == "system" and record.get("subtype") == "stop_hook_summary":
            steps.append(("stop", {"at": at}))
    if not steps or steps[-1][0] != "stop":
        steps.append(("stop", {"at": steps[-1][1].get("at") if steps else None}))
    return session, steps


def _has_tool_result(content: list) -> bool:
    return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str))
    return ""


def _tool_step(use: dict, result: dict, record: dict) -> dict:
    response = record.get("toolUseResult", result.get("content"))
    return {
        "name": use.get("name"),
        "input": use.get("input") if isinstance(use.get("input"), dict) else {},
        "id": use.get("id"),
        "response": response,
        "is_error": result.get("is_error") is True,
        "cwd": record.get("cwd"),
    }


def claude_code_events(path: str | Path, seen_uuids: set[str] | None = None) -> list[tuple[str, dict, float | None]]:
    """The ordered (hook event name, stdin payload, when: unix time or None) Claude Code would have sent; with
    `seen_uuids`, as `_steps` leaves out the records of earlier sessions."""
    session, steps = _steps(path, seen_uuids)
    stamps = [t for t in (_epoch(s) for s in session["timestamps"]) if t is not None]
    first, last = (min(stamps), max(stamps)) if stamps else (None, None)

    def payload(event: str, **fields: Any) -> dict:
        base = {
            "session_id": session["session_id"],
            "transcript_path": session["transcript_path"],
            "cwd": session["cwd"],
            "permission_mode": session["permission_mode"],
            "hook_event_name": event,
        }
        return {**base, **fields}

    events: list[tuple[str, dict, float | None]] = [("SessionStart", payload("SessionStart", source="startup"),
                                                     first)]
    for kind, step in steps:
        at = step.get("at")
        if kind == "prompt":
            events.append(("UserPromptSubmit", payload("UserPromptSubmit", prompt=step["text"]), at))
        elif kind == "tool" and step["is_error"]:
            error = step["response"] if isinstance(step["response"], str) else json.dumps(step["response"])
            fields = {"tool_name": step["name"], "tool_input": step["input"], "tool_use_id": step["id"]}
            events.append(
                (
                    "PostToolUseFailure",
                    payload("PostToolUseFailure", **fields, error=error, is_interrupt=False),
                    at,
                )
            )
        elif kind == "tool":
            fields = {"tool_name": step["name"], "tool_input": step["input"], "tool_use_id": step["id"]}
            events.append(("PostToolUse", payload("PostToolUse", **fields, tool_response=step["response"]), at))
        elif kind == "compact":
            events.append(("PreCompact", payload("PreCompact", trigger=step["trigger"], custom_instructions=""), at))
            events.append(("SessionStart", payload("SessionStart", source="compact"), at))
        elif kind == "stop":
            events.append(("Stop", payload("Stop", stop_hook_active=False), at))
    events.append(("SessionEnd", payload("SessionEnd", reason="other"), last))
    return events




def _epoch(stamp: Any) -> float | None:
    """Unix time of an ISO 8601 timestamp ("2026-03-01T10:00:00.123Z"), or None."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def default_root() -> Path:
    """Where Claude Code keeps its transcripts: `$CLAUDE_CONFIG_DIR/projects` or `~/.claude/projects`."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base) if base else Path.home() / ".claude") / "projects"


def _session_cwd(path: Path) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle):
            if number > 200:
                break
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("cwd"), str):
                return record["cwd"]
    return ""


def find_transcripts(root: Path, *, project: str | None = None, since: float | None = None) -> list[Path]:
    """The session transcripts under `root`, oldest first: only those whose working directory is inside
    `project` (a path) when given, and only those written since `since` (unix time) when given. Subagent
    transcripts (`subagents/` folders) are part of their session and left out."""
    found = []
    wanted = Path(project).resolve() if project else None
    for path in root.rglob("*.jsonl"):
        if "subagents" in path.parts or not path.is_file():
            continue
        modified = path.stat().st_mtime
        if since is not None and modified < since:
            continue
        if wanted is not None:
            cwd = _session_cwd(path)
            if not cwd or not (Path(cwd) == wanted or wanted in Path(cwd).parents):
                continue
        found.append((modified, path))
    return [path for _, path in sorted(found)]


@dataclass
class ImportSummary:
    """What an import did."""

    sessions: int = 0
    skipped: int = 0  # already in the store
    empty: int = 0  # nothing a hook would have recorded
    events: int = 0
    failed: list[str] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)  # reason -> how many, for what could not be read

    def text(self) -> str:
        line = (f"imported {self.sessions} sessions ({self.events} events); {self.skipped} already in agentmem, "
                f"{self.empty} empty")
        if self.failed:
            line += f"; {len(self.failed)} could not be read: " + ", ".join(self.failed[:5])
        if self.left_out:
            line += "; left out: " + ", ".join(f"{count} {reason}" for reason, count in self.left_out.items())
        return line


Progress = Callable[[str, int, int], None]
Events = list[tuple[str, dict, float | None]]


def import_transcripts(settings: Any, paths: Sequence[Path], progress: Progress | None = None) -> ImportSummary:
    """Replay each Claude Code transcript's events through the hooks' capture path into the store of `settings`
    (`paths` oldest first: a resumed session's copies of an earlier one are then left out)."""
    seen: set[str] = set()
    return import_sessions(settings, "claude-code", paths, lambda path: claude_code_events(path, seen),
                           progress=progress)


def import_sessions(settings: Any, client: str, sources: Sequence[Any], events_of: Callable[[Any], Events],
                    progress: Progress | None = None, summary: ImportSummary | None = None,
                    session_of: Callable[[Any], str] | None = None) -> ImportSummary:
    """Replay each source's hook events (`events_of(source)`: the client's own event names and payloads, with
    the time each happened) through the hooks' capture path into the store of `settings`. A session already
    in the store is skipped (before its events are read when `session_of(source)` gives its id); one with
    nothing but its start, stop and end counts as empty."""
    from ..capture.events import parse_hook_event
    from ..capture.observations import ObservationStore, scrub
    from ..db.connection import connect
    from ..db.migrations import migrate
    from ..project import project_for

    summary = summary or ImportSummary()
    conn = connect(settings.database, busy_timeout_ms=settings.busy_timeout_ms, load_vec=False)
    try:
        migrate(conn)
        observations = ObservationStore(conn)
        for done, source in enumerate(sources, start=1):
            if session_of is not None and _known(conn, session_of(source)):
                summary.skipped += 1
                if progress:
                    progress("sessions", done, len(sources))
                continue
            try:
                events = events_of(source)
                parsed = [(parse_hook_event(client, name, payload), at) for name, payload, at in events]
            except (OSError, ValueError) as exc:  # HookInputError is a ValueError
                summary.failed.append(f"{getattr(source, 'name', source)} ({type(exc).__name__})")
                continue
            session_id = parsed[0][0].session_id if parsed else ""
            if not session_id or len(parsed) <= 3:  # start, stop and end only: nothing happened
                summary.empty += 1
            elif _known(conn, session_id):
                summary.skipped += 1
            else:
                cwd = parsed[0][0].cwd
                # a folder gone from this machine is still its own project, never the global memories
                project = (project_for(cwd) or cwd) if cwd else None
                for ev, at in parsed:
                    observations.record(scrub(ev, settings.max_output_chars), project, now=at)
                summary.sessions += 1
                summary.events += len(parsed)
            if progress:
                progress("sessions", done, len(sources))
    finally:
        conn.close()
    return summary


def _known(conn: Any, session_id: str) -> bool:
    return sessions.known(conn, session_id)


def parse_since(text: str) -> float:
    """A --since value: a date (2026-03-01) or a date and time, as unix time (local time when no zone)."""
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ValueError(f"--since {text!r} is not a date: write it as 2026-03-01 (or 2026-03-01T14:00)") from None
