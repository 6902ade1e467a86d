"""Issue 21, a new user's first hour: a mistake gets one clear line, not a traceback (the real `agentmem`
command in a subprocess, the real server over stdio)."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from agentmem_mcp.version import package_version

from .test_server import server_params

NOBODY = 65534


def agentmem(env: dict[str, str], *args: str, cwd: Path | None = None, stdin: str = "",
             as_user: list[str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*(as_user or []), sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd,
                          input=stdin, capture_output=True, text=True, timeout=120)


def assert_clear_line(result: subprocess.CompletedProcess, *words: str) -> None:
    """Failed with one `agentmem: ...` line on stderr naming `words`, and no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentmem: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_home_that_is_a_file(cli_env, tmp_path):
    home = tmp_path / "home-file"
    home.write_text("not a directory")
    env = cli_env | {"AGENTMEM_HOME": str(home)}
    for args in (["stats"], ["save", "the build uses pnpm, not npm"], ["search", "build"], ["doctor"]):
        assert_clear_line(agentmem(env, *args, cwd=tmp_path), str(home), "is a file, not a directory")
    served = agentmem(env, "serve", cwd=tmp_path)  # stops before the handshake, saying why
    assert_clear_line(served, "cannot serve", str(home), "is a file")
    assert home.read_text() == "not a directory"


def test_home_that_is_a_file_fails_the_mcp_handshake(cli_env, tmp_path):
    home = tmp_path / "home-file"
    home.write_text("x")
    errors = tmp_path / "server-stderr.txt"

    async def scenario() -> None:
        with errors.open("w") as errlog:
            async with stdio_client(server_params(cli_env | {"AGENTMEM_HOME": str(home)}, tmp_path),
                                    errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    with anyio.fail_after(30):
                        await session.initialize()

    with pytest.raises(BaseException):  # noqa: B017 - the client reports a closed connection its own way
        anyio.run(scenario)
    text = errors.read_text()
    assert "is a file, not a directory" in text and "Traceback" not in text, text


def _read_only_home(tmp_root: Path, cli_env: dict[str, str]) -> tuple[Path, list[str]]:
    """A home with memories in it, then made read-only (`chmod -R a-w`). As root, whom permissions do not
    stop, the home belongs to `nobody` and the command runs as `nobody` (through setpriv)."""
    home = tmp_root / "home"
    env = cli_env | {"AGENTMEM_HOME": str(home), "AGENTMEM_EMBEDDINGS": "0"}
    saved = agentmem(env, "save", "the build uses pnpm, not npm: the lockfile is pnpm-lock.yaml", "--global",
                     "--i-am-the-user", cwd=tmp_root)
    assert saved.returncode == 0, saved.stderr
    as_user: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot run the command as a user permissions stop")
        for path in [home, *home.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
        as_user = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    for path in [home, *home.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    return home, as_user


def test_read_only_home(cli_env):
    tmp_root = Path(tempfile.mkdtemp(prefix="agentmem-ro-"))
    tmp_root.chmod(0o755)
    try:
        home, as_user = _read_only_home(tmp_root, cli_env)
        env = cli_env | {"AGENTMEM_HOME": str(home), "AGENTMEM_EMBEDDINGS": "0"}
        saved = agentmem(env, "save", "tests run with pytest -q in the repository root", cwd=tmp_root,
                         as_user=as_user)
        assert_clear_line(saved, "not writable", "chmod u+w")
        for args, shown in ((["search", "pnpm"], "pnpm-lock.yaml"), (["stats"], "1 latest"),
                            (["doctor"], "FAIL writable")):  # reads work on a read-only home (issue 37.6)
            result = agentmem(env, *args, cwd=tmp_root, as_user=as_user)
            assert shown in result.stdout and "Traceback" not in result.stderr, (args, result.stderr)
    finally:
        for path in [tmp_root, *tmp_root.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(tmp_root)


def test_import_of_a_missing_file(cli_env, tmp_path):
    result = agentmem(cli_env, "import", str(tmp_path / "nowhere.jsonl"), cwd=tmp_path)
    assert_clear_line(result, "nowhere.jsonl", "no such file")


@pytest.mark.parametrize("args", [["stats"], ["search", "pnpm", "--all-projects"]])
def test_a_closed_pipe_exits_quietly(cli_env, tmp_path, args):
    saved = agentmem(cli_env, "save", "the build uses pnpm, not npm: the lockfile is pnpm-lock.yaml", cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head` that has already gone: every write fails with EPIPE
    try:
        result = subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=cli_env, cwd=tmp_path,
                                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_hook_help_prints_usage_and_records_nothing(cli_env, tmp_path):
    result = agentmem(cli_env, "hook", "--help", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("usage: agentmem hook"), result
    assert not (Path(cli_env["AGENTMEM_HOME"]) / "agentmem.db").exists()  # no event named "--help"
    result = agentmem(cli_env, "hook", "--client", "cursor", "-h", cwd=tmp_path)
    assert result.returncode == 0 and "EVENT" in result.stdout


def test_bare_command_prints_help_and_version(cli_env, tmp_path):
    bare = agentmem(cli_env, cwd=tmp_path)
    assert bare.returncode == 0 and bare.stdout.startswith("usage: agentmem") and "required" not in bare.stderr
    assert "save" in bare.stdout and "search" in bare.stdout
    version = agentmem(cli_env, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"agentmem {package_version()}"
    assert package_version()[0].isdigit()


def test_server_info_version(cli_env, tmp_path):
    async def scenario() -> str:
        async with stdio_client(server_params(cli_env, tmp_path)) as (read, write):
            async with ClientSession(read, write) as session:
                return (await session.initialize()).server_info.version

    assert anyio.run(scenario) == package_version()


def test_serve_in_a_terminal_says_it_waits(cli_env, tmp_path):
    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "agentmem_mcp", "serve"], env=cli_env, cwd=tmp_path,
                               stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(terminal)
    try:
        ready, _, _ = select.select([process.stderr], [], [], 30)
        assert ready, "nothing on stderr within 30 s"
        line = process.stderr.readline().decode()
        assert "waiting for an MCP client on stdin" in line, line
    finally:
        process.terminate()
        process.wait(timeout=30)
        os.close(controller)


def test_serve_over_a_pipe_says_nothing(cli_env, tmp_path):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    started = time.monotonic()
    result = agentmem(cli_env, "serve", cwd=tmp_path, stdin=json.dumps(init) + "\n")
    assert time.monotonic() - started < 60
    assert '"serverInfo"' in result.stdout, result
    assert "waiting for an MCP client" not in result.stderr
