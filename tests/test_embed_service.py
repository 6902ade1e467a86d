"""The shared embedding process (runtime/embed_service.py): real servers over stdio (AGENTMEM_SHARED_SERVER=0; relays
are tests/test_relay.py), the real process and model.

Every test starts its own process in its own home; each exits by itself once its servers are gone."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agentmem_mcp.files import ensure_private_dir
from agentmem_mcp.runtime.embed_service import (
    EmbedService,
    ServiceClient,
    ServiceUnavailable,
    SharedEmbedder,
    connect_or_start,
    socket_path,
)
from scripts.live_processes import serve_pids
from tests.conftest import MODEL_NAME


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


def _wait_for(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _has_model_loaded(pid: int) -> bool:
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


@pytest.fixture
def private_home(home: Path) -> Path:
    ensure_private_dir(home)
    return home


def _shared(home: Path, model_path: Path, **kwargs) -> SharedEmbedder:
    return SharedEmbedder(home, MODEL_NAME, model_path, **kwargs)


def test_servers_share_one_model_and_search_on_when_it_is_killed(cli_env, private_home, model_path, tmp_path):
    project = tmp_path / "webapp"
    (project / ".git").mkdir(parents=True)
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"],
                                   env={**cli_env, "AGENTMEM_SHARED_SERVER": "0"}, cwd=str(project))

    async def search(session: ClientSession, query: str) -> dict:
        result = await session.call_tool("memory_search", {"query": query})
        assert not result.is_error, result.content
        return json.loads(result.content[0].text)

    async def until_hybrid(session: ClientSession) -> dict:
        for _ in range(240):
            found = await search(session, "which package manager installs dependencies")
            if found["mode"] == "hybrid":
                return found
            await anyio.sleep(0.25)
        raise AssertionError(f"search never used vectors: {found}")

    async def scenario() -> None:
        async with stdio_client(params) as (read_a, write_a), stdio_client(params) as (read_b, write_b):
            async with ClientSession(read_a, write_a) as a, ClientSession(read_b, write_b) as b:
                await a.initialize()
                await b.initialize()
                saved = await a.call_tool("memory_save", {"content": "We install dependencies with pnpm, never yarn",
                                                          "type": "decision"})
                memory_id = json.loads(saved.content[0].text)["id"]
                for session in (a, b):
                    found = await until_hybrid(session)
                    assert found["hits"][0]["id"] == memory_id

                client = ServiceClient(private_home, MODEL_NAME, model_path)
                service = client.pid
                client.close()
                servers = serve_pids(private_home)
                assert len(servers) == 2 and service not in servers
                assert _has_model_loaded(service)
                assert not any(_has_model_loaded(pid) for pid in servers)  # one model for both
                assert stat.S_IMODE(os.stat(socket_path(private_home)).st_mode) == 0o600

                os.kill(service, signal.SIGKILL)
                assert _wait_for(lambda: not _alive(service), 10)
                for session in (a, b):  # each reaches a new shared process or embeds on its own: vectors go on
                    found = await search(session, "which package manager installs dependencies")
                    assert found["mode"] == "hybrid" and found["hits"][0]["id"] == memory_id
                started: list[ServiceClient] = []  # by a server, in the background if its search embedded itself

                def answers() -> bool:
                    try:
                        started.append(ServiceClient(private_home, MODEL_NAME, model_path))
                    except ServiceUnavailable:
                        return False
                    return True

                assert _wait_for(answers, 60)
                assert started[0].pid != service and _alive(started[0].pid)
                started[0].close()

    anyio.run(scenario)


def test_a_request_cut_by_the_death_of_the_shared_process_is_embedded_here(private_home, model_path, embedder):
    shared = _shared(private_home, model_path)
    assert shared.load() and shared.shared
    service = shared.service_pid
    texts = [f"passage {i}: the deploy script copies the build to the staging host and restarts it" * 4
             for i in range(600)]
    answer: dict = {}
    worker = threading.Thread(target=lambda: answer.update(vectors=shared.embed(texts)))
    worker.start()
    time.sleep(0.5)  # the shared process is in the middle of the batch
    os.kill(service, signal.SIGKILL)
    worker.join(180)
    vectors = answer["vectors"]
    assert vectors is not None and len(vectors) == len(texts)
    for got, want in zip(vectors[:5] + vectors[-5:], embedder.embed(texts[:5] + texts[-5:]), strict=True):
        assert np.allclose(got, want, atol=1e-5)
    assert not shared.shared  # it embedded on its own, and tries the shared process again in the background
    assert shared.embed_query("restart the staging host") is not None
    assert _wait_for(lambda: shared.embed_query("staging") is not None and shared.shared, 90)
    assert shared.service_pid != service
    shared.close()


def test_the_shared_process_exits_when_idle_and_a_server_starts_another(private_home, model_path):
    client = connect_or_start(private_home, MODEL_NAME, model_path, idle_seconds=2)
    first = client.pid
    assert len(client.embed("query", ["hello"])) == 1
    assert _wait_for(lambda: not _alive(first), 20)  # idle for 2 s
    assert not socket_path(private_home).exists()
    client.close()

    shared = _shared(private_home, model_path, idle_seconds=600)
    assert shared.load() and shared.service_pid != first
    second = shared.service_pid
    shared.close()  # its last server went: the process exits after its short grace
    assert _wait_for(lambda: not _alive(second), 30)


def test_a_home_others_can_enter_gets_no_socket_and_the_server_embeds_itself(home, model_path):
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    assert EmbedService(home, MODEL_NAME, model_path, 60).run() == 1
    shared = _shared(home, model_path)
    assert shared.load() and not shared.shared
    assert shared.embed_query("hello") is not None
    assert not socket_path(home).exists()
    with pytest.raises(ServiceUnavailable, match="open to other users"):
        ServiceClient(home, MODEL_NAME, model_path)


def test_the_shared_process_answers_only_for_its_own_model(private_home, model_path):
    client = connect_or_start(private_home, MODEL_NAME, model_path, idle_seconds=5)
    with pytest.raises(ServiceUnavailable, match="another model"):
        ServiceClient(private_home, "BAAI/bge-small-en-v1.5", None)
    with pytest.raises(ServiceUnavailable, match="another model"):  # nor starts a second process over it
        connect_or_start(private_home, "BAAI/bge-small-en-v1.5", None, 5)
    assert _alive(client.pid)
    client.close()


def _imported(log: Path) -> set[str]:
    """The modules a process started with `-X importtime` has imported so far (its stderr)."""
    lines = log.read_text(errors="replace").splitlines()
    return {line.split("|")[-1].strip() for line in lines if line.startswith("import time:") and "|" in line}


# what fastembed brings beside the model (requests' charset_normalizer, PIL, mmh3), seen as the libraries mapped
FASTEMBED_LIBRARIES = ("/PIL/", "/charset_normalizer/", "/mmh3", "/py_rust_stemmers/")


def test_servers_hold_no_model_and_only_the_lease_holder_imports_the_worker(cli_env, private_home, model_path,
                                                                            tmp_path):
    """Four sessions' memory (issue 22): a server with the shared process imports no model runtime, the server that
    holds the worker lease imports the worker and the others never do, and the shared process runs the model
    without fastembed's imports."""
    from agentmem_mcp.db.connection import connect
    from agentmem_mcp.runtime import lease

    project = tmp_path / "webapp"
    (project / ".git").mkdir(parents=True)
    logs = [tmp_path / f"server-{n}.log" for n in range(2)]
    params = StdioServerParameters(command=sys.executable, args=["-X", "importtime", "-m", "agentmem_mcp", "serve"],
                                   env={**cli_env, "AGENTMEM_SHARED_SERVER": "0"}, cwd=str(project))

    async def hybrid(session: ClientSession) -> None:
        for _ in range(240):
            result = await session.call_tool("memory_search", {"query": "which package manager"})
            if json.loads(result.content[0].text)["mode"] == "hybrid":
                return
            await anyio.sleep(0.25)
        raise AssertionError("search never used vectors")

    async def scenario() -> None:
        with open(logs[0], "w") as log_a, open(logs[1], "w") as log_b:
            async with stdio_client(params, errlog=log_a) as (read_a, write_a), \
                    stdio_client(params, errlog=log_b) as (read_b, write_b):
                async with ClientSession(read_a, write_a) as a, ClientSession(read_b, write_b) as b:
                    await a.initialize()
                    await b.initialize()
                    await hybrid(a)
                    await hybrid(b)
                    assert _wait_for(lambda: any("agentmem_mcp.runtime.worker" in _imported(log) for log in logs), 60)
                    conn = connect(private_home / "agentmem.db")
                    try:
                        holder = lease.current(conn)
                    finally:
                        conn.close()
                    assert holder is not None and int(holder[0].split(":")[1]) in serve_pids(private_home)
                    imported = [_imported(log) for log in logs]
                    assert sum("agentmem_mcp.runtime.worker" in modules for modules in imported) == 1
                    for modules in imported:
                        assert "agentmem_mcp.runtime.embed_service" in modules and "numpy" in modules
                        assert not modules & {"fastembed", "onnxruntime", "tokenizers", "huggingface_hub"}
                    client = ServiceClient(private_home, MODEL_NAME, model_path)
                    maps = Path(f"/proc/{client.pid}/maps").read_text()
                    client.close()
                    assert "onnxruntime" in maps and "tokenizers" in maps
                    assert not any(library in maps for library in FASTEMBED_LIBRARIES)

    anyio.run(scenario)


def test_a_killed_process_not_yet_reaped_is_not_alive():
    import signal
    import subprocess
    import sys
    import time

    from agentmem_mcp.runtime.lease import process_alive

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert process_alive(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while process_alive(child.pid) and time.monotonic() < deadline:  # a zombie until waited for
            time.sleep(0.05)
        assert not process_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not process_alive(child.pid)


def test_a_process_a_server_started_leaves_with_its_last_session_though_hooks_came():
    """Hooks keep up only a process that hooks started and that holds no model; one a server started (here with
    embeddings off: no model at all) exits EMPTY_GRACE_S after its last session, as before hooks could reach it."""
    import time
    from types import SimpleNamespace

    from agentmem_mcp.runtime.embed_service import EMPTY_GRACE_S, EmbedService

    service = EmbedService(Path("/nonexistent-home"), None, None, 600)
    now = time.monotonic()
    service.sessions = SimpleNamespace(active=0, last_end=now - EMPTY_GRACE_S - 1)
    service.last_disconnect = service.last_request = now - EMPTY_GRACE_S - 1
    service.hooks = SimpleNamespace(last_event=now - 1)
    assert service._done(now)
    service.model_on_demand = True  # started by a hook, no model: the next hooks come soon
    assert not service._done(now)
    service.hooks.last_event = now - 601
    assert service._done(now)
