"""Issue 37.12: a session imported by `agentmem import-history` is the session its hooks would have recorded, the
same events whichever way it arrives (a resumed session's copies of the earlier one left out, as Claude Code fired
no hook for them), and what is learned from it is as old as the session (not "learned, just now"). Through the real
`agentmem import-history`, the real `agentmem hook` command fed the events Claude Code sends, and the real worker."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from agentmem_mcp.config import load_settings
from agentmem_mcp.db.connection import connect

from .conftest import SHARED, require_shared
from .test_firsthour import agentmem
from .transcript_replay import claude_code_timeline

TRANSCRIPTS = SHARED / "eval" / "transcripts" / "claude_code_spotter"
ORIGINAL_CWD = "/home/marco/projects/spotter"


def records(name: str, repo: Path) -> list[dict]:
    text = (require_shared(TRANSCRIPTS / name, "the shared Claude Code transcripts")).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.replace(ORIGINAL_CWD, str(repo)).split("\n") if line.strip()]


def write(path: Path, lines: list[dict], mtime: float) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def observations_by_session(home: Path) -> dict[str, int]:
    conn = connect(load_settings(env={}, home=home).database, load_vec=False)
    try:
        return dict(conn.execute("SELECT session_id, COUNT(*) FROM observations GROUP BY session_id").fetchall())
    finally:
        conn.close()


def test_an_imported_session_counts_and_ages_as_its_hooks_would(cli_env, tmp_path):
    repo = tmp_path / "spotter"
    (repo / ".git").mkdir(parents=True)
    history = tmp_path / "claude" / "projects" / "-spotter"
    history.mkdir(parents=True)
    first = records("tool_heavy.jsonl", repo)
    resumed_id = "5e55ed00-0000-4000-8000-000000000001"
    # `claude --resume`: the earlier session's records copied (same uuids, the new session's id), then its own
    resumed = [{**r, "sessionId": resumed_id} if "sessionId" in r else r
               for r in first + records("short.jsonl", repo)]
    paths = [write(history / "first.jsonl", first, time.time() - 7200),
             write(history / "resumed.jsonl", resumed, time.time() - 3600)]

    imported = agentmem(cli_env, "import-history", "claude-code", "--root", str(history.parent), "--quiet",
                        "--no-worker", cwd=repo)  # the worker prunes old events: compare what was recorded
    assert imported.returncode == 0, imported.stderr

    hooked_env = dict(cli_env, AGENTMEM_HOME=str(tmp_path / "hooked"))
    seen: set[str] = set()
    for path in paths:  # what Claude Code sent while these sessions ran
        for _, event, payload in claude_code_timeline(path, seen):
            sent = agentmem(hooked_env, "hook", event, cwd=repo, stdin=json.dumps(payload))
            assert sent.returncode == 0, sent.stderr
    by_import = observations_by_session(Path(cli_env["AGENTMEM_HOME"]))
    by_hooks = observations_by_session(tmp_path / "hooked")
    assert set(by_import) == {first[-1]["sessionId"], resumed_id}
    assert by_import == by_hooks
    assert f"({sum(by_import.values())} events)" in imported.stdout, imported.stdout

    worked = agentmem(cli_env, "worker", "--once", cwd=repo)
    assert worked.returncode == 0, worked.stderr
    started = agentmem(cli_env, "hook", "SessionStart", cwd=repo, stdin=json.dumps(
        {"session_id": "new-one", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}))
    briefing = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    learned = [line for line in briefing.splitlines() if "(learned, " in line]
    assert learned, briefing
    assert all("just now" not in line and "mo ago" in line for line in learned), learned
    listed = json.loads(agentmem(cli_env, "list", "--all-projects", "--json", cwd=repo).stdout)["memories"]
    assert listed and all(m["created_at"] < time.time() - 30 * 86400 for m in listed), listed  # the sessions' age
