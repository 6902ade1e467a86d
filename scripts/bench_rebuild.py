"""How long the first open of an existing store takes when its BM25 index must be rebuilt from SQLite
(after an upgrade that moves the index's schema marker, or a deleted or corrupt index).

    python scripts/bench_rebuild.py [--sizes 10000,100000] [--session-size 20]

Builds a store of episodic memories in sessions (so every document gets its neighbouring-turn context,
index/neighbours.py), without vectors (the rebuild does not touch them), deletes the tantivy directory and
times `Store.open`, which rebuilds it before answering (as the CLI does); then a normal open for comparison;
then deletes the index again and opens the store as `agentmem serve` does (index_in_background): how long
the open takes, how long a BM25 search takes during the rebuild, and when the rebuild has finished.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_core import memory_text  # noqa: E402
from machine import describe_machine  # noqa: E402

from agentmem_mcp.config import load_settings  # noqa: E402
from agentmem_mcp.store import Store  # noqa: E402


def measure(size: int, session_size: int) -> tuple[float, float]:
    home = Path(tempfile.mkdtemp(prefix="agentmem-rebuild-"))
    try:
        settings = load_settings(env={}, home=home, embeddings=False)
        rng = random.Random(size)
        with Store.open(settings, project="/bench/project", load_embedder=False) as store:
            for start in range(0, size, 500):
                store.save_many([{"content": memory_text(rng, n)["content"], "tier": "episodic", "type": "context",
                                  "session_id": f"session-{n // session_size}", "created_at": 1_700_000_000.0 + n}
                                 for n in range(start, min(start + 500, size))])
            store.flush()
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--session-size", type=int, default=20)
    args = parser.parse_args(argv)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {describe_machine()}")
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
