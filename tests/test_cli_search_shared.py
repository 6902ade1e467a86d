"""Issue 37.14: while an agent session runs, `agentmem search` hands its search to the user's shared process, which
holds the model, instead of loading a model of its own: the same answer, in a process that stays small. Through a
real `agentmem serve` session over the MCP SDK's stdio client and the real command, its peak memory read by GNU time
(a child of this test process would count the test's own memory in its peak)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from .test_server import call, server_params

TIME = shutil.which("time") or "/usr/bin/time"


def search(env: dict[str, str], cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess, int]:
    """The command's result and its peak RSS in MB."""
    done = subprocess.run([TIME, "-f", "peak-rss-kb %M", sys.executable, "-m", "agentmem_mcp", "search", *args],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    peak = [line for line in done.stderr.splitlines() if line.startswith("peak-rss-kb ")]
    return done, int(peak[-1].split()[1]) // 1024


@pytest.mark.skipif(not Path(TIME).exists(), reason="GNU time measures the command's memory")
def test_search_uses_the_shared_process_while_a_session_runs(cli_env, tmp_path):
    repo = tmp_path / "webapp"
    (repo / ".git").mkdir(parents=True)

    async def scenario() -> None:
        async with stdio_client(server_params(cli_env, repo)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                error, saved = await call(session, "memory_save", {
                    "content": "We deploy with `fly deploy` from the main branch, never from a feature branch"})
                assert not error, saved
                for _ in range(240):
                    error, found = await call(session, "memory_search", {"query": "how do we ship a release"})
                    if found["mode"] == "hybrid" and (Path(cli_env["AGENTMEM_HOME"]) / "search.sock").exists():
                        break
                    await anyio.sleep(0.5)
                shared, small = await anyio.to_thread.run_sync(search, cli_env, repo, "how do we ship a release",
                                                               "--json")
                alone_env = dict(cli_env, AGENTMEM_SHARED_EMBEDDER="0")  # the shared process declines it
                alone, large = await anyio.to_thread.run_sync(search, alone_env, repo, "how do we ship a release",
                                                              "--json")
                assert shared.returncode == 0 and alone.returncode == 0, (shared.stderr, alone.stderr)
                by_process, by_itself = json.loads(shared.stdout), json.loads(alone.stdout)
                assert by_process["mode"] == by_itself["mode"] == "hybrid"
                assert [h["id"] for h in by_process["hits"]] == [h["id"] for h in by_itself["hits"]] == [saved["id"]]
                assert small < 60 < 150 < large, (small, large)  # no model loaded in the command's process
                wrong, _ = await anyio.to_thread.run_sync(search, cli_env, repo, "x", "--limit", "0")
                assert wrong.returncode == 2 and "--limit must be" in wrong.stderr  # its errors, in its own words

    anyio.run(scenario)
