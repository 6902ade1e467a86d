"""Issue 21, scope: every CLI command works on the current project by default, --all-projects widens
(the real `agentmem` command in a subprocess, the real hook command for observations)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .test_firsthour import agentmem


@pytest.fixture
def two_projects(tmp_path: Path, cli_env: dict[str, str]) -> tuple[Path, Path]:
    """Project a: two versions of one decision, a memory whose TTL has run out, a prompt captured by the
    hook; project b: one memory; and one global memory."""
    a, b = tmp_path / "a", tmp_path / "b"
    for repo in (a, b):
        (repo / ".git").mkdir(parents=True)

    def save(cwd: Path, *args: str) -> str:
        result = agentmem(cli_env, "save", *args, "--json", cwd=cwd)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["id"]

    save(a, "use yarn to install dependencies", "--type", "decision")
    save(a, "use pnpm to install dependencies", "--type", "decision")
    save(a, "the staging database is reset every night at 02:00", "--ttl-days", "0.00001")
    save(b, "project b runs its tests with tox in CI")
    save(a, "the user prefers short answers without preamble", "--global", "--i-am-the-user")
    event = {"session_id": "s-a-1", "transcript_path": str(a / "t.jsonl"), "cwd": str(a),
             "hook_event_name": "UserPromptSubmit", "prompt": "why does the deploy fail on staging?"}
    hooked = agentmem(cli_env, "hook", "UserPromptSubmit", cwd=a, stdin=json.dumps(event))
    assert hooked.returncode == 0, hooked.stderr
    time.sleep(1.0)  # the TTL (0.86 s) has run out
    return a, b


def test_export_is_the_current_project_and_the_global_memories(cli_env, two_projects):
    a, b = two_projects
    exported = agentmem(cli_env, "export", cwd=b)
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    projects = {r["project"] for r in records if r["kind"] == "memory"}
    assert projects == {str(b), None}
    everything = agentmem(cli_env, "export", "--all-projects", cwd=b)
    projects = {json.loads(line).get("project") for line in everything.stdout.splitlines()[1:]}
    assert {str(a), str(b), None} <= projects


def test_forget_strategy_lists_only_this_projects_removals(cli_env, two_projects):
    a, b = two_projects
    in_b = agentmem(cli_env, "forget", "--strategy", "composite", "--dry-run", cwd=b)
    assert in_b.returncode == 0, in_b.stderr
    assert f"dry run: would remove 0 of 1 memories in {b}" in in_b.stdout
    assert "staging" not in in_b.stdout and "pnpm" not in in_b.stdout
    assert "1 memories kept (--show-keeps lists them)" in in_b.stdout

    in_a = agentmem(cli_env, "forget", "--strategy", "composite", "--dry-run", cwd=a)
    assert f"dry run: would remove 1 of 2 memories in {a}" in in_a.stdout, in_a.stdout
    assert "staging database" in in_a.stdout and "expire" in in_a.stdout
    assert "pnpm" not in in_a.stdout  # a keep, listed only on request
    keeps = agentmem(cli_env, "forget", "--strategy", "composite", "--dry-run", "--show-keeps", cwd=a)
    assert "pnpm" in keeps.stdout and "keep" in keeps.stdout

    done = agentmem(cli_env, "forget", "--strategy", "composite", "--yes", "--i-am-the-user", cwd=b)
    assert done.returncode == 0 and f"removed 0 of 1 memories in {b}" in done.stdout
    still = agentmem(cli_env, "forget", "--strategy", "composite", "--dry-run", cwd=a)
    assert "would remove 1 of 2" in still.stdout  # a sweep in b left a's memories alone
    done = agentmem(cli_env, "forget", "--strategy", "composite", "--yes", "--json", "--i-am-the-user", cwd=a)
    assert len(json.loads(done.stdout)["removed_ids"]) == 1
    search = agentmem(cli_env, "search", "staging database reset", "--json", cwd=a)
    assert all("staging" not in hit["title"] for hit in json.loads(search.stdout)["hits"])

    widened = agentmem(cli_env, "forget", "--strategy", "composite", "--dry-run", "--all-projects", cwd=b)
    assert "dry run: would remove 0 of 3 memories" in widened.stdout  # every project's latest memory
    assert "kept (--show-keeps lists them)" in widened.stdout


def test_stats_counts_only_this_project(cli_env, two_projects):
    a, b = two_projects
    in_b = json.loads(agentmem(cli_env, "stats", "--json", cwd=b).stdout)
    assert in_b["project"] == str(b)
    assert in_b["memories"] == 2  # its own and the global one
    assert in_b["superseded_versions"] == 0 and in_b["observations"] == {} and in_b["sessions"] == 0
    in_a = json.loads(agentmem(cli_env, "stats", "--json", cwd=a).stdout)
    assert in_a["superseded_versions"] == 1 and sum(in_a["observations"].values()) == 1
    assert in_a["sessions"] == 1
    everything = json.loads(agentmem(cli_env, "stats", "--json", "--all-projects", cwd=b).stdout)
    assert everything["memories"] == 4 and everything["superseded_versions"] == 1
    text = agentmem(cli_env, "stats", cwd=b).stdout
    assert text.splitlines()[0] == f"project      {b}"


def test_stats_shows_the_last_sweep_readably(cli_env, two_projects):
    a, _ = two_projects
    swept = agentmem(cli_env, "forget", "--strategy", "composite", "--yes", "--all-projects", "--i-am-the-user", cwd=a)
    assert swept.returncode == 0, swept.stderr
    line = next(x for x in agentmem(cli_env, "stats", cwd=a).stdout.splitlines() if x.startswith("last sweep"))
    assert "UTC (just now), composite: removed 1 of 4 memories" in line, line
    assert "{" not in line and '"at"' not in line
