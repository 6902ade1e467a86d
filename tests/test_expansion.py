"""Query expansion (index/expansion.py): a query word also searches BM25 for its nearest words of the store's
vocabulary, as far as the query's own keywords failed."""

from __future__ import annotations

import numpy as np
import pytest

from agentmem_mcp.index.expansion import WordNeighbours, expansion_terms
from agentmem_mcp.recall.ranking import expansion_share
from agentmem_mcp.store import Store


def _analyse(word: str) -> str:
    return word[:-1] if word.endswith("s") else word


def test_a_word_brings_its_nearest_other_words_but_not_its_own_spellings_or_function_words():
    nearest = {"billing": [("billed", 0.81), ("payments", 0.70), ("the", 0.66), ("credential", 0.64),
                           ("invoices", 0.62), ("refund", 0.55)],
               "credential": [("keys", 0.68), ("invoices", 0.66)],
               "of": [("from", 0.9)]}
    terms = expansion_terms(["billing", "credential", "of"], nearest, 2, _analyse, {"billing", "credential", "of"},
                            lambda term: term not in ("the", "of", "from"))
    # billing: "billed" is its own spelling, "the" a function word, "credential" a word of the query
    assert terms == {"payment": 0.70, "invoice": 0.66, "key": 0.68}
    assert expansion_terms(["billing"], nearest, 0, _analyse, set(), lambda _: True) == {}


def test_expansion_is_full_for_a_failed_keyword_match_and_off_for_a_complete_one():
    assert expansion_share(0.0, (0.2, 0.6)) == 1.0 and expansion_share(0.2, (0.2, 0.6)) == 1.0
    assert expansion_share(0.4, (0.2, 0.6)) == pytest.approx(0.5)
    assert expansion_share(0.6, (0.2, 0.6)) == 0.0 and expansion_share(1.4, (0.2, 0.6)) == 0.0


def test_bm25_searches_boosted_terms_beside_the_query(settings, embedder):
    with Store.open(settings, project="/repo/a", embedder=embedder, sync_index=True) as store:
        payments = store.save("The payments sandbox key expires every 90 days.").id
        weather = store.save("The weather report is fetched every morning.").id
        fulltext = store.fulltext
        assert fulltext.search("billing every", projects=["/repo/a"]) == fulltext.search("every",
                                                                                        projects=["/repo/a"])
        boosted = dict(fulltext.search("billing every", projects=["/repo/a"],
                                       boosts={fulltext.query_terms("payments")[0]: 0.5}))
        plain = dict(fulltext.search("billing every", projects=["/repo/a"]))
        assert boosted[payments] > plain[payments] and boosted[weather] == pytest.approx(plain[weather])


def test_the_vocabulary_finds_nearest_words_and_follows_new_and_forgotten_ones(store):
    payments = store.save("Our payments provider sends a receipt after each purchase.")
    store.add_word_vectors()
    neighbours = WordNeighbours(check_seconds=0.0)
    billing = store.embedder.embed(["billing"])[0]
    found = dict(neighbours.nearest(store.conn, ["billing"], [billing], 0.3)["billing"])
    assert "payments" in found and found["payments"] == pytest.approx(
        float(np.asarray(store.embedder.embed(["payments"])[0]) @ billing), abs=0.02)
    assert "billing" not in found  # itself, when some memory has it, is BM25's own term

    invoices = store.save("Invoices are emailed to customers at the end of the month.")
    store.add_word_vectors()
    assert "invoices" in dict(neighbours.nearest(store.conn, ["billing"], [billing], 0.3)["billing"])
    store.forget(ids=[invoices.id], reason="test")
    again = dict(neighbours.nearest(store.conn, ["billing"], [billing], 0.3)["billing"])
    assert "invoices" not in again and "payments" in again and payments.id


def test_search_finds_by_keyword_a_memory_that_holds_only_near_words_of_the_query(settings, embedder, monkeypatch):
    """Without similar words (their weight 0), a memory that shares no word with the question has no keyword
    match at all; expansion finds it through BM25 by the vocabulary's words near the question's ("billing" ->
    "payments"). BM25 keeps its set weight here: with these three memories the vectors' best stands out, which
    would leave BM25 out of the fusion (`ranking.keyword_trust`)."""
    from agentmem_mcp.recall import retrieval

    monkeypatch.setattr(retrieval, "keyword_trust", lambda *_: 1.0)
    texts = ["The payments sandbox key expires every 90 days and must be rotated in the secrets manager.",
             "The test suite runs on every push; the slow integration tests run nightly.",
             "Release notes are written in CHANGELOG.md before tagging."]
    query = "how often does the billing credential need replacing?"
    with Store.open(settings.replace(soft_match_weight=0.0), project="/repo/a", embedder=embedder,
                    sync_index=True) as store:
        saved = [store.save(t).id for t in texts]
        store.add_word_vectors()
        hits = {h.id: h for h in store.search(query, record_access=False).hits}
        assert hits[saved[0]].why.startswith("keywords #1;"), hits[saved[0]].why
        assert "keywords" not in hits[saved[2]].why  # nothing in it is near the question's words


def test_a_failure_in_expansion_does_not_fail_the_search(store, monkeypatch, caplog):
    saved = store.save("The payments sandbox key expires every 90 days.")
    store.add_word_vectors()

    def broken(*_args, **_kwargs):
        raise RuntimeError("disk I/O error")

    monkeypatch.setattr(WordNeighbours, "nearest", broken)
    assert [h.id for h in store.search("how often does the billing credential need replacing?").hits] == [saved.id]
    assert "query expansion skipped for this search: RuntimeError: disk I/O error" in caplog.text
