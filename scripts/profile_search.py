"""Where a search on a built store spends its time, query vector cached: stages, SQL statements and functions.

    python scripts/bench_core.py --sizes 1000 --store /tmp/s/store --build-only     # once
    python scripts/profile_search.py /tmp/s/store/1000 [--searches 300] [--top 30] [--json OUT]

Copies the store to a scratch home (the searches' access writes leave the original as built), asks the bench's 15
queries once (so their vectors are cached, as for an agent repeating itself), then, over `--searches` searches
asked in a fixed random order: wall time p50 / p95 per search; each stage's median time in a search (retrievers,
fusion's parts, rerank, access write, the SQL reads of memories: functions wrapped with a clock); the
SQL statements per search (traced, literals folded), with how many times each ran; the threads a search hands
work to; and cProfile's top functions by own time. Run it with the interpreter of the tree to profile.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from bench_store import QUERIES, time_searches
from harness import MODEL_NAME, default_model, describe_machine, summary, utc_now, write_json

from agentmem_mcp.config import load_settings
from agentmem_mcp.db import memories
from agentmem_mcp.index import vectors, words
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.index.fulltext import FulltextIndex
from agentmem_mcp.recall import retrieval
from agentmem_mcp.store import Store

LITERAL = re.compile(r"'(?:[^']|'')*'|\bX'[0-9A-Fa-f]*'|(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?\b")
STAGES = [(retrieval, "_bm25_search", "bm25"), (retrieval, "_graph_search", "graph"),
          (retrieval, "_vector_search", "vectors (embedding + knn)"), (vectors, "knn", "knn"),
          (retrieval, "query_words", "query words"), (retrieval, "_fuse", "fusion"),
          (retrieval, "_without_vectors", "fusion: without vectors"),
          (retrieval, "_complete_similarities", "fusion: exact cosines"),
          (retrieval, "_add_similar_words", "fusion: similar words"), (retrieval, "_rerank", "rerank"),
          (retrieval, "_record_access", "access write"), (retrieval, "fuse_scores", "fusion: fuse_scores"),
          (words.WordMatrix, "soft_scores", "fusion: similar words' scores"),
          (memories, "words_by_id", "fusion: similar words' memory words (SQL)"),
          (memories, "by_ids", "SQL: memories by id (rerank, BM25's filter)"),
          (FulltextIndex, "check_files", "BM25: index files checked"), (FulltextIndex, "search", "BM25: tantivy"),
          (retrieval, "_stale", "rerank: files named checked"), (retrieval, "snippet", "rerank: snippets")]


def staged(store: Store, count: int, seed: int) -> dict[str, dict]:
    """Search p50 / p95 with each stage clocked, and each stage's median time in a search (its calls summed)."""
    clocks: dict[str, list[float]] = {}
    kept = [(owner, name, getattr(owner, name)) for owner, name, _ in STAGES]
    current = [0]

    def timed(function, label):
        def run(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent = clocks.setdefault(label, [0.0] * count)
                spent[current[0]] += (time.perf_counter() - started) * 1000
        return run

    for (owner, name, label), (_, _, function) in zip(STAGES, kept):
        setattr(owner, name, timed(function, label))
    rng = random.Random(seed)
    total = []
    try:
        for n in range(count):
            current[0] = n
            started = time.perf_counter()
            store.search(rng.choice(QUERIES), limit=10)
            total.append((time.perf_counter() - started) * 1000)
    finally:
        for owner, name, function in kept:
            setattr(owner, name, function)
    return {"search": summary(total),
            "median ms per search": {label: round(statistics.median(values), 3) for label, values in clocks.items()}}


def statements(store: Store, count: int, seed: int) -> tuple[float, Counter]:
    seen: Counter = Counter()
    store.conn.set_trace_callback(lambda sql: seen.update([LITERAL.sub("?", " ".join(sql.split()))]))
    try:
        time_searches(store, count, seed, warm=0)
    finally:
        store.conn.set_trace_callback(None)
    return sum(seen.values()) / count, seen


def hand_offs(store: Store, count: int, seed: int) -> float:
    """Pool submissions per search (a job handed to another thread and waited for)."""
    submitted = [0]
    pool = store.pool
    submit = pool.submit

    def counted(*args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            submitted[0] += 1
        return submit(*args, **kwargs)

    pool.submit = counted
    try:
        time_searches(store, count, seed, warm=0)
    finally:
        del pool.submit
    return submitted[0] / count


def profiled(store: Store, count: int, seed: int, top: int, order: str) -> str:
    profile = cProfile.Profile()
    profile.enable()
    time_searches(store, count, seed, warm=0)
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(order).print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store", type=Path, help="a built store's home (bench_core.py --store DIR: DIR/<size>)")
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--top", type=int, default=30, help="cProfile's functions shown")
    parser.add_argument("--sort", default="tottime", help="cProfile's order: tottime (own time) or cumulative")
    parser.add_argument("--model", type=Path, default=default_model())
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    embedder = Embedder(MODEL_NAME, args.model)
    if not embedder.load():
        print(f"cannot load the model from {args.model}: {embedder.error}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        shutil.copytree(args.store, home)
        settings = load_settings(env={}, home=home, embed_model_path=args.model)
        with Store.open(settings, project="/bench/project", embedder=embedder) as store:
            for query in QUERIES:
                store.search(query)
            time_searches(store, 50, seed=0, warm=0)
            plain = summary(time_searches(store, args.searches, seed=1, warm=0))
            stages = staged(store, args.searches, seed=2)
            per_search, seen = statements(store, args.searches, seed=3)
            threads = hand_offs(store, args.searches, seed=4)
            profile = profiled(store, args.searches, seed=5, top=args.top, order=args.sort)
    results = {"date": utc_now(), "machine": describe_machine(), "search": plain, "stages": stages,
               "sql statements per search": round(per_search, 2), "pool hand-offs per search": threads,
               "statements": {sql: round(n / args.searches, 2) for sql, n in seen.most_common()}}
    write_json(args.json, results)
    print(f"{results['date']} | {results['machine']}")
    print(f"search p50 / p95: {plain['p50_ms']} / {plain['p95_ms']} ms; with stage clocks "
          f"{stages['search']['p50_ms']} ms")
    for label, ms in sorted(stages["median ms per search"].items(), key=lambda item: -item[1]):
        print(f"  {label:<28} {ms:7.3f} ms")
    print(f"SQL statements per search: {per_search:.1f}; pool hand-offs per search: {threads:.2f}")
    for sql, n in seen.most_common():
        print(f"  {n / args.searches:5.2f}  {sql[:150]}")
    print(profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
