"""How long the first open of an existing store takes when its BM25 index must be rebuilt from SQLite
(after an upgrade that moves the index's schema marker, or a deleted or corrupt index).

    python scripts/bench_rebuild.py [--sizes 10000,100000] [--session-size 20] [--stdio 40000]

Builds a store of episodic memories in sessions (so every document gets its neighbouring-turn context,
index/neighbours.py), without vectors (the rebuild does not touch them), deletes the tantivy directory and
times `Store.open`, which rebuilds it before answering (as the CLI does); then a normal open for comparison;
then deletes the index again and opens the store as `agentmem serve` does (index_in_background): how long
the open takes, how long a BM25 search takes during the rebuild, and when the rebuild has finished.
`--stdio N` does the last part through the real server: `agentmem serve` started over stdio by the MCP
SDK's client on a store of N memories whose index was deleted (embeddings off), calling memory_search
every 0.5 s until its notes no longer mention the rebuild.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_store import memory_text
from harness import clean_env, describe_machine, utc_now

from agentmem_mcp.config import load_settings
from agentmem_mcp.store import Store


def build(settings, size: int, session_size: int, project: str) -> random.Random:
    """A store of `size` episodic memories in sessions, indexed; returns the generator for queries."""
    rng = random.Random(size)
    with Store.open(settings, project=project, load_embedder=False) as store:
        for start in range(0, size, 500):
            store.save_many([{"content": memory_text(rng, n)["content"], "tier": "episodic", "type": "context",
                              "session_id": f"session-{n // session_size}", "created_at": 1_700_000_000.0 + n}
                             for n in range(start, min(start + 500, size))])
        store.flush()
    return rng


def measure(size: int, session_size: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="agentmem-rebuild-"))
    try:
        settings = load_settings(env={}, home=home, embeddings=False)
        rng = build(settings, size, session_size, "/bench/project")
        shutil.rmtree(settings.fulltext_dir)
        began = time.perf_counter()
        with Store.open(settings, project="/bench/project", load_embedder=False) as store:
            rebuild = time.perf_counter() - began
            assert store.fulltext.count() == size
        began = time.perf_counter()
        with Store.open(settings, project="/bench/project", load_embedder=False):
            plain = time.perf_counter() - began
        shutil.rmtree(settings.fulltext_dir)
        began = time.perf_counter()
        with Store.open(settings, project="/bench/project", load_embedder=False, index_in_background=True) as store:
            server_open = time.perf_counter() - began
            searches = []
            while store.index_backlog():
                at = time.perf_counter()
                result = store.search(memory_text(rng, size + len(searches))["content"][:80], retrievers=("bm25",))
                searches.append((time.perf_counter() - at, bool(result.notes)))
                time.sleep(0.2)
            finished = time.perf_counter() - began
            assert store.fulltext.count() == size
        return {"rebuild": rebuild, "plain": plain, "server_open": server_open, "finished": finished,
                "searches": searches}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def over_stdio(size: int, session_size: int) -> dict:
    """The real server over stdio on a store whose BM25 index was deleted."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    home = Path(tempfile.mkdtemp(prefix="agentmem-rebuild-"))
    repo = home / "repo"
    (repo / ".git").mkdir(parents=True)
    try:
        settings = load_settings(env={}, home=home / "home", embeddings=False)
        rng = build(settings, size, session_size, str(repo))
        shutil.rmtree(settings.fulltext_dir)
        env = clean_env()
        env.update(AGENTMEM_HOME=str(settings.home), AGENTMEM_EMBEDDINGS="0")
        params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env,
                                       cwd=str(repo))
        out: dict = {"calls": []}

        async def run() -> None:
            began = time.perf_counter()
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                out["initialize"] = time.perf_counter() - began
                while time.perf_counter() - began < 600:
                    at = time.perf_counter()
                    result = await session.call_tool("memory_search", {
                        "query": memory_text(rng, size + len(out["calls"]))["content"][:80]})
                    notes = json.loads(result.content[0].text)["notes"]
                    left = next((note for note in notes if "being rebuilt" in note), None)
                    out["calls"].append((time.perf_counter() - at, left))
                    if left is None:
                        out["note_gone"] = time.perf_counter() - began
                        return
                    await anyio.sleep(0.5)

        anyio.run(run)
        return out
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--session-size", type=int, default=20)
    parser.add_argument("--stdio", type=int, default=0, metavar="N",
                        help="also through the real server over stdio, on N memories")
    args = parser.parse_args(argv)
    print(f"{utc_now()} | {describe_machine()}")
    print("python scripts/bench_rebuild.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    for size in [int(s) for s in args.sizes.split(",") if s]:
        m = measure(size, args.session_size)
        during = sorted(seconds for seconds, noted in m["searches"] if noted)
        print(f"{size:>9,} memories: open with BM25 rebuild {m['rebuild']:.2f} s "
              f"({size / m['rebuild']:,.0f} memories/s), normal open {m['plain'] * 1000:.0f} ms; "
              f"as the server opens it: open {m['server_open'] * 1000:.0f} ms, BM25 search during the rebuild "
              f"p50 {statistics.median(during) * 1000 if during else float('nan'):.0f} ms "
              f"(max {max(during, default=float('nan')) * 1000:.0f} ms, {len(during)} searches, each noting "
              f"the rebuild), rebuild finished after {m['finished']:.2f} s", flush=True)
    if args.stdio:
        m = over_stdio(args.stdio, args.session_size)
        during = sorted(seconds for seconds, left in m["calls"] if left)
        first = m["calls"][0]
        print(f"over stdio, {args.stdio:,} memories: initialize {m['initialize'] * 1000:.0f} ms; first memory_search "
              f"{first[0] * 1000:.0f} ms ({first[1] or 'no rebuild note'}); {len(during)} calls during the rebuild, "
              f"p50 {statistics.median(during) * 1000 if during else float('nan'):.0f} ms, max "
              f"{max(during, default=float('nan')) * 1000:.0f} ms; the note was gone after "
              f"{m.get('note_gone', float('nan')):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
