"""Turn a Claude Code transcript (.jsonl) into the hook calls its client would have made.

`claude_code_events` follows what Claude Code itself fired, as recorded in the transcript's own
`hook_progress` lines: SessionStart (source "startup"); a UserPromptSubmit per typed user message;
a PostToolUse per tool call whose result succeeded and a PostToolUseFailure per failed one (with
`error`, as Claude Code sends it); at a compaction boundary PreCompact then SessionStart (source
"compact"); a Stop wherever the Stop hooks ran (`stop_hook_summary` lines) and at the end; and
SessionEnd last.

`claude_code_timeline` gives the same events with, for each, how many lines of the transcript file had
been written when it fired (a replay that grows a copy of the transcript as Claude Code did hands each
hook the file as it was), and can skip records a resumed session copied from an earlier one.

`cursor_events` gives the Cursor-shaped equivalent of the same session: sessionStart,
beforeSubmitPrompt, postToolUse (Bash becomes Cursor's Shell tool, tool_output a JSON string),
afterFileEdit after each Edit / MultiEdit / Write, preCompact, stop, sessionEnd.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from agentmem_mcp.history import _NOT_TYPED, _has_tool_result, _tool_step, _user_text  # the package's own parsing

_EXIT_CODE = re.compile(r"\A\s*(?:Error:\s*)?Exit code:?\s+(-?\d{1,9})\b")


def numbered_records(path: str | Path) -> list[tuple[int, dict]]:
    """(line number from 0, JSON object) of each record, in order, skipping blank or broken lines. Lines
    are split at "\n" only: some records hold U+2028 or NEL inside their strings."""
    records = []
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        for number, line in enumerate(handle.read().split("\n")):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append((number, record))
    return records


def read_transcript(path: str | Path) -> list[dict]:
    """The transcript's JSON objects, in order, skipping blank or broken lines."""
    return [record for _, record in numbered_records(path)]


def _steps(path: str | Path, seen_uuids: set[str] | None = None) -> tuple[dict, list[tuple[str, dict]]]:
    """Client-neutral steps: ("prompt", {text}), ("tool", {...}), ("compact", {trigger}), ("stop", {}), each
    with `lines`: how many lines of the file precede the step's end. With `seen_uuids`, records whose uuid
    is in it are left out (a resumed session's copies of the previous one) and this file's uuids added."""
    every = numbered_records(path)
    numbered = [(n, r) for n, r in every if not r.get("isSidechain")]
    if seen_uuids is not None:
        fresh = [(n, r) for n, r in numbered if not (isinstance(r.get("uuid"), str) and r["uuid"] in seen_uuids)]
        seen_uuids.update(r["uuid"] for _, r in numbered if isinstance(r.get("uuid"), str))
        numbered = fresh
    records = [r for _, r in numbered]
    total_lines = every[-1][0] + 1 if every else 0
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
    for number, record in numbered:
        lines = number + 1
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
                        steps.append(("tool", {**_tool_step(use, block, record), "lines": lines}))
        elif kind == "user" and not record.get("isMeta") and not record.get("isCompactSummary"):
            text = _user_text(content)
            if text and not text.lstrip().startswith(_NOT_TYPED):
                steps.append(("prompt", {"text": text, "uuid": record.get("uuid"), "lines": lines}))
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            meta = record.get("compactMetadata") if isinstance(record.get("compactMetadata"), dict) else {}
            steps.append(("compact", {"trigger": meta.get("trigger") or "auto", "lines": lines}))
        elif kind == "system" and record.get("subtype") == "stop_hook_summary":
            steps.append(("stop", {"lines": lines}))
    if not steps or steps[-1][0] != "stop":
        steps.append(("stop", {"lines": total_lines}))
    session["lines"] = total_lines
    return session, steps








def claude_code_events(path: str | Path) -> list[tuple[str, dict]]:
    """The ordered (hook event name, stdin payload) pairs Claude Code would have sent."""
    return [(event, payload) for _, event, payload in claude_code_timeline(path)]


def claude_code_timeline(path: str | Path, seen_uuids: set[str] | None = None) -> list[tuple[int, str, dict]]:
    """`claude_code_events` with, before each pair, how many lines of the transcript Claude Code had written
    when the hook fired. With `seen_uuids` (one set for the sessions of a project, in order), records a
    resumed session copied from an earlier one are skipped, as Claude Code fired no hook for them then."""
    session, steps = _steps(path, seen_uuids)

    def payload(event: str, **fields: Any) -> dict:
        base = {
            "session_id": session["session_id"],
            "transcript_path": session["transcript_path"],
            "cwd": session["cwd"],
            "permission_mode": session["permission_mode"],
            "hook_event_name": event,
        }
        return {**base, **fields}

    events = [(0, "SessionStart", payload("SessionStart", source="startup"))]
    for kind, step in steps:
        at = step["lines"]
        if kind == "prompt":
            events.append((at, "UserPromptSubmit", payload("UserPromptSubmit", prompt=step["text"])))
        elif kind == "tool" and step["is_error"]:
            error = step["response"] if isinstance(step["response"], str) else json.dumps(step["response"])
            fields = {"tool_name": step["name"], "tool_input": step["input"], "tool_use_id": step["id"]}
            events.append(
                (
                    at,
                    "PostToolUseFailure",
                    payload("PostToolUseFailure", **fields, error=error, is_interrupt=False),
                )
            )
        elif kind == "tool":
            fields = {"tool_name": step["name"], "tool_input": step["input"], "tool_use_id": step["id"]}
            events.append((at, "PostToolUse", payload("PostToolUse", **fields, tool_response=step["response"])))
        elif kind == "compact":
            events.append((at, "PreCompact", payload("PreCompact", trigger=step["trigger"], custom_instructions="")))
            events.append((at, "SessionStart", payload("SessionStart", source="compact")))
        elif kind == "stop":
            events.append((at, "Stop", payload("Stop", stop_hook_active=False)))
    events.append((session["lines"], "SessionEnd", payload("SessionEnd", reason="other")))
    return events


def cursor_events(path: str | Path) -> list[tuple[str, dict]]:
    """The Cursor-shaped equivalent of the same transcript, as (hook event name, payload) pairs."""
    session, steps = _steps(path)
    generation = {"id": session["session_id"]}

    def payload(event: str, **fields: Any) -> dict:
        base = {
            "conversation_id": session["session_id"],
            "generation_id": generation["id"],
            "hook_event_name": event,
            "workspace_roots": [session["cwd"]] if session["cwd"] else [],
            "cursor_version": "replay",
        }
        return {**base, **fields}

    events = [
        (
            "sessionStart",
            payload(
                "sessionStart",
                session_id=session["session_id"],
                is_background_agent=False,
                composer_mode="agent",
            ),
        )
    ]
    for kind, step in steps:
        if kind == "prompt":
            generation["id"] = step.get("uuid") or generation["id"]
            events.append(("beforeSubmitPrompt", payload("beforeSubmitPrompt", prompt=step["text"], attachments=[])))
        elif kind == "tool":
            events.extend(_cursor_tool_events(step, payload))
        elif kind == "compact":
            events.append(("preCompact", payload("preCompact", trigger=step["trigger"])))
        elif kind == "stop":
            events.append(("stop", payload("stop", status="completed", loop_count=0)))
    events.append(
        (
            "sessionEnd",
            payload(
                "sessionEnd",
                session_id=session["session_id"],
                reason="completed",
                duration_ms=_duration_ms(session["timestamps"]),
                is_background_agent=False,
                final_status="completed",
            ),
        )
    )
    return events


def _cursor_tool_events(step: dict, payload: Any) -> list[tuple[str, dict]]:
    name, args, response = step["name"], step["input"], step["response"]
    cwd = step.get("cwd") or ""
    if name == "Bash":
        name, args = "Shell", {"command": args.get("command", ""), "working_directory": cwd}
        response = _shell_result(response, step["is_error"])
    output = response if isinstance(response, str) else json.dumps(response)
    events = [
        (
            "postToolUse",
            payload(
                "postToolUse",
                tool_name=name,
                tool_input=args,
                tool_output=output,
                tool_use_id=step["id"],
                cwd=cwd,
                duration=0,
            ),
        )
    ]
    if step["name"] in ("Edit", "MultiEdit", "Write") and not step["is_error"]:
        events.append(
            (
                "afterFileEdit",
                payload("afterFileEdit", file_path=args.get("file_path", ""), edits=_edits(args)),
            )
        )
    return events


def _shell_result(response: Any, is_error: bool) -> dict:
    if isinstance(response, dict):
        return {
            "exitCode": 0,
            "stdout": response.get("stdout", ""),
            "stderr": response.get("stderr", ""),
        }
    text = response if isinstance(response, str) else ""
    match = _EXIT_CODE.match(text)
    code = int(match.group(1)) if match else (1 if is_error else 0)
    return {"exitCode": code, "stdout": "", "stderr": text}


def _edits(args: dict) -> list[dict]:
    if isinstance(args.get("edits"), list):
        return [
            {"old_string": e.get("old_string", ""), "new_string": e.get("new_string", "")}
            for e in args["edits"]
            if isinstance(e, dict)
        ]
    if "content" in args:
        return [{"old_string": "", "new_string": args.get("content", "")}]
    return [{"old_string": args.get("old_string", ""), "new_string": args.get("new_string", "")}]


def _duration_ms(timestamps: list[str]) -> int:
    parsed = []
    for stamp in timestamps:
        try:
            parsed.append(datetime.fromisoformat(stamp.replace("Z", "+00:00")))
        except ValueError:
            continue
    return int((max(parsed) - min(parsed)).total_seconds() * 1000) if parsed else 0
