"""Benchmark the core store: search latency at 10k and 100k memories, save latency (embedding included).

    python scripts/bench_core.py [--sizes 10000,100000] [--queries 200] [--saves 200] [--model PATH] [--json OUT]
    python scripts/bench_core.py --sizes 1000000 --store /tmp/stores --build-only   # build once, keep it
    python scripts/bench_core.py --sizes 1000000 --store /tmp/stores --no-ab        # measure it, again and again
    python scripts/bench_core.py --paraphrases [scripts/data/paraphrase_pairs.json] --sizes 1000,10000

Builds each store in a temporary home with the real write path (save_many in batches, the real model; above
--synthetic-above memories, hashed corpus vectors), then times `Store.search` (query embedding, BM25,
vectors, graph, SQLite join, access update) and single `Store.save` calls. Reports medians and percentiles
measured in one run; the search's stages (--stages); the vector KNN on the process's copy of the codes
(index/codes.py) against sqlite-vec's exhaustive scan, with the share of the exhaustive and of the exact
cosine answer each finds, and whole searches and saves with either (--vector-ab); and the A/Bs of earlier
changes (fusion, sentence pieces, similar words, model threads; --no-ab skips them). --store keeps each
built store in DIR/<size> so that later runs measure the same store without building it again.

--paraphrases: instead of timing, saves the hand-written pairs' memories into each store (among the generated
ones) and asks each pair's question, which shares no content word with its memory, through hybrid search (as
an agent calls it) and through the vector retriever alone; reports recall@1/5/10 and MRR for both, and every
pair where hybrid ranks its memory lower than vectors alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
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
from agentmem_mcp.lifecycle import remember  # noqa: E402
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


def build(store: Store, size: int, seed: int, batch: int = 500, synthetic_vectors: bool = False,
          workers: int = 0) -> dict[str, float]:
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
        _fill(store, size, rng, batch, workers)
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


def _fill(store: Store, size: int, rng: random.Random, batch: int, workers: int = 0) -> None:
    """save_many's two halves in batches: validation and embedding (`prepare_saves`), then the writes
    (`write_prepared`, one transaction a batch). With `workers`, the first half runs in that many forked
    processes while this one writes (the same functions, so the same rows: only the CPU is shared out). The
    audit chain's head file is written once a batch (audit.batched, as the worker does). A store holding the
    first memories of an interrupted build resumes after them (the generator replays its random draws)."""
    from agentmem_mcp.db import audit

    done = store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    for n in range(done):  # replay the draws of the memories already built
        memory_text(rng, n)
    batches = ([memory_text(rng, n) for n in range(start, min(size, start + batch))]
               for start in range(done, size, batch))
    started = time.perf_counter()
    global _PARTS
    _PARTS = _PrepareParts(store)
    pool = multiprocessing.get_context("fork").Pool(workers) if workers else None
    try:
        prepared_batches = pool.imap(_prepare, batches) if pool else map(_prepare, batches)
        for number, prepared in enumerate(prepared_batches):
            with audit.batched():
                with store.transaction() as conn:
                    remember.write_prepared(conn, store, prepared)
            store.indexer.index_soon()
            if number % 20 == 0:
                built = done + (number + 1) * batch
                rate = (built - done) / (time.perf_counter() - started)
                print(f"  built {min(built, size):,}/{size:,} ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    finally:
        if pool:
            pool.close()
            pool.join()


class _PrepareParts:
    """What `prepare_saves` reads of a store when no item supersedes and no duplicate check runs: its project,
    clock and embedder (no connection: a forked process must not use its parent's)."""

    def __init__(self, store: Store) -> None:
        self.project = store.project
        self.now = store.now
        self.embedder = store.embedder
        self.pool = None
        self.memories = None


_PARTS: _PrepareParts | None = None


def _prepare(items: list[dict]) -> list:
    return remember.prepare_saves(_PARTS, items, supersede_check=False)


def settle(store: Store) -> dict[str, Any]:
    """What the worker does after an import, on a store whose build stopped before it: the BM25 outbox, sentence
    pieces and word vectors (corpus pieces hashed, as the build's). Returns figures in build()'s shape, without a
    build time."""
    real_embed = store.embedder.embed
    store.embedder.embed = hashed_vectors
    try:
        store.flush()
        started = time.perf_counter()
        while store.add_sentence_pieces():
            pass
        pieces = time.perf_counter()
        while store.add_word_vectors():
            pass
        words = time.perf_counter()
    finally:
        store.embedder.embed = real_embed
    return {"build_s": None, "pieces_s": pieces - started, "words_s": words - pieces}


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


@contextlib.contextmanager
def stage_clocks(store: Store):
    """Time the stages of each search while inside: the query's embedding, BM25, the vector retriever's KNN
    (binary-code scan + exact re-scoring), the entity graph, and the query's similar words. The retrievers run
    on parallel threads, so the stages overlap; what is left of a search's time is fusion, rerank and packing."""
    from agentmem_mcp import retrieval
    from agentmem_mcp.index import vectors

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
def knn_scan(scan: str):
    """Every KNN (search's vector retriever and the save path's supersede check) by this scan while inside."""
    from agentmem_mcp.index import vectors

    kept = vectors.nearest_chunks

    def chosen(*args, **kwargs):
        kwargs["scan"] = scan
        return kept(*args, **kwargs)

    vectors.nearest_chunks = chosen
    try:
        yield
    finally:
        vectors.nearest_chunks = kept


def time_scan_searches(store: Store, count: int, seed: int) -> dict[str, list[float]]:
    """Whole searches and saves with the KNN on the code copy and on vec0's exhaustive scan (the version
    before index/codes.py), the same queries, alternating which goes first; two saves per ten searches."""
    rng = random.Random(seed)
    timings: dict[str, list[float]] = {f"{scan} {what}": []
                                       for scan in ("codes", "vec0") for what in ("search", "save")}
    for n in range(count):
        query = rng.choice(QUERIES)
        for scan in (("codes", "vec0") if n % 2 else ("vec0", "codes")):
            with knn_scan(scan):
                started = time.perf_counter()
                store.search(query, limit=10)
                timings[f"{scan} search"].append((time.perf_counter() - started) * 1000)
                if n % 5 == 0:
                    item = memory_text(rng, 30_000_000 + 2 * n + (scan == "vec0"))
                    started = time.perf_counter()
                    store.save(item.pop("content"), **item)
                    timings[f"{scan} save"].append((time.perf_counter() - started) * 1000)
    return timings


def time_vector_scans(store: Store, count: int, seed: int, synthetic: bool, k: int = 60) -> dict[str, Any]:
    """The vector retriever's KNN on this process's copy of the codes (index/codes.py: its automatic choice,
    and one pass and two passes forced) against sqlite-vec's exhaustive scan, the same query vectors, in turn
    (rotating which goes first); and how much of the exhaustive answer each finds (its top k memories, k =
    the search's retriever depth). Queries: `count` bench queries (the model), and `count` stored memories'
    texts embedded as the corpus was (hashed vectors on a synthetic store: then their nearest is themselves)."""
    from agentmem_mcp.index import vectors

    rng = random.Random(seed)
    texts = [row[0] for row in store.conn.execute(
        "SELECT content FROM memories WHERE is_latest = 1 ORDER BY random() LIMIT ?", (count,))]
    asked = [store.embedder.embed_query(rng.choice(QUERIES)) for _ in range(count)]
    asked += hashed_vectors(texts) if synthetic else [store.embedder.embed_query(text) for text in texts]
    scans = ("vec0", "codes", "codes, one pass", "codes, two passes")
    timings: dict[str, list[float]] = {scan: [] for scan in scans}
    found = dict.fromkeys(scans, 0)
    top1 = dict.fromkeys(scans, 0)
    in_candidates = dict.fromkeys(scans, 0)
    expected = 0
    where = {"projects": ["/bench/project", None], "latest_only": True}
    exact = ExactChunks(store)
    count = max(vectors.MIN_CANDIDATES, k * vectors.CANDIDATES_PER_RESULT)
    for n, query in enumerate(asked):
        answers, candidates = {}, {}
        nearest = exact.nearest(query, k)
        for scan in scans[n % len(scans):] + scans[:n % len(scans)]:
            started = time.perf_counter()
            answers[scan] = vectors.knn(store.conn, query, k=k, scan=scan, **where)
            timings[scan].append((time.perf_counter() - started) * 1000)
            candidates[scan] = set(vectors.nearest_chunks(store.conn, query, count=count, scan=scan, **where))
        reference = {memory_id for memory_id, _ in answers["vec0"]}
        expected += len(reference)
        for scan in scans:
            found[scan] += len(reference & {memory_id for memory_id, _ in answers[scan]})
            top1[scan] += bool(answers[scan] and answers["vec0"] and answers[scan][0][0] == answers["vec0"][0][0])
            in_candidates[scan] += len(nearest & candidates[scan])
    return {scan: summary(timings[scan]) | {
        f"recall@{k}": round(found[scan] / max(1, expected), 4), "same_top1": f"{top1[scan]}/{len(asked)}",
        f"exact_top{k}_chunks_in_candidates": round(in_candidates[scan] / max(1, k * len(asked)), 4)}
        for scan in scans}


class ExactChunks:
    """Every KNN chunk's float vector of the bench project (and global memories), latest only, in one matrix:
    the exact cosine neighbours, against which the binary-code candidates are measured."""

    def __init__(self, store: Store) -> None:
        import numpy as np

        from agentmem_mcp.index import vectors

        rows = store.conn.execute(
            "SELECT c.id, c.embedding FROM memory_chunks c JOIN memories m ON m.id = c.memory_id "
            "WHERE c.chunk_index < ? AND m.is_latest = 1 AND (m.project = '/bench/project' OR m.project IS NULL)",
            (vectors.PIECE_INDEX,)).fetchall()
        self.ids = np.array([row[0] for row in rows], dtype=np.int64)
        self.matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)

    def nearest(self, query: Any, k: int) -> set[int]:
        import numpy as np

        scores = self.matrix @ query
        return set(self.ids[np.argpartition(-scores, min(k, len(scores) - 1))[:k]].tolist())


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


def save_pairs(store: Store, pairs: list[dict]) -> list[str]:
    """Save each pair's memory, with its sentence pieces and word vectors as the worker would add them; their ids."""
    ids = [store.save(pair["memory"], type=pair["type"]).id for pair in pairs]
    store.flush()
    while store.add_sentence_pieces():
        pass
    while store.add_word_vectors():
        pass
    return ids


def paraphrase_quality(store: Store, pairs: list[dict]) -> dict:
    """Recall of each pair's memory for its question: hybrid search against the vector retriever alone."""
    ids = save_pairs(store, pairs)
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
            built = build(store, size, seed=size, synthetic_vectors=synthetic, workers=args.build_workers)
            built["corpus_vectors"] = "hashed" if synthetic else "model"
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
    parser.add_argument("--model", type=Path, default=Path(os.environ.get("AGENTMEM_EMBED_MODEL_PATH", DEFAULT_MODEL)))
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--synthetic-above", type=int, default=20000,
                        help="stores larger than this get hashed corpus vectors (see build())")
    parser.add_argument("--store", type=Path, help="build each store in DIR/<size> and keep it there; a later run "
                        "with the same DIR measures it again without rebuilding (delete DIR when done)")
    parser.add_argument("--build-only", action="store_true", help="build (or check) the stores, measure nothing")
    parser.add_argument("--build-workers", type=int, default=0,
                        help="processes that validate and embed the build's batches while this one writes them")
    parser.add_argument("--as-is", action="store_true", help="with --store: measure a store whose build was "
                        "interrupted as it is (its memory count is reported) instead of resuming the build")
    parser.add_argument("--stages", type=int, default=100, help="searches timed stage by stage (0: none)")
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
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": describe_machine(),
               "command": "python scripts/bench_core.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               "sizes": {}}
    if args.paraphrases:
        main_paraphrases(args, embedder, results)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
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
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
