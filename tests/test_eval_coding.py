"""The coding-session evaluation (scripts/eval_coding.py): its scoring functions on hand-made text, the replay
timeline on a shared transcript, and the whole script on one small project of the shared set (skipped when
../shared is absent, failing under CI)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

import coding_checks  # noqa: E402
import eval_coding  # noqa: E402
from live_processes import stop_shared_processes  # noqa: E402

from .conftest import require_shared  # noqa: E402
from .transcript_replay import claude_code_events, claude_code_timeline  # noqa: E402

SPEC = eval_coding.DEFAULT_SPEC.resolve()
SHORT = SPEC.parent.parent / "transcripts" / "claude_code_spotter" / "short.jsonl"


def test_matching_is_a_case_insensitive_substring_with_its_context():
    text = "Run the tests with NPM RUN TEST:unit before pushing; the dev server is `npm run dev`."
    assert eval_coding.first_match(text, ["pnpm dev", "npm run dev"]) == "npm run dev"
    assert eval_coding.first_match(text, ["npm run test:unit"]) == "npm run test:unit"
    assert eval_coding.first_match(text, ["yarn"]) is None
    assert eval_coding.first_match("", ["anything"]) is None
    assert "npm run dev" in eval_coding.around(text, "npm run dev", width=20)
    scored = eval_coding.score_channels({"briefing": text, "search": ""}, ["npm run dev"])
    assert scored["briefing"]["answered"] and scored["briefing"]["match"] == "npm run dev"
    assert scored["search"] == {"answered": False, "match": None, "snippet": ""}
    assert eval_coding.tokens("x" * 9) == 3 and eval_coding.tokens("") == 0
    hits = [{"title": f"t{i}", "snippet": f"s{i}"} for i in range(7)]
    assert eval_coding.hits_text(hits).count("\n") == 9 and "t5" not in eval_coding.hits_text(hits)


def test_raw_observations_show_prompt_command_or_title_oldest_first():
    rows = [{"event": "tool_use", "tool": "Read", "input": '{"file_path": "/r/a.py"}', "prompt": None,
             "title": "Read a.py"},
            {"event": "tool_use", "tool": "Bash", "input": '{"command": "npm   test"}', "prompt": None, "title": "x"},
            {"event": "prompt", "tool": None, "input": None, "prompt": "fix the login bug", "title": None}]
    assert eval_coding.raw_observations_text(rows).splitlines() == ["- prompt: fix the login bug", "- $ npm test",
                                                                    "- Read a.py"]


def test_staleness_verdicts():
    assert coding_checks.marked_stale(None, "anything") is None  # not shown before: nothing to judge
    assert coding_checks.marked_stale("- [fact] src/a.py parses input", None) is True  # left out after the deletion
    assert coding_checks.marked_stale("- [fact] src/a.py parses input", "- [fact] src/a.py parses input (stale: "
                                    "file missing)") is True
    assert coding_checks.marked_stale("- [fact] src/a.py parses input", "- [fact] src/a.py parses input") is False
    assert coding_checks.marked_stale("the stale cache in a.py", "the stale cache in a.py") is False
    memory = {"id": "m_0123456789abcdef", "title": "Session: edited src/a.py and more"}
    briefing = "# header\n- [summary] Session: edited src/a.py and more (session summary; m_0123456789abcdef)\n"
    assert coding_checks.briefing_line(briefing, memory).startswith("- [summary]")
    assert coding_checks.briefing_line(briefing.replace("m_0123456789abcdef", "?"), memory).startswith("- [summary]")
    assert coding_checks.briefing_line("# header", memory) is None
    assert coding_checks.hit_view([{"id": "m_1"}], "m_1") == '{"id": "m_1"}'
    assert coding_checks.hit_view([{"id": "m_1"}], "m_2") is None


def test_timeline_grows_the_transcript_and_skips_a_resumed_sessions_copies():
    require_shared(SHORT, "the shared spotter transcripts")
    timeline = claude_code_timeline(SHORT)
    assert [(e, p) for _, e, p in timeline] == claude_code_events(SHORT)
    positions = [at for at, _, _ in timeline]
    assert positions == sorted(positions) and positions[0] == 0
    assert positions[-1] == len(SHORT.read_text(encoding="utf-8").rstrip("\n").split("\n"))
    assert timeline[0][1] == "SessionStart" and timeline[-1][1] == "SessionEnd"
    seen: set[str] = set()
    first = claude_code_timeline(SHORT, seen)
    assert len(first) == len(timeline) and seen
    again = [e for _, e, _ in claude_code_timeline(SHORT, seen)]  # every record already seen: only the frame
    assert again == ["SessionStart", "Stop", "SessionEnd"]


@pytest.mark.eval
@pytest.mark.slow
@pytest.mark.long(50)
def test_the_script_on_the_smallest_project(tmp_path):
    require_shared(SPEC, "the coding-session probes")
    require_shared(eval_coding.DEFAULT_MODEL_PATH, "the embedding model")
    figures = tmp_path / "figures.json"
    try:
        payload = eval_coding.main(["--project", "ccv-demo-todo", "--json", str(figures), "--keep-home",
                                    str(tmp_path / "run")])
    finally:
        stop_shared_processes(tmp_path / "run")  # the one the replay's first hook started
    summary = payload["summary"]
    spec = next(p for p in json.loads(SPEC.read_text())["projects"] if p["name"] == "ccv-demo-todo")
    assert summary["overall"]["n"] == len(spec["probes"]) == sum(g["n"] for g in summary["by_kind"].values())
    for group in [summary["overall"], *summary["by_project"].values(), *summary["by_kind"].values()]:
        for name, value in group.items():
            if name != "n":
                assert value is not None and 0.0 <= value <= 1.0, (name, value)
            if name.startswith("no_memory."):
                assert value == 0.0
        assert group["agentmem.any"] >= max(group["agentmem.briefing"], group["agentmem.search"],
                                            group["agentmem.prompt"])
    assert summary["irrelevant_count"] == len(spec["irrelevant"])
    assert summary["irrelevant_silent"]["no_memory"] == 1.0 and 0.0 <= summary["irrelevant_silent"]["agentmem"] <= 1
    assert summary["contradiction_checks"] == len(spec["contradictions"])
    assert summary["contradictions"]["no_memory"] == 0
    assert 0 <= summary["contradictions"]["agentmem"] <= len(spec["contradictions"])

    project = payload["projects"][0]
    assert project["briefing"].strip() and project["briefing_tokens"] > 0
    assert 0 < len(project["raw_text"].splitlines()) <= eval_coding.RAW_LAST
    prompts = len(spec["probes"]) + len(spec["irrelevant"]) + len(spec["contradictions"])
    assert summary["tokens"]["injections"] == prompts
    assert payload["timing"]["hook_problems"] == {}
    assert [s["file"] for s in payload["sessions"]] == spec["sessions"]
    assert all(s["events"]["SessionStart"] >= 1 and s["events"]["SessionEnd"] == 1 for s in payload["sessions"])

    supersede = payload["supersede"]
    assert supersede["counts"]["same"] >= 15 and supersede["counts"]["different"] >= 15
    assert 0.0 <= supersede["same_superseded"] <= 1.0 and 0.0 <= supersede["different_kept_apart"] <= 1.0
    stale = payload["staleness"]
    assert stale["memories_naming"] >= stale["shown_before"] >= stale["marked_stale"] >= 0
    changes = stale["by_project"]["ccv-demo-todo"]["changes"]
    assert changes and all(not (tmp_path / "run" / "projects" / "ccv-demo-todo" / c["file"]).exists() for c in changes)

    written = json.loads(figures.read_text())
    probe = written["projects"][0]["probes"][0]
    assert set(probe["channels"]["agentmem"]) == {"briefing", "search", "prompt", "any"}
    assert {"answered", "match", "snippet"} <= set(probe["channels"]["agentmem"]["search"])
    # files the sessions wrote exist in the replay directory (the ones not deleted by the staleness probe)
    assert (tmp_path / "run" / "projects" / "ccv-demo-todo" / ".git").is_dir()
