"""Hooks handed to the running shared process over `<home>/hooks.sock` (capture/hook_client.py, hook_service.py).

Real hook processes, a real socket and a real database; the listener runs in the test's process, as the shared
embedding process runs it. Whatever happens to the listener, every event is stored once, and the hook exits 0.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentmem_mcp.capture import hook_client
from agentmem_mcp.capture.hook_service import HookListener
from agentmem_mcp.files import ensure_private_dir

CLIENT_SCRIPT = Path(hook_client.__file__)


@pytest.fixture
def private_home(home: Path) -> Path:
    ensure_private_dir(home)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project" / ".git").mkdir(parents=True)
    return tmp_path / "project"


@pytest.fixture
def listener(private_home: Path):
    taking = HookListener(private_home)
    taking.start()
    yield taking
    taking.stop()


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env["AGENTMEM_HOME"] = str(home)
    env["AGENTMEM_HOOK_STARTS_PROCESS"] = "0"  # these tests start (or fake) the listener themselves
    return env


def _tool_call(project: Path, n: int, stdout: str = "3 passed") -> dict:
    return {"session_id": "s1", "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q -k case_{n}"}, "tool_response": {"stdout": stdout, "stderr": ""}}


def _hook(event: str, payload: dict, env: dict[str, str], *, script: bool = True) -> subprocess.CompletedProcess:
    command = [sys.executable, str(CLIENT_SCRIPT)] if script else [sys.executable, "-m", "agentmem_mcp"]
    done = subprocess.run([*command, "hook", "--client", "claude-code", event], input=json.dumps(payload).encode(),
                          env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return done


def _commands(home: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(home / "agentmem.db") as conn:
        rows = conn.execute("SELECT input, count FROM observations WHERE event = 'tool_use' ORDER BY id").fetchall()
    return [(json.loads(text)["command"], count) for text, count in rows]


def test_a_hook_is_recorded_by_the_listener_and_answers_as_in_its_own_process(listener, private_home, project):
    env = _env(private_home)
    assert _hook("PostToolUse", _tool_call(project, 1, "AKIAIOSFODNN7EXAMPLE in the output"), env).stdout == b""
    assert listener.handled == 1
    start = {"session_id": "s2", "cwd": str(project), "source": "startup", "hook_event_name": "SessionStart"}
    shared = json.loads(_hook("SessionStart", start, env).stdout)
    assert listener.handled == 2
    alone = json.loads(_hook("SessionStart", start, dict(env, AGENTMEM_HOOK_HANDOFF="0"), script=False).stdout)
    assert listener.handled == 2
    assert shared == alone and "pytest -q -k case_1" in shared["hookSpecificOutput"]["additionalContext"]
    assert _commands(private_home) == [("pytest -q -k case_1", 1)]
    with sqlite3.connect(private_home / "agentmem.db") as conn:
        (output,) = conn.execute("SELECT output FROM observations WHERE event = 'tool_use'").fetchone()
    assert "AKIAIOSFODNN7EXAMPLE" not in output  # redacted by the listener as a hook process redacts
    assert (os.stat(listener.path).st_mode & 0o777) == 0o600


def test_the_console_command_hands_off_too(listener, private_home, project):
    agentmem = Path(sys.executable).with_name("agentmem")
    if not agentmem.exists():
        pytest.skip("no agentmem console script beside this interpreter")
    done = subprocess.run([str(agentmem), "hook", "PostToolUse"], input=json.dumps(_tool_call(project, 2)).encode(),
                          env=_env(private_home), capture_output=True, timeout=60)
    assert done.returncode == 0 and listener.handled == 1
    assert _commands(private_home) == [("pytest -q -k case_2", 1)]


def test_without_a_listener_or_with_a_stale_socket_the_hook_records_the_event_itself(private_home, project):
    env = _env(private_home)
    _hook("PostToolUse", _tool_call(project, 1), env)  # no socket at all
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(private_home / hook_client.SOCKET_NAME))  # a socket file nobody listens on
    stale.close()
    os.chmod(private_home / hook_client.SOCKET_NAME, 0o600)
    _hook("PostToolUse", _tool_call(project, 2), env)
    assert _commands(private_home) == [("pytest -q -k case_1", 1), ("pytest -q -k case_2", 1)]


def test_a_listener_that_dies_before_answering_loses_nothing(private_home, project):
    path = private_home / hook_client.SOCKET_NAME
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(4)
    received: list[bytes] = []

    def read_then_hang_up() -> None:
        conn, _ = server.accept()
        with conn:
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
            received.append(b"".join(chunks))  # the request arrived whole, and no answer goes back

    reader = threading.Thread(target=read_then_hang_up)
    reader.start()
    _hook("PostToolUse", _tool_call(project, 3), _env(private_home))
    reader.join(timeout=30)
    server.close()
    client, event, env, raw = hook_client.decode_request(received[0])
    assert (client, event, env["AGENTMEM_HOME"]) == ("claude-code", "PostToolUse", str(private_home))
    assert json.loads(raw)["tool_input"]["command"] == "pytest -q -k case_3"
    assert _commands(private_home) == [("pytest -q -k case_3", 1)]


def test_no_event_goes_to_a_socket_in_a_home_others_can_enter(listener, private_home, project):
    private_home.chmod(0o755)
    try:
        _hook("PostToolUse", _tool_call(project, 4), _env(private_home))
    finally:
        private_home.chmod(0o700)
    assert listener.handled == 0
    assert _commands(private_home) == [("pytest -q -k case_4", 1)]


def test_hooks_through_the_listener_and_alone_at_once_all_land(listener, private_home, project):
    env = _env(private_home)

    def one(n: int) -> None:
        if n % 2:
            _hook("PostToolUse", _tool_call(project, n), env)
        else:  # a hook process that writes itself, as when the shared process is not running
            _hook("PostToolUse", _tool_call(project, n), dict(env, AGENTMEM_HOOK_HANDOFF="0"), script=False)

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(one, range(24)))
    assert sorted(_commands(private_home)) == sorted((f"pytest -q -k case_{n}", 1) for n in range(24))
    assert listener.handled == 12


def test_requests_round_trip_and_paths_are_made_absolute(tmp_path):
    env = {"AGENTMEM_HOME": "relative/home", "AGENTMEM_CONFIG": "~/c.toml", "AGENTMEM_MAX_OUTPUT_CHARS": "9",
           "PATH": "/usr/bin"}
    sent = hook_client.request_env(env)
    assert sent == {"AGENTMEM_HOME": os.path.join(os.path.expanduser("~"), "relative/home"),  # from ~, not the cwd
                    "AGENTMEM_CONFIG": os.path.expanduser("~/c.toml"), "AGENTMEM_MAX_OUTPUT_CHARS": "9"}
    raw = "caf\u00e9 \0 {}".encode()
    assert hook_client.decode_request(hook_client.encode_request("cursor", "stop", sent, raw)) == (
        "cursor", "stop", sent, raw)
    with pytest.raises(ValueError):
        hook_client.decode_request(b"GET / HTTP/1.1\r\n\r\n")


def test_the_shared_embedding_process_takes_hooks_and_a_killed_one_loses_none(private_home, project, model_path):
    import signal
    import time

    from agentmem_mcp.runtime.embed_service import connect_or_start
    from tests.conftest import MODEL_NAME

    client = connect_or_start(private_home, MODEL_NAME, model_path, 60)
    try:
        assert (os.stat(private_home / hook_client.SOCKET_NAME).st_mode & 0o777) == 0o600
        env = _env(private_home)
        assert hook_client.hand_off("claude-code", "PostToolUse", json.dumps(_tool_call(project, 1)).encode(),
                                    env) == b""  # the shared process answered: recorded there
        os.kill(client.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{client.pid}").exists() and \
                "State:\tZ" not in Path(f"/proc/{client.pid}/status").read_text():
            time.sleep(0.05)
        _hook("PostToolUse", _tool_call(project, 2), env)  # a socket file is left, nobody answers
    finally:
        client.close()
    assert _commands(private_home) == [("pytest -q -k case_1", 1), ("pytest -q -k case_2", 1)]


def test_the_listener_keeps_its_connection_and_opens_another_when_the_database_is_replaced(private_home, project):
    from agentmem_mcp.capture.hook import Connections, respond

    env = {"AGENTMEM_HOME": str(private_home)}
    kept = Connections()
    for n in range(3):
        assert respond("claude-code", "PostToolUse", json.dumps(_tool_call(project, n)).encode(), env,
                       connections=kept) is None
    assert len(kept._idle) == 1  # one connection served the three events
    first = kept._idle[0][1]
    assert [command for command, _ in _commands(private_home)] == [f"pytest -q -k case_{n}" for n in range(3)]

    database = private_home / "agentmem.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    os.replace(database, private_home / "moved.db")  # e.g. a restore put another file in its place
    respond("claude-code", "PostToolUse", json.dumps(_tool_call(project, 9)).encode(), env, connections=kept)
    assert [command for command, _ in _commands(private_home)] == ["pytest -q -k case_9"]
    assert len(kept._idle) == 1 and kept._idle[0][1] is not first
    kept.close()
