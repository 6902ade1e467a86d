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

`codex_events` and `gemini_events` give the Codex- and Gemini CLI-shaped equivalents, with the fields each
client's hooks send (Codex: its shipped JSON schemas; Gemini CLI: its hooks reference), for the tools those
clients fire hooks for: Codex's Bash (the output as text, no exit code) and apply_patch (an edit as a patch);
Gemini CLI's run_shell_command, read_file, write_file, replace, grep_search and glob.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from agentmem_mcp.history.claude_code import (  # the package's own parsing
    _NOT_TYPED,
    _has_tool_result,
    _tool_step,
    _user_text,
)

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


def codex_events(path: str | Path) -> list[tuple[str, dict]]:
    """The Codex-shaped equivalent of the same transcript, as (hook event name, payload) pairs."""
    session, steps = _steps(path)
    base = {"session_id": session["session_id"], "transcript_path": None, "cwd": session["cwd"], "model": "gpt-5.5"}
    mode = {"permission_mode": session["permission_mode"]}
    events: list[tuple[str, dict]] = [("SessionStart", {**base, **mode, "hook_event_name": "SessionStart",
                                                        "source": "startup"})]
    turn = 0
    for kind, step in steps:
        if kind == "prompt":
            turn += 1
            events.append(("UserPromptSubmit", {**base, **mode, "hook_event_name": "UserPromptSubmit",
                                                "turn_id": f"turn-{turn}", "prompt": step["text"]}))
        elif kind == "tool" and (shaped := _codex_tool(step)) is not None:
            events.append(("PostToolUse", {**base, **mode, "hook_event_name": "PostToolUse", "turn_id": f"turn-{turn}",
                                           **shaped, "tool_use_id": step["id"]}))
        elif kind == "compact":
            events.append(("PreCompact", {**base, "hook_event_name": "PreCompact", "turn_id": f"turn-{turn}",
                                          "trigger": step["trigger"]}))
        elif kind == "stop":
            events.append(("Stop", {**base, **mode, "hook_event_name": "Stop", "turn_id": f"turn-{turn}",
                                    "stop_hook_active": False, "last_assistant_message": None}))
    events.append(("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "other"}))
    return events


def _codex_tool(step: dict) -> dict | None:
    name, args, response = step["name"], step["input"], step["response"]
    if name == "Bash":
        result = _shell_result(response, step["is_error"])
        output = "\n".join(p for p in (result["stdout"], result["stderr"]) if p)
        return {"tool_name": "Bash", "tool_input": {"command": args.get("command", "")}, "tool_response": output}
    if name in ("Edit", "MultiEdit", "Write") and isinstance(args.get("file_path"), str) and not step["is_error"]:
        verb = "Add" if name == "Write" else "Update"
        lines = ["*** Begin Patch", f"*** {verb} File: {args['file_path']}"]
        for edit in _edits(args):
            lines.append("@@")
            lines += ["-" + line for line in edit["old_string"].splitlines()]
            lines += ["+" + line for line in edit["new_string"].splitlines()]
        lines.append("*** End Patch")
        return {"tool_name": "apply_patch", "tool_input": {"command": "\n".join(lines) + "\n"},
                "tool_response": f"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following "
                                 f"files:\nM {args['file_path']}\n"}
    return None


_GEMINI_TOOLS = {"Read": "read_file", "Write": "write_file", "Edit": "replace", "Grep": "grep_search",
                 "Glob": "glob"}


def gemini_events(path: str | Path) -> list[tuple[str, dict]]:
    """The Gemini CLI-shaped equivalent of the same transcript, as (hook event name, payload) pairs."""
    session, steps = _steps(path)
    base = {"session_id": session["session_id"], "transcript_path": "", "cwd": session["cwd"],
            "timestamp": "2026-01-01T00:00:00.000Z"}
    events: list[tuple[str, dict]] = [("SessionStart", {**base, "hook_event_name": "SessionStart",
                                                        "source": "startup"})]
    prompt = ""
    for kind, step in steps:
        if kind == "prompt":
            prompt = step["text"]
            events.append(("BeforeAgent", {**base, "hook_event_name": "BeforeAgent", "prompt": prompt}))
        elif kind == "tool" and (shaped := _gemini_tool(step)) is not None:
            events.append(("AfterTool", {**base, "hook_event_name": "AfterTool", **shaped}))
        elif kind == "compact":
            events.append(("PreCompress", {**base, "hook_event_name": "PreCompress", "trigger": step["trigger"]}))
        elif kind == "stop":
            events.append(("AfterAgent", {**base, "hook_event_name": "AfterAgent", "prompt": prompt,
                                          "prompt_response": "", "stop_hook_active": False}))
    events.append(("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}))
    return events


def _gemini_tool(step: dict) -> dict | None:
    name, args, response = step["name"], step["input"], step["response"]
    error = {"error": {"type": "execution_failed", "message": response if isinstance(response, str)
                       else json.dumps(response)}} if step["is_error"] else {}
    if name == "Bash":
        result = _shell_result(response, step["is_error"])
        output = "\n".join(p for p in (result["stdout"], result["stderr"]) if p)
        code = f"\nExit Code: {result['exitCode']}" if result["exitCode"] else ""
        return {"tool_name": "run_shell_command", "tool_input": {"command": args.get("command", "")},
                "tool_response": {"llmContent": f"Output: {output or '(empty)'}{code}", "returnDisplay": output}}
    if name not in _GEMINI_TOOLS:
        return None
    tool_input = dict(args)
    if name == "Edit":
        tool_input = {k: args.get(k) for k in ("file_path", "old_string", "new_string")}
    elif name in ("Grep", "Glob"):
        tool_input = {"pattern": args.get("pattern", ""), "dir_path": args.get("path", "")}
    text = response if isinstance(response, str) else json.dumps(response)
    return {"tool_name": _GEMINI_TOOLS[name], "tool_input": tool_input,
            "tool_response": {"llmContent": text, "returnDisplay": text, **error}}
