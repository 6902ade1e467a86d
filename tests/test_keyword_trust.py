"""Score fusion's trust in BM25 (`ranking.keyword_trust`): a question asked in other words than its memory is not
outranked by memories that share one common word with it, and a complete keyword match keeps BM25's weight."""

from __future__ import annotations

import pytest

from agentmem_mcp.recall import retrieval
from agentmem_mcp.recall.ranking import keyword_trust, vector_margin

COMPLETE, STANDS_OUT = (0.2, 0.6), (0.02, 0.12)


def test_bm25_loses_weight_only_for_a_partial_match_against_a_clear_nearest_meaning():
    assert keyword_trust(0.9, 0.5, COMPLETE, STANDS_OUT) == 1.0       # every term matched: whole weight
    assert keyword_trust(0.1, 0.01, COMPLETE, STANDS_OUT) == 1.0      # the vectors hesitate: whole weight
    assert keyword_trust(0.1, 0.3, COMPLETE, STANDS_OUT) == 0.0       # one weak word against a clear meaning
    assert keyword_trust(0.4, 0.3, COMPLETE, STANDS_OUT) == pytest.approx(0.5)
    assert keyword_trust(0.1, 0.07, COMPLETE, STANDS_OUT) == pytest.approx(0.5)
    assert keyword_trust(0.0, None, COMPLETE, STANDS_OUT) == 1.0      # no vector above zero: nothing to weigh
    assert vector_margin([("a", 0.5), ("b", 0.4), ("c", 0.45)]) == pytest.approx(0.1)
    assert vector_margin([("a", 0.5)]) is None and vector_margin([("a", -0.1), ("b", -0.2)]) is None


DISTRACTORS = [f"The release {verb} every {thing} before it reaches src/release/{thing}_{n}.py"
               for n, (verb, thing) in enumerate([(v, t) for v in ("retries", "validates", "migrates", "batches")
                                                  for t in ("index", "queue", "router", "session", "config")])]
ROLLBACK = "When a deploy goes wrong, roll back with kubectl rollout undo and post in the incidents channel"
QUESTION = "what's the recovery procedure after a broken release hits prod?"


def test_a_question_in_other_words_finds_its_memory_first(store, monkeypatch):
    for text in DISTRACTORS:
        store.save(text)
    rollback = store.save(ROLLBACK)
    assert store.search(QUESTION, retrievers=("vector",), record_access=False).hits[0].id == rollback.id
    assert store.search(QUESTION, record_access=False).hits[0].id == rollback.id
    monkeypatch.setattr(retrieval, "keyword_trust", lambda *_: 1.0)   # BM25 at its set weight, as before
    assert store.search(QUESTION, record_access=False).hits[0].id != rollback.id


def test_a_complete_keyword_match_keeps_bm25_in_charge(store):
    for text in DISTRACTORS:
        store.save(text)
    store.save(ROLLBACK)
    exact = store.save("bd sync pushes the beads issue database to the beads-sync branch")
    assert store.search("beads sync branch", record_access=False).hits[0].id == exact.id
