"""The search path's own work (recall/retrieval.py, index/embedder.py): a query asked again is not embedded again, a
search whose query vector is known runs every retriever on its own thread, and only the hits returned are dressed
(snippet, `why`, a check of their files). Real model, real SQLite, tantivy and sqlite-vec."""

from __future__ import annotations

import numpy as np

from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.recall import retrieval
from tests.conftest import MODEL_NAME


def _hits(result) -> list[tuple[str, float, str, str]]:
    return [(hit.id, hit.score, hit.snippet, hit.why) for hit in result.hits]


def test_a_query_asked_again_is_answered_without_the_model(model_path):
    embedder = Embedder(MODEL_NAME, model_path)
    assert embedder.load()
    calls = []
    model_query = embedder._model.query_embed

    def counted(texts):
        calls.append(list(texts))
        return model_query(texts)

    embedder._model.query_embed = counted
    assert not embedder.knows_query("how are the tests run")
    first = embedder.embed_query("how are the tests run")
    assert embedder.knows_query("how are the tests run")
    second = embedder.embed_query("how are the tests run")
    assert calls == [["how are the tests run"]]
    assert np.array_equal(first, second) and first.dtype == np.float32
    second[:] = 0  # a caller's copy: the kept vector is not changed through it
    assert np.array_equal(embedder.embed_query("how are the tests run"), first)
    embedder.embed_query("how is the build made")
    assert len(calls) == 2


def test_a_search_asked_again_answers_the_same_without_handing_work_to_a_thread(store):
    for n, text in enumerate(["Run the API tests with pytest -q tests/test_api.py before pushing",
                              "The upload retries three times with exponential backoff",
                              "Deploys to staging go through make deploy-staging",
                              "We use pnpm, not npm, for the web app",
                              "The queue worker serialises jobs as JSON before they reach Redis"]):
        store.save(text, type="workflow" if n % 2 else "fact")
    store.flush()
    query = "how do we run the tests before a push"
    submitted = []
    submit = store.pool.submit

    def counted(*args, **kwargs):
        submitted.append(args[0].__name__)
        return submit(*args, **kwargs)

    store.pool.submit = counted
    try:
        first = store.search(query, record_access=False)
        assert submitted == ["_vector_search"]  # only the query's embedding went to a thread
        again = store.search(query, record_access=False)
    finally:
        store.pool.submit = submit
    assert submitted == ["_vector_search"]  # the query vector was known: nothing went to a thread
    assert first.mode == again.mode == "hybrid"
    assert _hits(again) == _hits(first) and "pytest" in first.hits[0].snippet


def test_only_the_hits_returned_get_their_files_checked(store, monkeypatch):
    nouns = ["parser", "router", "queue", "upload", "billing", "invoice", "session", "token", "webhook", "report",
             "scheduler", "logger", "migration", "fixture", "cluster", "release", "account", "export"]
    store.save_many([{"content": f"The {noun} cache keeps its parsed settings in src/{noun}.py",
                      "files": [f"src/{noun}.py"]} for noun in nouns], supersede_check=False)
    store.flush()
    checked = []
    real = retrieval.missing_files

    def counted(row, tree, project=None):
        checked.append(row["id"])
        return real(row, tree, project)

    monkeypatch.setattr(retrieval, "missing_files", counted)
    result = store.search("cache parsed settings", limit=3, record_access=False)
    assert len(result.hits) == 3
    assert sorted(checked) == sorted(hit.id for hit in result.hits)
    assert all("confidence" in hit.why for hit in result.hits)
