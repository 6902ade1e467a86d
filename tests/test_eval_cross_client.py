"""scripts/eval_cross_client.py: real Claude Code sessions of one project replayed as Claude Code, Codex and Gemini
CLI in turn; the next session's briefing holds all three, each named with its client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import SHARED, require_shared

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


@pytest.mark.eval
@pytest.mark.slow
@pytest.mark.long(60)
def test_one_briefing_holds_the_sessions_of_every_client(model_path, capsys):
    spec = require_shared(SHARED / "eval" / "coding" / "spec.json", "the coding evaluation's sessions")
    import eval_cross_client

    figures = eval_cross_client.main(["--spec", str(spec), "--project", "attio-mcp-server",
                                      "--model-path", str(model_path)])
    (project,) = figures["projects"]
    assert project["clients"] == ["claude-code", "codex", "gemini"]
    assert project["named"] == ["claude-code", "codex", "gemini"] and project["one_briefing_holds_all"]
    assert all(session["shown"] for session in project["sessions"])
    assert figures["hook_problems"] == {}
    assert "1/1 projects: one briefing holds every client's sessions" in capsys.readouterr().out
