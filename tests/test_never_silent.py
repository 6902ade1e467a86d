"""When hooks cannot work, the user hears it once per session in the client's own channel, and `agentmem doctor`
shows the last such failure: through the real `agentmem hook` command, fed what the clients send."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_mcp.capture import hook_notice
from agentmem_mcp.capture.events import HookInputError
from agentmem_mcp.capture.hook import hook_problem
from agentmem_mcp.models import StoreBusy, StoreFull

REPO = Path(__file__).resolve().parent.parent


def start(session: str, cwd: Path) -> dict:
    return {"session_id": session, "cwd": str(cwd), "hook_event_name": "SessionStart", "source": "startup"}


def hook(event: str, payload: dict, env: dict[str, str], client: str = "claude-code") -> dict | None:
    done = subprocess.run([sys.executable, "-m", "agentmem_mcp", "hook", "--client", client, event],
                          input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=60)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def doctor(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "agentmem_mcp", "doctor"], env=env, capture_output=True, text=True,
                          timeout=120)
    return done.stdout + done.stderr


@pytest.fixture
def env(cli_env: dict[str, str], tmp_path: Path, monkeypatch) -> dict[str, str]:
    runtime = tmp_path / "runtime"  # where the hooks note their failures (capture/hook_notice.py)
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return dict(cli_env, AGENTMEM_HOOK_HANDOFF="0", XDG_RUNTIME_DIR=str(runtime))


def test_a_corrupt_config_is_told_once_per_session_and_shown_by_doctor(env, home, tmp_path):
    home.mkdir(mode=0o700)
    config = home / "config.toml"
    config.write_text("max_output_chars = = 12\n")
    config.chmod(0o600)

    first = hook("SessionStart", start("s1", tmp_path), env)
    assert first is not None and set(first) == {"systemMessage"}
    assert "config.toml" in first["systemMessage"] and "Fix or remove the file" in first["systemMessage"]
    prompt = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": "hi there"}
    assert hook("UserPromptSubmit", prompt, env) is None  # told once in this session
    assert hook("SessionStart", start("s2", tmp_path), env)["systemMessage"] == first["systemMessage"]  # a new one

    # Cursor: no hook message is shown at sessionStart, so the notice goes to the agent's context; a prompt goes on
    cursor = hook("sessionStart", {"conversation_id": "c1", "workspace_roots": [str(tmp_path)]}, env, "cursor")
    assert "config.toml" in cursor["additional_context"] and "for the user" in cursor["additional_context"]
    allowed = hook("beforeSubmitPrompt", {"conversation_id": "c2", "prompt": "hi"}, env, "cursor")
    assert allowed == {"continue": True}
    compacting = hook("preCompact", {"conversation_id": "c2", "trigger": "auto"}, env, "cursor")
    assert "config.toml" in compacting["user_message"]

    report = doctor(env)  # still broken: doctor says why, as the hooks did
    assert "config.toml" in report and "Fix or remove the file" in report
    config.unlink()  # fixed: doctor shows the hooks' last failure, and whether events were recorded since
    report = doctor(env)
    assert "config.toml" in report and "recorded again since" not in report and "events recorded since" not in report
    hook("UserPromptSubmit", prompt, env)
    report = doctor(env)
    assert "config.toml" in report and ("recorded again since" in report or "events recorded since" in report)


def test_a_damaged_database_is_told_and_the_events_kept(env, home, tmp_path):
    assert hook("SessionStart", start("s1", tmp_path), env) is not None  # a working store first
    database = home / "agentmem.db"
    database.write_bytes(b"this is not a database, it was overwritten" * 500)
    for suffix in ("-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    told = hook("SessionStart", start("s2", tmp_path), env)
    assert "database cannot be used" in told["systemMessage"] and "agentmem doctor" in told["systemMessage"]
    assert "wait in the spool" in told["systemMessage"]
    assert hook("Stop", {"session_id": "s2", "cwd": str(tmp_path), "hook_event_name": "Stop"}, env) is None
    assert len(list((home / "spool").glob("*.json"))) == 2  # nothing lost


def test_an_unusable_home_is_told_and_recorded_outside_it(env, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = dict(env, AGENTMEM_HOME=str(blocker / "home"))
    told = hook("SessionStart", start("s1", tmp_path), env)
    assert str(blocker) in told["systemMessage"]  # the line names the file in the way
    assert hook("Stop", {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop"}, env) is None
    found = hook_notice.last_failure(blocker / "home")
    assert found is not None and str(blocker) in found["message"]


def test_what_is_told_and_what_passes():
    assert hook_problem(StoreBusy("the memory database is locked")) is None  # the event waits in the spool
    assert hook_problem(HookInputError("hook input is not valid JSON")) is None
    assert hook_problem(ValueError("a bug")) is None
    assert "disk holding its home is full" in hook_problem(StoreFull("full"), spooled=True)
    assert "disk holding its home is full" in hook_problem(OSError(errno.ENOSPC, "No space left on device"))
    assert "installation is broken" in hook_problem(ModuleNotFoundError("No module named 'sqlean'"))


def test_a_session_is_told_again_of_another_problem(env, tmp_path):
    home = tmp_path / "home"
    assert hook_notice.note(home, "s", "first", lost=False) == "first"
    assert hook_notice.note(home, "s", "first", lost=False) is None
    assert hook_notice.note(home, "s", "second", lost=False) == "second"
    assert hook_notice.last_failure(home)["message"] == "second"
