"""A BM25 index damaged under a running server (issue 18 item 14): truncating tantivy's files, then saving and
searching, killed the server with SIGBUS (tantivy maps its files into memory) about one run in three, with nothing
logged. The server must notice the damage before it reads the files, rebuild the index from SQLite and say so in
one line of its log. The real server over stdio, several rounds."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agentmem_mcp.db.connection import connect

SEGMENT_FILE = re.compile(r"[0-9a-f]{32}(?:\.\d+)?\.(?:idx|pos|term|store|fast|fieldnorm|del)")
ROUNDS = 4
FACTS = [(word, fact) for word, fact in [
    ("quillmarsh", "The staging database lives on quillmarsh"), ("brindlefox", "Releases are signed on brindlefox"),
    ("sorrelgate", "CI caches wheels in the sorrelgate bucket"), ("tamarisk", "Use tamarisk to lint the SQL files"),
    ("hollowfern", "The metrics dashboard is called hollowfern"), ("copperwren", "Feature flags come from copperwren"),
    ("nettlebay", "Logs are shipped to nettlebay every hour"), ("wickerlark", "The mobile app is called wickerlark"),
]]
LATER = [(word, fact) for word, fact in [
    ("plovercrest", "Backups are copied to plovercrest at night"), ("junipermoth", "Load tests run on junipermoth"),
    ("saltmeadow", "The search cluster is named saltmeadow"), ("emberquay", "Invoices are rendered by emberquay"),
]]


def queued(home: Path) -> int:
    conn = connect(home / "agentmem.db", load_vec=False)
    try:
        return conn.execute("SELECT COUNT(*) FROM index_outbox").fetchone()[0]
    finally:
        conn.close()


def truncate_segments(index_dir: Path, how: str) -> int:
    done = 0
    for path in index_dir.iterdir():
        if SEGMENT_FILE.fullmatch(path.name) and path.stat().st_size:
            os.truncate(path, 0 if how == "empty" else path.stat().st_size // 2)
            done += 1
    return done


@pytest.mark.parametrize("run", range(3))  # the SIGBUS came about one run in three
def test_truncated_index_files_under_a_running_server_are_rebuilt(cli_env, home, tmp_path, run):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    env = cli_env | {"AGENTMEM_EMBEDDINGS": "0"}  # BM25 alone answers: the index is what is under test
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env,
                                   cwd=str(project))

    async def scenario() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                words = []
                for word, fact in FACTS:
                    words.append(word)
                    saved = await session.call_tool("memory_save", {"content": fact})
                    assert json.loads(saved.content[0].text)["action"] == "created", saved.content[0].text
                for round_ in range(ROUNDS):
                    deadline = time.monotonic() + 30
                    while queued(home):
                        assert time.monotonic() < deadline
                        await anyio.sleep(0.1)
                    found = await session.call_tool("memory_search", {"query": words[0]})
                    assert words[0] in found.content[0].text  # the index is mapped and in use
                    assert truncate_segments(home / "fulltext", "empty" if round_ % 2 else "half")
                    if round_ % 2:  # a search reads the damaged index first
                        found = await session.call_tool("memory_search", {"query": words[1]})
                        assert not found.is_error, found.content[0].text
                    word, fact = LATER[round_]
                    words.append(word)
                    saved = await session.call_tool("memory_save", {"content": fact})
                    assert not saved.is_error, saved.content[0].text
                    await anyio.sleep(1.0)  # the indexer thread commits the save to the (damaged) index
                    for query in (word, words[round_]):
                        deadline = time.monotonic() + 30
                        while True:  # search answers (from what is indexed, and the outbox) and finds it
                            found = await session.call_tool("memory_search", {"query": query})
                            assert not found.is_error, found.content[0].text
                            if query in found.content[0].text:
                                break
                            assert time.monotonic() < deadline, found.content[0].text
                            await anyio.sleep(0.2)
                stats = await session.call_tool("memory_stats", {})
                assert json.loads(stats.content[0].text)["memories"] == len(FACTS) + ROUNDS

    anyio.run(scenario)
    log = (home / "logs" / "agentmem.log").read_text()
    assert len(log.splitlines()) == ROUNDS, log[-3000:]  # one line for each damage, nothing else
    assert all("BM25 index damaged" in line and "rebuilding it from SQLite" in line for line in log.splitlines())


def test_a_segment_file_gone_is_forgotten_once_whichever_thread_sees_it_first(tmp_path, monkeypatch):
    """check_files runs before every read and write, on search threads and the indexer's at once: a segment
    file merged away is dropped from what it watches by whichever gets there first, and the other goes on (it
    raised KeyError, which failed an indexing batch or, in a search, made it rebuild the whole index)."""
    import os

    from agentmem_mcp.index import fulltext
    from agentmem_mcp.index.fulltext import FulltextDoc, FulltextIndex

    index = FulltextIndex(tmp_path / "fulltext")
    index.apply([FulltextDoc("m1", "/repo", "semantic", "fact", True, "the uploader retries three times")], [])
    index._searcher()
    name = next(iter(index._mapped))
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if str(path).endswith(name):
            index._mapped.pop(name, None)  # the other thread saw it gone first
            raise FileNotFoundError(path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(fulltext.os, "stat", stat)
    index.check_files()
    assert name not in index._mapped
