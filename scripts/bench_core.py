"""Benchmark the core store: search latency at 10k and 100k memories, save latency (embedding included).

    python scripts/bench_core.py [--sizes 10000,100000] [--queries 200] [--saves 200] [--model PATH] [--json OUT]
    python scripts/bench_core.py --sizes 1000000 --store /tmp/stores --build-only   # build once, keep it
    python scripts/bench_core.py --sizes 1000000 --store /tmp/stores --no-ab        # measure it, again and again
    python scripts/bench_core.py --sizes 1000000 --store /tmp/stores --bulk --build-workers 2 --build-only
    python scripts/bench_core.py --paraphrases [scripts/data/paraphrase_pairs.json] --sizes 1000,10000

Builds each store in a temporary home with the real write path (save_many in batches, the real model; above
--synthetic-above memories, hashed corpus vectors), then times `Store.search` (query embedding, BM25,
vectors, graph, SQLite join, access update) and single `Store.save` calls. Reports medians and percentiles
measured in one run; the search's stages (--stages); the vector KNN on the process's copy of the codes
(index/codes.py) against sqlite-vec's exhaustive scan, with the share of the exhaustive and of the exact
cosine answer each finds, and whole searches and saves with either (--vector-ab); and the A/Bs of earlier
changes (fusion, sentence pieces, similar words, model threads; --no-ab skips them). --store keeps each
built store in DIR/<size> so that later runs measure the same store without building it again. --bulk builds
the same memories with SQL in large transactions instead (`bulk_build`: the rows a save and the worker's passes
write, hashed corpus vectors, BM25 indexed from SQLite at the end), for stores the write path takes hours to fill.

--paraphrases: instead of timing, saves the hand-written pairs' memories into each store (among the generated
ones) and asks each pair's question, which shares no content word with its memory, through hybrid search (as
an agent calls it) and through the vector retriever alone; reports recall@1/5/10 and MRR for both, and every
pair where hybrid ranks its memory lower than vectors alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from bench_core_ab import (
    time_fusions,
    time_model_threads,
    time_pieces,
    time_scan_searches,
    time_similar_words,
    time_vector_scans,
)
from bench_paraphrases import PARAPHRASES, main_paraphrases
from bench_store import QUERIES, build, bulk_build, disk_bytes, memory_text, new_numbers, settle, time_searches
from harness import MODEL_NAME, default_model, describe_machine, summary, utc_now, write_json

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.lifecycle import remember
from agentmem_mcp.store import Store


@contextlib.contextmanager
def stage_clocks(store: Store):
    """Time the stages of each search while inside: the query's embedding, BM25, the vector retriever's KNN
    (binary-code scan + exact re-scoring), the entity graph, and the query's similar words. The retrievers run
    on parallel threads, so the stages overlap; what is left of a search's time is fusion, rerank and packing."""
    from agentmem_mcp.index import vectors
    from agentmem_mcp.recall import retrieval

    clocks: dict[str, list[float]] = {}
    patched = [(retrieval, "_bm25_search", "bm25"), (retrieval, "_graph_search", "graph"),
               (retrieval, "query_words", "similar words"), (vectors, "knn", "vectors (knn)"),
               (store.embedder, "embed_query", "embedding")]
    kept = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]

    def timed(function, label):
        def run(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                clocks.setdefault(label, []).append((time.perf_counter() - started) * 1000)
        return run

    for (owner, name, label), (_, _, function) in zip(patched, kept):
        setattr(owner, name, timed(function, label))
    try:
        yield clocks
    finally:
        for owner, name, function in kept:
            if owner is store.embedder:
                delattr(owner, name)
            else:
                setattr(owner, name, function)


def time_stages(store: Store, count: int, seed: int) -> dict[str, dict]:
    """Search p50/p95 by stage (see stage_clocks) and in all, on `count` searches."""
    rng = random.Random(seed)
    with stage_clocks(store) as clocks:
        total = []
        for _ in range(count):
            started = time.perf_counter()
            store.search(rng.choice(QUERIES), limit=10)
            total.append((time.perf_counter() - started) * 1000)
    return {"search": summary(total)} | {label: summary(values) for label, values in clocks.items()}


@contextlib.contextmanager
def save_stage_clocks():
    """Time the stages of each save while inside, each as wall time and as the CPU time of the thread that ran
    it (the machine's load inflates the first, much less the second): the model embedding the memory, its BM25
    supersede candidates and their comparisons with the draft (on a pool thread, beside the embedding), its vector
    candidates (the KNN over the codes and the exact re-scoring; the CPU of the scan's other threads is not in its
    thread's figure, but is in the save's), the supersede verdicts on all of them, and the write transaction."""

    clocks: dict[str, list[float]] = {}
    patched = [("_embed", "embedding"), ("_text_candidates", "bm25 candidates"),
               ("_early_candidates", "bm25 candidates and their verdicts (beside the embedding)"),
               ("_vector_candidates", "vector candidates (knn)"), ("_choose_old", "supersede verdicts"),
               ("write_prepared", "write"),
               ("_candidates", "vector candidates (knn)")]  # its name before the BM25 lookups overlapped the KNN
    patched = [(name, label) for name, label in patched if hasattr(remember, name)]
    kept = [(name, getattr(remember, name)) for name, _ in patched]

    def timed(function, label):
        def run(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                clocks.setdefault(label, []).append((time.perf_counter() - wall) * 1000)
                clocks.setdefault(f"{label}, CPU", []).append((time.thread_time() - cpu) * 1000)
        return run

    for (name, label), (_, function) in zip(patched, kept):
        setattr(remember, name, timed(function, label))
    try:
        yield clocks
    finally:
        for name, function in kept:
            setattr(remember, name, function)


def time_save_stages(store: Store, count: int, seed: int) -> dict[str, dict]:
    """Save p50/p95 by stage (see save_stage_clocks) and in all, wall and CPU (every thread of the process), on
    `count` saves of new generated memories."""
    rng = random.Random(seed)
    total, cpu = [], []
    first = new_numbers(store, 20_000_000)
    with save_stage_clocks() as clocks:
        for n in range(count):
            item = memory_text(rng, first + n)
            started, used = time.perf_counter(), time.process_time()
            store.save(item.pop("content"), **item)
            total.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - used) * 1000)
    return {"save": summary(total), "save, CPU": summary(cpu)} | {label: summary(values)
                                                                  for label, values in clocks.items()}


def time_saves(store: Store, count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    timings = []
    first = new_numbers(store, 10_000_000)
    for n in range(count):
        item = memory_text(rng, first + n)
        started = time.perf_counter()
        store.save(item.pop("content"), **item)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


@contextlib.contextmanager
def bench_store(args: argparse.Namespace, embedder: Embedder, size: int, synthetic: bool):
    """(settings, open store, build figures) for a store of `size` memories: built in a temporary home, or,
    with --store DIR, in DIR/<size> and kept there, so that later runs measure it again without rebuilding
    (the saves a run times stay in it). BUILT_FILE records that the build finished and what it took."""
    with contextlib.ExitStack() as stack:
        if args.store:
            home = args.store / str(size)
        else:
            home = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "home"
        settings = load_settings(env={}, home=home, embed_model_path=args.model)
        marker = home / BUILT_FILE
        built = json.loads(marker.read_text()) if marker.exists() else None
        if built is None and home.exists() and any(home.iterdir()):
            print(f"{home} holds an unfinished build: {'measuring it as it is' if args.as_is else 'resuming it'}",
                  file=sys.stderr)
        store = stack.enter_context(Store.open(settings, project="/bench/project", embedder=embedder))
        if built is None and args.as_is:
            built = settle(store)
            built["corpus_vectors"] = "hashed" if synthetic else "model"
        if built is None:
            print(f"building {size:,} memories", file=sys.stderr)
            before = store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
            if args.bulk:
                built = bulk_build(store, size, seed=size, workers=args.build_workers)
            else:
                built = build(store, size, seed=size, synthetic_vectors=synthetic, workers=args.build_workers)
            built["corpus_vectors"] = "hashed" if synthetic or args.bulk else "model"
            built["resumed_from"] = before  # memories an interrupted build had made (its time is not counted)
            if args.store:
                marker.write_text(json.dumps(built))
        elif built["build_s"] is not None:
            print(f"reusing the store of {size:,} memories in {home} (built in {built['build_s']:.0f} s)",
                  file=sys.stderr)
        yield settings, store, built


BUILT_FILE = "bench-built.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--model", type=Path, default=default_model())
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--synthetic-above", type=int, default=20000,
                        help="stores larger than this get hashed corpus vectors (see build())")
    parser.add_argument("--store", type=Path, help="build each store in DIR/<size> and keep it there; a later run "
                        "with the same DIR measures it again without rebuilding (delete DIR when done)")
    parser.add_argument("--build-only", action="store_true", help="build (or check) the stores, measure nothing")
    parser.add_argument("--build-workers", type=int, default=0,
                        help="processes that validate and embed the build's batches while this one writes them")
    parser.add_argument("--bulk", action="store_true", help="build with SQL in large transactions (bulk_build: "
                        "the same rows as the write path, hashed corpus vectors, BM25 indexed from SQLite at the end)")
    parser.add_argument("--as-is", action="store_true", help="with --store: measure a store whose build was "
                        "interrupted as it is (its memory count is reported) instead of resuming the build")
    parser.add_argument("--stages", type=int, default=100, help="searches timed stage by stage (0: none)")
    parser.add_argument("--save-stages", type=int, default=0, help="saves timed stage by stage, wall and CPU")
    parser.add_argument("--vector-ab", type=int, default=50,
                        help="queries (and as many stored texts) for the code-copy against vec0 KNN A/B (0: none)")
    parser.add_argument("--no-ab", action="store_true", help="skip the fusion, pieces, similar-words and "
                        "model-threads A/Bs")
    parser.add_argument("--paraphrases", type=Path, nargs="?", const=PARAPHRASES,
                        help="measure hybrid against vector-only search on these pairs instead of timing")
    args = parser.parse_args(argv)
    embedder = Embedder(MODEL_NAME, args.model)
    if not embedder.load():
        print(f"cannot load the model from {args.model}: {embedder.error}", file=sys.stderr)
        return 1
    results = {"date": utc_now(), "machine": describe_machine(),
               "command": "python scripts/bench_core.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               "sizes": {}}
    if args.paraphrases:
        main_paraphrases(args, embedder, results)
        write_json(args.json, results)
        return 0
    for size in [int(s) for s in args.sizes.split(",") if s]:
        synthetic = size > args.synthetic_above
        with bench_store(args, embedder, size, synthetic) as (settings, store, built):
            if args.build_only:
                continue
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            on_disk = disk_bytes(settings.home)
            size = store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]  # as built (or as it is)
            build_s = built["build_s"]
            row = {"build_s": build_s and round(build_s, 1), "build_per_s": build_s and round(size / build_s),
                   "disk_bytes": on_disk, "disk_bytes_per_memory": round(on_disk / size),
                   "pieces_s": round(built["pieces_s"], 1), "words_s": round(built["words_s"], 1),
                   "corpus_vectors": built.get("corpus_vectors", "hashed" if synthetic else "model")}
            started = time.perf_counter()
            store.search(QUERIES[0])  # the first search of a process reads the vector codes (index/codes.py)
            row["first_search_ms"] = round((time.perf_counter() - started) * 1000, 1)
            row["search"] = summary(time_searches(store, args.queries, seed=1))
            row["save"] = summary(time_saves(store, args.saves, seed=2))
            row["search_after_saves"] = summary(time_searches(store, args.queries, seed=3))
            if args.stages:
                row["stages"] = time_stages(store, args.stages, seed=8)
            if args.save_stages:
                row["save_stages"] = time_save_stages(store, args.save_stages, seed=11)
            if args.vector_ab:
                row["vector_scan_ab"] = time_vector_scans(store, args.vector_ab, seed=9, synthetic=synthetic)
                row["search_scan_ab"] = {name: summary(values)
                                         for name, values in time_scan_searches(store, args.vector_ab, 10).items()}
            if not args.no_ab:
                row["fusion_ab"] = {name: summary(v) for name, v in time_fusions(store, args.queries, 4).items()}
                row["pieces_ab"] = {name: summary(v) for name, v in time_pieces(store, args.queries, 5).items()}
                row["similar_words_ab"] = {name: summary(v)
                                           for name, v in time_similar_words(store, args.queries, 6).items()}
                row["model_threads_ab"] = {name: summary(v)
                                           for name, v in time_model_threads(store, args.queries, 7).items()}
            results["sizes"][size] = row
            print(json.dumps({size: row}), flush=True)
    print(f"\n{results['date']} | {results['machine']}\n{results['command']}")
    print(f"{'memories':>9} | {'search p50':>10} | {'search p95':>10} | {'save p50':>8} | {'save p95':>8} | build/s"
          " | disk bytes/memory")
    for size, row in results["sizes"].items():
        print(f"{size:>9,} | {row['search']['p50_ms']:>8} ms | {row['search']['p95_ms']:>8} ms | "
              f"{row['save']['p50_ms']:>5} ms | {row['save']['p95_ms']:>5} ms | {row['build_per_s']} | "
              f"{row['disk_bytes_per_memory']:,}")
    for size, row in results["sizes"].items():
        print(f"{size:>9,}: first search of the process {row['first_search_ms']} ms; corpus vectors "
              f"{row['corpus_vectors']}")
        for stage, figures in row.get("stages", {}).items():
            print(f"{size:>9,}: stage {stage}: p50 {figures['p50_ms']} / p95 {figures['p95_ms']} ms (n={figures['n']})")
        for stage, figures in row.get("save_stages", {}).items():
            print(f"{size:>9,}: save stage {stage}: p50 {figures['p50_ms']} / p95 {figures['p95_ms']} ms "
                  f"(n={figures['n']})")
        if ab := row.get("vector_scan_ab"):
            for scan, figures in ab.items():
                print(f"{size:>9,}: vector KNN by {scan}: p50/p95 {figures['p50_ms']}/{figures['p95_ms']} ms, "
                      f"recall@60 of vec0's exhaustive answer {figures['recall@60']}, same top memory "
                      f"{figures['same_top1']}; of the 60 chunks nearest by exact cosine, "
                      f"{figures['exact_top60_chunks_in_candidates']:.1%} are among its candidates")
            ab = row["search_scan_ab"]
            print(f"{size:>9,}: search A/B, KNN on the code copy / on vec0 (before), alternated: search p50/p95 "
                  f"{ab['codes search']['p50_ms']}/{ab['codes search']['p95_ms']} vs {ab['vec0 search']['p50_ms']}/"
                  f"{ab['vec0 search']['p95_ms']} ms, save p50 {ab['codes save']['p50_ms']} vs "
                  f"{ab['vec0 save']['p50_ms']} ms")
        if "fusion_ab" not in row:
            continue
        ab = row["fusion_ab"]
        print(f"{size:>9,}: fusion A/B, same store, interleaved: score p50 {ab['score']['p50_ms']} / p95 "
              f"{ab['score']['p95_ms']} ms, rrf p50 {ab['rrf']['p50_ms']} / p95 {ab['rrf']['p95_ms']} ms")
        ab = row["pieces_ab"]
        print(f"{size:>9,}: sentence pieces A/B, same store, interleaved: search p50/p95 with "
              f"{ab['with']['p50_ms']}/{ab['with']['p95_ms']} ms, without {ab['without']['p50_ms']}/"
              f"{ab['without']['p95_ms']} ms")
        ab = row["similar_words_ab"]
        print(f"{size:>9,}: similar words A/B, same store, interleaved: search p50/p95 with "
              f"{ab['with']['p50_ms']}/{ab['with']['p95_ms']} ms, without {ab['without']['p50_ms']}/"
              f"{ab['without']['p95_ms']} ms; after the import, the worker took {row['pieces_s']} s for sentence "
              f"pieces and {row['words_s']} s for word vectors")
        if ab := row["model_threads_ab"]:
            print(f"{size:>9,}: model threads A/B, same store, blocks alternated: threads that sleep: search "
                  f"p50/p95 {ab['quiet search']['p50_ms']}/{ab['quiet search']['p95_ms']} ms, save "
                  f"{ab['quiet save']['p50_ms']}/{ab['quiet save']['p95_ms']} ms; spinning (onnxruntime's default): "
                  f"search {ab['spinning search']['p50_ms']}/{ab['spinning search']['p95_ms']} ms, save "
                  f"{ab['spinning save']['p50_ms']}/{ab['spinning save']['p95_ms']} ms")
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
