"""Benchmark the core store: search latency at 10k and 100k memories, save latency (embedding included).

    python scripts/bench_core.py [--sizes 10000,100000] [--queries 200] [--saves 200] [--model PATH] [--json OUT]
    python scripts/bench_core.py --paraphrases [scripts/data/paraphrase_pairs.json] --sizes 1000,10000

Builds each store in a temporary home with the real write path (save_many in batches, the real model),
then times `Store.search` (query embedding, BM25, vectors, graph, SQLite join, access update) and
single `Store.save` calls. Reports medians and percentiles measured in one run.

--paraphrases: instead of timing, saves the hand-written pairs' memories into each store (among the generated
ones) and asks each pair's question, which shares no content word with its memory, through hybrid search (as
an agent calls it) and through the vector retriever alone; reports recall@1/5/10 and MRR for both, and every
pair where hybrid ranks its memory lower than vectors alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from eval_common import with_settings  # noqa: E402
from machine import describe_machine  # noqa: E402

from agentmem_mcp.config import load_settings  # noqa: E402
from agentmem_mcp.index.embedder import Embedder  # noqa: E402
from agentmem_mcp.store import Store  # noqa: E402

DEFAULT_MODEL = REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"

NOUNS = ("cache", "queue", "worker", "parser", "router", "session", "token", "upload", "migration", "schema",
         "config", "logger", "scheduler", "client", "server", "index", "report", "payment", "invoice", "user",
         "account", "webhook", "build", "release", "deploy", "test", "fixture", "lint", "docker", "cluster")
VERBS = ("retries", "validates", "serialises", "caches", "streams", "batches", "rejects", "logs", "signs",
         "compresses", "throttles", "parses", "renders", "indexes", "migrates", "schedules")
TOOLS = ("pytest", "ruff", "mypy", "docker", "kubectl", "npm", "pnpm", "cargo", "make", "alembic", "terraform")
TYPES = ("decision", "pattern", "preference", "architecture", "bug", "workflow", "fact")
QUERIES = (
    "how do we run the tests", "why does the upload fail", "which port does the server use",
    "where is the config parsed", "how are migrations applied", "what retry policy does the queue use",
    "deploy to staging", "parseConfig", "webhook signature", "docker build cache", "session token expiry",
    "who decided to use pnpm", "lint rules", "payment invoice rendering bug", "scheduler throttling",
)


def memory_text(rng: random.Random, n: int) -> dict:
    a, b = rng.sample(NOUNS, 2)
    verb = rng.choice(VERBS)
    tool = rng.choice(TOOLS)
    module = f"src/{a}/{b}_{n % 97}.py"
    symbol = f"{a}{b.capitalize()}{n}"
    kind = rng.choice(TYPES)
    sentences = [f"The {a} {verb} every {b} before it reaches {module}; see {symbol}()."]
    if n % 3 == 0:
        sentences.append(f"We use {tool} for this step (decision #{n}).")
    elif n % 3 == 1:
        sentences.append(f"Port {3000 + n % 5000} serves the {b} endpoint.")
    if n % 7 == 0:
        sentences.append(f"Bug {n}: the {b} {verb} twice when the {a} times out; fixed by an idempotency key.")
    return {"content": " ".join(sentences), "type": kind, "importance": round(rng.uniform(0.2, 0.9), 2),
            "files": [module]}


def hashed_vectors(texts: list[str], dimension: int = 384) -> list:
    """Deterministic unit vectors from a hash of each text: no meaning, same shape and cost in the index."""
    import hashlib

    import numpy as np

    out = []
    for text in texts:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(dimension).astype("float32")
        out.append(vector / np.linalg.norm(vector))
    return out


def build(store: Store, size: int, seed: int, batch: int = 500, synthetic_vectors: bool = False) -> dict[str, float]:
    """Fill the store through save_many. synthetic_vectors: corpus vectors come from `hashed_vectors`
    instead of the model (the model embeds ~3,000 tokens/s on 2 cores: 100k memories would take most of
    an hour); queries and the timed saves still use the real model. Returns the seconds taken in all, and
    by the worker's two steps after an import: sentence pieces and word vectors."""
    rng = random.Random(seed)
    started = time.perf_counter()
    real_embed = store.embedder.embed
    if synthetic_vectors:
        store.embedder.embed = hashed_vectors
    try:
        _fill(store, size, rng, batch)
        store.flush()
        filled = time.perf_counter()
        while store.add_sentence_pieces():  # the worker's steps after an import (eval_common.settle)
            pass
        pieces = time.perf_counter()
        while store.add_word_vectors():
            pass
        words = time.perf_counter()
        print(f"  sentence pieces: {pieces - filled:.1f} s, word vectors: {words - pieces:.1f} s "
              f"({store.conn.execute('SELECT COUNT(*) FROM word_vectors').fetchone()[0]:,} words)",
              file=sys.stderr, flush=True)
    finally:
        store.embedder.embed = real_embed
    return {"build_s": words - started, "pieces_s": pieces - filled, "words_s": words - pieces}


def _fill(store: Store, size: int, rng: random.Random, batch: int) -> None:
    for start in range(0, size, batch):
        items = [memory_text(rng, n) for n in range(start, min(size, start + batch))]
        store.save_many(items, supersede_check=False)
        if (start // batch) % 20 == 0:
            print(f"  built {start + len(items):,}/{size:,}", file=sys.stderr, flush=True)


def disk_bytes(home: Path) -> int:
    """Bytes the store takes on disk: the database, its WAL and the BM25 index (after a checkpoint)."""
    return sum(f.stat().st_size for f in home.rglob("*") if f.is_file() and f.suffix != ".log")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def time_searches(store: Store, count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    for query in QUERIES[:5]:
        store.search(query)
    timings = []
    for _ in range(count):
        query = rng.choice(QUERIES)
        started = time.perf_counter()
        store.search(query, limit=10)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def time_fusions(store: Store, count: int, seed: int) -> dict[str, list[float]]:
    """The same queries on the same store with `fusion = score` (the default) and `fusion = rrf`, interleaved
    (alternating which goes first), so that the difference is the fusion's own cost, not the machine's."""
    rng = random.Random(seed)
    timings: dict[str, list[float]] = {"score": [], "rrf": []}
    for n in range(count):
        query = rng.choice(QUERIES)
        for fusion in (("score", "rrf") if n % 2 else ("rrf", "score")):
            with with_settings(store, fusion=fusion):
                started = time.perf_counter()
                store.search(query, limit=10)
                timings[fusion].append((time.perf_counter() - started) * 1000)
    return timings


@contextlib.contextmanager
def without_pieces():
    """Search as before sentence pieces (index/vectors.py): no piece lookup. Only for the A/B below."""
    from agentmem_mcp.index import vectors

    kept = vectors._with_pieces
    vectors._with_pieces = lambda conn, query, best: best
    try:
        yield
    finally:
        vectors._with_pieces = kept


def time_pieces(store: Store, count: int, seed: int) -> dict[str, list[float]]:
    """The same queries on the same store with and without scoring the candidates' sentence pieces,
    interleaved (alternating which goes first): what the pieces cost a search."""
    rng = random.Random(seed)
    timings: dict[str, list[float]] = {"with": [], "without": []}
    for n in range(count):
        query = rng.choice(QUERIES)
        for pieces in ((True, False) if n % 2 else (False, True)):
            with contextlib.nullcontext() if pieces else without_pieces():
                started = time.perf_counter()
                store.search(query, limit=10)
                timings["with" if pieces else "without"].append((time.perf_counter() - started) * 1000)
    return timings


def time_similar_words(store: Store, count: int, seed: int) -> dict[str, list[float]]:
    """The same queries on the same store with and without similar words (index/words.py), interleaved
    (alternating which goes first): what they cost a search."""
    rng = random.Random(seed)
    timings: dict[str, list[float]] = {"with": [], "without": []}
    on = store.settings
    off = on.replace(soft_match_weight=0.0)
    try:
        for n in range(count):
            query = rng.choice(QUERIES)
            for similar in ((True, False) if n % 2 else (False, True)):
                store.settings = on if similar else off
                started = time.perf_counter()
                store.search(query, limit=10)
                timings["with" if similar else "without"].append((time.perf_counter() - started) * 1000)
    finally:
        store.settings = on
    return timings


def time_saves(store: Store, count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    timings = []
    for n in range(count):
        item = memory_text(rng, 10_000_000 + n)
        started = time.perf_counter()
        store.save(item.pop("content"), **item)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


PARAPHRASES = REPO / "scripts" / "data" / "paraphrase_pairs.json"


def _rank(store: Store, query: str, target: str, retrievers: tuple[str, ...]) -> int | None:
    hits = store.search(query, limit=10, record_access=False, retrievers=retrievers).hits
    return next((n for n, hit in enumerate(hits, start=1) if hit.id == target), None)


def _quality(ranks: list[int | None]) -> dict:
    return {f"recall@{k}": sum(1 for r in ranks if r is not None and r <= k) for k in (1, 5, 10)} | {
        "mrr": round(sum(1 / r for r in ranks if r) / len(ranks), 3), "pairs": len(ranks)}


def paraphrase_quality(store: Store, pairs: list[dict]) -> dict:
    """Recall of each pair's memory for its question: hybrid search against the vector retriever alone."""
    ids = [store.save(pair["memory"], type=pair["type"]).id for pair in pairs]
    store.flush()
    while store.add_sentence_pieces():
        pass
    while store.add_word_vectors():
        pass
    overlapping = [pair["query"] for pair in pairs
                   if set(store.fulltext.query_terms(pair["query"])) & set(store.fulltext.query_terms(pair["memory"]))]
    hybrid, vector, lost = [], [], []
    for pair, target in zip(pairs, ids):
        h = _rank(store, pair["query"], target, ("bm25", "vector", "graph"))
        v = _rank(store, pair["query"], target, ("vector",))
        hybrid.append(h)
        vector.append(v)
        if v is not None and (h is None or h > v):
            lost.append({"query": pair["query"], "hybrid_rank": h, "vector_rank": v})
    return {"hybrid": _quality(hybrid), "vector_only": _quality(vector), "hybrid_lower": lost,
            "sharing_words": overlapping}


def main_paraphrases(args: argparse.Namespace, embedder: Embedder, results: dict) -> None:
    pairs = json.loads(args.paraphrases.read_text())["pairs"]
    for size in [int(s) for s in args.sizes.split(",") if s]:
        with tempfile.TemporaryDirectory() as tmp:
            settings = load_settings(env={}, home=Path(tmp) / "home", embed_model_path=args.model)
            with Store.open(settings, project="/bench/project", embedder=embedder) as store:
                print(f"building {size:,} memories", file=sys.stderr)
                build(store, size, seed=size, synthetic_vectors=size > args.synthetic_above)
                row = paraphrase_quality(store, pairs)
                row["corpus_vectors"] = "hashed" if size > args.synthetic_above else "model"
                results["sizes"][size] = row
                print(json.dumps({size: row}, indent=1), flush=True)
    print(f"\n{results['date']} | {results['machine']}\n{results['command']}")
    for size, row in results["sizes"].items():
        for mode in ("hybrid", "vector_only"):
            q = row[mode]
            print(f"{size:>9,} {mode:>11}: recall@1 {q['recall@1']}/{q['pairs']}, @5 {q['recall@5']}, "
                  f"@10 {q['recall@10']}, MRR {q['mrr']}")
        print(f"{size:>9,}: hybrid ranks lower than vectors alone on {len(row['hybrid_lower'])} pairs; "
              f"{len(row['sharing_words'])} pairs share a word")


def summary(values: list[float]) -> dict:
    return {"n": len(values), "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(percentile(values, 0.95), 2), "max_ms": round(max(values), 2)}


def spinning_session(store: Store) -> Any:
    """The model's session as onnxruntime makes it by default (threads that spin after each inference), for
    the A/B below; None when the model is not on a fastembed session."""
    from agentmem_mcp.index.embedder import session_like

    try:
        return session_like(store.embedder._model.model.model, spinning=True)
    except AttributeError:
        return None


def time_model_threads(store: Store, count: int, seed: int, block: int = 20) -> dict[str, list[float]]:
    """Searches and saves on the same store with the model's session as agentmem makes it (threads that
    sleep when idle: index/embedder.without_spinning) and as onnxruntime makes it by default, in blocks of
    `block` searches and block / 2 saves, alternating which goes first: what spinning threads cost or save."""
    rng = random.Random(seed)
    inner = store.embedder._model.model
    sessions = {"quiet": inner.model, "spinning": spinning_session(store)}
    timings: dict[str, list[float]] = {f"{name} {what}": [] for name in sessions for what in ("search", "save")}
    if sessions["spinning"] is None:
        return {}
    try:
        for n in range(max(1, count // block)):
            for name in (("quiet", "spinning") if n % 2 else ("spinning", "quiet")):
                inner.model = sessions[name]
                for _ in range(block):
                    query = rng.choice(QUERIES)
                    started = time.perf_counter()
                    store.search(query, limit=10)
                    timings[f"{name} search"].append((time.perf_counter() - started) * 1000)
                for k in range(block // 2):
                    item = memory_text(rng, 20_000_000 + 1000 * n + k + (500 if name == "quiet" else 0))
                    started = time.perf_counter()
                    store.save(item.pop("content"), **item)
                    timings[f"{name} save"].append((time.perf_counter() - started) * 1000)
    finally:
        inner.model = sessions["quiet"]
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--model", type=Path, default=Path(os.environ.get("AGENTMEM_EMBED_MODEL_PATH", DEFAULT_MODEL)))
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--synthetic-above", type=int, default=20000,
                        help="stores larger than this get hashed corpus vectors (see build())")
    parser.add_argument("--paraphrases", type=Path, nargs="?", const=PARAPHRASES,
                        help="measure hybrid against vector-only search on these pairs instead of timing")
    args = parser.parse_args(argv)
    embedder = Embedder(MODEL_NAME, args.model)
    if not embedder.load():
        print(f"cannot load the model from {args.model}: {embedder.error}", file=sys.stderr)
        return 1
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": describe_machine(),
               "command": "python scripts/bench_core.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               "sizes": {}}
    if args.paraphrases:
        main_paraphrases(args, embedder, results)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
        return 0
    for size in [int(s) for s in args.sizes.split(",") if s]:
        with tempfile.TemporaryDirectory() as tmp:
            settings = load_settings(env={}, home=Path(tmp) / "home", embed_model_path=args.model)
            with Store.open(settings, project="/bench/project", embedder=embedder) as store:
                print(f"building {size:,} memories", file=sys.stderr)
                synthetic = size > args.synthetic_above
                built = build(store, size, seed=size, synthetic_vectors=synthetic)
                build_s = built["build_s"]
                store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                on_disk = disk_bytes(settings.home)
                search = summary(time_searches(store, args.queries, seed=1))
                save = summary(time_saves(store, args.saves, seed=2))
                search_after = summary(time_searches(store, args.queries, seed=3))
                fusions = {name: summary(values) for name, values in time_fusions(store, args.queries, 4).items()}
                pieces = {name: summary(values) for name, values in time_pieces(store, args.queries, 5).items()}
                similar = {name: summary(values)
                           for name, values in time_similar_words(store, args.queries, 6).items()}
                threads = {name: summary(values)
                           for name, values in time_model_threads(store, args.queries, 7).items()}
                results["sizes"][size] = {"build_s": round(build_s, 1), "build_per_s": round(size / build_s),
                                          "disk_bytes": on_disk, "disk_bytes_per_memory": round(on_disk / size),
                                          "pieces_s": round(built["pieces_s"], 1),
                                          "words_s": round(built["words_s"], 1),
                                          "corpus_vectors": "hashed" if synthetic else "model",
                                          "search": search, "save": save, "search_after_saves": search_after,
                                          "fusion_ab": fusions, "pieces_ab": pieces, "similar_words_ab": similar,
                                          "model_threads_ab": threads}
                print(json.dumps({size: results["sizes"][size]}), flush=True)
    print(f"\n{results['date']} | {results['machine']}\n{results['command']}")
    print(f"{'memories':>9} | {'search p50':>10} | {'search p95':>10} | {'save p50':>8} | {'save p95':>8} | build/s"
          " | disk bytes/memory")
    for size, row in results["sizes"].items():
        print(f"{size:>9,} | {row['search']['p50_ms']:>8} ms | {row['search']['p95_ms']:>8} ms | "
              f"{row['save']['p50_ms']:>5} ms | {row['save']['p95_ms']:>5} ms | {row['build_per_s']} | "
              f"{row['disk_bytes_per_memory']:,}")
    for size, row in results["sizes"].items():
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
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
