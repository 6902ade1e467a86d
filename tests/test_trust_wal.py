"""The WAL under a running server (issue 18 item 9): deleting `agentmem.db-wal` under a running server let it go on
acknowledging saves (into the unlinked file), other processes met raw `disk I/O error` tracebacks, and once it
stopped the database was empty. Now the server notices, copies what its WAL held into the database file, refuses
every later write with a clear error, and nothing acknowledged is lost. It also checkpoints when idle and at exit.
The real server over stdio, the real CLI and hook command, on a real home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agentmem_mcp.db.connection import connect


def run(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=180)


def serve(env: dict[str, str], project: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env,
                                 cwd=str(project))


def no_raw_error(done: subprocess.CompletedProcess) -> bool:
    return "Traceback" not in done.stderr and "disk I/O error" not in done.stderr


def test_a_wal_deleted_under_a_running_server_stops_its_writes_and_loses_nothing(cli_env, home, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    env = cli_env | {"AGENTMEM_EMBEDDINGS": "0"}
    wal = home / "agentmem.db-wal"

    async def scenario() -> None:
        async with stdio_client(serve(env, project)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                saved = await session.call_tool("memory_save", {"content": "The release train leaves on Thursdays"})
                assert not saved.is_error, saved.content[0].text
                assert wal.stat().st_size > 0  # what was saved is in the WAL only
                wal.unlink()
                refused = await session.call_tool("memory_save", {"content": "Staging deploys need a ticket"})
                assert refused.is_error, refused.content[0].text
                text = refused.content[0].text
                assert "nothing was saved" in text and "write-ahead log deleted" in text and "restart" in text
                again = await session.call_tool("memory_save", {"content": "Use ruff for linting"})
                assert again.is_error and "nothing was saved" in again.content[0].text  # and stays refused
                # other processes meanwhile: the first save was copied into the database file
                found = run(env, project, "search", "release train")
                assert found.returncode == 0 and no_raw_error(found), found.stdout + found.stderr
                assert "Thursdays" in found.stdout
                prompt = {"session_id": "s-1", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                          "prompt": "when does the release train leave?"}
                hooked = run(env, project, "hook", "UserPromptSubmit", stdin=json.dumps(prompt))
                assert hooked.returncode == 0 and hooked.stderr == ""

    anyio.run(scenario)
    found = run(env, project, "search", "release train")  # after the server stopped: nothing acknowledged is lost
    assert "Thursdays" in found.stdout, found.stdout + found.stderr
    assert "Staging deploys" not in run(env, project, "search", "staging deploys ticket").stdout
    conn = connect(home / "agentmem.db", load_vec=False)
    try:
        prompts = conn.execute("SELECT COUNT(*) FROM observations WHERE prompt LIKE '%release train%'").fetchone()[0]
    finally:
        conn.close()
    spooled = list((home / "spool").glob("*.json")) if (home / "spool").exists() else []
    assert prompts + len(spooled) == 1  # the hook's event was recorded or kept in the spool
    doctor = run(cli_env, project, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    log = (home / "logs" / "agentmem.log").read_text()
    assert log.count("ERROR the memory database's files changed under this agentmem process") == 1, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


def test_the_server_checkpoints_when_idle_and_at_exit(cli_env, home, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    env = cli_env | {"AGENTMEM_EMBEDDINGS": "0"}
    wal = home / "agentmem.db-wal"

    async def scenario() -> None:
        async with stdio_client(serve(env, project)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for fact in ("The release train leaves on Thursdays", "Staging deploys need a ticket"):
                    assert not (await session.call_tool("memory_save", {"content": fact})).is_error
                assert wal.stat().st_size > 0
                holders.append(connect(home / "agentmem.db", load_vec=False))  # another process's connection
                assert holders[0].execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 2
                deadline = time.monotonic() + 30
                while wal.stat().st_size:  # idle: the server copies the WAL into the database and empties it
                    assert time.monotonic() < deadline, wal.stat().st_size
                    await anyio.sleep(0.5)
                assert not (await session.call_tool("memory_save", {"content": "Use ruff for linting"})).is_error
                assert wal.stat().st_size > 0

    holders: list = []
    try:
        anyio.run(scenario)
        assert wal.stat().st_size == 0  # the server checkpointed at exit, though it was not the last to close
        assert holders[0].execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 3
    finally:
        for holder in holders:
            holder.close()



@pytest.mark.parametrize("checkpointed", [False, True])
def test_a_wal_truncated_under_a_running_server_is_said_in_one_line_and_recovered(cli_env, home, tmp_path,
                                                                                   checkpointed):
    """The WAL cut short in place (same file, fewer bytes) while the server has it open: SQLite's shared index still
    points at frames past the new end, and the pages in them are gone. No command prints a traceback, the hook
    answers the agent as usual, doctor says the database is damaged and how to recover, and `doctor --recover`
    copies what is readable into a new file (or says in one line that nothing can be). When the cut leaves whole
    frames, SQLite keeps those up to it: a consistent state, maybe older, with all that a checkpoint had copied."""
    import os

    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    env = cli_env | {"AGENTMEM_EMBEDDINGS": "0"}
    wal = home / "agentmem.db-wal"

    async def scenario() -> None:
        async with stdio_client(serve(env, project)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for n in range(6):
                    saved = await session.call_tool("memory_save", {"content": f"Release note {n}: the train leaves"})
                    assert not saved.is_error, saved.content[0].text
                    if n == 2 and checkpointed:  # the first three reach the database file, the rest stay in the WAL
                        other = connect(home / "agentmem.db", load_vec=False)
                        assert other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0] == 0
                        other.close()
                size = wal.stat().st_size
                assert size > 8192
                os.truncate(wal, size // 2)
                await session.call_tool("memory_save", {"content": "Staging deploys need a ticket"})
                for args in (("search", "release note"), ("stats",), ("list",)):
                    done = run(env, project, *args)
                    # a result, or the one line that says what happened (never a traceback)
                    assert "Traceback" not in done.stderr, (args, done)
                    assert done.returncode == 0 or (done.stderr.startswith("agentmem: the memory database")
                                                    and len(done.stderr.strip().splitlines()) == 1), (args, done)
                prompt = {"session_id": "s-1", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                          "prompt": "when does the release train leave?"}
                hooked = run(env, project, "hook", "UserPromptSubmit", stdin=json.dumps(prompt))
                assert hooked.returncode == 0 and hooked.stderr == ""

    anyio.run(scenario)
    doctor = run(env, project, "doctor")
    assert no_raw_error(doctor), doctor.stdout + doctor.stderr
    deadline = time.monotonic() + 60
    while "has it open" in doctor.stdout:  # the shared process, which served the session, has not exited yet:
        assert "damaged:" not in doctor.stdout, doctor.stdout  # damage cannot be told yet, and doctor says why
        assert time.monotonic() < deadline, "the shared process did not exit after its last session"
        time.sleep(0.5)
        doctor = run(env, project, "doctor")
        assert no_raw_error(doctor), doctor.stdout + doctor.stderr
    if "damaged" not in doctor.stdout:  # SQLite kept the WAL's frames up to the cut: a consistent, maybe older state
        assert "integrity check ok" in doctor.stdout, doctor.stdout
        conn = connect(home / "agentmem.db", load_vec=False)
        try:
            notes = conn.execute("SELECT COUNT(*) FROM memories WHERE content LIKE 'Release note%'").fetchone()[0]
        finally:
            conn.close()
        assert notes >= (3 if checkpointed else 0)  # what had reached the database file stays; the cut frames go
        return
    assert "doctor --recover" in doctor.stdout, doctor.stdout
    recovered = run(env, project, "doctor", "--recover")
    if recovered.returncode != 0:  # the cut took the schema's page itself: nothing can be copied, and it says so
        # in one line, which names SQLite's own error in passing (so no_raw_error's check does not apply)
        assert "Traceback" not in recovered.stderr, recovered.stderr
        assert recovered.stderr.startswith("agentmem: "), recovered.stderr
        assert "cannot be opened at all" in recovered.stderr and ".recover" in recovered.stderr, recovered.stderr
        assert len(recovered.stderr.strip().splitlines()) == 1 and not list(home.glob("agentmem.recovered-*"))
        return
    assert no_raw_error(recovered), recovered.stdout + recovered.stderr
    (copy,) = home.glob("agentmem.recovered-*.db")
    conn = connect(copy, load_vec=False)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # whatever is readable; pages whose newest copy was in the cut frames are gone (the server's last checkpoint,
        # at exit, may also have copied a cut frame's zeros into the database file)
        conn.execute("SELECT COUNT(*) FROM memories").fetchone()
    finally:
        conn.close()
    log = (home / "logs" / "agentmem.log").read_text()
    assert "Traceback" not in log, log[-3000:]


def test_a_wal_cut_under_another_process_is_not_called_damage_until_that_process_has_closed_it(cli_env, home,
                                                                                             tmp_path):
    """Another process holds the database open (as the shared process does for up to 5 s after its last session)
    when its WAL is cut: what this process reads then follows that process's stale index of the log, so doctor and
    `doctor --recover` name the process and ask to close it, write nothing, and once it has closed the database
    doctor judges what the files hold."""
    from agentmem_mcp.db.recovery import describe_holder, holder

    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    env = cli_env | {"AGENTMEM_EMBEDDINGS": "0"}
    assert run(env, project, "save", "The release train leaves on Thursdays").returncode == 0
    database = home / "agentmem.db"
    assert holder(database) is None
    code = ("import sys, sqlean\n"
            f"conn = sqlean.connect({str(database)!r}, isolation_level=None)\n"
            "conn.execute('PRAGMA wal_autocheckpoint=0')\n"
            "for n in range(40):\n"
            "    conn.execute('INSERT INTO meta(key, value) VALUES (?, ?)', (f'padding-{n}', 'x' * 2000))\n"
            "print('ready', flush=True)\n"
            "sys.stdin.read()\n")
    other = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "ready"
        assert holder(database) == other.pid
        assert describe_holder(other.pid).startswith(f"process {other.pid} (python"), describe_holder(other.pid)
        wal = home / "agentmem.db-wal"
        assert wal.stat().st_size > 40 * 2000
        os.truncate(wal, 1000)

        doctor = run(env, project, "doctor")
        assert doctor.returncode == 1 and no_raw_error(doctor), doctor.stdout + doctor.stderr
        assert f"while process {other.pid}" in doctor.stdout and "has it open" in doctor.stdout, doctor.stdout
        assert "agentmem.db is damaged" not in doctor.stdout, doctor.stdout
        recovered = run(env, project, "doctor", "--recover")
        assert recovered.returncode != 0 and "Traceback" not in recovered.stderr, recovered.stderr
        assert len(recovered.stderr.strip().splitlines()) == 1, recovered.stderr
        assert "has it open" in recovered.stderr and "Nothing was written" in recovered.stderr, recovered.stderr
        assert not list(home.glob("agentmem.recovered-*"))
    finally:
        other.stdin.close()
        other.wait(timeout=30)
    assert holder(database) is None
    doctor = run(env, project, "doctor")
    assert "database: integrity check ok" in doctor.stdout, doctor.stdout
    assert "release train" in run(env, project, "search", "release train").stdout
