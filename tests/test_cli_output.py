"""Issue 37.10 and 37.13, what the command line shows: `agentmem list` lists what search shows (the raw captured
events of the working tier only when asked), its pages are named as pages, errors name the command's own flags,
progress is plain lines where nobody watches a terminal, and `serve --help` says what serve is. Through the real
`agentmem` command in a subprocess, the real hook command and the real worker."""

from __future__ import annotations

import json
from pathlib import Path

from .test_firsthour import agentmem, assert_clear_line


def hook(env: dict[str, str], cwd: Path, event: str, **fields: object) -> None:
    payload = {"session_id": "s-list-1", "cwd": str(cwd), "hook_event_name": event, **fields}
    done = agentmem(env, "hook", event, cwd=cwd, stdin=json.dumps(payload))
    assert done.returncode == 0, done.stderr


def test_list_shows_what_search_shows_and_the_raw_events_on_request(cli_env, tmp_path):
    repo = tmp_path / "webapp"
    (repo / ".git").mkdir(parents=True)
    assert agentmem(cli_env, "save", "We deploy with fly deploy from the main branch", cwd=repo).returncode == 0
    hook(cli_env, repo, "SessionStart", source="startup")
    hook(cli_env, repo, "UserPromptSubmit", prompt="thanks")
    hook(cli_env, repo, "PostToolUse", tool_name="Bash", tool_input={"command": "pytest -q"},
         tool_response={"stdout": "3 passed", "stderr": "", "exit_code": 0})
    assert agentmem(cli_env, "worker", "--once", cwd=repo).returncode == 0

    listed = agentmem(cli_env, "list", cwd=repo)
    assert listed.returncode == 0, listed.stderr
    assert "fly deploy" in listed.stdout and "Prompt: thanks" not in listed.stdout, listed.stdout
    assert "raw captured events" in listed.stdout and "--tier working" in listed.stdout, listed.stdout
    raw = agentmem(cli_env, "list", "--tier", "working", cwd=repo)
    assert "Prompt: thanks" in raw.stdout and "fly deploy" not in raw.stdout, raw.stdout
    as_json = json.loads(agentmem(cli_env, "list", "--json", cwd=repo).stdout)
    assert all(m["tier"] != "working" for m in as_json["memories"]) and "working" not in as_json["tiers"]

    far = agentmem(cli_env, "list", "--page", "999", cwd=repo)
    assert far.returncode == 0 and "no memories on page 999: there is 1 page of 20 (--page 1 to 1)" in far.stdout


def test_errors_name_the_commands_flags(cli_env, tmp_path):
    mistakes = [(["forget"], ["--session", "--older-than-days"], ["session_id", "before", "older_than_days"]),
                (["forget", "--session", "x", "--type", "fact"], ["--session"], ["session_id"]),
                (["forget", "--older-than-days", "-1"], ["--older-than-days"], ["older_than_days"]),
                (["search", "x", "--limit", "0"], ["--limit must"], []),
                (["search", "x", "--min-confidence", "3"], ["--min-confidence"], ["min_confidence"]),
                (["search", "x", "--budget", "1"], ["--budget"], ["budget_tokens"]),
                (["save", "a memory about the build", "--ttl-days", "-1"], ["--ttl-days"], ["ttl_days"]),
                (["save", "a memory about the build", "--importance", "4"], ["--importance must"], [])]
    for args, named, unnamed in mistakes:
        done = agentmem(cli_env, *args, cwd=tmp_path)
        assert_clear_line(done, *named)
        assert not any(word in done.stderr for word in unnamed), (args, done.stderr)


def test_every_command_help_says_what_it_does(cli_env, tmp_path):
    served = agentmem(cli_env, "serve", "--help", cwd=tmp_path)
    assert served.returncode == 0 and "MCP client" in served.stdout and "you do not run it by hand" in served.stdout
    for command in ("search", "list", "forget", "reindex", "worker", "ui"):
        shown = agentmem(cli_env, command, "--help", cwd=tmp_path).stdout
        description = shown.split("\n\n")[1]
        assert not description.startswith(("positional arguments", "options")), (command, shown)


def test_progress_is_plain_lines_when_nobody_watches_a_terminal(cli_env, tmp_path):
    assert agentmem(cli_env, "save", "The build uses pnpm, not npm", cwd=tmp_path).returncode == 0
    rebuilt = agentmem(cli_env, "reindex", cwd=tmp_path)  # stderr is a pipe here
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "\r" not in rebuilt.stderr and "[#" not in rebuilt.stderr, repr(rebuilt.stderr)
    assert all(": " in line and "/" in line for line in rebuilt.stderr.strip().splitlines()), rebuilt.stderr
