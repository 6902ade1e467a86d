"""Issue 21, bring your history: `agentmem import-history claude-code` replays real Claude Code transcripts
(the shared ones) through the capture path: redacted, idempotent, summarised by the worker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import SHARED, require_shared
from .test_firsthour import agentmem

TRANSCRIPTS = SHARED / "eval" / "transcripts" / "claude_code_spotter"
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """A ~/.claude/projects with two real sessions, one of whose prompts carries a secret."""
    require_shared(TRANSCRIPTS, "the shared Claude Code transcripts")
    root = tmp_path / "claude" / "projects" / "-home-marco-projects-spotter"
    root.mkdir(parents=True)
    shutil.copy(TRANSCRIPTS / "tool_heavy.jsonl", root / "tool_heavy.jsonl")
    lines = (TRANSCRIPTS / "short.jsonl").read_text(encoding="utf-8").split("\n")
    for n, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        content = record.get("message", {}).get("content") if isinstance(record.get("message"), dict) else None
        if record.get("type") == "user" and isinstance(content, str) and not content.startswith("<"):
            record["message"]["content"] = f"{content} (the deploy token is {SECRET})"
            lines[n] = json.dumps(record)
            break
    else:
        pytest.fail("no typed prompt in short.jsonl to put a secret in")
    (root / "short.jsonl").write_text("\n".join(lines), encoding="utf-8")
    (root / "subagents").mkdir()
    shutil.copy(TRANSCRIPTS / "subagent.jsonl", root / "subagents" / "agent-1.jsonl")  # part of a session
    return root.parent


def test_import_history_is_redacted_idempotent_and_summarised(cli_env, tmp_path, history):
    first = agentmem(cli_env, "import-history", "claude-code", "--root", str(history), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "imported 2 sessions" in first.stdout and "summaries" in first.stdout, first.stdout
    assert "Traceback" not in first.stderr
    assert first.stderr.rstrip().endswith("sessions: 2/2") and "\r" not in first.stderr  # not a terminal

    home = Path(cli_env["AGENTMEM_HOME"])
    stored = b"".join(p.read_bytes() for p in home.glob("agentmem.db*"))
    assert SECRET.encode() not in stored
    stats = json.loads(agentmem(cli_env, "stats", "--all-projects", "--json", cwd=tmp_path).stdout)
    assert stats["sessions"] == 2 and stats["by_tier"].get("episodic", 0) >= 1, stats
    listed = agentmem(cli_env, "list", "--all-projects", "--tier", "episodic", "--json", cwd=tmp_path)
    summaries = json.loads(listed.stdout)["memories"]
    assert summaries and all(m["project"] == "/home/marco/projects/spotter" for m in summaries)  # not global
    assert all(m["created_at"] < 1.8e9 and m["created_at"] > 1.7e9 for m in summaries)  # when it happened

    again = agentmem(cli_env, "import-history", "claude-code", "--root", str(history), cwd=tmp_path)
    assert again.returncode == 0 and "imported 0 sessions (0 events); 2 already in agentmem" in again.stdout
    assert json.loads(agentmem(cli_env, "stats", "--all-projects", "--json", cwd=tmp_path).stdout) == stats


def test_import_history_filters(cli_env, tmp_path, history):
    later = agentmem(cli_env, "import-history", "claude-code", "--root", str(history), "--since", "2999-01-01",
                     cwd=tmp_path)
    assert later.returncode == 0 and later.stdout.startswith("no sessions to import")
    elsewhere = agentmem(cli_env, "import-history", "claude-code", "--root", str(history), "--project",
                         str(tmp_path / "another"), cwd=tmp_path)
    assert elsewhere.returncode == 0 and "no sessions to import" in elsewhere.stdout
    spotter = agentmem(cli_env, "import-history", "claude-code", "--root", str(history), "--project",
                       "/home/marco/projects/spotter", "--no-worker", "--quiet", cwd=tmp_path)
    assert spotter.returncode == 0 and "imported 2 sessions" in spotter.stdout and spotter.stderr == ""
    bad = agentmem(cli_env, "import-history", "claude-code", "--root", str(history), "--since", "last tuesday",
                   cwd=tmp_path)
    assert bad.returncode == 2 and "2026-03-01" in bad.stderr and "Traceback" not in bad.stderr
    missing = agentmem(cli_env, "import-history", "claude-code", "--root", str(tmp_path / "none"), cwd=tmp_path)
    assert missing.returncode == 2 and "no Claude Code history" in missing.stderr
