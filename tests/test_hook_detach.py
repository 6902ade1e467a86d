"""The day's first hook answers at once; a child it forked records the event, then starts the shared process
(capture/hook_client.py `detach`, capture/hook.py `record_detached`).

Real hook processes as `agentmem install` writes them, fed the JSON Claude Code sends, a real database (locked by
another writer where a test needs the event to wait), a real shared process. `PYTHONPROFILEIMPORTTIME` makes the
hook process list what it imported: the child's list goes to the null device with the rest of its output. Each test
stops the processes it caused, by their pid (tests/test_hook_start.py's fixture).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem_mcp.capture import hook_client
from agentmem_mcp.capture.events import CLAUDE_CODE_EVENTS, CURSOR_EVENTS, parse_hook_event
from agentmem_mcp.capture.events_codex_gemini import CODEX_EVENTS, GEMINI_EVENTS
from agentmem_mcp.capture.hook import CONTEXT_EVENTS, _answer_text, _output
from agentmem_mcp.capture.hook_start import start_shared_process
from agentmem_mcp.install.install import HOOK_ENTRY
from scripts.live_processes import shared_pids
from tests import test_hook_start
from tests.test_hook_start import _wait

env = test_hook_start.env  # the fixture: hooks start the shared process, as installed; what they started is stopped


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project" / ".git").mkdir(parents=True)
    return tmp_path / "project"


SECRET = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape: redaction replaces it
STORE_MODULES = {"re", "json", "pathlib", "sqlean", "agentmem_mcp.capture.hook", "agentmem_mcp.capture.redact"}


@pytest.fixture(scope="module")
def store_modules() -> set[str]:
    """STORE_MODULES but those this interpreter imports before any program (an editable install's finder: re...)."""
    done = subprocess.run([sys.executable, "-c", "pass"], env=dict(os.environ, PYTHONPROFILEIMPORTTIME="1"),
                          capture_output=True, check=True)
    return STORE_MODULES - {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()}


def _tool_call(project: Path, n: int, stdout: str = "3 passed", session: str = "s1") -> dict:
    return {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": str(project),
            "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"toolu_{n}",
            "tool_input": {"command": f"pytest -q -k case_{n}", "description": "run tests"},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}}


def _start(payload: dict, env: dict[str, str], cwd: Path, **popen) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOOK_ENTRY, "hook", "--client", "claude-code",
                             payload["hook_event_name"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(env, PYTHONPROFILEIMPORTTIME="1"), cwd=cwd, **popen)
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    proc.stdin = None
    return proc


def _finish(proc: subprocess.Popen) -> tuple[bytes, set[str]]:
    """(what the hook printed, the modules its own process imported), once it has exited 0 and closed its pipes."""
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()[-2000:]
    listing = [line for line in err.decode().splitlines() if line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[-1].strip() for line in listing}
    assert "agentmem_mcp.capture.hook_client" in imported  # the listing is there
    return out, imported


def _hook(payload: dict, env: dict[str, str], cwd: Path) -> tuple[bytes, set[str], float]:
    started = time.monotonic()
    out, imported = _finish(_start(payload, env, cwd))
    return out, imported, time.monotonic() - started


def _commands(home: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(home / "agentmem.db", timeout=30) as conn:
        rows = conn.execute("SELECT input, count FROM observations WHERE event = 'tool_use' ORDER BY id").fetchall()
    return [(json.loads(text)["command"], count) for text, count in rows]


def _case(*numbers: int) -> list[tuple[str, int]]:
    return [(f"pytest -q -k case_{n}", 1) for n in numbers]


@contextlib.contextmanager
def _locked(home: Path):
    """Another writer holds the database's write lock until the block ends."""
    conn = sqlite3.connect(home / "agentmem.db", isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.rollback()
        conn.close()


def _on_disk(home: Path, text: str) -> bool:
    """Whether any file under `home` holds `text`. Read by another process: closing a database file in this one
    would drop the SQLite locks this process holds on it (POSIX locks belong to the process)."""
    scan = "import pathlib, sys; sys.exit(any(sys.argv[2].encode() in p.read_bytes() " \
           "for p in pathlib.Path(sys.argv[1]).rglob('*') if p.is_file()))"
    return subprocess.run([sys.executable, "-c", scan, str(home), text], check=False).returncode == 1


def _made(home: Path, env: dict[str, str], project: Path) -> None:
    """The home and its database, made by a hook that records its event itself (no process started)."""
    out, imported, _ = _hook(_tool_call(project, 0), dict(env, AGENTMEM_HOOK_STARTS_PROCESS="0"), project)
    assert out == b"" and "sqlean" in imported
    assert _commands(home) == _case(0) and not shared_pids(home)


def test_the_first_hook_answers_at_once_and_its_child_records_the_event_redacted(env, home, project, store_modules):
    # the settings that keep a hook recording alone still do: the event is stored before the hook answers
    _made(home, env, project)
    out, imported, _ = _hook(_tool_call(project, 1), dict(env, AGENTMEM_HOOK_HANDOFF="0"), project)
    assert out == b"" and "sqlean" in imported and _commands(home) == _case(0, 1) and not shared_pids(home)

    with _locked(home):  # the first hook of the day, with the database busy: the agent does not wait for it
        out, imported, took = _hook(_tool_call(project, 2, stdout=f"export GH={SECRET}"), env, project)
        assert out == b""
        assert not store_modules & imported, store_modules & imported
        assert took < 1.5  # recording it here waits up to 3 s for the lock
        assert _commands(home) == _case(0, 1)
        assert not _on_disk(home, SECRET)
    assert _wait(lambda: _commands(home) == _case(0, 1, 2), 30)
    assert not _on_disk(home, SECRET) and _on_disk(home, "pytest -q -k case_2")
    assert _wait(lambda: (home / hook_client.SOCKET_NAME).exists(), 30), "the child started no shared process"
    assert (os.stat(home / hook_client.ORDER_LOCK).st_mode & 0o777) == 0o600
    out, imported, _ = _hook(_tool_call(project, 3), env, project)  # handed to that process
    assert out == b"" and "sqlean" not in imported
    assert _commands(home) == _case(0, 1, 2, 3)
    assert len(shared_pids(home)) == 1


def test_a_session_keeps_its_order_when_the_next_hook_goes_to_a_process_that_came_up_meanwhile(env, home, project):
    _made(home, env, project)
    with _locked(home):
        out, imported, took = _hook(_tool_call(project, 1), env, project)  # the child waits for SQLite's lock
        assert out == b"" and "sqlean" not in imported and took < 1.5
        assert start_shared_process(dict(env, AGENTMEM_HOOK_STARTS_PROCESS="1")) is True  # a server started it
        assert _wait(lambda: (home / hook_client.SOCKET_NAME).exists(), 30)
        second = _start(_tool_call(project, 2), env, project)  # handed over: taken once the first is recorded
        time.sleep(0.3)
    out, imported = _finish(second)
    assert out == b"" and "sqlean" not in imported
    assert _wait(lambda: len(_commands(home)) == 3, 30)
    assert _commands(home) == _case(0, 1, 2)
    assert len(shared_pids(home)) == 1


def test_two_first_hooks_at_once_lose_no_event_and_start_one_process(env, home, project, store_modules):
    _made(home, env, project)
    hooks = [_start(_tool_call(project, n, session=f"s{n}"), env, project) for n in (1, 2)]
    for proc in hooks:
        out, imported = _finish(proc)
        assert out == b"" and not store_modules & imported  # the later one waited its turn, and detached too
    assert _wait(lambda: sorted(_commands(home)) == _case(0, 1, 2), 30)
    assert _wait(lambda: (home / hook_client.SOCKET_NAME).exists(), 30)
    time.sleep(1.0)  # a second process would have come up by now
    assert len(shared_pids(home)) == 1


def test_a_first_hook_killed_at_its_timeout_with_the_database_locked_past_its_wait_loses_nothing(env, home, project):
    _made(home, env, project)
    with _locked(home):
        started = time.monotonic()
        proc = _start(_tool_call(project, 1, stdout=f"export GH={SECRET}"), env, project, start_new_session=True)
        out, imported = _finish(proc)
        with contextlib.suppress(ProcessLookupError):  # the client kills what is left of the hook's process group
            os.killpg(proc.pid, signal.SIGKILL)
        assert out == b"" and "sqlean" not in imported and time.monotonic() - started < 1.5
        spool = home / "spool"  # the child waited 3 s for SQLite, then kept the event there, redacted
        assert _wait(lambda: spool.is_dir() and any(spool.iterdir()), 30)
        assert not _on_disk(home, SECRET)
    assert _wait(lambda: (home / hook_client.SOCKET_NAME).exists(), 30)
    _hook(_tool_call(project, 2), env, project)  # the next hook drains the spool
    assert _wait(lambda: sorted(_commands(home)) == _case(0, 1, 2), 30)
    assert not _on_disk(home, SECRET)


def test_the_quiet_events_are_those_whose_answer_nothing_stored_changes():
    tables = {"claude-code": CLAUDE_CODE_EVENTS, "cursor": CURSOR_EVENTS, "codex": CODEX_EVENTS,
              "gemini": GEMINI_EVENTS}
    quiet = 0
    for client, table in tables.items():
        assert set(hook_client.QUIET_EVENTS[client]) <= {name.lower() for name in table}
        for name in table:
            ev = parse_hook_event(client, name, {"session_id": "s", "conversation_id": "s", "cwd": "/tmp"})
            answer = hook_client.quiet_answer(client, name)
            if answer is None:
                continue
            quiet += 1
            assert ev.event not in CONTEXT_EVENTS and ev.extra.get("phase") != "before", (client, name)
            assert (_answer_text(_output(ev.client, ev.event, ev.raw_event, "")) or "") == answer.decode()
            assert hook_client.quiet_answer(client, name.upper()) == answer
    assert quiet == sum(len(names) for names in hook_client.QUIET_EVENTS.values())
    for client, name in (("claude-code", "SessionStart"), ("claude-code", "UserPromptSubmit"),
                         ("cursor", "sessionStart"), ("cursor", "beforeSubmitPrompt"), ("gemini", "BeforeAgent"),
                         ("codex", "PreToolUse"), ("claude", "PostToolUse")):
        assert hook_client.quiet_answer(client, name) is None


@pytest.mark.parametrize("setting", ["AGENTMEM_HOOK_STARTS_PROCESS", "AGENTMEM_HOOK_HANDOFF", "hook_starts_process",
                                     "hook_handoff"])
def test_hooks_told_not_to_start_or_hand_off_still_record_before_they_answer(env, home, project, setting):
    _made(home, env, project)
    if setting.islower():  # in config.toml
        (home / "config.toml").write_text(f"{setting} = false\n")
        (home / "config.toml").chmod(0o600)
    with _locked(home):
        proc = _start(_tool_call(project, 1), dict(env, **{setting: "0"}) if setting.isupper() else env, project)
        time.sleep(0.5)
        assert proc.poll() is None  # it waits for SQLite, as before
    out, imported = _finish(proc)
    assert out == b"" and "sqlean" in imported
    assert _commands(home) == _case(0, 1) and not shared_pids(home)
    assert not (home / hook_client.ORDER_LOCK).exists()


def test_a_first_hook_that_cannot_record_leaves_telling_the_user_to_the_next_hook(env, home, project, tmp_path):
    _made(home, env, project)
    (tmp_path / "elsewhere").mkdir()
    (home / "spool").symlink_to(tmp_path / "elsewhere")  # a planted link: agentmem refuses the home
    out, imported, _ = _hook(_tool_call(project, 1), env, project)
    assert out == b"" and "sqlean" not in imported  # its answer was given before the child found the refusal
    turn = hook_client.take_turn(str(home), timeout=30)  # the child is done
    assert turn is not None
    os.close(turn)
    prompt = {"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": str(project),
              "hook_event_name": "UserPromptSubmit", "prompt": "what should I run next?"}
    out, _, _ = _hook(prompt, env, project)
    assert "agentmem is not recording" in json.loads(out)["systemMessage"]
    assert _commands(home) == _case(0) and not any((tmp_path / "elsewhere").iterdir())
