"""What search keeps in the process from one search to the next, and that it never changes an answer: the copy of a
small store's chunk vectors (index/chunk_copy.py) gives the re-scoring the rows SQLite gives, in the same order,
and keeps the last re-scorings; the keyword answers, IDFs and similar-word scores of the last questions are kept
for the index commit and the memories they were computed on. All of it follows what other processes write (a save,
a forget, a new version, the worker's sentence pieces): a question asked again gets what a store that keeps nothing
answers. Real model, SQLite, sqlite-vec and tantivy; the other processes are the real CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_mcp.db import vectors as vector_rows
from agentmem_mcp.index import chunk_copy, vectors
from agentmem_mcp.index.words import WordMatrix
from agentmem_mcp.recall import retrieval
from agentmem_mcp.store import Store

TEXTS = [
    "The upload worker retries three times before it gives up on S3. Each retry waits twice as long as the last one.",
    "We deploy to staging with make deploy-staging after the tests pass. Production needs a second reviewer.",
    "The session token expires after 24 hours; refresh it in the auth middleware before the request goes out.",
    "pnpm is our package manager because of its workspace support. Never commit a package-lock.json file.",
    "The scheduler throttles webhook deliveries to 10 per second per customer. Bursts are queued in Redis.",
    "Invoices are rendered to PDF by the report service with weasyprint. Fonts live in assets/fonts.",
    "Migrations are applied with alembic upgrade head on every deploy.",
    "The cache is keyed by user id and invalidated when the profile changes. A stale entry lives at most a minute.",
    "Docker builds reuse the pip cache through a BuildKit mount.",
    "The parser rejects config files with tabs; use spaces only. The error names the line that has one.",
]
QUERIES = ["how do we deploy", "token expiry", "which package manager", "cache invalidation", "pdf invoices",
           "what happens when an upload fails", "redis queue for webhooks", "config parse error on tabs",
           "who reviews production releases", "database schema changes"]
CLOCK = 1_800_000_000.0


def _hits(store: Store, query: str) -> list[tuple]:
    return [(h.id, h.title, h.score, h.snippet, h.why) for h in store.search(query, limit=10, record_access=False).hits]


def _uncached(store: Store, query: str) -> list[tuple]:
    """The answer of a store that keeps nothing from one search to the next: no chunk copy, no word rows or
    similar-word scores, no keyword answers."""
    kept, matrix, bm25 = store.settings, store.word_matrix, dict(retrieval._BM25)
    store.settings = kept.replace(vector_copy_chunks=0)
    store.word_matrix = WordMatrix()
    retrieval._BM25.clear()
    try:
        return _hits(store, query)
    finally:
        store.settings, store.word_matrix = kept, matrix
        retrieval._BM25.clear()
        retrieval._BM25.update(bm25)


def _copy_of(store: Store) -> chunk_copy.ChunkCopy | None:
    with chunk_copy.held(store.conn, store.settings.vector_copy_chunks) as copy:
        return copy


def _same_answers(store: Store, queries: list[str]) -> None:
    """Each query answered alike with the copy and from SQLite alone (every hit: id, title, score, snippet, why)."""
    for query in queries:
        assert _hits(store, query) == _uncached(store, query), query


@pytest.fixture
def filled(store: Store) -> Store:
    store.now = lambda: CLOCK  # retention is a function of time: one clock for both answers
    store.save_many([{"content": text} for text in TEXTS], supersede_check=False)
    assert store.add_sentence_pieces() > 0
    assert store.add_word_vectors() > 0  # the worker's passes: similar words take part in the ranking
    store.flush()
    return store


def _as_tuples(rows) -> list[tuple]:
    return [tuple(row) for row in rows]


def test_the_copy_reads_the_rows_sqlite_reads_in_its_order(filled: Store) -> None:
    ids = [row[0] for row in filled.conn.execute("SELECT id FROM memories")]
    vector = filled.embedder.embed_query("the deploy needs a reviewer")
    with filled.transaction() as conn:  # two memories also get an answer chunk (the worker's, for a reply)
        for memory_id in ids[:2]:
            vector_rows.put_answer(conn, memory_id, "/repo/a", True, "Q and A", vector)
    chunk_ids = [row[0] for row in filled.conn.execute("SELECT id FROM memory_chunks")]
    copy = _copy_of(filled)
    assert copy is not None and len(copy.rows) == len(chunk_ids)
    rng = random.Random(3)
    for _ in range(20):
        some_ids = rng.sample(ids, rng.randint(1, len(ids))) + ["m_0000000000000000"] + rng.sample(ids, 2)
        some_chunks = rng.sample(chunk_ids, rng.randint(1, len(chunk_ids))) + [10**9]
        assert copy.chunk_rows(some_chunks) == _as_tuples(vector_rows.chunk_rows(filled.conn, some_chunks))
        for pieces in (False, True):
            assert copy.memory_chunk_rows(some_ids, pieces) == _as_tuples(
                vector_rows.memory_chunk_rows(filled.conn, some_ids, pieces))
        assert copy.answer_rows(some_ids) == _as_tuples(vector_rows.answer_rows(filled.conn, some_ids))
    assert any(row[2] >= vector_rows.PIECE_INDEX for row in copy.rows.values())  # pieces are in it
    _same_answers(filled, QUERIES)


def test_search_answers_the_same_with_the_copy_and_uses_it(filled: Store, monkeypatch) -> None:
    _same_answers(filled, QUERIES)
    read = []
    for name in ("chunk_rows", "memory_chunk_rows", "answer_rows"):
        real = getattr(vector_rows, name)
        monkeypatch.setattr(vector_rows, name, lambda *a, _real=real, **k: read.append(a) or _real(*a, **k))
    assert _hits(filled, "how do we deploy")
    assert read == []  # the re-scoring read no chunk from SQLite


def _agentmem(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done


def test_other_processes_saves_forgets_versions_and_pieces_reach_the_copy(filled: Store, cli_env, tmp_path) -> None:
    env = cli_env
    _same_answers(filled, [*QUERIES[:3], "who signs the release tag"])  # the copy is made, answers are kept
    new_text = ("Deploys to production need a second reviewer on the release PR. The reviewer signs the tag "
                "with their own key.")
    saved = json.loads(_agentmem(env, tmp_path, "save", new_text, "--project", "/repo/a", "--json").stdout)["id"]
    hits = _hits(filled, "who signs the release tag")
    assert hits[0][0] == saved and hits == _uncached(filled, "who signs the release tag")
    assert saved in _copy_of(filled).by_memory

    _agentmem(env, tmp_path, "worker", "--once")  # its sentence pieces, written by another process
    pieces = _as_tuples(vector_rows.memory_chunk_rows(filled.conn, [saved], True))
    assert pieces and _copy_of(filled).memory_chunk_rows([saved], True) == pieces
    _same_answers(filled, ["who signs the release tag", *QUERIES])

    old = next(h[0] for h in _hits(filled, "which package manager") if "pnpm" in h[3])
    newer = json.loads(_agentmem(env, tmp_path, "save", "yarn berry is our package manager because of its "
                                 "workspace support. Never commit a package-lock.json file.", "--project", "/repo/a",
                                 "--supersedes", old, "--json").stdout)["id"]
    hits = _hits(filled, "which package manager")
    assert hits[0][0] == newer and old not in [h[0] for h in hits]
    assert hits == _uncached(filled, "which package manager")

    _agentmem(env, tmp_path, "forget", saved, "--i-am-the-user")
    assert saved not in [h[0] for h in _hits(filled, "who signs the release tag")]
    copy = _copy_of(filled)
    assert saved not in copy.by_memory and all(row[0] != saved for row in copy.rows.values())
    assert copy.memory_chunk_rows([saved], False) == copy.memory_chunk_rows([saved], True) == []
    _same_answers(filled, ["who signs the release tag", *QUERIES])


def test_a_store_above_the_limit_keeps_no_copy(filled: Store) -> None:
    filled.settings = filled.settings.replace(vector_copy_chunks=5)
    assert _copy_of(filled) is None
    before = _uncached(filled, "how do we deploy")
    assert _hits(filled, "how do we deploy") == before


def test_a_store_grown_past_the_limit_drops_its_copy(filled: Store) -> None:
    held = filled.conn.execute("SELECT COUNT(*) FROM memory_chunks").fetchone()[0]
    filled.settings = filled.settings.replace(vector_copy_chunks=held + 1)
    assert _copy_of(filled) is not None
    filled.save_many([{"content": f"Release {n} was tagged after the deploy checklist."} for n in range(3)])
    assert _copy_of(filled) is None
    _same_answers(filled, ["release checklist"])


def test_inside_a_write_transaction_its_own_vectors_are_read_from_sqlite(filled: Store) -> None:
    limit = filled.settings.vector_copy_chunks
    assert _copy_of(filled) is not None
    memory_id = filled.conn.execute("SELECT id FROM memories LIMIT 1").fetchone()[0]
    vector = filled.embedder.embed_query("an edited memory")
    with filled.transaction() as conn:
        with chunk_copy.held(conn, limit) as copy:
            assert copy is not None  # nothing written yet
        vector_rows.put(conn, memory_id, "/repo/a", True, ["an edited memory"], [vector])
        with chunk_copy.held(conn, limit) as copy:
            assert copy is None  # its own uncommitted vectors: SQLite serves
    with chunk_copy.held(filled.conn, limit) as copy:
        assert copy is not None
        assert copy.memory_chunk_rows([memory_id], False) == [(memory_id, vector.tobytes(), 0)]
        assert copy.memory_chunk_rows([memory_id], True) == []  # its pieces went with the old text


def test_every_write_of_pieces_is_logged(filled: Store) -> None:
    memory_id = filled.conn.execute("SELECT memory_id FROM memory_chunks WHERE chunk_index >= ? LIMIT 1",
                                    (vector_rows.PIECE_INDEX,)).fetchone()[0]
    old = {row[0] for row in filled.conn.execute("SELECT id FROM memory_chunks WHERE memory_id = ? AND "
                                                 "chunk_index >= ?", (memory_id, vector_rows.PIECE_INDEX))}
    last = vector_rows.last_change(filled.conn)
    vector = filled.embedder.embed_query("a piece")
    with filled.transaction() as conn:
        vector_rows.put_pieces(conn, memory_id, ["a piece", "another piece"], [vector, vector])
    new = {row[0] for row in filled.conn.execute("SELECT id FROM memory_chunks WHERE memory_id = ? AND "
                                                 "chunk_index >= ?", (memory_id, vector_rows.PIECE_INDEX))}
    logged = set(vector_rows.changed_chunks(filled.conn, last, vector_rows.last_change(filled.conn)))
    assert old | new <= logged
    _same_answers(filled, QUERIES[:4])


def test_the_re_scoring_reads_through_the_copy_give_sqlite_s_scores(filled: Store) -> None:
    ids = [row[0] for row in filled.conn.execute("SELECT id FROM memories")]
    for query in QUERIES:
        vector = filled.embedder.embed_query(query)
        ours = vectors.knn(filled.conn, vector, projects=None, latest_only=True, k=5, copy_limit=10_000)
        theirs = vectors.knn(filled.conn, vector, projects=None, latest_only=True, k=5)
        assert ours == theirs
        assert vectors.similarities(filled.conn, vector, ids, 10_000) == vectors.similarities(filled.conn, vector, ids)


def test_questions_asked_again_answer_as_a_store_without_caches_would(filled: Store) -> None:
    """Search keeps what a question asked again needs (the chunk copy and its re-scorings, each memory's word rows,
    the similar-word scores and keyword answers of the last questions): asked three times over, in turn, each
    answer is the one a store that keeps none of them gives."""
    rng = random.Random(5)
    nouns = ["upload", "token", "cache", "invoice", "webhook", "parser", "schema", "session", "report", "queue"]
    verbs = ["retries", "validates", "rejects", "logs", "signs", "renders", "throttles", "migrates"]
    filled.save_many([{"content": f"The {rng.choice(nouns)} {rng.choice(verbs)} every {rng.choice(nouns)} before "
                                  f"it reaches the {rng.choice(nouns)} service. We chose this after an outage."}
                      for _ in range(60)], supersede_check=False)
    filled.add_sentence_pieces()
    filled.add_word_vectors()
    filled.flush()
    asked = [*QUERIES, *(f"why does the {a} reject the {b}" for a, b in zip(nouns, reversed(nouns)))]
    for _ in range(3):
        for query in asked:
            assert _hits(filled, query) == _uncached(filled, query), query


def test_the_idf_kept_for_a_commit_follows_the_next_commit(filled: Store, settings, embedder) -> None:
    words = ["weasyprint", "deploy", "alembic"]
    first = filled.fulltext.word_idf(words)
    assert filled.fulltext.word_idf(words) == first and filled.fulltext._idf  # kept for this commit
    with Store.open(settings, project="/repo/a", embedder=embedder, sync_index=True) as other:
        other.save_many([{"content": f"Report {n} is rendered with weasyprint before the deploy."} for n in range(4)],
                        supersede_check=False)
    after = filled.fulltext.word_idf(words)
    filled.fulltext._idf.clear()
    assert after == filled.fulltext.word_idf(words) and after["weasyprint"] < first["weasyprint"]
