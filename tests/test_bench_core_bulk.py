"""scripts/bench_core.py's bulk build leaves the store the real write path leaves (save_many, then the worker's
sentence-piece and word passes): the same rows in every table, the same BM25 documents, the same search answers."""

from __future__ import annotations

import itertools
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from agentmem_mcp.config import load_settings
from agentmem_mcp.db import audit
from agentmem_mcp.lifecycle import remember
from agentmem_mcp.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import bench_core  # noqa: E402

SIZE = 1200
TABLES = ("memories", "memory_chunks", "memory_vectors", "vector_changes", "entities", "memory_entities",
          "memory_links", "audit", "word_vectors", "index_outbox", "observations", "sessions")
# what may differ between two builds of the same corpus: the ids (random outside this test)
UNEQUAL = {"id", "root_id"}


@pytest.fixture
def stores(tmp_path: Path, embedder, model_path: Path, monkeypatch):
    opened = {}
    now = time.time()
    for kind in ("real", "bulk"):
        # the same ids in the same order in both builds: search orders equal scores by id, and random ids
        # would order two memories of equal score one way in one store and the other way in the other
        numbers = itertools.count()
        monkeypatch.setattr(remember, "new_memory_id", lambda numbers=numbers: f"m_{next(numbers):016x}")
        settings = load_settings(env={}, home=tmp_path / kind, embed_model_path=model_path)
        store = Store.open(settings, project="/bench/project", embedder=embedder)
        store.now = lambda: now  # one clock for both: every memory saved, and searched, at the same time
        if kind == "real":
            bench_core.build(store, SIZE, seed=SIZE, batch=250, synthetic_vectors=True)
            store.flush()
        else:
            figures = bench_core.bulk_build(store, SIZE, seed=SIZE, batch=500, workers=0, progress=False)
            assert figures["bulk"] and figures["build_s"] > 0
        opened[kind] = store
    yield opened["real"], opened["bulk"]
    for store in opened.values():
        store.close()


def _rows(store: Store, sql: str) -> Counter:
    return Counter(tuple(row) for row in store.conn.execute(sql))


def test_the_bulk_build_writes_the_rows_the_write_path_writes(stores):
    real, bulk = stores
    for table in TABLES:
        counts = [s.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for s in (real, bulk)]
        assert counts[0] == counts[1], table
    assert real.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == SIZE
    assert real.conn.execute("SELECT COUNT(*) FROM memory_chunks WHERE chunk_index >= 1000").fetchone()[0] > 0

    columns = [row[1] for row in real.conn.execute("PRAGMA table_info(memories)") if row[1] not in UNEQUAL]
    listed = ", ".join(columns)
    assert _rows(real, f"SELECT {listed} FROM memories") == _rows(bulk, f"SELECT {listed} FROM memories")
    assert real.conn.execute("SELECT COUNT(*) FROM memories WHERE root_id != id OR updated_at != created_at "
                             "OR valid_from != created_at").fetchone()[0] == 0
    assert bulk.conn.execute("SELECT COUNT(*) FROM memories WHERE root_id != id OR updated_at != created_at "
                             "OR valid_from != created_at").fetchone()[0] == 0

    chunks = ("SELECT m.content_hash, c.chunk_index, c.text, c.embedding, v.project, v.latest, v.embedding "
              "FROM memory_chunks c JOIN memories m ON m.id = c.memory_id "
              "LEFT JOIN memory_vectors v ON v.chunk_id = c.id")
    assert _rows(real, chunks) == _rows(bulk, chunks)
    entities = ("SELECT m.content_hash, e.kind, e.name FROM memory_entities me JOIN memories m ON m.id = me.memory_id "
                "JOIN entities e ON e.id = me.entity_id")
    assert _rows(real, entities) == _rows(bulk, entities)
    assert _rows(real, "SELECT kind, name FROM entities") == _rows(bulk, "SELECT kind, name FROM entities")
    assert _rows(real, "SELECT word, uses, vector FROM word_vectors") == \
        _rows(bulk, "SELECT word, uses, vector FROM word_vectors")
    logged = ("SELECT l.chunk_id = 0, m.content_hash, c.chunk_index FROM vector_changes l "
              "LEFT JOIN memory_chunks c ON c.id = l.chunk_id LEFT JOIN memories m ON m.id = c.memory_id")
    assert _rows(real, logged) == _rows(bulk, logged)

    trail = ("SELECT a.action, a.project, a.detail, a.scheme, a.content_hash = m.content_hash, a.at = m.created_at "
             "FROM audit a LEFT JOIN memories m ON m.id = a.memory_id")
    assert _rows(real, trail) == _rows(bulk, trail)
    for store in (real, bulk):
        verdict = audit.verify(store.conn)
        assert verdict.ok, verdict


def test_the_bulk_built_store_answers_searches_as_the_real_one(stores):
    """The same top memory for all bench queries but one at most, and at least 85% of the same top ten in all.
    Not all of them: the two stores number their BM25 documents and chunks in another order (one that changed
    from run to run of this test: 2 of 6 runs had one query's top memory differ), which orders equal BM25
    scores and equal Hamming distances at a retriever's cut-off differently, so a memory can be a candidate in one
    store only. The generated corpus has few words, so such ties are many: under load, where the indexer's
    commits and merges fall elsewhere, 134 of 150 were shared in one CI run (session 18), 139-150 in ten runs."""
    real, bulk = stores
    assert real.fulltext.count() == bulk.fulltext.count() == SIZE
    shared = asked = same_top = 0
    for query in bench_core.QUERIES:
        found = []
        for store in (real, bulk):
            hits = store.search(query, limit=10, record_access=False).hits
            found.append([store.get(hit.id).content for hit in hits])
        same_top += found[0][:1] == found[1][:1]
        shared += len(set(found[0]) & set(found[1]))
        asked += len(found[0])
    assert same_top >= len(bench_core.QUERIES) - 1, same_top
    assert shared >= 0.85 * asked, (shared, asked)
