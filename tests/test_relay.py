"""`agentmem serve` as a relay to the shared process (runtime/relay.py, runtime/session_host.py): real relays over
stdio with the MCP SDK's client, the real shared process, its real death."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from agentmem_mcp.files import ensure_private_dir
from scripts.live_processes import shared_pids

from .test_embed_service import _imported, _wait_for

# what a relay may import of agentmem: the CLI's entry and the modules it reads the home's place with
RELAY_MODULES = {"agentmem_mcp", "agentmem_mcp.__main__", "agentmem_mcp.cli", "agentmem_mcp.cli.app",
                 "agentmem_mcp.cli.common", "agentmem_mcp.runtime", "agentmem_mcp.runtime.relay",
                 "agentmem_mcp.capture", "agentmem_mcp.capture.hook_client"}


def _repo(root: Path, name: str) -> Path:
    (root / name / ".git").mkdir(parents=True)
    return root / name


async def _call(session: ClientSession, tool: str, arguments: dict) -> dict:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def test_sessions_of_two_projects_share_one_process_and_see_only_their_own(cli_env, home, tmp_path):
    """Two relays in two projects, served by one shared process: each session has its own project and memories; the
    relays import neither the MCP SDK nor agentmem's library; with AGENTMEM_SHARED_SERVER=0 `serve` is a server."""
    ensure_private_dir(home)
    webapp, billing = _repo(tmp_path, "webapp"), _repo(tmp_path, "billing")
    logs = [tmp_path / f"relay-{n}.log" for n in range(3)]

    def params(cwd: Path, **env: str) -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, args=["-X", "importtime", "-m", "agentmem_mcp", "serve"],
                                     env={**cli_env, **env}, cwd=str(cwd))

    async def scenario() -> None:
        with open(logs[0], "w") as log_a, open(logs[1], "w") as log_b, open(logs[2], "w") as log_c:
            async with stdio_client(params(webapp), errlog=log_a) as (read_a, write_a), \
                    stdio_client(params(billing), errlog=log_b) as (read_b, write_b):
                async with ClientSession(read_a, write_a) as a, ClientSession(read_b, write_b) as b:
                    assert (await a.initialize()).server_info.name == "agentmem"
                    await b.initialize()
                    tools = {tool.name for tool in (await b.list_tools()).tools}
                    assert {"memory_save", "memory_search", "memory_get"} <= tools
                    mine = await _call(a, "memory_save", {"content": "The webapp deploys with fly deploy, never "
                                                                     "heroku", "type": "decision"})
                    theirs = await _call(b, "memory_save", {"content": "Billing deploys with kubectl apply, never "
                                                                       "helm", "type": "decision"})
                    for session, own, other, project in ((a, mine, theirs, webapp), (b, theirs, mine, billing)):
                        found = await _call(session, "memory_search", {"query": "how do we deploy"})
                        assert [hit["id"] for hit in found["hits"]] == [own["id"]]
                        assert {hit["project"] for hit in found["hits"]} == {str(project)}
                        refused = await session.call_tool("memory_get", {"id": other["id"]})
                        assert refused.is_error
                        assert (await _call(session, "memory_context", {}))["project"] == str(project)
                    shared = shared_pids(home)
                    assert len(shared) == 1
                    assert stat.S_IMODE(os.stat(home / "sessions.sock").st_mode) == 0o600

                    async with stdio_client(params(webapp, AGENTMEM_SHARED_SERVER="0"), errlog=log_c) as (read, write):
                        async with ClientSession(read, write) as alone:  # a server of its own, on the same store
                            await alone.initialize()
                            found = await _call(alone, "memory_search", {"query": "how do we deploy"})
                            assert [hit["id"] for hit in found["hits"]] == [mine["id"]]
                    assert shared_pids(home) == shared

    anyio.run(scenario)
    for log in logs[:2]:
        modules = _imported(log)
        assert "agentmem_mcp.runtime.relay" in modules
        assert not {name for name in modules if name.startswith("agentmem_mcp")} - RELAY_MODULES
        assert not modules & {"mcp", "pydantic", "anyio", "sqlean", "numpy", "tantivy"}
    alone = _imported(logs[2])
    assert "mcp" in alone and "agentmem_mcp.server.app" in alone
    assert _wait_for(lambda: not shared_pids(home), 30)  # 5 s after its last session


def test_a_session_goes_on_when_the_shared_process_dies(cli_env, home, tmp_path):
    """The shared process dies during a request (it pauses inside the save's transaction and is killed): the client
    gets an error for that request, and the relay serves the rest of the session itself."""
    ensure_private_dir(home)
    project = _repo(tmp_path, "webapp")
    marker = tmp_path / "paused"
    env = {**cli_env, "AGENTMEM_TEST_PAUSE_AT": "audit:save", "AGENTMEM_TEST_PAUSE_FILE": str(marker)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env,
                                   cwd=str(project))

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            [shared] = shared_pids(home)
            outcome: dict = {}

            async def save() -> None:
                try:
                    outcome["result"] = await session.call_tool("memory_save", {"content": "Releases are tagged "
                                                                                           "vYYYY.MM.N"})
                except MCPError as exc:
                    outcome["error"] = str(exc)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(save)
                assert await anyio.to_thread.run_sync(_wait_for, marker.exists, 60)
                assert int(marker.read_text()) == shared  # paused in the shared process, the save in flight
                os.kill(shared, signal.SIGKILL)
            assert "shared process stopped" in outcome.get("error", ""), outcome
            assert _wait_for(lambda: not os.path.exists(f"/proc/{shared}"), 5)  # the relay, its parent, reaped it
            found = await _call(session, "memory_search", {"query": "how are releases tagged"})
            assert found["hits"] == []  # the save was never committed
            assert (await _call(session, "memory_stats", {}))["project"] == str(project)
            assert "memory_forget" in {tool.name for tool in (await session.list_tools()).tools}

    anyio.run(scenario)
