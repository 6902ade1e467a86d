"""A question asked in other words than its memory: weak keyword hits must not outweigh the vectors.

Real store, real tantivy, real model. The distractors each share one word of the question (its BM25 hits); the
memory that answers it shares none (scripts/data/paraphrase_pairs.json has 48 such pairs, measured by
scripts/bench_core.py --paraphrases).
"""

from __future__ import annotations

ANSWER = "Use pnpm instead of npm for installing packages in this repository."
QUESTION = "which JS dependency manager do we prefer?"
DISTRACTORS = [
    "The release manager signs the tags after the changelog is written.",
    "We prefer tabs over spaces in Makefiles.",
    "The window manager on the CI runners is xvfb.",
    "The dependency on libpq is pinned in the Dockerfile.",
    "We prefer squash merges for small fixes.",
]


def test_a_paraphrased_question_finds_its_memory_first_in_hybrid_search(store):
    answer = store.save(ANSWER, type="preference").id
    for text in DISTRACTORS:
        store.save(text, type="fact")
    store.flush()
    assert not set(store.fulltext.query_terms(QUESTION)) & set(store.fulltext.query_terms(ANSWER))
    bm25 = store.search(QUESTION, retrievers=("bm25",), record_access=False).hits
    assert bm25 and answer not in [hit.id for hit in bm25]  # keywords alone find only the distractors
    assert store.search(QUESTION, retrievers=("vector",), record_access=False).hits[0].id == answer
    assert store.search(QUESTION, record_access=False).hits[0].id == answer


def test_a_question_in_the_memory_s_own_words_still_ranks_by_its_keywords(store):
    answer = store.save(ANSWER, type="preference").id
    for text in DISTRACTORS:
        store.save(text, type="fact")
    store.flush()
    wanted = store.conn.execute("SELECT id FROM memories WHERE content LIKE '%xvfb%'").fetchone()[0]
    assert store.search("which window manager do the CI runners use", record_access=False).hits[0].id == wanted
    assert store.search("installing packages with pnpm", record_access=False).hits[0].id == answer
