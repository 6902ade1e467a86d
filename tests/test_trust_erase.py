"""Forget erases everywhere (issue 18 item 8, the rest): the MCP tool `memory_forget` and the forgetting sweep run
the CLI's erasure, so the forgotten text leaves the database file, the WAL and the BM25 segments, and the forgotten
memory's vectors (its float32 chunk vectors and the binary codes in sqlite-vec's chunk blobs) leave the file too.
Each test drives the real server over stdio or the real CLI on a real home, then searches every byte under it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import tantivy
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agentmem_mcp.db.connection import connect
from agentmem_mcp.index.tokenize import build_analyzer
from agentmem_mcp.store import Store


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def files_holding(home: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and needle in p.read_bytes())


def vectors_of(home: Path, memory_id: str) -> list[bytes]:
    """A memory's float32 chunk vectors (the first 64 bytes of each) and their binary codes as sqlite-vec
    stores them, read through a connection of the test's own (closed before returning)."""
    conn = connect(home / "agentmem.db")
    try:
        rows = conn.execute("SELECT embedding, vec_quantize_binary(embedding) FROM memory_chunks WHERE memory_id = ?",
                            (memory_id,)).fetchall()
    finally:
        conn.close()
    return [bytes(row[0][:64]) for row in rows] + [bytes(row[1]) for row in rows]


def bm25_doc_freq(home: Path, word: str) -> int:
    """How many documents of the BM25 segments hold `word`'s term, deleted documents included (tantivy drops a
    deleted document's terms only when it merges its segment)."""
    index = tantivy.Index.open(str(home / "fulltext"))
    (term,) = build_analyzer().analyze(word)
    return index.searcher().doc_freq("text", term)


def outbox(home: Path) -> int:
    conn = connect(home / "agentmem.db", load_vec=False)
    try:
        return conn.execute("SELECT COUNT(*) FROM index_outbox").fetchone()[0]
    finally:
        conn.close()


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_memory_forget_over_mcp_leaves_nothing_on_disk(cli_env, home, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    secret, kept = "tangerinewombatlantern", "pnpm"
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=cli_env,
                                   cwd=str(project))

    async def scenario() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                saved = await session.call_tool("memory_save", {"content": f"The VPN passphrase hint is {secret}"})
                memory_id = json.loads(saved.content[0].text)["id"]
                await session.call_tool("memory_save", {"content": f"Use {kept} to install dependencies"})
                # indexed by BM25 and embedded by the server (the model loads in the background)
                wait_for(lambda: outbox(home) == 0 and bm25_doc_freq(home, secret) == 1)
                wait_for(lambda: len(vectors_of(home, memory_id)) >= 2)
                vectors = vectors_of(home, memory_id)
                assert all(files_holding(home, v) for v in vectors)
                answer = await session.call_tool("memory_forget", {"ids": [memory_id], "reason": "test"})
                assert not answer.is_error and json.loads(answer.content[0].text)["count"] == 1
                # erased on the server's indexer thread, within seconds: the database file and WAL, the BM25
                # segments, the chunk vectors and the binary codes in sqlite-vec's chunk blobs
                wait_for(lambda: files_holding(home, secret.encode()) == [] and bm25_doc_freq(home, secret) == 0
                         and [v for v in vectors if files_holding(home, v)] == [], timeout=30)
                found = await session.call_tool("memory_search", {"query": "install dependencies"})
                assert kept in found.content[0].text

    anyio.run(scenario)


def test_the_forgetting_sweep_leaves_nothing_on_disk(cli_env, home, settings, embedder, tmp_path):
    """The sweep (`agentmem forget --strategy`, every project or this one) while another process has the database
    open, as a running server does: its WAL outlives the command, and the swept memory shares its BM25 segment
    with memories that stay."""
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    doomed = {"all-projects": "saffronheronquarry", "in-project": "cobaltmarmosetvalley"}
    kept = "lighthousebramble"
    for how, word in doomed.items():
        with Store.open(settings, project=str(project), embedder=embedder) as store:
            saved = store.save_many([{"content": f"The old build host was called {word}", "ttl_days": 1 / 86400},
                                     {"content": f"Releases are cut from the {kept} box"},
                                     {"content": f"Nightly builds run on the {kept} runner, {how}"}])
            memory_id = saved[0].id
        time.sleep(1.5)  # the first one's time to live runs out
        vectors = vectors_of(home, memory_id)
        assert vectors and files_holding(home, word.encode()) and bm25_doc_freq(home, word) == 1
        holder = connect(home / "agentmem.db")  # another agentmem process, idle
        try:
            scope = ["--all-projects"] if how == "all-projects" else []
            done = run(cli_env, project, "forget", "--strategy", "importance", "--threshold", "1", "--yes", *scope,
                       "--i-am-the-user")
            assert done.returncode == 0, done.stderr
            assert memory_id in done.stdout or memory_id[:8] in done.stdout or "expire" in done.stdout, done.stdout
            assert files_holding(home, word.encode()) == [] and bm25_doc_freq(home, word) == 0, how
            assert [v for v in vectors if files_holding(home, v)] == [], how
        finally:
            holder.close()
    assert kept in run(cli_env, project, "search", kept).stdout  # what was not swept is still found


def test_settle_runs_the_erasure_a_forget_left_to_the_indexer_thread(home, settings, embedder):
    """A server's store leaves the erasure after a forget to its indexer thread; `Indexer.settle` runs it to its
    end in the caller's thread (or waits for the one under way), so nothing of it overlaps what comes next."""
    word = "quartzpelicanmeadow"
    with Store.open(settings, project="/repo/a", embedder=embedder, index_in_background=True) as store:
        doomed = store.save(f"The staging database lives on {word}").id
        store.save("The production database lives on the main cluster")
        store.flush()
        assert bm25_doc_freq(home, word) == 1
        store.forget(ids=[doomed], reason="moved")
        store.erase_soon()  # what the forget tool and the sweep ask for: the indexer thread's work
        store.indexer.settle()
        assert store.indexer._erase_pending is None
        assert bm25_doc_freq(home, word) == 0 and files_holding(home, word.encode()) == []
        store.indexer.settle()  # nothing pending: a no-op
