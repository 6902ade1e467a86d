"""The generated store the core benchmarks measure: memories made from a few nouns, verbs and tools (each unlike
the others), the queries asked of them, and two ways to fill a store with them: the real write path
(`build`: save_many in batches, the worker's passes after it) and SQL in large transactions (`bulk_build`, the
same rows, for stores the write path takes hours to fill)."""

from __future__ import annotations

import json
import multiprocessing
import random
import sys
import time
from pathlib import Path
from typing import Any

from agentmem_mcp.lifecycle import remember
from agentmem_mcp.store import Store

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


def time_searches(store: Store, count: int, seed: int, warm: int = 5) -> list[float]:
    """Wall ms of `count` searches of the bench's queries, drawn with `seed`, after `warm` unclocked ones."""
    rng = random.Random(seed)
    for query in QUERIES[:warm]:
        store.search(query)
    timings = []
    for _ in range(count):
        query = rng.choice(QUERIES)
        started = time.perf_counter()
        store.search(query, limit=10)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


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
    vectors.log_changes(conn, [chunk[0] for chunk in chunks])  # pieces too: index/chunk_copy.py reads them
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


def new_numbers(store: Store, base: int) -> int:
    """The first number to generate timed saves from (`memory_text`), past those of every earlier run on this
    store: they must write new memories, not duplicates of a previous run's (a duplicate skips the supersede
    check and the write). A multiple of 21 past `base`, so each run gets the same mix of sentences."""
    return base + 21 * store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
