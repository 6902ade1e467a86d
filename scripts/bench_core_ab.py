"""The A/Bs of bench_core.py: the same queries on the same store with one thing changed, interleaved (alternating
which goes first) so that the difference is the change's own cost: score against rrf fusion, sentence pieces,
similar words, the model's threads, and the vector KNN on the code copy against sqlite-vec's exhaustive scan."""

from __future__ import annotations

import contextlib
import random
import time
from typing import Any

from bench_store import QUERIES, hashed_vectors, memory_text
from eval_common import with_settings
from harness import summary

from agentmem_mcp.store import Store


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
