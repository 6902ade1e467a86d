"""Hook payload parsing: both clients' real field names, every error path, fuzzing, a real transcript."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_mcp.capture.events import (
    CLAUDE_CODE_EVENTS,
    CURSOR_EVENTS,
    EVENTS,
    MAX_DEPTH,
    TRUNCATED_DEPTH,
    HookEvent,
    HookInputError,
    decode_payload,
    event_fingerprint,
    parse_hook_event,
)

from .transcript_replay import claude_code_events, cursor_events

TRANSCRIPT = (
    Path(__file__).resolve().parents[2]
    / "shared/eval/transcripts/claude_code_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
)
needs_transcript = pytest.mark.usefixtures("shared_transcript")  # skips without the data, fails in CI

CLAUDE_BASE = {
    "session_id": "abc-123",
    "transcript_path": "/home/u/.claude/projects/p/abc-123.jsonl",
    "cwd": "/home/u/proj",
    "permission_mode": "default",
}
CURSOR_BASE = {
    "conversation_id": "conv-1",
    "generation_id": "gen-1",
    "workspace_roots": ["/home/u/proj"],
    "model": "gpt-5",
    "cursor_version": "2.0.77",
}


def claude(event: str, **fields) -> HookEvent:
    return parse_hook_event("claude-code", event, {**CLAUDE_BASE, "hook_event_name": event, **fields})


def cursor(event: str, **fields) -> HookEvent:
    return parse_hook_event("cursor", event, {**CURSOR_BASE, "hook_event_name": event, **fields})


# -- Claude Code ---------------------------------------------------------------------------


def test_claude_session_start():
    ev = claude("SessionStart", source="startup", model="claude-sonnet-4-5")
    assert (ev.client, ev.event, ev.raw_event) == ("claude-code", "session_start", "SessionStart")
    assert ev.session_id == "abc-123"
    assert ev.cwd == "/home/u/proj"
    assert ev.extra["source"] == "startup"
    assert ev.extra["transcript_path"].endswith("abc-123.jsonl")
    assert ev.extra["permission_mode"] == "default"


def test_claude_prompt():
    ev = claude("UserPromptSubmit", prompt="add retry logic to the uploader")
    assert ev.event == "prompt"
    assert ev.prompt == "add retry logic to the uploader"
    assert ev.tool is None and ev.files == []


def test_claude_bash_dict_response_renders_stdout_and_stderr():
    ev = claude(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "pytest -q", "description": "run tests"},
        tool_response={"stdout": "3 failed", "stderr": "warning: x", "interrupted": False, "isImage": False},
        tool_use_id="toolu_1",
    )
    assert ev.event == "tool_use" and ev.tool == "Bash"
    assert ev.tool_output == "3 failed\nwarning: x"
    assert ev.extra["interrupted"] is False
    assert ev.extra["tool_use_id"] == "toolu_1"
    assert "exit_code" not in ev.extra


def test_claude_failed_bash_string_response_yields_exit_code():
    ev = claude(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "git push"},
        tool_response="Error: Exit code 128\nfatal: no upstream",
    )
    assert ev.extra["exit_code"] == 128
    assert ev.tool_output.startswith("Error: Exit code 128")


def test_claude_post_tool_use_failure():
    ev = claude(
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "false"},
        error="Exit code 1",
        is_interrupt=False,
        tool_use_id="toolu_2",
    )
    assert ev.event == "tool_use"
    assert ev.extra["is_error"] is True
    assert ev.extra["exit_code"] == 1
    assert ev.extra["is_interrupt"] is False


def test_claude_read_response_keeps_content_and_line_facts():
    ev = claude(
        "PostToolUse",
        tool_name="Read",
        tool_input={"file_path": "/home/u/proj/README.md", "offset": 1, "limit": 80},
        tool_response={
            "type": "text",
            "file": {
                "filePath": "/home/u/proj/README.md",
                "content": "# Title\n",
                "numLines": 80,
                "startLine": 1,
                "totalLines": 200,
            },
        },
    )
    assert ev.tool_output == "# Title\n"
    assert ev.files == ["/home/u/proj/README.md"]
    assert (ev.extra["start_line"], ev.extra["num_lines"], ev.extra["total_lines"]) == (1, 80, 200)


def test_claude_edit_and_write_responses_are_short():
    edit = claude(
        "PostToolUse",
        tool_name="Edit",
        tool_input={"file_path": "/p/a.py", "old_string": "a", "new_string": "b"},
        tool_response={
            "filePath": "/p/a.py",
            "oldString": "a",
            "newString": "b",
            "originalFile": "x" * 10000,
            "structuredPatch": [],
        },
    )
    assert edit.tool_output == "Updated /p/a.py"
    write = claude(
        "PostToolUse",
        tool_name="Write",
        tool_input={"file_path": "/p/b.py", "content": "x = 1\n"},
        tool_response={"type": "create", "filePath": "/p/b.py", "content": "x = 1\n", "originalFile": None},
    )
    assert write.tool_output == "Created /p/b.py"
    assert write.extra["operation"] == "create"


def test_claude_content_block_list_and_grep_shapes():
    task = claude(
        "PostToolUse",
        tool_name="Task",
        tool_input={"description": "explore", "prompt": "look", "subagent_type": "Explore"},
        tool_response={
            "status": "completed",
            "content": [{"type": "text", "text": "Report."}, {"type": "text", "text": "agentId: a1"}],
        },
    )
    assert task.tool_output == "Report.\nagentId: a1"
    grep = claude(
        "PostToolUse",
        tool_name="Grep",
        tool_input={"pattern": "TODO", "path": "/p/src"},
        tool_response={"mode": "files_with_matches", "filenames": ["/p/src/a.py"], "numFiles": 1},
    )
    assert grep.tool_output == "/p/src/a.py"
    assert grep.files == ["/p/src"]
    mcp = claude(
        "PostToolUse",
        tool_name="mcp__memory__search",
        tool_input={"query": "x"},
        tool_response=[{"type": "text", "text": "found 2"}],
    )
    assert mcp.tool_output == "found 2"


def test_claude_notebook_and_multiedit_files():
    ev = claude(
        "PostToolUse",
        tool_name="NotebookEdit",
        tool_input={"notebook_path": "/p/n.ipynb", "new_source": "print(1)"},
        tool_response={},
    )
    assert ev.files == ["/p/n.ipynb"]
    assert ev.tool_output is None


def test_claude_pre_compact_stop_session_end():
    pre = claude("PreCompact", trigger="manual", custom_instructions="keep the API notes")
    assert pre.event == "pre_compact"
    assert pre.extra["trigger"] == "manual"
    assert pre.extra["custom_instructions"] == "keep the API notes"
    stop = claude("Stop", stop_hook_active=True)
    assert stop.event == "stop" and stop.extra["stop_hook_active"] is True
    end = claude("SessionEnd", reason="prompt_input_exit")
    assert end.event == "session_end" and end.extra["reason"] == "prompt_input_exit"


# -- Cursor --------------------------------------------------------------------------------


def test_cursor_session_start_and_end():
    start = cursor("sessionStart", session_id="conv-1", is_background_agent=False, composer_mode="agent")
    assert (start.client, start.event) == ("cursor", "session_start")
    assert start.session_id == "conv-1"
    assert start.cwd == "/home/u/proj"
    assert start.extra["composer_mode"] == "agent"
    assert start.extra["generation_id"] == "gen-1"
    end = cursor("sessionEnd", reason="window_close", duration_ms=1200, final_status="completed")
    assert end.event == "session_end"
    assert (end.extra["reason"], end.extra["duration_ms"], end.extra["final_status"]) == (
        "window_close",
        1200,
        "completed",
    )


def test_cursor_prompt_with_attachments():
    ev = cursor(
        "beforeSubmitPrompt",
        prompt="Fix the bug in main.ts",
        attachments=[{"type": "file", "filePath": "/home/u/proj/.cursorrules"}, {"type": "rule"}, "junk"],
    )
    assert ev.event == "prompt" and ev.prompt == "Fix the bug in main.ts"
    assert ev.extra["attachments"] == ["/home/u/proj/.cursorrules"]


def test_cursor_post_tool_use_decodes_json_tool_output():
    ev = cursor(
        "postToolUse",
        tool_name="Shell",
        tool_input={"command": "npm test", "working_directory": "/home/u/proj"},
        tool_output=json.dumps({"exitCode": 1, "stdout": "1 failed", "stderr": ""}),
        tool_use_id="t1",
        cwd="/home/u/proj/web",
        duration=5432,
    )
    assert ev.tool == "Shell"
    assert ev.tool_output == "1 failed"
    assert ev.extra["exit_code"] == 1
    assert ev.extra["duration"] == 5432
    assert ev.extra["command_cwd"] == "/home/u/proj/web"
    assert ev.cwd == "/home/u/proj"


def test_cursor_post_tool_use_failure():
    ev = cursor(
        "postToolUseFailure",
        tool_name="Read",
        tool_input={"file_path": "/p/missing"},
        error_message="File not found",
        failure_type="error",
    )
    assert ev.extra["is_error"] is True
    assert ev.tool_output == "File not found"
    assert ev.files == ["/p/missing"]


def test_cursor_after_file_edit():
    ev = cursor(
        "afterFileEdit",
        file_path="/home/u/proj/src/main.ts",
        edits=[{"old_string": "const foo = 1", "new_string": "const foo = 2"}, "junk"],
    )
    assert ev.event == "file_edit"
    assert ev.files == ["/home/u/proj/src/main.ts"]
    assert ev.tool_input == {
        "file_path": "/home/u/proj/src/main.ts",
        "edits": [{"old_string": "const foo = 1", "new_string": "const foo = 2"}],
    }


def test_cursor_shell_and_mcp_execution_hooks():
    shell = cursor("afterShellExecution", command="npm install", cwd="/home/u/proj", output="added 3", duration=150)
    assert (shell.event, shell.tool, shell.tool_input) == ("tool_use", "Shell", {"command": "npm install"})
    assert shell.tool_output == "added 3"
    before = cursor("beforeShellExecution", command="rm -rf build", cwd="/home/u/proj")
    assert before.extra["phase"] == "before"
    mcp = cursor(
        "afterMCPExecution",
        tool_name="database_query",
        tool_input='{"query": "SELECT 1"}',
        result_json='{"content": [{"type": "text", "text": "1 row"}]}',
        duration=250,
    )
    assert mcp.tool == "MCP:database_query"
    assert mcp.tool_input == {"query": "SELECT 1"}
    assert mcp.tool_output == "1 row"


def test_cursor_stop_and_compact():
    stop = cursor("stop", status="aborted", loop_count=2)
    assert stop.event == "stop"
    assert (stop.extra["status"], stop.extra["loop_count"]) == ("aborted", 2)
    assert cursor("preCompact", trigger="auto").event == "pre_compact"


def test_cursor_session_id_fallbacks():
    payload = {"generation_id": "gen-9", "workspace_roots": [], "cwd": "/x"}
    assert parse_hook_event("cursor", "stop", payload).session_id == "gen-9"
    assert parse_hook_event("cursor", "stop", {**payload, "session_id": "s-1"}).session_id == "s-1"
    assert parse_hook_event("cursor", "stop", payload).cwd == "/x"


def test_event_names_match_case_insensitively_and_argument_wins():
    ev = parse_hook_event("claude-code", "posttooluse", {"session_id": "s", "hook_event_name": "Stop"})
    assert ev.raw_event == "PostToolUse" and ev.event == "tool_use"
    assert ev.extra["payload_event"] == "Stop"
    same = parse_hook_event("cursor", "stop", {"conversation_id": "c", "hook_event_name": "stop"})
    assert "payload_event" not in same.extra


def test_all_mapped_names_are_normalised_events():
    assert set(CLAUDE_CODE_EVENTS.values()) <= set(EVENTS)
    assert set(CURSOR_EVENTS.values()) <= set(EVENTS)


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "event", "payload", "message"),
    [
        ("vscode", "Stop", {"session_id": "s"}, "unknown client"),
        (None, "Stop", {"session_id": "s"}, "unknown client"),
        ("claude-code", "PreToolUse", {"session_id": "s"}, "unknown claude-code hook event"),
        ("cursor", "SessionStart2", {"conversation_id": "c"}, "unknown cursor hook event"),
        ("cursor", 7, {"conversation_id": "c"}, "unknown cursor hook event"),
        ("claude-code", "Stop", [1, 2], "must be a JSON object"),
        ("claude-code", "Stop", None, "must be a JSON object"),
        ("claude-code", "Stop", {}, "no session id"),
        ("claude-code", "Stop", {"session_id": ""}, "no session id"),
        ("claude-code", "Stop", {"session_id": "   "}, "no session id"),
        ("claude-code", "Stop", {"session_id": 12}, "must be a string"),
        ("cursor", "stop", {"conversation_id": None, "generation_id": ["x"]}, "must be a string"),
        ("cursor", "stop", {"workspace_roots": ["/p"]}, "no session id"),
    ],
)
def test_parse_errors(client, event, payload, message):
    with pytest.raises(HookInputError, match=message):
        parse_hook_event(client, event, payload)


def test_client_aliases():
    assert parse_hook_event("Claude_Code", "Stop", {"session_id": "s"}).client == "claude-code"
    assert parse_hook_event("claude", "Stop", {"session_id": "s"}).client == "claude-code"


def test_session_id_is_sanitised():
    assert claude("Stop", session_id="a.b:c-d_1").session_id == "a.b:c-d_1"
    odd = claude("Stop", session_id="../../etc/passwd").session_id
    assert odd == claude("Stop", session_id="../../etc/passwd").session_id
    assert len(odd) == 32 and all(c in "0123456789abcdef" for c in odd)
    long_id = claude("Stop", session_id="x" * 201).session_id
    assert len(long_id) == 32
    assert claude("Stop", session_id="x" * 200).session_id == "x" * 200
    assert claude("Stop", session_id="  padded  ").session_id == "padded"


def test_absurd_numbers_do_not_escape_as_value_errors():
    ev = claude("PostToolUse", tool_name="Bash", tool_response="Error: Exit code " + "9" * 5000)
    assert "exit_code" not in ev.extra
    huge = claude("PostToolUse", tool_name="X", tool_input={"n": 10**5000}, tool_response=10**5000)
    assert huge.tool_input["n"].startswith("0x")
    assert len(event_fingerprint(huge)) == 64


def test_what_nests_deeper_than_the_limit_is_cut_and_the_event_kept():
    deep: object = "leaf"
    for _ in range(MAX_DEPTH + 5):
        deep = {"k": deep}
    ev = parse_hook_event("claude-code", "PostToolUse", {"session_id": "s", "tool_name": "X", "tool_input": deep})
    assert ev.tool == "X" and TRUNCATED_DEPTH in json.dumps(ev.tool_input) and "leaf" not in json.dumps(ev.tool_input)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000, 100000])
def test_decode_payload_cuts_deep_parts_even_past_the_parser_limit(depth):
    raw = (b'{"session_id": "s", "tool_name": "X", "tool_response": ' + b'{"k": ' * depth + b'"leaf"' + b"}" * depth
           + b', "tool_input": {"q": "[{not a bracket"}}')
    value = decode_payload(raw)
    assert value["tool_name"] == "X" and value["tool_input"] == {"q": "[{not a bracket"}
    text = json.dumps(value["tool_response"])
    assert TRUNCATED_DEPTH in text and "leaf" not in text


def test_decode_payload_tolerates_bad_utf8_and_nul():
    assert decode_payload(b'{"prompt": "caf\xe9"}') == {"prompt": "caf\ufffd"}
    assert decode_payload(b'{"prompt": "a\x00b"}') == {"prompt": "a\x00b"}
    assert decode_payload(b'\xef\xbb\xbf{"a": 1}\n\x00') == {"a": 1}
    assert decode_payload(b'{"a": "\\ud800"}') == {"a": "?"}
    assert decode_payload('{"a": 1}') == {"a": 1}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty"),
        (b"  \n\t ", "empty"),
        (b"\x00\x00", "empty"),
        (b"{not json", "not valid JSON"),
        (b'{"a": 1} trailing', "not valid JSON"),
        (b"[" * 100000 + b"]" * 99999, "not valid JSON"),
        (12, "must be bytes"),
    ],
)
def test_decode_payload_errors(raw, message):
    with pytest.raises(HookInputError, match=message):
        decode_payload(raw)


def test_decode_payload_accepts_exactly_max_depth():
    raw = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert decode_payload(raw) is not None


# -- fingerprints -------------------------------------------------------------------------------


def test_fingerprint_equal_for_repeats_and_distinct_for_changes():
    def bash(output: str, tool_use_id: str = "t1") -> HookEvent:
        return claude(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": "make", "description": "build"},
            tool_response={"stdout": output, "stderr": ""},
            tool_use_id=tool_use_id,
        )

    assert event_fingerprint(bash("ok")) == event_fingerprint(bash("ok", tool_use_id="t2"))
    assert event_fingerprint(bash("ok")) != event_fingerprint(bash("error: boom"))
    reordered = claude(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"description": "build", "command": "make"},
        tool_response={"stderr": "", "stdout": "ok"},
    )
    assert event_fingerprint(reordered) == event_fingerprint(bash("ok"))
    assert len(event_fingerprint(bash("ok"))) == 64
    assert event_fingerprint(claude("UserPromptSubmit", prompt="a")) != event_fingerprint(
        claude("UserPromptSubmit", prompt="b")
    )


# -- fuzzing ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)
KNOWN_KEYS = sorted(
    {
        *"session_id transcript_path cwd permission_mode hook_event_name source prompt tool_name".split(),
        *"tool_input tool_response tool_use_id trigger custom_instructions stop_hook_active reason".split(),
        *"error is_interrupt conversation_id generation_id workspace_roots attachments tool_output".split(),
        *"file_path edits command output result_json status loop_count duration_ms error_message".split(),
    }
)
payloads = st.fixed_dictionaries(
    {},
    optional={
        key: json_values | st.text(min_size=1, max_size=40) | st.lists(st.text(max_size=20), max_size=3)
        for key in KNOWN_KEYS
    },
)
client_events = st.sampled_from(
    [("claude-code", name) for name in CLAUDE_CODE_EVENTS]
    + [("cursor", name) for name in CURSOR_EVENTS]
    + [("cursor", "nope"), ("other", "Stop")]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(client_events, payloads | json_values)
def test_fuzz_parse_raises_only_hook_input_error(client_event, payload):
    client, event = client_event
    try:
        ev = parse_hook_event(client, event, payload)
    except HookInputError:
        return
    assert ev.event in EVENTS
    assert isinstance(ev.session_id, str) and 0 < len(ev.session_id) <= 200
    assert ev.tool_output is None or isinstance(ev.tool_output, str)
    assert all(isinstance(f, str) for f in ev.files)
    json.dumps(ev.extra)
    assert len(event_fingerprint(ev)) == 64


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
def test_fuzz_decode_raises_only_hook_input_error(raw):
    try:
        decode_payload(raw)
    except HookInputError:
        pass


# -- the real transcript -----------------------------------------------------------------------


@needs_transcript
def test_replayed_claude_code_transcript_parses():
    events = claude_code_events(TRANSCRIPT)
    names = Counter(name for name, _ in events)
    tool_calls = names["PostToolUse"] + names["PostToolUseFailure"]
    print(f"transcript tool calls: {tool_calls} ({dict(names)})")
    assert tool_calls == 150
    assert names["PostToolUseFailure"] == 5
    assert events[0][0] == "SessionStart" and events[-1][0] == "SessionEnd"
    assert names["UserPromptSubmit"] == 2
    parsed = [parse_hook_event("claude-code", name, payload) for name, payload in events]
    assert {ev.session_id for ev in parsed} == {"4d5611e5-241a-462a-8d15-5122611a9569"}
    tools = Counter(ev.tool for ev in parsed if ev.event == "tool_use")
    assert tools["Bash"] == 67 and tools["Edit"] == 32 and tools["Read"] == 31 and tools["Grep"] == 10
    failures = [ev for ev in parsed if ev.extra.get("is_error")]
    assert {ev.extra.get("exit_code") for ev in failures} == {1, 128, None}
    reads = [ev for ev in parsed if ev.tool == "Read"]
    assert all(ev.files and ev.tool_output for ev in reads)


@needs_transcript
def test_replayed_transcript_survives_a_json_round_trip():
    for name, payload in claude_code_events(TRANSCRIPT)[:40]:
        raw = json.dumps(payload).encode()
        assert parse_hook_event("claude-code", name, decode_payload(raw)) == parse_hook_event(
            "claude-code", name, payload
        )


@needs_transcript
def test_replayed_cursor_transcript_parses():
    events = cursor_events(TRANSCRIPT)
    names = Counter(name for name, _ in events)
    assert names["postToolUse"] == 150
    assert names["afterFileEdit"] == 39
    parsed = [parse_hook_event("cursor", name, payload) for name, payload in events]
    shells = [ev for ev in parsed if ev.tool == "Shell"]
    assert len(shells) == 67
    assert sorted(ev.extra["exit_code"] for ev in shells if ev.extra["exit_code"]) == [1, 1, 1, 1, 128]
    edits = [ev for ev in parsed if ev.event == "file_edit"]
    assert all(ev.files and ev.tool_input["edits"] for ev in edits)
