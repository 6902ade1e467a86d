"""What the rules learn from commands: their working form, the error that failed them and what made them pass;
and how a session summary and a "which file" question are searched."""

from __future__ import annotations

import json

from agentmem_mcp.index.vectors import summary_pieces
from agentmem_mcp.lifecycle.commands import normalize_command
from agentmem_mcp.lifecycle.consolidate import ObsRecord, _failure_reason, command_segments, mine, working_form
from agentmem_mcp.recall.ranking import asks_which_file
from agentmem_mcp.recall.snippets import with_files as _with_files


def forms(command: str) -> list[str]:
    return [working_form(tokens) for _, tokens in command_segments(command)]


def test_an_interpreter_keeps_its_module_or_script_and_a_file_flag_keeps_its_file():
    assert forms("python -m pytest -q tests/") == ["python -m pytest -q tests/"]
    assert forms("cd /x && python model_comparison.py 2>&1 | tail") == ["python model_comparison.py"]
    assert forms("pip install -r requirements.txt") == ["pip install -r requirements.txt"]
    assert forms('python -c "import torch"') == ["python"]
    assert forms("git commit -m 'fix the thing'") == ["git commit"]
    assert forms("pytest -x tests/unit/test_a.py") == ["pytest -x"]
    assert forms("docker compose -f docker-compose.dev.yml up") == ["docker compose -f docker-compose.dev.yml up"]


_ids = iter(range(1, 10_000))


def run(command: str, *, failed: bool = False, facts: tuple[str, ...] = (), session: str = "s1") -> ObsRecord:
    record = ObsRecord(id=next(_ids), session_id=session, project="/p", kind="error" if failed else "command",
                       tool="Bash", title=f"Ran `{command}`", facts=[f"command: {command}", *facts],
                       files=[], importance=0.5, created_at=0.0, command=command,
                       key=normalize_command(command), failed=failed, outcome="failed" if failed else "passed")
    if failed:
        record.reason = _failure_reason(record)
    return record


def fixes(records: list[ObsRecord]) -> list[str]:
    return [d.content for d in mine(records, "/p") if d.key.startswith("bug:")]


def test_the_exception_of_a_traceback_is_the_reason_not_the_warning_above_it():
    failed = run("python model_comparison.py", failed=True, facts=(
        "status: failed", "Error: None of PyTorch, TensorFlow >= 2.0, or Flax have been found.",
        "Traceback (most recent call last):", "ModuleNotFoundError: No module named 'torch'"))
    assert failed.reason == "ModuleNotFoundError: No module named 'torch'"


def test_an_install_between_a_failure_and_the_same_command_passing_is_what_fixed_it():
    learned = fixes([
        run("python model_comparison.py", failed=True, facts=(
            "Traceback (most recent call last):", "ModuleNotFoundError: No module named 'torch'")),
        run("git status"),
        run("pip install -r requirements.txt"),
        run("python model_comparison.py"),
    ])
    assert learned == ["`python model_comparison.py` failed: ModuleNotFoundError: No module named 'torch'. What "
                       "worked: `pip install -r requirements.txt`, then `python model_comparison.py` again."]


def test_a_plain_retry_teaches_nothing_but_a_changed_form_after_other_arguments_does():
    ignored = ("The following paths are ignored by one of your .gitignore files: priv/static/app.css",)
    assert fixes([run("npm test", failed=True, facts=("Error: ECONNRESET",)), run("npm test")]) == []
    learned = fixes([
        run("git add lib/a.ex priv/static/app.css", failed=True, facts=ignored),
        run("git add lib/a.ex"),
        run("git add -f priv/static/app.css"),
    ])
    assert len(learned) == 1 and "What worked: `git add -f priv/static/app.css`" in learned[0]
    assert ".gitignore" in learned[0]
    # a look at the repository that "fails" (a pager cut short, a diff line that reads as an error) is no bug
    assert fixes([run("git diff origin/main | head", failed=True, facts=("+ } catch (error) {",)),
                  run("git diff origin/main --stat")]) == []


def test_a_session_summary_is_searched_line_by_line_and_item_by_item():
    summary = ("Asked: make the transcript view one pipeline for sessions and subagents\n"
               "Outcome (the agent's reports): Both SessionLive and SubagentLive now use the shared pipeline · "
               "13 new tests (410 total passing) · Everything is clean and pushed.\n"
               "Commits: 64f1b9a feat: unified transcript visualization and debug parity (12 files changed)\n"
               "Tests: `mix test` run 10x, last run passed (410 tests, 0 failures)")
    pieces = summary_pieces(summary)
    assert "Commits: 64f1b9a feat: unified transcript visualization and debug parity (12 files changed)" in pieces
    assert any(p.startswith("13 new tests (410 total passing) · Everything is clean") for p in pieces)
    assert not any("Asked:" in p and "Commits:" in p for p in pieces)  # lines never run together
    assert summary_pieces("Asked: one line only, nothing else to split here") == []


def test_a_which_file_question_is_shown_the_files_a_memory_names():
    assert asks_which_file("All texts sounded the same - which script addressed that?")
    assert asks_which_file("where is the retry policy configured?")
    assert not asks_which_file("how do I run the tests?")
    files = json.dumps(["diverse_musical_ai.py", "test_diverse_simple.py"])
    assert _with_files("Solved the all-sounds-the-same problem", files, True) == (
        "Solved the all-sounds-the-same problem [files: diverse_musical_ai.py, test_diverse_simple.py]")
    assert _with_files("see diverse_musical_ai.py", files, True) == (
        "see diverse_musical_ai.py [files: test_diverse_simple.py]")
    assert _with_files("Solved it", files, False) == "Solved it"


def test_a_question_about_a_failure_is_shown_the_error_and_short_words_match_whole_words():
    from agentmem_mcp.recall.snippets import snippet

    text = ("Asked: tidy the logs folder. " + "Outcome: the agent looked at every file and reported. " * 8
            + "Other tool errors: Bash operation blocked by hook: BLOCKED: Dangerous rm command detected.")
    shown = snippet(text, "rm is refused in this repo - why".lower().split(), limit=160)
    assert "Dangerous rm command" in shown
    # "pr" is a word of its own, never the start of "prevents" or "properly"
    text = "It prevents this and properly handles that. " * 6 + "The PR #389 branch is fix/pr-389-critical-issues."
    assert "fix/pr-389" in snippet(text, ["pr", "389", "branch"], limit=120)


def test_a_summary_hit_shows_the_lines_that_answer_even_when_they_lie_far_apart():
    from agentmem_mcp.recall.snippets import summary_snippet

    summary = ("Asked: /init\n"
               "Outcome (the agent's reports): I've created a basic CLAUDE.md file for this empty repository. · "
               + "The file provides a foundation that should be updated as the project develops. · " * 5
               + "\nOther tool errors: Write of CLAUDE.md: Claude requested permissions to write to CLAUDE.md, "
               "but you haven't granted it yet.")
    shown = summary_snippet(summary, "why did writing claude md fail in the very first init session".split())
    assert shown.startswith("Asked: /init … ") and "haven't granted it yet" in shown
    assert len(shown) <= 480 + 10


def test_inline_code_and_a_bare_interpreter_are_no_command_to_learn_and_sync_is_not_always_an_install():
    from agentmem_mcp.lifecycle.commands import command_label

    records = [run('python -c "import x; print(x)"', session=s) for s in ("s1", "s2")]
    records += [run("python --version", session=s) for s in ("s1", "s2")]
    assert not [d for d in mine(records, "/p") if d.key.startswith("workflow:")]
    assert command_label("uv sync") == command_label("npm ci") == "Install dependencies"
    assert command_label("bd sync") == "Run"
