"""The first hook with no shared process running starts one for the next hooks (capture/hook_start.py).

Real hook processes run as `agentmem install` writes them, a real shared process, a real socket and database. Each
test stops the processes it caused, by their pid.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem_mcp.capture import hook_client
from agentmem_mcp.capture.hook_start import START_MARK, start_shared_process
from agentmem_mcp.files import ensure_private_dir
from agentmem_mcp.install.install import HOOK_ENTRY
from scripts.live_processes import SharedProcess, alive, shared_pids, stop, stop_shared_processes
from tests.conftest import MODEL_NAME, REPO


def _wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024


@pytest.fixture
def env(cli_env, home):
    env = dict(cli_env)
    env.pop("AGENTMEM_HOOK_STARTS_PROCESS", None)  # on, as installed
    yield env
    for pid in shared_pids(home):  # whatever a test started: stopped by its pid
        stop(pid)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project" / ".git").mkdir(parents=True)
    return tmp_path / "project"


def _hook(payload: dict, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", HOOK_ENTRY, "hook", "--client", "claude-code",
                           payload["hook_event_name"]], input=json.dumps(payload).encode(), env=env, cwd=cwd,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return done


def _tool_call(project: Path, n: int) -> dict:
    return {"session_id": "s1", "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q -k case_{n}"}, "tool_response": {"stdout": "3 passed", "stderr": ""}}


def _commands(home: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(home / "agentmem.db") as conn:
        rows = conn.execute("SELECT input, count FROM observations WHERE event = 'tool_use' ORDER BY id").fetchall()
    return [(json.loads(text)["command"], count) for text, count in rows]


def test_the_first_hook_starts_a_process_that_takes_the_next_ones(env, home, project):
    (project / "json.py").write_text("raise SystemExit('the project shadowed the standard library')\n")
    _hook(_tool_call(project, 1), env, project)  # no process: recorded here, one started in the background
    assert _wait(lambda: (home / hook_client.SOCKET_NAME).exists(), 30), "no process took the hooks"
    [pid] = shared_pids(home)
    assert "--for-hooks" in Path(f"/proc/{pid}/cmdline").read_bytes().decode()
    assert (os.stat(home / hook_client.SOCKET_NAME).st_mode & 0o777) == 0o600
    assert (os.stat(home / START_MARK).st_mode & 0o777) == 0o600
    assert os.getsid(pid) == pid  # detached from the client's session
    _hook(_tool_call(project, 2), env, project)
    assert hook_client.hand_off("claude-code", "PostToolUse", json.dumps(_tool_call(project, 3)).encode(),
                                env) == b""  # the process answers: recorded there
    assert _commands(home) == [(f"pytest -q -k case_{n}", 1) for n in (1, 2, 3)]
    assert shared_pids(home) == [pid]
    assert _rss_mb(pid) < 120  # the hooks' modules, not the embedding model


def test_a_server_arriving_later_gets_the_model_from_that_process(env, home, project, model_path):
    from agentmem_mcp.runtime.embed_service import connect_or_start

    _hook(_tool_call(project, 1), env, project)
    assert _wait(lambda: (home / hook_client.SOCKET_NAME).exists(), 30)
    [pid] = shared_pids(home)
    client = connect_or_start(home, MODEL_NAME, model_path, 60)
    try:
        assert client.pid == pid and client.dimension == 384
        [vector] = client.embed("query", ["how are the tests run"])
        assert vector.shape == (384,)
    finally:
        client.close()


def test_hooks_keep_it_up_and_it_leaves_once_they_stop(env, home, project):
    env["AGENTMEM_EMBED_IDLE_SECONDS"] = "6"
    _hook(_tool_call(project, 1), env, project)
    assert _wait(lambda: (home / hook_client.SOCKET_NAME).exists(), 30)
    [pid] = shared_pids(home)
    for n in range(2, 5):  # one hook every 3 s: more than the 5 s grace a process with a model gets, in all
        time.sleep(3)
        _hook(_tool_call(project, n), env, project)
        assert shared_pids(home) == [pid]
    assert _wait(lambda: not shared_pids(home), 30)
    assert not (home / hook_client.SOCKET_NAME).exists()
    assert [count for _, count in _commands(home)] == [1, 1, 1, 1]


def test_no_process_is_started_when_the_settings_say_so(env, home, project):
    _hook(_tool_call(project, 1), dict(env, AGENTMEM_HOOK_STARTS_PROCESS="0"), project)
    _hook(_tool_call(project, 2), dict(env, AGENTMEM_HOOK_HANDOFF="0"), project)
    time.sleep(1.5)
    assert not shared_pids(home) and not (home / hook_client.SOCKET_NAME).exists()
    assert _commands(home) == [("pytest -q -k case_1", 1), ("pytest -q -k case_2", 1)]


def test_a_home_gets_at_most_one_start_a_minute(env, home, project):
    _hook(_tool_call(project, 1), dict(env, AGENTMEM_HOOK_STARTS_PROCESS="0"), project)  # makes the home
    assert start_shared_process(env) is True
    assert start_shared_process(env) is False  # whether or not the first one is up yet
    assert _wait(lambda: len(shared_pids(home)) == 1, 30)


def _started_for(home: Path, env: dict[str, str]) -> int:
    """A real shared process started as a first hook starts it, for `home`; its pid once it takes hooks."""
    ensure_private_dir(home)
    assert start_shared_process(dict(env, AGENTMEM_HOME=str(home))) is True
    assert _wait(lambda: (home / hook_client.SOCKET_NAME).exists(), 30)
    [pid] = shared_pids(home)
    return pid


def test_stopping_what_a_folder_left_running_spares_every_other_home(env, tmp_path):
    inside, outside = tmp_path / "session" / "test0" / "home", tmp_path / "elsewhere" / "home"
    left, other = _started_for(inside, env), _started_for(outside, env)
    try:
        assert stop_shared_processes(tmp_path / "session") == [SharedProcess(left, inside, True)]
        assert not alive(left) and shared_pids(inside) == []
        assert alive(other) and shared_pids(outside) == [other]
    finally:
        stop(other)
        stop(left)


def test_the_test_session_stops_and_names_the_processes_its_tests_left_running(env, tmp_path):
    """tests/conftest.py's check, in a pytest session of its own whose test leaves a hook's shared process behind."""
    (tmp_path / "test_leaky.py").write_text(
        "from agentmem_mcp.capture.hook_start import start_shared_process\n"
        "from agentmem_mcp.files import ensure_private_dir\n"
        "from scripts.live_processes import shared_pids\n\n"
        "def test_leaves_one(tmp_path):\n"
        "    home = tmp_path / 'home'\n"
        "    ensure_private_dir(home)\n"
        "    assert start_shared_process({'AGENTMEM_HOME': str(home)})\n"
        "    assert shared_pids(home, wait_s=20)  # up and named, however loaded the machine\n")
    basetemp = tmp_path / "basetemp"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "--basetemp", str(basetemp), "test_leaky.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=dict(env, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stdout + done.stderr
    home = basetemp / "test_leaves_one0" / "home"
    assert "shared processes the tests left running (stopped now)" in done.stdout
    assert f"started by a hook (--for-hooks), home {home}" in done.stdout
    assert shared_pids(home) == []
