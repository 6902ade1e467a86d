"""Rule-based compression of observations: per tool, failures, a real transcript, fuzzing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem_mcp.capture.compress import KINDS, CompressedObservation, compress
from agentmem_mcp.capture.events import parse_hook_event

from .transcript_replay import claude_code_events, cursor_events

TRANSCRIPT = (
    Path(__file__).resolve().parents[2]
    / "shared/eval/transcripts/claude_code_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
)
needs_transcript = pytest.mark.usefixtures("shared_transcript")  # skips without the data, fails in CI
CWD = "/home/u/proj"


def tool(name: str, args: dict, output: str | None = None, **extra) -> CompressedObservation:
    return compress("tool_use", name, args, output, extra={"cwd": CWD, **extra})


# -- commands -------------------------------------------------------------------------------------


def test_failed_pytest_run():
    output = "F..F.F\n=========== 3 failed, 10 passed in 1.20s ===========\n"
    obs = tool("Bash", {"command": "cd /home/u/proj && pytest -q"}, output, exit_code=1)
    assert obs.kind == "command"
    assert obs.title == "Ran `pytest -q` (exit 1: 3 failed)"
    assert obs.is_error and obs.exit_code == 1 and obs.importance == 0.6
    assert obs.command == "cd /home/u/proj && pytest -q"
    assert "exit code: 1" in obs.facts and "status: failed" in obs.facts
    assert "result: 3 failed, 10 passed in 1.20s" in obs.facts


def test_successful_command_with_test_summary_despite_error_log_lines():
    output = "12:00 [error] Error: connection refused (expected in test)\n...\n14 doctests, 410 tests, 0 failures"
    obs = tool("Bash", {"command": "mix test 2>&1 | tail -5", "description": "Run full suite"}, output)
    assert not obs.is_error
    assert obs.title == "Ran `mix test | tail -5` (14 doctests, 410 tests, 0 failures)"
    assert "purpose: Run full suite" in obs.facts
    assert obs.importance == 0.4


def test_traceback_without_exit_code_is_a_failure_with_its_last_line():
    output = (
        "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nKeyError: 'config'\n"
    )
    obs = tool("Bash", {"command": "python app.py"}, output)
    assert obs.is_error and obs.exit_code is None
    assert "KeyError: 'config'" in obs.facts
    assert "Traceback (most recent call last):" in obs.facts
    assert obs.title.startswith("Ran `python app.py` (")


def test_command_not_found_and_claude_error_string():
    obs = tool("Bash", {"command": "foo --bar"}, "Error: Exit code 127\nbash: foo: command not found", exit_code=127)
    assert obs.is_error
    assert obs.title == "Ran `foo --bar` (exit 127: bash: foo: command not found)"
    assert "Error: Exit code 127" not in obs.facts


def test_exit_code_zero_wins_over_scary_output():
    obs = tool("Shell", {"command": "grep -r FAILED logs/"}, "logs/a: FAILED once", exit_code=0)
    assert not obs.is_error and obs.title == "Ran `grep -r FAILED logs/`"


def test_is_error_and_benign_return_codes():
    assert tool("Bash", {"command": "make"}, "", is_error=True).is_error
    benign = tool("Bash", {"command": "grep x f"}, "", exit_code=1, return_code_interpretation="No matches found")
    assert not benign.is_error


def test_cd_prefixes_are_stripped_from_the_name_only():
    obs = tool("Bash", {"command": "cd '/a b' && cd src; npm run build"}, "done", exit_code=0)
    assert obs.title == "Ran `npm run build`"
    assert obs.command == "cd '/a b' && cd src; npm run build"


def test_long_command_title_is_clipped():
    obs = tool("Bash", {"command": "echo " + "x" * 500}, "", exit_code=2)
    assert len(obs.title) <= 120 and obs.title.endswith("(exit 2)")


def test_background_and_interrupted_commands():
    obs = tool("Bash", {"command": "mix test"}, None, background_task_id="b1", interrupted=True)
    assert obs.title == "Ran `mix test` (interrupted, in background)"


# -- files ------------------------------------------------------------------------------------------


def test_edit_rename():
    obs = tool(
        "Edit",
        {
            "file_path": f"{CWD}/src/app.py",
            "old_string": "def parse_config(path):\n    return parse_config_file(path)",
            "new_string": "def load_config(path):\n    return parse_config_file(path)",
        },
        f"Updated {CWD}/src/app.py",
    )
    assert obs.kind == "file_edit" and obs.importance == 0.6
    assert obs.title == "Edited src/app.py: renamed parse_config → load_config"
    assert obs.files == [f"{CWD}/src/app.py"]
    assert "+1 -1 lines in 1 change" in obs.facts


def test_edit_adding_a_function_and_multiedit():
    added = tool(
        "Edit",
        {"file_path": f"{CWD}/a.py", "old_string": "x = 1\n", "new_string": "x = 1\n\ndef retry(n):\n    pass\n"},
    )
    assert added.title == "Edited a.py: added retry"
    multi = tool(
        "MultiEdit",
        {
            "file_path": f"{CWD}/b.py",
            "edits": [
                {"old_string": "a = 1", "new_string": "a = 2"},
                {"old_string": "b = 1\nc = 1", "new_string": "b = 2"},
            ],
        },
    )
    assert multi.title == "Edited b.py: +2 -3 lines"
    assert "+2 -3 lines in 2 changes" in multi.facts


def test_failed_edit_is_an_error():
    obs = tool(
        "Edit",
        {"file_path": f"{CWD}/a.py", "old_string": "nope", "new_string": "x"},
        "<tool_use_error>String to replace not found in file.</tool_use_error>",
    )
    assert obs.kind == "error" and obs.is_error and obs.importance == 0.7
    assert obs.title == "Edit of a.py failed: String to replace not found in file."


def test_write_and_notebook_edit():
    write = tool("Write", {"file_path": f"{CWD}/pkg/mod.py", "content": "class Store:\n    pass\n"}, operation="create")
    assert write.kind == "file_write"
    assert write.title == "Created pkg/mod.py (2 lines)"
    assert "defines: Store" in write.facts
    update = tool("Write", {"file_path": "/elsewhere/x.txt", "content": "a\nb"})
    assert update.title == "Wrote /elsewhere/x.txt (2 lines)"
    notebook = tool("NotebookEdit", {"notebook_path": f"{CWD}/n.ipynb", "new_source": "print(1)"})
    assert notebook.kind == "file_edit" and notebook.title == "Edited notebook n.ipynb: +1 -0 lines"


def test_read_titles():
    partial = tool("Read", {"file_path": f"{CWD}/README.md", "offset": 1, "limit": 80}, "# Hi")
    assert partial.title == "Read README.md lines 1-80"
    assert partial.kind == "file_read" and partial.importance == 0.2
    whole = tool(
        "Read",
        {"file_path": f"{CWD}/lib/a.ex"},
        "     1\u2192defmodule A do\n     2\u2192  def run, do: :ok\n",
        start_line=1,
        num_lines=2,
        total_lines=2,
    )
    assert whole.title == "Read lib/a.ex"
    assert "defines: A, run" in whole.facts
    deep = tool("Read", {"file_path": "/very/long/path/that/goes/on/and/on/and/on/forever/src/module/file.py"})
    assert deep.title == "Read .../src/module/file.py"


def test_search_tools():
    grep = tool("Grep", {"pattern": "TODO", "path": f"{CWD}/src", "glob": "*.py"}, "src/a.py:3: # TODO x")
    assert grep.kind == "search" and grep.importance == 0.25
    assert grep.title == "Searched for 'TODO' in src (*.py)"
    assert grep.facts[0] == "1 result line"
    empty = tool("Grep", {"pattern": "zzz"}, "No matches found")
    assert empty.facts == ["no matches"] and empty.title == "Searched for 'zzz'"
    glob = tool("Glob", {"pattern": "**/*.ts", "path": f"{CWD}/web"}, "web/a.ts\nweb/b.ts")
    assert glob.title == "Listed files matching '**/*.ts' in web"
    assert tool("LS", {"path": f"{CWD}/docs"}).title == "Listed docs"


def test_web_tools():
    fetch = tool("WebFetch", {"url": "https://example.com/docs", "prompt": "find the rate limit"}, "Limit: 5/s")
    assert fetch.kind == "web" and fetch.title == "Fetched https://example.com/docs"
    assert "looking for: find the rate limit" in fetch.facts
    search = tool("WebSearch", {"query": "sqlite wal busy timeout"}, "Result one\nResult two")
    assert search.title == "Searched the web for 'sqlite wal busy timeout'"


def test_task_and_todos():
    task = tool(
        "Task",
        {"subagent_type": "Explore", "description": "Map the renderer", "prompt": "Find renderers. Be brief."},
        "The renderer lives in lib/r.ex.",
    )
    assert task.kind == "task" and task.title == "Delegated to Explore agent: Map the renderer"
    assert "asked: Find renderers." in task.facts
    todos = tool(
        "TodoWrite",
        {
            "todos": [
                {"content": "write tests", "status": "completed"},
                {"content": "fix bug", "status": "in_progress"},
                {"content": "docs", "status": "pending"},
                "junk",
            ]
        },
    )
    assert todos.title == "Updated todo list (1 completed, 1 in progress, 1 pending)"
    assert "[in_progress] fix bug" in todos.facts


def test_mcp_and_unknown_tools():
    claude_mcp = tool("mcp__github__create_issue", {"title": "Bug", "body": "x"}, "Created #12")
    assert claude_mcp.kind == "mcp" and claude_mcp.title == "Called MCP tool github/create_issue"
    assert "args: title=Bug, body=x" in claude_mcp.facts
    cursor_mcp = tool("MCP:database_query", {"query": "SELECT 1"}, "1 row")
    assert cursor_mcp.title == "Called MCP tool database_query"
    failed = tool("mcp__db__q", {}, "boom", is_error=True)
    assert failed.kind == "error" and failed.title == "Called MCP tool db/q failed: boom"
    unknown = tool("Frobnicate", {"level": 3}, "ok")
    assert unknown.kind == "other" and unknown.title == "Used Frobnicate"


def test_prompt():
    text = "Add retry logic to the uploader. It fails on flaky networks! See src/upload.py for details. " * 3
    obs = compress("prompt", None, None, None, prompt=text)
    assert obs.kind == "prompt" and obs.importance == 0.5
    assert obs.title.startswith("Prompt: Add retry logic to the uploader.")
    assert len(obs.title) <= 120
    assert len(obs.facts[0]) <= 300 and obs.facts[0].endswith(".")
    assert obs.files == ["src/upload.py"]
    assert compress("prompt", None, None, None, prompt="").title == "Prompt: (empty)"


def test_session_events():
    assert compress("session_start", None, None, None, extra={"source": "resume"}).title == "Session started (resume)"
    assert compress("session_end", None, None, None, extra={"reason": "clear"}).title == "Session ended (clear)"
    compact = compress("pre_compact", None, None, None, extra={"trigger": "manual", "custom_instructions": "keep"})
    assert compact.kind == "session" and compact.title == "Context compaction (manual)"
    assert compress("stop", None, None, None).title == "Agent finished its turn"


def test_cursor_file_edit_and_shell_through_the_parser():
    edit = parse_hook_event(
        "cursor",
        "afterFileEdit",
        {
            "conversation_id": "c",
            "workspace_roots": [CWD],
            "file_path": f"{CWD}/src/main.ts",
            "edits": [{"old_string": "const foo = 1", "new_string": "const bar = 1"}],
        },
    )
    obs = compress(edit.event, edit.tool, edit.tool_input, edit.tool_output, extra={**edit.extra, "cwd": edit.cwd})
    assert obs.kind == "file_edit" and obs.title == "Edited src/main.ts: renamed foo → bar"
    shell = parse_hook_event(
        "cursor",
        "postToolUse",
        {
            "conversation_id": "c",
            "tool_name": "Shell",
            "tool_input": {"command": "npm test"},
            "tool_output": '{"exitCode": 1, "stdout": "Tests: 2 failed, 5 passed, 7 total", "stderr": ""}',
        },
    )
    obs = compress(shell.event, shell.tool, shell.tool_input, shell.tool_output, extra=shell.extra)
    assert obs.title == "Ran `npm test` (exit 1: 2 failed)" and obs.is_error


# -- the real transcript -------------------------------------------------------------------------

EXPECTED_KIND = {
    "Bash": "command",
    "Shell": "command",
    "Edit": "file_edit",
    "Write": "file_write",
    "Read": "file_read",
    "Grep": "search",
    "Task": "task",
    "TaskOutput": "task",
    "AskUserQuestion": "other",
}


def _compress_all(client: str, events: list[tuple[str, dict]]) -> list[tuple[object, CompressedObservation]]:
    pairs = []
    for name, payload in events:
        ev = parse_hook_event(client, name, payload)
        extra = {**ev.extra, "cwd": ev.cwd}
        pairs.append((ev, compress(ev.event, ev.tool, ev.tool_input, ev.tool_output, ev.prompt, extra)))
    return pairs


@needs_transcript
def test_transcript_tool_calls_compress_to_sensible_kinds():
    pairs = _compress_all("claude-code", claude_code_events(TRANSCRIPT))
    tool_pairs = [(ev, obs) for ev, obs in pairs if ev.event == "tool_use"]
    print(f"transcript tool calls: {len(tool_pairs)}")
    assert len(tool_pairs) == 150
    for ev, obs in tool_pairs:
        assert obs.kind == EXPECTED_KIND[ev.tool], (ev.tool, obs)
        assert obs.title and len(obs.title) <= 120 and "\n" not in obs.title
        assert 0 <= obs.importance <= 1
    kinds = Counter(obs.kind for _, obs in tool_pairs)
    assert kinds == {
        "command": 67, "file_edit": 32, "file_read": 31, "search": 10, "file_write": 7, "task": 2, "other": 1,
    }  # fmt: skip
    failed = [obs for ev, obs in tool_pairs if obs.is_error]
    # 5 commands exited non-zero; one `mix dialyzer | grep ... | head` exited 0 through its filters but printed
    # dialyzer's findings (file:line:col: ...): an output of errors is a failure whatever the status
    assert len(failed) == 6 and all(obs.kind == "command" and obs.importance == 0.6 for obs in failed)
    assert sum("mix dialyzer" in obs.title for obs in failed) == 1
    prompts = [obs for ev, obs in pairs if obs.kind == "prompt"]
    assert [p.title for p in prompts][1] == "Prompt: continue"


@needs_transcript
def test_transcript_specific_titles():
    pairs = _compress_all("claude-code", claude_code_events(TRANSCRIPT))
    titles = [obs.title for ev, obs in pairs if ev.event == "tool_use"]
    by_obs = [obs for ev, obs in pairs if ev.event == "tool_use"]
    assert titles[0] == "Ran `bd show spotter-dov`"
    assert titles[4] == "Delegated to Explore agent: Explore transcript rendering codebase"
    assert titles[5] == "Read lib/spotter_web/live/session_live.ex"
    assert titles[12] == "Created lib/spotter_web/live/transcript_computers.ex (42 lines)"
    assert titles[23] == "Read lib/spotter_web/live/session_live.ex lines 260-319"
    assert titles[27] == "Searched for '@show_debug' in lib/spotter_web/live/session_live.ex"
    assert titles[28] == "Edited lib/spotter_web/live/session_live.ex: renamed show_debug → transcript_view_show_debug"
    assert titles[39] == "Ran `mix test | tail -10` (14 doctests, 397 tests, 0 failures)"
    push = by_obs[146]
    assert push.title.startswith("Ran `git push` (exit 128: fatal: The current branch spotter-dov")
    assert push.exit_code == 128 and push.is_error
    assert by_obs[107].title.startswith("Ran `git add .beads/issues.jsonl") and by_obs[107].exit_code == 1
    assert "(exit 1: The following paths are ignored" in by_obs[107].title


@needs_transcript
def test_cursor_shaped_transcript_compresses_alike():
    pairs = _compress_all("cursor", cursor_events(TRANSCRIPT))
    tool_pairs = [(ev, obs) for ev, obs in pairs if ev.event == "tool_use"]
    assert len(tool_pairs) == 150
    for ev, obs in tool_pairs:
        assert obs.kind == EXPECTED_KIND[ev.tool], (ev.tool, obs)
    assert sum(obs.is_error for _, obs in tool_pairs) == 5
    edits = [obs for ev, obs in pairs if ev.event == "file_edit"]
    assert len(edits) == 39 and all(obs.kind == "file_edit" for obs in edits)


def test_absurd_values_in_extra_and_args():
    obs = tool("Bash", {"command": "x", "n": 10**5000}, "out", exit_code=10**5000, start_line=-(10**30))
    assert obs.exit_code is None and obs.title == "Ran `x`"
    assert tool("Frob", {"n": 10**5000}).facts == ["args: n=<int>"]


# -- fuzzing --------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=25,
)
tool_names = st.sampled_from(
    [*EXPECTED_KIND, "MultiEdit", "NotebookEdit", "Glob", "LS", "WebFetch", "WebSearch", "TodoWrite",
     "mcp__a__b", "MCP:x", "Delete", "StrReplace", "Frob", ""]
) | st.text(max_size=20) | st.none()  # fmt: skip
arg_dicts = st.fixed_dictionaries(
    {},
    optional={
        key: json_values | st.text(max_size=200)
        for key in "command file_path path old_string new_string content edits todos pattern url query "
        "prompt subagent_type description offset limit replace_all notebook_path new_source questions".split()
    },
)
extras = st.fixed_dictionaries(
    {},
    optional={
        key: json_values
        for key in "cwd exit_code is_error interrupted start_line num_lines total_lines operation source "
        "reason trigger status return_code_interpretation background_task_id custom_instructions".split()
    },
)


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(["tool_use", "file_edit", "prompt", "session_start", "stop", "session_end", "pre_compact"])
    | st.text(max_size=10)
    | st.none(),
    tool_names,
    arg_dicts | json_values,
    st.text(max_size=300) | json_values,
    st.text(max_size=400) | json_values,
    extras | json_values,
)
def test_fuzz_compress_never_raises(event, name, args, output, prompt, extra):
    obs = compress(event, name, args, output, prompt, extra)
    assert obs.kind in KINDS
    assert 0 < len(obs.title) <= 120 and "\n" not in obs.title
    assert 0 <= obs.importance <= 1
    assert all(isinstance(f, str) for f in obs.facts) and len(obs.facts) <= 12
    assert all(isinstance(f, str) for f in obs.files)
    assert obs.exit_code is None or isinstance(obs.exit_code, int)


def test_cursor_edit_file_counts_its_new_code_not_its_markers():
    args = {"target_file": f"{CWD}/lib/cart.py", "instructions": "Round the total",
            "code_edit": "// ... existing code ...\ndef total(item):\n    return round(item.price * item.qty, 2)\n"
                         "// ... existing code ..."}
    obs = compress("tool_use", "edit_file", args, None, extra={"cwd": CWD})
    assert obs.kind == "file_edit" and obs.title == "Edited lib/cart.py: added total", obs.title
    assert obs.facts[0] == "+2 -0 lines in 1 change"
