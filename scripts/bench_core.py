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


BULK_BATCH = 10_000


def bulk_build(store: Store, size: int, seed: int, batch: int = BULK_BATCH, workers: int = 2,
               progress: bool = True) -> dict[str, float]:
    """Fill an empty store with the same memories as `build` (the same generator and seed, hashed vectors), written
    with SQL in transactions of `batch` memories instead of one `save_many` call a batch, then index BM25 from
    SQLite as `agentmem reindex` does (`maintenance.rebuild_bm25`).

    Each memory is validated and chunked by the real `remember.prepare_saves` (in `workers` forked processes
    while this one writes), and leaves the rows a save followed by the worker's two passes leaves: its row in
    memories (with its sentence-piece count and counted words), its chunks and their codes in the KNN table
    (logged in vector_changes), its sentence pieces, its entities, its audit row in the chain, and its new words
    in word_vectors. What a save also checks is skipped, as the corpus makes it pointless: no exact duplicate
    (each text holds its number), no memory superseded (build() passes supersede_check=False too), no answer
    chunk (no memory is in a session). tests/test_bench_core_bulk.py compares it with `build` table by table."""
    from agentmem_mcp.db import audit
    from agentmem_mcp.upkeep.maintenance import rebuild_bm25

    if store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]:
        raise SystemExit(f"{store.settings.home}: a bulk build needs an empty store")
    if not store.embedder.ready:
        raise SystemExit("a bulk build needs the model's id and dimension (the store's vector table)")
    rng = random.Random(seed)
    started = time.perf_counter()
    real_embed = store.embedder.embed
    store.embedder.embed = hashed_vectors  # inherited by the forked workers
    global _PARTS
    _PARTS = _PrepareParts(store)
    batches = ([memory_text(rng, n) for n in range(start, min(size, start + batch))]
               for start in range(0, size, batch))
    pool = multiprocessing.get_context("fork").Pool(workers) if workers else None
    stored_words: set[str] = set()
    done = 0
    try:
        prepared_batches = pool.imap(_bulk_prepare, batches) if pool else map(_bulk_prepare, batches)
        with audit.batched():
            for prepared in prepared_batches:
                with store.transaction() as conn:
                    _bulk_write(conn, store, prepared, stored_words)
                done += len(prepared)
                if progress:
                    rate = done / (time.perf_counter() - started)
                    print(f"  bulk: {done:,}/{size:,} memories written ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    finally:
        store.embedder.embed = real_embed
        if pool:
            pool.close()
            pool.join()
    written = time.perf_counter()
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def shown(stage: str, count: int, total: int) -> None:
        if progress and (count == total or count % 50_000 < 500):
            rate = count / max(1e-9, time.perf_counter() - written)
            print(f"  {stage}: {count:,}/{total:,} ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    rebuild_bm25(store, shown)
    indexed = time.perf_counter()
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"build_s": indexed - started, "sql_s": written - started, "bm25_s": indexed - written,
            "pieces_s": 0.0, "words_s": 0.0, "bulk": True}


def _bulk_prepare(items: list[dict]) -> list[tuple]:
    """A batch validated and embedded as a save does (`prepare_saves`), with what the worker's passes would add:
    each memory's entities, sentence pieces and their vectors, and its words."""
    from agentmem_mcp.index import vectors, words
    from agentmem_mcp.index.document import memory_text as indexed_text
    from agentmem_mcp.index.entities import extract_entities

    out = []
    for p in remember.prepare_saves(_PARTS, items, supersede_check=False):
        d = p.draft
        if d.session_id is not None or d.type == "summary" or d.source == "consolidation" or d.key is not None:
            raise ValueError("the bulk build writes only what bench_core's corpus holds")
        pieces = vectors.memory_pieces(indexed_text(d.title, d.content, d.tags, d.files, for_vectors=True),
                                       d.content)
        out.append((d, p.chunks, p.embedded, extract_entities(f"{d.title}\n{d.content}\n" + " ".join(d.files)),
                    pieces, hashed_vectors(pieces) if pieces else [], words.memory_words(d.title, d.content)))
    return out


def _bulk_write(conn: Any, store: Store, prepared: list[tuple], stored_words: set[str]) -> None:
    """One batch's rows, as `remember._write` and the worker's passes write them, with one statement a table."""
    from agentmem_mcp.db import vectors, word_vectors
    from agentmem_mcp.index import words

    model_id = store.embedder.model_id
    rows, chunks, codes_rows, entity_rows, saved = [], [], [], [], []
    uses: dict[str, int] = {}
    chunk_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM memory_chunks").fetchone()[0]
    code_ids = []
    for d, texts, embedded, entities, pieces, piece_vectors, memory_words in prepared:
        memory_id = remember.new_memory_id()
        rows.append((memory_id, d.project, d.tier, d.type, d.title, d.content, json.dumps(d.tags),
                     json.dumps(d.files), d.source, d.confidence, d.importance, d.priority, int(d.pinned), 1.0, 0,
                     None, d.created_at, d.created_at, d.valid_from, d.valid_to, d.forget_after, 1, None, memory_id,
                     1, json.dumps(d.source_ids), d.session_id, d.content_hash, model_id if embedded else None,
                     d.key, d.quarantined, d.anchor_commit, len(pieces) if embedded else None,
                     " ".join(memory_words) if embedded else None))
        for index, (text, vector) in enumerate(zip(texts, embedded or [])):
            chunk_id += 1
            chunks.append((chunk_id, memory_id, index, text, vector.tobytes()))
            codes_rows.append((chunk_id, d.project or "", 1, vector.tobytes()))
            code_ids.append(chunk_id)
        if embedded:
            for index, (text, vector) in enumerate(zip(pieces, piece_vectors)):
                chunk_id += 1
                chunks.append((chunk_id, memory_id, vectors.PIECE_INDEX + index, text, vector.tobytes()))
            for word in memory_words:
                uses[word] = uses.get(word, 0) + 1
        entity_rows.extend((memory_id, kind, name) for kind, name in entities)
        saved.append((memory_id, d))
    conn.executemany(f"INSERT INTO memories ({BULK_COLUMNS}) VALUES ({','.join('?' * len(BULK_COLUMNS.split(',')))})",
                     rows)
    conn.executemany("INSERT INTO memory_chunks (id, memory_id, chunk_index, text, embedding) VALUES (?, ?, ?, ?, ?)",
                     chunks)
    conn.executemany(f"INSERT INTO {vectors.TABLE} (chunk_id, project, latest, embedding) "
                     "VALUES (?, ?, ?, vec_quantize_binary(?))", codes_rows)
    vectors.log_changes(conn, code_ids)
    conn.executemany("INSERT OR IGNORE INTO entities (kind, name) VALUES (?, ?)", [(k, n) for _, k, n in entity_rows])
    conn.executemany("INSERT OR IGNORE INTO memory_entities (memory_id, entity_id) "
                     "SELECT ?, id FROM entities WHERE kind = ? AND name = ?", entity_rows)
    new = [w for w in uses if w not in stored_words]
    word_vectors.add(conn, uses, {w: words.pack(v) for w, v in zip(new, hashed_vectors(new))} if new else {})
    stored_words.update(new)
    _bulk_audit(conn, [("save", memory_id, d.project,
                        {"version": 1, "supersedes": None, "type": d.type, "tier": d.tier, "source": d.source,
                         "reason": None}, d.created_at, d.content_hash) for memory_id, d in saved])


BULK_COLUMNS = ("id, project, tier, type, title, content, tags, files, source, confidence, importance, priority, "
                "pinned, strength, access_count, last_accessed_at, created_at, updated_at, valid_from, valid_to, "
                "forget_after, version, parent_id, root_id, is_latest, source_ids, session_id, content_hash, "
                "embedding_model, key, quarantined, anchor_commit, pieces, words")


def _bulk_audit(conn: Any, entries: list[tuple]) -> None:
    """Append audit rows as `audit.append` does, one after another in the chain, with one INSERT statement: each
    entry (action, memory id, project, detail, at, the memory's content hash), binding the memory's state as the
    write path does (db/audit_state.py)."""
    from agentmem_mcp.db import audit, audit_state
    from agentmem_mcp.db.connection import after_commit

    row = conn.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    prev_hash = row[0] if row else audit.GENESIS
    database = audit.database_file(conn)
    key = audit.audit_key(database) if database is not None else None
    rows = []
    for action, memory_id, project, detail, at, bound in entries:
        detail_json = json.dumps(detail or {}, sort_keys=True, ensure_ascii=False)
        state = None
        if key is None:
            scheme, digest = audit.UNKEYED, audit._unkeyed_hash(prev_hash, at, action, memory_id, project, detail_json)
            bound = None
        else:
            state, bound = audit_state.state_of(conn, memory_id)
            scheme, digest = audit.STATED, audit._stated_hash(key, prev_hash, at, action, memory_id, project,
                                                              detail_json, bound, state)
        rows.append((at, action, memory_id, project, detail_json, prev_hash, digest, bound, scheme, state))
        prev_hash = digest
    conn.executemany("INSERT INTO audit (at, action, memory_id, project, detail, prev_hash, hash, content_hash, "
                     "scheme, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    if rows and database is not None and key is not None:
        seq = conn.execute("SELECT MAX(seq) FROM audit").fetchone()[0]
        head = {"seq": seq, "hash": prev_hash}
        after_commit(conn, lambda: audit.write_head(database, head))


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
    from agentmem_mcp.lifecycle import remember

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


def new_numbers(store: Store, base: int) -> int:
    """The first number to generate timed saves from (`memory_text`), past those of every earlier run on this
    store: they must write new memories, not duplicates of a previous run's (a duplicate skips the supersede
    check and the write). A multiple of 21 past `base`, so each run gets the same mix of sentences."""
    return base + 21 * store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]


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
    the A/B below; None when the model is not run by agentmem itself (index/sentence_model.py)."""
    from agentmem_mcp.index.embedder import session_like

    try:
        return session_like(store.embedder._model.session, spinning=True)
    except AttributeError:
        return None


def time_model_threads(store: Store, count: int, seed: int, block: int = 20) -> dict[str, list[float]]:
    """Searches and saves on the same store with the model's session as agentmem makes it (threads that
    sleep when idle: index/embedder.without_spinning) and as onnxruntime makes it by default, in blocks of
    `block` searches and block / 2 saves, alternating which goes first: what spinning threads cost or save."""
    rng = random.Random(seed)
    inner = store.embedder._model
    sessions = {"quiet": getattr(inner, "session", None), "spinning": spinning_session(store)}
    timings: dict[str, list[float]] = {f"{name} {what}": [] for name in sessions for what in ("search", "save")}
    if sessions["spinning"] is None:
        return {}
    try:
        for n in range(max(1, count // block)):
            for name in (("quiet", "spinning") if n % 2 else ("spinning", "quiet")):
                inner.session = sessions[name]
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
        inner.session = sessions["quiet"]
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
    parser.add_argument("--model", type=Path, default=Path(os.environ.get("AGENTMEM_EMBED_MODEL_PATH", DEFAULT_MODEL)))
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
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
